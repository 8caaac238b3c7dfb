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
//! 0.171.0), so no turn id is needed. Nothing sent (the socket dead, the server not
//! answering, the TUI's thread not made yet, the request refused): held `not-ready`,
//! tried again. Sent but unanswered: taken as delivered, with a warning — trying again
//! could make it twice.

use super::hold::{Held, HoldReason};
use super::paste::{Delivered, Stopped};
use crate::channel::ChannelRecord;
use crate::channel::codex::{Client, Error};
use crate::session::registry::SessionRecord;
use crate::session::sessions::Sessions;
use crate::tmux::PaneId;

/// How the-loop names itself to the app server.
const CLIENT_NAME: &str = "the-loop";

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
        let held = |what: &str, error: &dyn std::fmt::Display| {
            tracing::info!(work_item = %record.work_item, "held: {what}: {error}");
            Stopped::Held(Held {
                reason: HoldReason::NotReady,
                pasted: false,
            })
        };
        let socket = match channel {
            ChannelRecord::CodexAppServer { socket, .. } => socket,
            // opencode's server (issue 44): `delivery::opencode`.
            ChannelRecord::OpencodeServer { .. } => {
                return self.send_by_opencode(channel, pane, text, record).await;
            }
        };
        let text = crate::guard::sanitize(text);
        let client = Client::connect(socket, CLIENT_NAME)
            .await
            .map_err(|e| held("codex's app server", &e))?;
        let thread = match client.thread_of(&record.cwd).await {
            Ok(Some(thread)) => thread,
            Ok(None) => return Err(held("codex's thread", &"not made yet")),
            Err(e) => return Err(held("codex's thread", &e)),
        };
        match client.start_turn(&thread, &text).await {
            Ok(_) => {}
            Err(e @ (Error::Unreachable { .. } | Error::Refused { .. })) => {
                return Err(held("turn/start", &e));
            }
            Err(e) => tracing::warn!(
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
}
