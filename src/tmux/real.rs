//! The real tmux: each operation is one `tmux` client invocation (argv from
//! [`super::argv`]) run with `tokio::process` — never a shell, never blocking the
//! runtime — and bounded by the probe timeout; a child still running at the timeout is
//! killed.

use super::argv;
use super::env_handoff::EnvHandoff;
use super::{BufferName, Error, Liveness, PaneId, Paste, SessionInfo, Socket, SpawnSpec, Tmux};
use crate::config::Config;
use crate::secrets::{ChildEnv, SessionEntries};
use crate::ssh::{SshError, Transport};
use futures::future::BoxFuture;
use std::ffi::OsString;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;

/// How long a paste whose connection dropped is asked again here before it is left
/// [`Error::InDoubt`], for the paste path to hold and settle once the host is back.
const RESOLVE_FOR: Duration = Duration::from_secs(10);

/// How often, meanwhile.
const RESOLVE_POLL: Duration = Duration::from_millis(500);

/// Talks to one tmux server.
#[derive(Debug, Clone)]
pub struct RealTmux {
    socket: Socket,
    timeout: Duration,
    program: OsString,
    search_path: Option<OsString>,
    /// What every tmux client — and so a server it starts — and every new session gets
    /// of our environment: no secrets (SPEC §14.4).
    child_env: ChildEnv,
    /// How passed values reach a new session off argv; without it they go as `-e`.
    env_handoff: Option<EnvHandoff>,
    /// The host this server runs on, when not this one: every invocation goes over its
    /// SSH connection, and `program` is the host's tmux.
    remote: Option<Arc<Transport>>,
}

/// What one invocation printed.
struct Output {
    success: bool,
    stdout: String,
    stderr: String,
}

impl RealTmux {
    pub fn new(socket: Socket, timeout: Duration) -> Self {
        Self {
            socket,
            timeout,
            program: "tmux".into(),
            search_path: None,
            child_env: ChildEnv::default(),
            env_handoff: None,
            remote: None,
        }
    }

    /// The tmux server of the remote user on `transport`'s host (its default server, or
    /// `socket`), run as `program` there. Passed values (`sessions.passEnv`) never go to
    /// another host: its harness uses its own credentials there.
    pub fn remote(
        transport: Arc<Transport>,
        program: &str,
        socket: Socket,
        timeout: Duration,
    ) -> Self {
        Self {
            program: program.into(),
            remote: Some(transport),
            ..Self::new(socket, timeout)
        }
    }

    /// From `sessions.tmux` (its `socket` already carries `THE_LOOP_TMUX_SOCKET`), with
    /// the environment policy of `sessions.passEnv` and `server.webhookSecretEnv`.
    pub fn from_config(config: &Config) -> Self {
        let tmux = &config.sessions.tmux;
        Self::new(
            Socket::from_config(&tmux.socket),
            Duration::from_secs(tmux.probe_timeout_seconds.max(1)),
        )
        .with_child_env(config.child_env())
    }

    /// Replaces the environment policy (the default withholds the token variables and
    /// the default webhook-secret variable).
    pub fn with_child_env(mut self, child_env: ChildEnv) -> Self {
        self.child_env = child_env;
        self
    }

    /// Hands passed values (`sessions.passEnv`) to new sessions through a private file
    /// and `exec-env`, not as `-e NAME=VALUE` in the tmux client's argv, which other
    /// local users can read in the process table; and starts a session whose files are
    /// to be private under umask 077 the same way. Every command that spawns sets it.
    pub fn with_env_handoff(mut self, handoff: EnvHandoff) -> Self {
        self.env_handoff = Some(handoff);
        self
    }

    /// Looks `tmux` up on this `PATH` instead of the process's (tests use it to show
    /// what happens without tmux).
    pub fn with_search_path(mut self, path: impl Into<OsString>) -> Self {
        self.search_path = Some(path.into());
        self
    }

    pub fn socket(&self) -> &Socket {
        &self.socket
    }

    /// Runs `tmux ARGS`, feeding `stdin` when given, within the timeout.
    ///
    /// A server that exits while we connect (it does so when its last session is
    /// killed) answers "server exited unexpectedly" or "lost server"; the command is retried so the
    /// answer comes from whatever server is there next (often none: "absent").
    async fn run(&self, args: Vec<String>, stdin: Option<&[u8]>) -> Result<Output, Error> {
        self.run_as(args, stdin, None).await
    }

