//! The protocol side of answering an opencode session's permission request (issue 44):
//! `POST /permission/{id}/reply` — `once` or `reject`, never `always` — and whether a
//! request still stands (`GET /permission`). What the record does around it (the claim
//! before the answer goes out, the settlement, `elsewhere` when the server no longer has
//! the request) is `hooks::permission`'s, as for every harness.

use super::server_of;
use crate::channel::ChannelRecord;
use crate::channel::opencode::{Error, Reply};

/// What the server did with an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Replied {
    /// It took it.
    Taken,
    /// It has no such request: answered already (in the TUI), or gone.
    NotThere,
}

/// Why an answer did not go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotSent {
    pub reason: String,
    /// The server may have taken it (sent, its answer lost): its own event settles it.
    pub in_doubt: bool,
}

/// Answers request `id` of `channel`'s session: `approve` → `once`, else `reject`.
pub async fn reply(channel: &ChannelRecord, id: &str, approve: bool) -> Result<Replied, NotSent> {
    let (server, _) = server_of(channel).map_err(|reason| NotSent {
        reason,
        in_doubt: false,
    })?;
    let reply = if approve { Reply::Once } else { Reply::Reject };
    match server.reply(id, reply).await {
        Ok(()) => Ok(Replied::Taken),
        Err(error) if error.is_not_found() => Ok(Replied::NotThere),
        Err(error) => Err(NotSent {
            in_doubt: !matches!(error, Error::Unreachable { .. } | Error::Refused { .. }),
            reason: format!("opencode's server: {error}"),
        }),
    }
}

/// Whether request `id` still stands on `channel`'s server; `None` when it cannot say.
pub async fn stands(channel: &ChannelRecord, id: &str) -> Option<bool> {
    let (server, own) = server_of(channel).ok()?;
    let pending = server.permissions(&own).await.ok()?;
    Some(pending.iter().any(|p| p.id == id))
}
