//! Other hosts over SSH: the operator's own `ssh` binary, one multiplexed connection per
//! host (a ControlMaster socket under the private state root), and the one place an
//! argv becomes a remote command line ([`quote`]). No daemon of ours runs on the far
//! side; what runs there is tmux, git, the harness and the-loop's own CLI, started
//! through this transport.
//!
//! Every invocation is argv only, `BatchMode=yes` (nothing ever prompts), with agent,
//! X11 and configured port forwardings off, and bounded by a timeout: a dropped host
//! makes calls fail, never hang. What the far side looks like (`HOME`, `PATH`) is
//! learned once per connection.

mod forward;
mod interactive;
pub mod quote;
mod state;
mod transport;

pub use quote::{QuoteError, command_line};
pub use state::HostState;
pub use transport::{Destination, Output, Stats, Transport};

use std::time::Duration;

/// A path on the host: `~/x` under its `home`; a path without `~` as it is; `None` when `~` needs a home not known.
pub fn resolve_home(path: &str, home: Option<&str>) -> Option<String> {
    if path == "~" {
        return home.map(str::to_string);
    }
    match path.strip_prefix("~/") {
        Some(rest) => home
            .filter(|h| !h.is_empty())
            .map(|h| format!("{}/{rest}", h.trim_end_matches('/'))),
        None => Some(path.to_string()),
    }
}

/// Why a host could not be used. Every message names the host and what to do.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SshError {
    #[error(
        "host `{host}`: cannot connect ({reason}); check that `ssh {destination}` works without a prompt (BatchMode: keys, known_hosts)"
    )]
    Connect {
        host: String,
        destination: String,
        reason: String,
    },
    #[error("host `{host}` dropped the connection while running `{command}` ({reason})")]
    Dropped {
        host: String,
        command: String,
        reason: String,
    },
    #[error(
        "host `{host}` did not answer `{command}` within {}s; its connection is replaced on the next call",
        .after.as_secs_f32()
    )]
    Timeout {
        host: String,
        command: String,
        after: Duration,
    },
    #[error(
        "the control socket path {path} is too long for a Unix socket ({len} bytes, at most {max}): use a shorter state root"
    )]
    SocketPathTooLong {
        path: String,
        len: usize,
        max: usize,
    },
    #[error("host `{host}`: {source}")]
    Quote {
        host: String,
        #[source]
        source: QuoteError,
    },
    #[error(
        "ssh was not found on PATH: install the OpenSSH client (e.g. apt-get install openssh-client)"
    )]
    NotInstalled,
    #[error("host `{host}`: could not run ssh: {reason}")]
    Io { host: String, reason: String },
}

impl SshError {
    /// The host could not be reached (as opposed to a command of ours that was wrong):
    /// what was asked of it may be asked again once it is back.
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self,
            Self::Connect { .. } | Self::Dropped { .. } | Self::Timeout { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_is_resolved_on_the_far_side_only() {
        assert_eq!(
            resolve_home("~/.local/state/the-loop", Some("/home/dev")).as_deref(),
            Some("/home/dev/.local/state/the-loop")
        );
        assert_eq!(resolve_home("~/x", None), None);
        assert_eq!(resolve_home("~/x", Some("")), None);
        assert_eq!(resolve_home("/srv/x", None).as_deref(), Some("/srv/x"));
        assert_eq!(resolve_home("~", Some("/h/")).as_deref(), Some("/h/"));
    }
}