    /// [`RealTmux::run`] with the client's `PATH` set to `client_path`: tmux gives a new
    /// pane the `PATH` of the client that created it, whatever `-e PATH=` says (tmux
    /// 3.3 `spawn.c`), so a session's `PATH` (SPEC §16.5) must be the client's.
    async fn run_as(
        &self,
        args: Vec<String>,
        stdin: Option<&[u8]>,
        client_path: Option<&str>,
    ) -> Result<Output, Error> {
        let attempts = async {
            let mut tries = 0;
            loop {
                let out = self.run_once(&args, stdin, client_path).await?;
                tries += 1;
                let racing = ["server exited unexpectedly", "lost server"]
                    .iter()
                    .any(|m| out.stderr.contains(m));
                if out.success || !racing || tries == 3 {
                    return Ok::<_, std::io::Error>(out);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        match tokio::time::timeout(self.timeout, attempts).await {
            Err(_) => Err(Error::Timeout {
                command: argv::display_command("tmux", &args),
                after: self.timeout,
            }),
            Ok(Err(e)) if remote_failure(&e).is_some() => Err(remote_failure(&e)
                .map(unreachable_or_io)
                .unwrap_or(Error::NotInstalled)),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::NotInstalled),
            Ok(Err(source)) => Err(Error::Io {
                command: argv::display_command("tmux", &args),
                source,
            }),
            Ok(Ok(out)) => Ok(out),
        }
    }

    async fn run_once(
        &self,
        args: &[String],
        stdin: Option<&[u8]>,
        client_path: Option<&str>,
    ) -> std::io::Result<Output> {
        if let Some(transport) = &self.remote {
            return self.run_remote(transport, args, stdin, client_path).await;
        }
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(args)
            // A supervisor started inside tmux must still reach the configured server.
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A timed-out invocation is killed when its future is dropped.
            .kill_on_drop(true);
        // A server this client starts inherits its environment: keep secrets out of it.
        self.child_env.scrub(&mut command);
        if let Some(path) = &self.search_path {
            command.env("PATH", path);
        } else if let Some(path) = client_path {
            command.env("PATH", path);
        }
        let mut child = command.spawn()?;
        if let (Some(data), Some(mut pipe)) = (stdin, child.stdin.take()) {
            pipe.write_all(data).await?;
            pipe.shutdown().await?;
        }
        let out = child.wait_with_output().await?;
        Ok(Output {
            success: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }

    /// One invocation on the host, over its connection. The timeout is the caller's
    /// (`run_as`); a host that cannot be reached is [`Error::Unreachable`], told apart
    /// from tmux's own failures.
    async fn run_remote(
        &self,
        transport: &Transport,
        args: &[String],
        stdin: Option<&[u8]>,
        client_path: Option<&str>,
    ) -> std::io::Result<Output> {
        let mut argv = Vec::with_capacity(args.len() + 3);
        if let Some(path) = client_path {
            argv.extend(["env".to_string(), format!("PATH={path}")]);
        }
        argv.push(self.program.to_string_lossy().into_owned());
        argv.extend(args.iter().cloned());
        match transport.run(&argv, stdin, self.timeout).await {
            Ok(out) => Ok(Output {
                success: out.success,
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: out.stderr,
            }),
            Err(error) => Err(std::io::Error::other(RemoteFailure(error))),
        }
    }

    /// Runs a command that must succeed; "no such session/pane" becomes
    /// [`Error::SessionMissing`] for `target`.
    async fn run_ok(
        &self,
        args: Vec<String>,
        stdin: Option<&[u8]>,
        target: &str,
    ) -> Result<String, Error> {
        let shown = argv::display_command("tmux", &args);
        let out = self.run(args, stdin).await?;
        if out.success {
            Ok(out.stdout)
        } else if argv::is_missing(&out.stderr) {
            Err(Error::SessionMissing {
                target: target.to_string(),
            })
        } else {
            Err(Error::Failed {
                command: shown,
                stderr: out.stderr,
            })
        }
    }

    /// Runs a read-only query: its output parsed, or `when_missing` when tmux says
    /// there is no such session (or no server).
    async fn query<T>(
        &self,
        args: Vec<String>,
        parse: impl FnOnce(&str) -> Result<T, String>,
        when_missing: T,
    ) -> Result<T, Error> {
        let shown = argv::display_command("tmux", &args);
        let out = self.run(args, None).await?;
        if out.success {
            parse(&out.stdout).map_err(|output| Error::UnexpectedOutput {
                command: shown,
                output,
            })
        } else if argv::is_missing(&out.stderr) {
            Ok(when_missing)
        } else {
            Err(Error::Failed {
                command: shown,
                stderr: out.stderr,
            })
        }
    }

    async fn display_number<N: std::str::FromStr>(
        &self,
        pane: &PaneId,
        format: &str,
    ) -> Result<N, Error> {
        let args = argv::display(&self.socket, pane, format);
        let shown = argv::display_command("tmux", &args);
        let out = self.run_ok(args, None, pane.as_str()).await?;
        out.trim().parse().map_err(|_| Error::UnexpectedOutput {
            command: shown,
            output: out,
        })
    }

    /// A paste on another host, exactly once across a dropped connection: the buffer is
    /// loaded first (a drop there pastes nothing), then pasted and deleted by a second
    /// invocation. When the connection drops during that one, nobody saw whether it ran,
    /// so it is settled ([`Self::settle_paste`]) once the host answers: a buffer already
    /// pasted is gone. A host that stays away for [`RESOLVE_FOR`] leaves it
    /// [`Error::InDoubt`], its buffer loaded there, for the paste path to hold and settle
    /// later ([`Tmux::resolve_paste`]).
    async fn paste_remote(
        &self,
        buffer: &BufferName,
        data: &[u8],
        pane: &PaneId,
        paste: Paste,
    ) -> Result<(), Error> {
        self.run_ok(
            argv::load_buffer(&self.socket, buffer),
            Some(data),
            pane.as_str(),
        )
        .await?;
        let args = argv::paste_loaded(&self.socket, buffer, pane, paste);
        match self.run_ok(args, None, pane.as_str()).await {
            Ok(out) => pane_alive(&out, pane),
            Err(error @ (Error::Unreachable { .. } | Error::Timeout { .. })) => {
                tracing::warn!(%pane, "the host dropped while pasting ({error}); asking again");
                self.settle_paste(buffer, pane, paste, RESOLVE_FOR)
                    .await
                    .map(drop)
            }
            Err(error) => Err(error),
        }
    }

    /// Pastes `buffer` if it is still loaded (`true`), or finds it gone (`false`: the
    /// paste had arrived), asking again while the host does not answer, for up to
    /// `within`; then [`Error::InDoubt`].
    async fn settle_paste(
        &self,
        buffer: &BufferName,
        pane: &PaneId,
        paste: Paste,
        within: Duration,
    ) -> Result<bool, Error> {
        let started = tokio::time::Instant::now();
        loop {
            let args = argv::paste_loaded(&self.socket, buffer, pane, paste);
            match self.run_ok(args, None, pane.as_str()).await {
                Ok(out) => return pane_alive(&out, pane).map(|()| true),
                Err(Error::Failed { stderr, .. }) if stderr.contains("no buffer") => {
                    tracing::info!(%pane, "the paste the dropped connection ran had arrived");
                    return Ok(false);
                }
                Err(error @ (Error::Unreachable { .. } | Error::Timeout { .. })) => {
                    if started.elapsed() >= within {
                        return Err(Error::InDoubt {
                            pane: pane.to_string(),
                            buffer: buffer.clone(),
                            reason: error.to_string(),
                        });
                    }
                    tokio::time::sleep(RESOLVE_POLL).await;
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// One `new-session` invocation for the finished spec.
    async fn create(&self, spec: &SpawnSpec) -> Result<PaneId, Error> {
        let args = argv::new_session(&self.socket, spec)?;
        let shown = argv::display_command("tmux", &args);
        let path = spec
            .env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.as_str());
        let out = self.run_as(args, None, path).await?;
        // `set-option` runs after `new-session` in the same invocation; when only it
        // fails (best effort), the pane id is printed and the session is kept.
        match argv::parse_pane_id(&out.stdout) {
            Ok(pane) => {
                if !out.success {
                    tracing::warn!(session = %spec.name, "remain-on-exit not set: {}", out.stderr);
                }
                Ok(pane)
            }
            Err(_) if out.stderr.contains("duplicate session") => Err(Error::SessionBusy {
                name: spec.name.clone(),
            }),
            Err(_) if !out.success => Err(Error::Failed {
                command: shown,
                stderr: out.stderr,
            }),
            Err(output) => Err(Error::UnexpectedOutput {
                command: shown,
                output,
            }),
        }
    }
}

/// An ssh failure carried through the runner's `io::Error`.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
struct RemoteFailure(SshError);

fn remote_failure(error: &std::io::Error) -> Option<&SshError> {
    error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<RemoteFailure>())
        .map(|failure| &failure.0)
}

fn unreachable_or_io(error: &SshError) -> Error {
    if error.is_unreachable() {
        Error::Unreachable {
            reason: error.to_string(),
        }
    } else {
        Error::Remote {
            reason: error.to_string(),
        }
    }
}

impl Tmux for RealTmux {
    fn new_front_window<'a>(
        &'a self,
        window: &'a str,
        spec: &'a SpawnSpec,
    ) -> BoxFuture<'a, Result<PaneId, Error>> {
        Box::pin(async move {
            if self.remote.is_some() {
                return Err(Error::InvalidSpawn(
                    "a second window is opened only on this machine's tmux".into(),
                ));
            }
            let mut spec = spec.clone();
            spec.env.extend(self.child_env.session_entries().cleared);
            let args = argv::new_front_window(&self.socket, window, &spec)?;
            let shown = argv::display_command("tmux", &args);
            let out = self.run_as(args, None, None).await?;
            argv::parse_pane_id(&out.stdout).map_err(|output| {
                if out.success {
                    Error::UnexpectedOutput {
                        command: shown,
                        output,
                    }
                } else {
                    Error::Failed {
                        command: shown,
                        stderr: out.stderr,
                    }
                }
            })
        })
    }

    fn create_session<'a>(&'a self, spec: &'a SpawnSpec) -> BoxFuture<'a, Result<PaneId, Error>> {
        Box::pin(async move {
            // The server may be one the-loop did not start (the operator's default), whose
            // global environment holds a token: the session's own entries override it.
            let mut spec = spec.clone();
            let SessionEntries { cleared, passed } = self.child_env.session_entries();
            spec.env.extend(cleared);
            // Secrets stay on this machine: another host's harness brings its own.
            let passed = if self.remote.is_some() {
                Vec::new()
            } else {
                passed
            };
            let handed = match &self.env_handoff {
                Some(handoff) if !passed.is_empty() || spec.private_files => {
                    let (argv, file) = handoff
                        .wrap(&passed, spec.private_files, &spec.argv)
                        .map_err(|source| Error::Io {
                            command: "write the session's environment file".into(),
                            source,
                        })?;
                    spec.argv = argv;
                    file
                }
                _ => {
                    if spec.private_files && self.remote.is_none() {
                        // Only a tmux built without the hand-off (tests) gets here; the
                        // worktree's own directory is 0700 all the same.
                        tracing::warn!(session = %spec.name, "no exec-env hand-off: the harness keeps the tmux server's umask");
                    }
                    spec.env.extend(passed);
                    None
                }
            };
            let created = self.create(&spec).await;
            if created.is_err()
                && let Some(file) = handed
            {
                // No shim will take it.
                let _ = std::fs::remove_file(file);
            }
            created
        })
    }
    fn probe<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Liveness, Error>> {
        Box::pin(self.query(
            argv::liveness(&self.socket, name),
            argv::parse_liveness,
            Liveness::Absent,
        ))
    }

    fn kill_session<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            self.run_ok(argv::kill_session(&self.socket, name), None, name)
                .await
                .map(drop)
        })
    }

    fn paste_text<'a>(
        &'a self,
        buffer: &'a BufferName,
        data: &'a [u8],
        pane: &'a PaneId,
        paste: Paste,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            if self.remote.is_some() {
                return self.paste_remote(buffer, data, pane, paste).await;
            }
            // `tmux_interface` builds this argv but cannot feed a child's stdin, so the
            // runner does (decision 0002).
            let args = argv::paste_text(&self.socket, buffer, pane, paste);
            let out = self.run_ok(args, Some(data), pane.as_str()).await?;
            pane_alive(&out, pane)
        })
    }

    fn delete_buffer<'a>(&'a self, buffer: &'a BufferName) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            self.run_ok(
                argv::delete_buffer(&self.socket, buffer),
                None,
                buffer.as_str(),
            )
            .await
            .map(drop)
        })
    }

    fn resolve_paste<'a>(
        &'a self,
        buffer: &'a BufferName,
        pane: &'a PaneId,
        paste: Paste,
    ) -> BoxFuture<'a, Result<bool, Error>> {
        // One try: a host still away leaves it in doubt, and the paste path asks again.
        Box::pin(self.settle_paste(buffer, pane, paste, Duration::ZERO))
    }

    fn capture_pane<'a>(
        &'a self,
        pane: &'a PaneId,
        with_escapes: bool,
    ) -> BoxFuture<'a, Result<String, Error>> {
        Box::pin(async move {
            let args = argv::capture_pane(&self.socket, pane, with_escapes);
            self.run_ok(args, None, pane.as_str()).await
        })
    }

    fn window_activity<'a>(&'a self, pane: &'a PaneId) -> BoxFuture<'a, Result<u64, Error>> {
        Box::pin(self.display_number(pane, "#{window_activity}"))
    }

    fn pane_pid<'a>(&'a self, pane: &'a PaneId) -> BoxFuture<'a, Result<u32, Error>> {
        Box::pin(self.display_number(pane, "#{pane_pid}"))
    }

    fn list_sessions<'a>(&'a self) -> BoxFuture<'a, Result<Vec<SessionInfo>, Error>> {
        Box::pin(self.query(
            argv::list_sessions(&self.socket),
            argv::parse_sessions,
            Vec::new(),
        ))
    }
}

/// What a paste printed: the guard's marker when the pane was dead.
fn pane_alive(out: &str, pane: &PaneId) -> Result<(), Error> {
    if out.trim() == argv::PANE_DEAD_MARKER {
        Err(Error::PaneDead {
            pane: pane.to_string(),
        })
    } else {
        Ok(())
    }
}
