//! A harness's own protocol, where it has one, beside the paste path (issue 41): the
//! words of a delivery go in as a message of the protocol, an approval comes out as a
//! structured request and is answered as one, and a turn's start and end are told,
//! not read off a screen. One submodule per client protocol — `codex` (its app server:
//! JSON-RPC over WebSocket over a Unix socket), `opencode` (its HTTP server on a
//! loopback port, basic auth, server-sent events). Nothing here knows sessions or
//! panes: `session` calls it.

pub mod codex;
pub mod opencode;

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// A session's protocol channel, as its record keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ChannelRecord {
    /// Codex's app server in the session's tmux session, its TUI attached.
    CodexAppServer {
        /// Where it listens (`unix://` this path).
        socket: PathBuf,
        /// The pane it runs in (a hidden window of the session's tmux session).
        #[serde(
            rename = "serverPane",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        server_pane: Option<String>,
    },
    /// opencode's HTTP server in the session's tmux session, its TUI attached.
    OpencodeServer {
        /// The loopback port it listens on (`127.0.0.1` only).
        port: u16,
        /// The session's own opencode session (`ses_…`), created and shown by the-loop.
        session: String,
        /// The file holding the server's password (0600, in a 0700 directory).
        #[serde(rename = "passwordFile")]
        password_file: PathBuf,
        /// The pane the server runs in (a hidden window of the session's tmux session).
        #[serde(rename = "serverPane")]
        server_pane: String,
    },
}

impl ChannelRecord {
    /// How `dispatch.*` events and `sessions list` name it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::CodexAppServer { .. } => "codex-app-server",
            Self::OpencodeServer { .. } => "opencode-server",
        }
    }

    /// The pane of the server that runs the agent's commands, when it has one of its own.
    pub fn server_pane(&self) -> Option<&str> {
        match self {
            Self::CodexAppServer { server_pane, .. } => server_pane.as_deref(),
            Self::OpencodeServer { server_pane, .. } => Some(server_pane),
        }
    }
}
