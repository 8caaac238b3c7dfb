//! The tmux layer (SPEC §7.1, §7.3): one trait over the handful of tmux operations the
//! product needs, a real implementation that runs the `tmux` client ([`real::RealTmux`]),
//! and an in-memory fake for unit tests (`fake::FakeTmux`, compiled for tests only).
//!
//! Everything above this module talks to [`Tmux`] and never builds a tmux command line;
//! the exact argv of every call lives in [`argv`] (pure, tested without tmux).

pub mod argv;
pub mod env_handoff;
#[cfg(any(test, feature = "test-support"))]
pub mod fake;
pub mod hosts;
pub mod real;
mod spawn;

use futures::future::BoxFuture;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

#[cfg(any(test, feature = "test-support"))]
pub use fake::FakeTmux;
pub use hosts::{Hosts, RemoteHost};
pub use real::RealTmux;

/// A tmux pane id (`%12`). Pane ids are unique for the life of a tmux server, so every
/// command after the spawn targets the pane id rather than a session name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PaneId(String);

impl PaneId {
    /// Accepts exactly `%` followed by digits.
    pub fn parse(s: &str) -> Result<Self, Error> {
        let digits = s.strip_prefix('%').unwrap_or("");
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            Ok(Self(s.to_string()))
        } else {
            Err(Error::UnexpectedOutput {
                command: "pane id".into(),
                output: format!("expected a pane id like %12, got {s:?}"),
            })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PaneId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A paste buffer name. Buffers are global to a tmux server and deliveries run
/// concurrently, so every delivery gets a fresh one ([`BufferName::unique`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BufferName(String);

impl BufferName {
    /// `the-loop-<uuid>`: never shared between two deliveries.
    pub fn unique() -> Self {
        Self(format!("the-loop-{}", uuid::Uuid::new_v4().simple()))
    }

    /// Accepts `[A-Za-z0-9_-]+`: the name is embedded in a tmux command string (see
    /// [`argv::paste_text`]), so nothing that tmux would parse is allowed.
    pub fn new(name: &str) -> Result<Self, Error> {
        if !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            Ok(Self(name.to_string()))
        } else {
            Err(Error::InvalidName {
                name: name.to_string(),
                reason: "buffer names use only letters, digits, '-' and '_'",
            })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for BufferName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Which tmux server to talk to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Socket {
    /// The operator's default server (no `-L`/`-S`).
    #[default]
    Default,
    /// `tmux -L <name>` (config `sessions.tmux.socket`, `THE_LOOP_TMUX_SOCKET`).
    Name(String),
    /// `tmux -S <path>`: a socket file (tests use it to reach a server that hangs).
    Path(PathBuf),
}

impl Socket {
    /// From `sessions.tmux.socket`: `""` is the default server.
    pub fn from_config(socket: &str) -> Self {
        if socket.is_empty() {
            Self::Default
        } else {
            Self::Name(socket.to_string())
        }
    }
}

/// What to start in a new tmux session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnSpec {
    /// The session name, `loop-<slug>`.
    pub name: String,
    pub cwd: PathBuf,
    /// Set in the session's environment (`THE_LOOP_WORK_ITEM`, `THE_LOOP_HOME`, …).
    pub env: Vec<(String, String)>,
    /// The harness argv; run directly, never through a shell.
    pub argv: Vec<String>,
    /// `sessions.tmux.remainOnExit`: keep the pane after the harness exits, so a dead
    /// session is told apart from an absent one.
    pub remain_on_exit: bool,
    /// The harness runs under umask 077, so what it writes is the user's alone: a
    /// session in a worktree the-loop made (SPEC §18.5). The tmux server's own umask is
    /// the operator's, for every other pane in it. Applied by the session's first
    /// process (`tmux::env_handoff`); a tmux without the hand-off cannot apply it.
    pub private_files: bool,
}

/// SPEC §7.3. `Unknown` (tmux did not answer in time, or failed) is never treated as
/// `Absent`: nothing is respawned over an agent that may still be running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    /// At least one pane runs.
    Live,
    /// The session is retained but every pane exited.
    Dead,
    /// tmux said there is no such session (or no server at all).
    Absent,
    Unknown,
}

/// One session as `list_sessions` sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    pub name: String,
    /// The session's first pane.
    pub pane: PaneId,
    /// `Live` or `Dead`.
    pub liveness: Liveness,
    /// When the session's windows last had output (`#{window_activity}`, Unix seconds;
    /// the latest over its panes), so activity needs no call per session.
    pub activity: u64,
}

/// How a buffer is pasted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paste {
    /// `-p`: wrapped in `ESC[200~ … ESC[201~` when the application asked for it.
    Bracketed,
    /// No brackets: the application sees keystrokes (used only for the submitting `\r`).
    Plain,
}

