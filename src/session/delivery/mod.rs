//! Delivery (SPEC §7.3–7.5, §17.4, §18): how text reaches a session's harness, and
//! when it must wait. Every paste the product makes — an event from the dispatcher's
//! lane, an operator's reply or review, a ship's note — goes through
//! `Sessions::paste_into` (`paste`), and every paste into a pane through [`deliver`]:
//!
//! ```text
//! lane ─► held_lane ─┐                       ┌─ look (screen::<harness> + hold::decide): hold, or
//! Replier ───────────┼─► Sessions::paste_into ┤    paste (deliver), Enter once a fresh look shows it,
//! held_replies ──────┘  (paste_lock, record) └─ the submit check (deliver::confirm_submitted)
//!                                  └─ a session with a channel (codex's app server): `channel`,
//!                                     turn/start instead of the look and the paste
//! ```
//!
//! The rest of the product names only what this file re-exports: the paste into a
//! session (`Sessions::deliver_event`, `paste_into`, `paste_into_then` with a
//! [`PastePolicy`], and what comes back: [`Delivered`], [`DeliveryFailure`], [`Pasted`],
//! [`PasteError`]); the held lane ([`LaneHolds`], [`deliver_through_holds`]); the
//! record's hold and its reasons ([`Hold`], [`HoldReason`], …); the session's paste lock
//! ([`lock_session`]); the one fixed keystroke on a harness's own dialog
//! ([`dialog_shown`], [`press_on_dialog`]); whether a client's screen is read at all
//! ([`Screen`], and per harness its [`ScreenReader`]: the releases recorded, the client's name). The screen readers and the pane-level steps
//! (`screen`, `deliver`) are public only for the integration tests and benchmarks that
//! run them against real panes; `session_files_tests` holds the product to this list.

mod channel;
mod channel_answer;
pub mod deliver;
mod failure;
mod gate;
mod held_lane;
mod held_replies;
mod hold;
mod in_doubt;
mod opencode;
mod paste;
pub(in crate::session) mod paste_lock;
pub mod screen;
mod seen_live;
mod unrecorded;
mod witnesses;

pub use channel_answer::{ChannelApproval, PendingApproval};
pub use deliver::{DeliverError, Delivery, Key, SUBMIT_CHECK_WAIT, SUBMIT_GRACE, deliver};
pub(crate) use held_lane::{LaneHolds, deliver_through_holds};
pub use hold::{
    Held, HeldEvents, HeldReply, HeldReview, HeldSummary, Hold, HoldReason, UnreadScreen,
};
pub use paste::{Delivered, DeliveryFailure};
pub(crate) use paste::{PasteError, PastePolicy, Pasted};
pub use paste_lock::{PasteLock, PasteLockError, acquire as lock_session};
pub use screen::claude::shown_mode;
pub use screen::{Reader as ScreenReader, Screen};
pub use seen_live::{ClientReleases, SeenLive, Sight, describe as describe_release};
pub use unrecorded::ByHandError;
pub use witnesses::Disagreement;

use crate::harness::ScreenKind;
use crate::tmux::{self, PaneId, Tmux};

/// Whether `pane` shows `harness`'s permission dialog now, with its first option
/// ("Yes") selected, on a fresh capture with attributes (Codex's selection is read from
/// them). A harness whose screen the-loop does not read shows none.
pub async fn dialog_shown<T: Tmux + ?Sized>(
    tmux: &T,
    pane: &PaneId,
    harness: ScreenKind,
) -> Result<bool, tmux::Error> {
    let Some(reader) = ScreenReader::of(harness) else {
        return Ok(false);
    };
    let screen = tmux.capture_pane(pane, true).await?;
    Ok(reader.shows_dialog(&screen))
}

/// Sends `key` to the dialog in `pane` (SPEC §17.4): a fixed keystroke, never text.
/// The caller has just seen the dialog ([`dialog_shown`]) under the session's paste lock.
pub async fn press_on_dialog<T: Tmux + ?Sized>(
    tmux: &T,
    pane: &PaneId,
    key: Key,
) -> Result<(), tmux::Error> {
    deliver::press(tmux, pane, key).await
}
