//! Delivering through a harness's own protocol instead of a paste (issue 41): a session
//! whose record names a channel (`sessions.codexChannel: app-server`) gets its text as
//! a user message of the protocol — codex's `turn/start` on the session's thread — with
//! no paste and no key in its pane. The paste path ([`Sessions::paste_into`]) decides
//! everything around it as for a paste (the lock, the gate, a dead pane respawned, the
//! record, the events); only the look at the screen is not taken: an approval request
//! does not hold it (the words reach the model as a message of their own and answer
//! nothing), nor does the operator's draft (the composer is not touched).
//!
//! Into a running turn codex folds a `turn/start` as input of that turn (measured on
//! 0.171.0), so no turn id is needed. Nothing sent (the server not answering, the TUI's
//! thread not made yet, the request refused, the connection closed before the answer):
//! held `not-ready`, tried again. Nothing listening on the socket: the server is gone,
//! and the session is started again around its thread (`server_gone`). Sent and not
//! answered in time: taken as delivered, with a warning — trying again could make it
//! twice.

use super::channel_answer::CLIENT_NAME;
use super::hold::{Held, HoldReason};
use super::paste::{Delivered, Stopped};
use crate::channel::ChannelRecord;
use crate::channel::codex::{Client, Error};
use crate::session::registry::SessionRecord;
use crate::session::sessions::Sessions;
use crate::tmux::PaneId;

impl Sessions {
    /// Sends `text` to `record`'s session through `channel`; `pane` is the session's
    /// pane, recorded as for a paste.
    pub(super) async fn send_by_channel(
        &self,
        channel: &ChannelRecord,
        pane: &PaneId,
        text: &str,
        record: &SessionRecord,
    ) -> Result<Delivered, Stopped> {
        let text = crate::guard::sanitize(text);
        if text.is_empty() {
            return Err(Stopped::Failed(super::DeliverError::Empty));
        }
        let socket = match channel {
            ChannelRecord::CodexAppServer { socket, .. } => socket,
            // opencode's server (issue 44): `delivery::opencode`.
            ChannelRecord::OpencodeServer { .. } => {
                return self.send_by_opencode(channel, pane, &text, record).await;
            }
        };
        let held = |what: &str, error: &dyn std::fmt::Display| not_ready(record, what, error);
        let client = match Client::connect(socket, CLIENT_NAME).await {
            Ok(client) => client,
            Err(error @ Error::NotListening { .. }) => {
                return Err(self.server_gone(record, &error).await);
            }
            Err(error) => return Err(held("codex's app server", &error)),
        };
        let thread = match client.thread_of(&record.cwd).await {
            Ok(Some(thread)) => thread,
            Ok(None) => return Err(held("codex's thread", &"not made yet")),
            Err(e) => return Err(held("codex's thread", &e)),
        };
        match client.start_turn(&thread, &text).await {
            Ok(_) => {}
            // Closed before it answered: the server went down, most likely before it
            // took the turn (it answers as it takes it) — sent again once it is back.
            Err(
                e @ (Error::Unreachable { .. }
                | Error::NotListening { .. }
                | Error::Refused { .. }
                | Error::Closed),
            ) => {
                return Err(held("turn/start", &e));
            }
            Err(e @ Error::NoAnswer { .. }) => tracing::warn!(
                work_item = %record.work_item,
                "turn/start sent, its answer lost ({e}); taken as delivered, not sent again"
            ),
        }
        Ok(Delivered {
            pane: pane.clone(),
            bytes: text.len(),
            respawned: None,
            channel: Some(channel.name()),
        })
    }

    /// The session's app server is not running (killed, crashed): the TUI attached to
    /// it can do nothing ("reconnecting", then "this conversation is unavailable",
    /// input paused), so its tmux session is ended and the session respawned around its
    /// thread — server first, the TUI resuming the thread — with this delivery as the
    /// resume's prompt ([`Stopped::Gone`]).
    async fn server_gone(&self, record: &SessionRecord, error: &Error) -> Stopped {
        tracing::warn!(
            work_item = %record.work_item,
            "{error}: ending the TUI attached to it and starting the session again"
        );
        let tmux = match self.tmux_of(record) {
            Ok(tmux) => tmux,
            Err(_) => {
                return Stopped::Held(Held {
                    reason: HoldReason::NotReady,
                    pasted: false,
                });
            }
        };
        match tmux.kill_session(record.tmux_session.as_str()).await {
            Ok(()) => Stopped::Gone,
            Err(error) => {
                tracing::warn!(work_item = %record.work_item, "the orphaned TUI was not ended: {error}");
                Stopped::Held(Held {
                    reason: HoldReason::NotReady,
                    pasted: false,
                })
            }
        }
    }
}

/// Nothing went through the channel (`what` failed with `error`): held `not-ready`,
/// tried again.
pub(super) fn not_ready(
    record: &SessionRecord,
    what: &str,
    error: &dyn std::fmt::Display,
) -> Stopped {
    tracing::info!(work_item = %record.work_item, "held: {what}: {error}");
    Stopped::Held(Held {
        reason: HoldReason::NotReady,
        pasted: false,
    })
}