/// Errors of the tmux layer. Callers match on them: `SessionMissing`/`PaneDead` mean
/// respawn, `Timeout` means try again later, `NotInstalled` means tell the operator.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("tmux was not found on PATH: install tmux (e.g. apt-get install tmux)")]
    NotInstalled,
    #[error(
        "tmux did not answer within {}s (`{command}`); the server may be hung: retry, or restart it",
        .after.as_secs_f32()
    )]
    Timeout { command: String, after: Duration },
    #[error("no tmux session or pane `{target}`: it was closed or never started")]
    SessionMissing { target: String },
    #[error("the program in tmux pane {pane} has exited; respawn the session before delivering")]
    PaneDead { pane: String },
    #[error(
        "a live tmux session named `{name}` already exists; a running agent is never replaced (stop it first)"
    )]
    SessionBusy { name: String },
    #[error("the dead tmux session `{name}` was killed but is still there; not starting a new one")]
    NotCleared { name: String },
    #[error(
        "could not tell whether tmux session `{name}` is running ({cause}); not replacing it, retry later"
    )]
    LivenessUnknown { name: String, cause: Box<Error> },
    #[error("invalid tmux name `{name}`: {reason}")]
    InvalidName { name: String, reason: &'static str },
    #[error("cannot start a session: {0}")]
    InvalidSpawn(String),
    #[error("`{command}` failed: {stderr}")]
    Failed { command: String, stderr: String },
    #[error("could not run `{command}`: {source}")]
    Io {
        command: String,
        #[source]
        source: std::io::Error,
    },
    /// The server is on another host that cannot be reached now: nothing is known of
    /// its sessions, and what was asked may be asked again once it is back.
    #[error("{reason}")]
    Unreachable { reason: String },
    /// The connection to the host dropped while a paste ran, and the host did not come
    /// back in time to tell whether it arrived. Its buffer is left loaded there: once
    /// the host answers, [`Tmux::resolve_paste`] pastes it if it had not arrived, or
    /// finds it gone if it had — never twice.
    #[error(
        "the connection dropped while pasting into {pane} ({reason}), and the host did not answer in time to tell whether it arrived"
    )]
    InDoubt {
        pane: String,
        buffer: BufferName,
        reason: String,
    },
    /// The host's transport refused the command (not a connection problem).
    #[error("{reason}")]
    Remote { reason: String },
    #[error("`{command}` printed something unexpected: {output}")]
    UnexpectedOutput { command: String, output: String },
}

/// The tmux operations the product needs. Object-safe (`Arc<dyn Tmux>`), every call
/// asynchronous and bounded by a timeout in the real implementation.
pub trait Tmux: Send + Sync {
    /// Starts a detached session and returns its pane id. Does **not** look for an
    /// existing occupant: call [`Tmux::new_session`], which applies the collision rules.
    fn create_session<'a>(&'a self, spec: &'a SpawnSpec) -> BoxFuture<'a, Result<PaneId, Error>>;

    /// `Live`, `Dead` or `Absent`; an `Err` when tmux did not answer or failed.
    fn probe<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Liveness, Error>>;

