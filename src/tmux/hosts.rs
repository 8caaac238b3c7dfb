//! The tmux servers of other hosts (`hosts:` in the config): each a [`RemoteHost`] with
//! its SSH transport and the remote user's tmux server reached through it. A session
//! names its host in its record; everything the product does to its pane goes to that
//! host's server through the same [`Tmux`] trait.

use super::{RealTmux, Socket, Tmux};
use crate::ssh::{Destination, SshError, Transport};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Where the-loop's binary goes on a host, under its state directory.
pub const REMOTE_BIN: &str = "bin/the-loop";

/// One other host.
pub struct RemoteHost {
    pub transport: Arc<Transport>,
    pub tmux: Arc<dyn Tmux>,
    /// The host's tmux program.
    pub tmux_program: String,
    /// `hosts[].stateDir` as written: a leading `~/` is the remote user's home.
    state_dir: String,
}

impl std::fmt::Debug for RemoteHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteHost")
            .field("name", &self.transport.name())
            .field("state_dir", &self.state_dir)
            .finish_non_exhaustive()
    }
}

/// A host is who its name says (one entry per name in the config).
impl PartialEq for RemoteHost {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl RemoteHost {
    /// Over `transport`, with the host's tmux program and state directory.
    pub fn new(
        transport: Arc<Transport>,
        tmux_program: &str,
        state_dir: &str,
        timeout: Duration,
    ) -> Self {
        let tmux = RealTmux::remote(
            Arc::clone(&transport),
            tmux_program,
            Socket::Default,
            timeout,
        );
        Self {
            transport,
            tmux: Arc::new(tmux),
            tmux_program: tmux_program.to_string(),
            state_dir: state_dir.to_string(),
        }
    }

    pub fn name(&self) -> &str {
        self.transport.name()
    }

    /// The state directory as a path on the host: `~/` resolved against the remote
    /// `HOME` the connection learned. `None` before the host was reached.
    pub fn state_dir(&self) -> Option<String> {
        resolve_home(&self.state_dir, self.transport.remote_home().as_deref())
    }

    /// The `PATH` of a pane on the host: `<stateDir>/bin` first, then the login's own.
    /// `None` before the host was reached.
    pub fn pane_path(&self) -> Option<String> {
        let bin = self.bin()?;
        let dir = bin.rsplit_once('/').map_or("", |(dir, _)| dir).to_string();
        let rest = self.transport.remote_path().unwrap_or_default();
        Some(
            std::iter::once(dir.as_str())
                .chain(rest.split(':').filter(|p| !p.is_empty() && *p != dir))
                .collect::<Vec<_>>()
                .join(":"),
        )
    }

    /// `<stateDir>/bin/the-loop`: the binary `hosts install` puts there.
    pub fn bin(&self) -> Option<String> {
        self.state_dir().map(|dir| format!("{dir}/{REMOTE_BIN}"))
    }

    /// the-loop installed on the host, when it is this very version: its path and what
    /// it said (`the-loop 0.1.0`). Else why not, saying what to run.
    pub async fn installed(&self) -> Result<(String, String), String> {
        let name = self.name();
        let bin = self
            .bin()
            .ok_or_else(|| format!("host `{name}` did not say its HOME"))?;
        let argv = [bin.clone(), "--version".to_string()];
        let out = self
            .transport
            .run(&argv, None, Duration::from_secs(15))
            .await
            .map_err(|e| e.to_string())?;
        let said = String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_string();
        let ours = env!("CARGO_PKG_VERSION");
        if !out.success {
            Err(format!(
                "{bin} is missing: run `the-loop hosts install {name}`"
            ))
        } else if said.split_whitespace().any(|w| w == ours) {
            Ok((bin, said))
        } else {
            Err(format!(
                "{bin} is {said}, this is {ours}: run `the-loop hosts install {name}`"
            ))
        }
    }

    /// The operator's terminal attached to session `name` in this host's tmux:
    /// `ssh … -t <dest> -- tmux attach-session -t =NAME [-r]` (no `TMUX` there, so
    /// never `switch-client`).
    pub fn attach(&self, name: &str, read_only: bool) -> Result<std::process::Command, SshError> {
        let mut argv = vec![self.tmux_program.clone()];
        argv.extend(super::argv::attach(&Socket::Default, name, read_only, None).args);
        self.transport.interactive(&argv)
    }

    /// `<stateDir>/operator.sock` as written (`~/` resolved on the far side): where the
    /// host's agents find the supervisor, forwarded over the connection.
    pub fn operator_socket(&self) -> String {
        self.in_state_dir("operator.sock")
    }

    /// `<stateDir>/<name>` as written (`~/` resolved on the far side).
    pub fn in_state_dir(&self, name: &str) -> String {
        format!("{}/{name}", self.state_dir.trim_end_matches('/'))
    }

    /// A remote path with a leading `~/` resolved against the remote `HOME`.
    pub fn resolve(&self, path: &str) -> Option<String> {
        resolve_home(path, self.transport.remote_home().as_deref())
    }
}

pub use crate::ssh::resolve_home;

/// Every configured host, by name. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Hosts(Arc<BTreeMap<String, Arc<RemoteHost>>>);

impl Hosts {
    pub fn new(hosts: impl IntoIterator<Item = RemoteHost>) -> Self {
        Self(Arc::new(
            hosts
                .into_iter()
                .map(|h| (h.name().to_string(), Arc::new(h)))
                .collect(),
        ))
    }

    /// The hosts of `config`, their control sockets in `control_dir` (private), ssh
    /// given `child_env` of our environment.
    pub fn from_config(config: &crate::config::Config, control_dir: &Path) -> Self {
        let timeout = Duration::from_secs(config.sessions.tmux.probe_timeout_seconds.max(1));
        let mut hosts = Vec::new();
        for host in &config.hosts {
            let dest = Destination {
                name: host.name.clone(),
                ssh: host.ssh.clone(),
                config_file: host.ssh_config_file(),
                connect_timeout: Duration::from_secs(host.connect_timeout_seconds),
                server_alive: Duration::from_secs(host.server_alive_seconds),
            };
            let transport = Transport::new(dest, control_dir).with_child_env(config.child_env());
            hosts.push(RemoteHost::new(
                Arc::new(transport),
                &host.tmux,
                &host.state_dir,
                timeout,
            ));
        }
        Self::new(hosts)
    }

    pub fn get(&self, name: &str) -> Option<&Arc<RemoteHost>> {
        self.0.get(name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<RemoteHost>> {
        self.0.values()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Closes every host's connection (`ssh -O exit`, each bounded), all at once: what
    /// the supervisor does last, so no master outlives it holding a login and its
    /// agents' forward on the host.
    pub async fn disconnect_all(&self) {
        let all = self.iter().map(|host| host.transport.disconnect());
        futures::future::join_all(all).await;
    }
}
