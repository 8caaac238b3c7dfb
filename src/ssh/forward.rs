//! The host's agents' way back: Unix sockets on the host forwarded, over the master,
//! to sockets here (`-O forward -R`), set up once per master connection.

use super::transport::{CHECK_TIMEOUT, Transport};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::PoisonError;

/// A socket on the host (`~/` is the remote home) that reaches `local` here.
#[derive(Debug, Clone)]
pub(super) struct Forward {
    remote: String,
    local: PathBuf,
}

impl Transport {
    /// Forwards the Unix socket `remote` on the host (a leading `~/` is the remote
    /// home) to `local` here, on this connection and every one after it: how the
    /// host's agents reach the supervisor without any port. Set up on the next
    /// [`Transport::connect`].
    pub fn forward_on_connect(&self, remote: &str, local: &Path) {
        self.forwards
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Forward {
                remote: remote.to_string(),
                local: local.to_path_buf(),
            });
        *self
            .forwarded_on
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Why the host's agents cannot reach the supervisor: the forward of their socket
    /// failed on this connection (`None` when it works or was not asked for).
    pub fn forward_problem(&self) -> Option<String> {
        self.forward_problem
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Forwards wait to be set up on the running master.
    pub(super) fn forwards_pending(&self) -> bool {
        let done = *self
            .forwarded_on
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let any = !self
            .forwards
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty();
        any && self.master_pid().is_some() && done != self.master_pid()
    }

    /// The forwards on the running master, once per master: the remote directory made
    /// private, a socket file left by an earlier connection removed (sshd will not bind
    /// over it), then `-O forward -R`. A failure is logged and kept
    /// ([`Transport::forward_problem`]): the host still runs its sessions; its agents
    /// then cannot reach the supervisor, and say so.
    pub(super) async fn set_up_forwards(&self) {
        if !self.forwards_pending() {
            return;
        }
        let master = self.master_pid();
        let forwards = self
            .forwards
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let home = self.remote_home();
        let mut problem = None;
        for forward in forwards {
            if let Err(reason) = self.forward(&forward, home.as_deref()).await {
                tracing::warn!(host = %self.dest.name, remote = %forward.remote, "socket not forwarded: {reason}");
                problem = Some(format!("{} not forwarded: {reason}", forward.remote));
                break;
            }
        }
        // Tried once per master, failed or not: a host that refuses forwarding (sshd's
        // `AllowStreamLocalForwarding`, `AllowTcpForwarding no`) refuses it every time.
        *self
            .forward_problem
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = problem;
        *self
            .forwarded_on
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = master;
    }

    async fn forward(&self, forward: &Forward, home: Option<&str>) -> Result<(), String> {
        let remote = super::resolve_home(&forward.remote, home).ok_or("no remote HOME")?;
        // ssh splits `-R remote:local` at the colons: a path with one (a HOME the host
        // reported so) could name another socket here.
        if remote.contains(':') || remote.chars().any(char::is_control) {
            return Err(format!(
                "{remote:?} cannot be forwarded: a path with ':' or control characters"
            ));
        }
        let dir = remote
            .rsplit_once('/')
            .map_or("/", |(dir, _)| dir)
            .to_string();
        let steps = [
            vec![
                "mkdir".to_string(),
                "-p".into(),
                "-m".into(),
                "700".into(),
                dir,
            ],
            vec!["rm".to_string(), "-f".into(), remote.clone()],
        ];
        for argv in steps {
            let out = self
                .exec(&argv, None, self.dest.connect_timeout)
                .await
                .map_err(|e| e.to_string())?;
            if !out.success {
                return Err(format!("`{}` failed: {}", argv.join(" "), out.stderr));
            }
        }
        self.control_forward("forward", &remote, &forward.local)
            .await
    }

    /// `-O forward|cancel -R remote:local` on the master.
    async fn control_forward(&self, verb: &str, remote: &str, local: &Path) -> Result<(), String> {
        if local.to_string_lossy().contains(':') {
            return Err(format!(
                "{} cannot be forwarded to: a path with ':'",
                local.display()
            ));
        }
        let mut spec = OsString::from(remote);
        spec.push(":");
        spec.push(local);
        // `ClearAllForwardings` would clear this request's own `-R` before it is sent
        // (the master keeps it: nothing of the config is forwarded there).
        let mut args = self.base_args(false);
        if let Some(at) = args.iter().position(|a| a == "ClearAllForwardings=yes") {
            args.drain(at - 1..=at);
        }
        args.extend([
            "-O".into(),
            verb.into(),
            "-R".into(),
            spec,
            self.dest.ssh.clone().into(),
        ]);
        let out = tokio::time::timeout(
            CHECK_TIMEOUT,
            self.command(args).stdin(Stdio::null()).output(),
        )
        .await
        .map_err(|_| "the master did not answer".to_string())?
        .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        }
    }

    /// Whether the host lets a socket there be forwarded here (`hosts check`): forwards
    /// `remote` to `local` on the running master, then cancels it and removes the file.
    pub async fn try_forward(&self, remote: &str, local: &Path) -> Result<(), String> {
        let forward = Forward {
            remote: remote.to_string(),
            local: local.to_path_buf(),
        };
        let home = self.remote_home();
        self.forward(&forward, home.as_deref()).await?;
        let resolved = super::resolve_home(remote, home.as_deref()).ok_or("no remote HOME")?;
        let _ = self.control_forward("cancel", &resolved, local).await;
        let _ = self
            .exec(
                &["rm".into(), "-f".into(), resolved],
                None,
                self.dest.connect_timeout,
            )
            .await;
        Ok(())
    }
}
