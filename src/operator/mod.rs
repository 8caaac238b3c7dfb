//! The operator's routes (SPEC §8.2, §14.1, §19.2): reply into a session, ask and
//! comment on an agent's behalf. They are served only by the running supervisor, only on a Unix socket,
//! `<state>/operator.sock` — mode 0600 in a 0700 directory, and the peer's uid must be
//! ours — never on the network listener.
//!
//! - [`api`]: the routes, each a thin shell over the one implementation every entry
//!   point uses ([`crate::session::Replier`], [`crate::session::ask::ask`],
//!   [`crate::session::comment::Commenter`]);
//! - [`socket`]: binding the socket (replacing a dead supervisor's), the peer check,
//!   removing it on shutdown;
//! - [`client`]: what `the-loop reply`, `ask` and `comment` use when a supervisor answers
//!   there (reqwest over the Unix socket); with none they work in-process.
//!
//! Scripts use it with curl:
//!
//! ```text
//! curl --unix-socket ~/.local/state/the-loop/operator.sock \
//!   -H 'Content-Type: application/json' \
//!   -d '{"ref": "github:octo/repo#15", "text": "Per repository."}' \
//!   http://localhost/api/v1/sessions/reply
//! ```

pub mod api;
pub mod client;
mod host_api;
pub mod socket;

pub use api::{COMMENT_PATH, OperatorApi, REPLY_PATH};
pub use client::{ClientError, OperatorClient, RemoteAsk};
pub use socket::{OperatorSocket, SocketError};

/// Serves what `host`'s agents may ask ([`OperatorApi::host_router`]) on
/// `<dir>/<host>.agents.sock`, and has the host's transport forward
/// `<stateDir>/operator.sock` there to it on every connection: the way back from a
/// remote pane, over the SSH connection the supervisor already holds, never a port.
pub fn serve_host(
    api: std::sync::Arc<OperatorApi>,
    host: &crate::tmux::RemoteHost,
    dir: &std::path::Path,
    limits: crate::server::Limits,
    events: crate::events::EventLog,
) -> Result<OperatorSocket, SocketError> {
    let path = dir.join(format!("{}.agents.sock", host.name()));
    let app = crate::server::guarded(api.host_router(host.name()), &[], events);
    let socket = OperatorSocket::bind(&path, app, limits)?;
    host.transport
        .forward_on_connect(&host.operator_socket(), socket.path());
    Ok(socket)
}
