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
pub mod socket;

pub use api::{COMMENT_PATH, OperatorApi, REPLY_PATH};
pub use client::{ClientError, OperatorClient, RemoteAsk};
pub use socket::{OperatorSocket, SocketError};