    fn kill_session<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), Error>>;

    /// Loads `data` into the named buffer (on stdin, never argv) and pastes it into
    /// `pane`, deleting the buffer and keeping LF (`-r -d`), in one tmux invocation. A
    /// dead pane is refused with [`Error::PaneDead`]; after any failure the buffer may
    /// remain, for the caller to delete.
    fn paste_text<'a>(
        &'a self,
        buffer: &'a BufferName,
        data: &'a [u8],
        pane: &'a PaneId,
        paste: Paste,
    ) -> BoxFuture<'a, Result<(), Error>>;

    fn delete_buffer<'a>(&'a self, buffer: &'a BufferName) -> BoxFuture<'a, Result<(), Error>>;

    /// Settles a paste left [`Error::InDoubt`]: pastes `buffer` (and deletes it) if it
    /// is still loaded, `Ok(true)`; `Ok(false)` when it is gone — the paste the dropped
    /// connection ran had arrived. Only a tmux on another host leaves a paste in doubt.
    fn resolve_paste<'a>(
        &'a self,
        buffer: &'a BufferName,
        pane: &'a PaneId,
        paste: Paste,
    ) -> BoxFuture<'a, Result<bool, Error>> {
        let _ = (buffer, paste);
        Box::pin(async move {
            Err(Error::Remote {
                reason: format!("no paste into {pane} is in doubt on this tmux"),
            })
        })
    }

    /// The visible pane content; with escapes, colors and attributes are kept.
    fn capture_pane<'a>(
        &'a self,
        pane: &'a PaneId,
        with_escapes: bool,
    ) -> BoxFuture<'a, Result<String, Error>>;

    /// When the pane's window last had output (`#{window_activity}`), Unix seconds.
    fn window_activity<'a>(&'a self, pane: &'a PaneId) -> BoxFuture<'a, Result<u64, Error>>;

    /// The pid of the pane's program (to stop a harness with SIGTERM, grace, SIGKILL).
    fn pane_pid<'a>(&'a self, pane: &'a PaneId) -> BoxFuture<'a, Result<u32, Error>>;

    /// Every session on the server; no server is an empty list.
    fn list_sessions<'a>(&'a self) -> BoxFuture<'a, Result<Vec<SessionInfo>, Error>>;

    /// Opens window `window` running `spec.argv` in front of the existing session
    /// `spec.name` (it becomes window 0, selected; the session's other windows keep
    /// running) and returns its pane id. Only this machine's tmux opens one.
    fn new_front_window<'a>(
        &'a self,
        window: &'a str,
        spec: &'a SpawnSpec,
    ) -> BoxFuture<'a, Result<PaneId, Error>> {
        let _ = window;
        Box::pin(async move {
            Err(Error::InvalidSpawn(format!(
                "this tmux cannot open a second window in {}",
                spec.name
            )))
        })
    }

    /// SPEC §7.3 liveness: a probe failure is `Unknown`, never `Absent`.
    fn liveness<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Liveness> {
        Box::pin(async move {
            match self.probe(name).await {
                Ok(liveness) => liveness,
                Err(error) => {
                    tracing::warn!(session = name, "tmux liveness unknown: {error}");
                    Liveness::Unknown
                }
            }
        })
    }

    /// Starts a session under the collision rules: a live occupant of the name is never
    /// killed ([`Error::SessionBusy`]); a dead one is killed and verified absent first;
    /// an unknown one is left alone ([`Error::LivenessUnknown`]).
    fn new_session<'a>(&'a self, spec: &'a SpawnSpec) -> BoxFuture<'a, Result<PaneId, Error>> {
        Box::pin(spawn::new_session(self, spec))
    }
}

/// Checks a session name before it reaches tmux: tmux silently rewrites `.` and `:`,
/// and a leading `=`/`-` would be read as target syntax or an option.
pub fn validate_session_name(name: &str) -> Result<(), Error> {
    let reason = if name.is_empty() {
        Some("it is empty")
    } else if name.contains([':', '.']) {
        Some("tmux does not allow ':' or '.' in session names")
    } else if name.starts_with(['=', '-']) {
        Some("it may not start with '=' or '-'")
    } else if name.chars().any(char::is_control) || name.contains(' ') {
        Some("it may not contain spaces or control characters")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(Error::InvalidName {
            name: name.to_string(),
            reason,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pane_ids_are_percent_digits() {
        assert_eq!(PaneId::parse("%12").unwrap().as_str(), "%12");
        for bad in ["", "%", "12", "%1a", "%-1", " %1"] {
            assert!(PaneId::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn buffer_names_are_unique_and_plain() {
        let a = BufferName::unique();
        let b = BufferName::unique();
        assert_ne!(a, b);
        assert!(BufferName::new(a.as_str()).is_ok());
        for bad in ["", "a b", "a;b", "a'b", "#{x}"] {
            assert!(BufferName::new(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn session_names_tmux_would_rewrite_are_refused() {
        assert!(validate_session_name("loop-octo-repo-15").is_ok());
        for bad in ["", "a.b", "a:b", "=a", "-a", "a b", "a\nb"] {
            assert!(validate_session_name(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn socket_from_config() {
        assert_eq!(Socket::from_config(""), Socket::Default);
        assert_eq!(Socket::from_config("x"), Socket::Name("x".into()));
    }

    #[test]
    fn not_installed_says_how_to_install() {
        assert!(
            Error::NotInstalled
                .to_string()
                .contains("install tmux (e.g. apt-get install tmux)")
        );
    }
}
