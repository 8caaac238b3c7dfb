//! A local codex session with its own app server (`sessions.codexChannel: app-server`,
//! issue 41): the server is the session's first process — it runs the agent, so the
//! session's environment hand-off and private umask are its — on a socket in a 0700
//! directory under the state root; once it listens, the TUI attached to it opens in
//! front (window 0, the pane the-loop tracks and the operator sees), and the server's
//! window stays behind it, outliving the supervisor as the pane does.

use super::sessions::{SessionError, Sessions};
use crate::channel::ChannelRecord;
use crate::config::CodexChannel;
use crate::harness::Harness;
use crate::harness::app_server::APP_SERVER_SINCE;
use crate::tmux::{PaneId, SpawnSpec};
use crate::work_item::WorkItemRef;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long the server may take to listen before the spawn fails.
const LISTEN_WITHIN: Duration = Duration::from_secs(20);

/// The TUI's window.
const TUI_WINDOW: &str = "codex";

impl Sessions {
    /// `harness` attached to an app server of its own, when the config asks for one (the
    /// default) and the session is a built-in codex one on this machine, of release
    /// `version` [`APP_SERVER_SINCE`] or later; its socket's directory made (0700) and
    /// an old socket removed. Else the TUI alone, pasted into.
    pub(super) fn with_codex_app_server(
        &self,
        harness: Harness,
        item: &WorkItemRef,
        cwd: &Path,
        version: Option<&str>,
    ) -> Result<Harness, SessionError> {
        let settings = self.settings();
        if settings.sessions.codex_channel != CodexChannel::AppServer {
            return Ok(harness);
        }
        if !version.is_some_and(|v| crate::harness::version::at_least(v, APP_SERVER_SINCE)) {
            tracing::info!(
                work_item = %item,
                "codex {} has no app server the-loop knows (it needs {APP_SERVER_SINCE} or later): its TUI runs alone, pasted into",
                version.unwrap_or("of an unknown release")
            );
            return Ok(harness);
        }
        let dir = settings.home.join("channels").join(item.slug());
        let socket = dir.join("codex.sock");
        let harness = harness.with_app_server(&socket, cwd);
        if harness.app_server_socket().is_none() {
            return Ok(harness);
        }
        crate::fsutil::create_private_dir_all(&dir)
            .map_err(|e| SessionError::Channel(format!("cannot create {}: {e}", dir.display())))?;
        match std::fs::remove_file(&socket) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(SessionError::Channel(format!(
                    "cannot remove the old {}: {e}",
                    socket.display()
                )));
            }
        }
        Ok(harness)
    }

    /// Starts the session `spec` describes: with an app server first (`spec`'s
    /// environment, the TUI's argv replaced by the server's), then, once it listens, the
    /// TUI in front; else the pane alone. The TUI's pane, and the channel to record.
    pub(super) async fn spawn_panes(
        &self,
        tmux: &dyn crate::tmux::Tmux,
        harness: &Harness,
        spec: SpawnSpec,
    ) -> Result<(PaneId, Option<ChannelRecord>), SessionError> {
        let (Some(server_argv), Some(socket)) =
            (harness.app_server_argv(), harness.app_server_socket())
        else {
            return Ok((tmux.new_session(&spec).await?, None));
        };
        let socket = socket.to_path_buf();
        let server = tmux
            .new_session(&SpawnSpec {
                argv: server_argv,
                ..spec.clone()
            })
            .await?;
        if let Err(error) = listening(&socket).await {
            let _ = tmux.kill_session(&spec.name).await;
            return Err(error);
        }
        // The TUI runs none of the agent's commands: no hand-off, no secrets.
        let tui = SpawnSpec {
            private_files: false,
            ..spec
        };
        match tmux.new_front_window(TUI_WINDOW, &tui).await {
            Ok(pane) => Ok((
                pane,
                Some(ChannelRecord::CodexAppServer {
                    socket,
                    server_pane: Some(server.to_string()),
                }),
            )),
            Err(error) => {
                let _ = tmux.kill_session(&tui.name).await;
                Err(error.into())
            }
        }
    }
}

/// Waits until the server's socket accepts a connection, and checks it is private.
async fn listening(socket: &PathBuf) -> Result<(), SessionError> {
    let deadline = tokio::time::Instant::now() + LISTEN_WITHIN;
    loop {
        if tokio::net::UnixStream::connect(socket).await.is_ok() {
            return private_socket(socket);
        }
        if tokio::time::Instant::now() > deadline {
            return Err(SessionError::Channel(format!(
                "codex's app server did not listen on {} within {LISTEN_WITHIN:?}; see its window in the session's tmux",
                socket.display()
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Codex 0.171.0 makes `socket` a symlink to a socket in `/tmp/codex-daemon-<uid>/`:
/// whoever can open that socket drives the agent. It and its directory must be this
/// user's, and the directory closed to everyone else — else a local user who made the
/// directory first could be listening in codex's place.
pub(crate) fn private_socket(socket: &Path) -> Result<(), SessionError> {
    use std::os::unix::fs::MetadataExt;
    let refuse = |why: String| {
        SessionError::Channel(format!(
            "codex's app server socket {} is not private: {why}; nothing was started in it",
            socket.display()
        ))
    };
    let target =
        std::fs::canonicalize(socket).map_err(|e| refuse(format!("cannot resolve it ({e})")))?;
    let me = nix::unistd::getuid().as_raw();
    let socket_meta =
        std::fs::metadata(&target).map_err(|e| refuse(format!("cannot read it ({e})")))?;
    if socket_meta.uid() != me {
        return Err(refuse(format!(
            "{} belongs to uid {}",
            target.display(),
            socket_meta.uid()
        )));
    }
    let dir = target.parent().unwrap_or(Path::new("/"));
    let dir_meta = std::fs::metadata(dir)
        .map_err(|e| refuse(format!("cannot read {} ({e})", dir.display())))?;
    if dir_meta.uid() != me || dir_meta.mode() & 0o077 != 0 {
        return Err(refuse(format!(
            "its directory {} is uid {}'s with mode {:o} (must be yours, 0700)",
            dir.display(),
            dir_meta.uid(),
            dir_meta.mode() & 0o7777
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::private_socket;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_socket_in_a_directory_others_can_enter_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let daemon = dir.path().join("codex-daemon");
        std::fs::create_dir(&daemon).unwrap();
        let real = daemon.join("abc");
        let _listener = std::os::unix::net::UnixListener::bind(&real).unwrap();
        let link = dir.path().join("codex.sock");
        std::os::unix::fs::symlink(&real, &link).unwrap();

        std::fs::set_permissions(&daemon, std::fs::Permissions::from_mode(0o700)).unwrap();
        private_socket(&link).unwrap();

        std::fs::set_permissions(&daemon, std::fs::Permissions::from_mode(0o755)).unwrap();
        let refused = private_socket(&link).unwrap_err().to_string();
        assert!(refused.contains("must be yours, 0700"), "{refused}");

        std::fs::remove_file(&real).unwrap();
        let gone = private_socket(&link).unwrap_err().to_string();
        assert!(gone.contains("cannot resolve"), "{gone}");
    }
}
