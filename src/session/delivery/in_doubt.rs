//! A paste the dropped connection to its host left in doubt (issue 32): the text went
//! out in one `paste-buffer -d`, and the connection fell before anyone saw whether it
//! ran. The tmux layer asks again for a short while; a host that stays away leaves the
//! paste [`tmux::Error::InDoubt`], its buffer still loaded there if it never ran.
//!
//! The paste path then holds the delivery like any other (`host-unreachable`, on the
//! session's record: the screen and `sessions list` show it waiting, its lane keeps its
//! order) and records which buffer settles it (`hold.inDoubt`, with `hold.unsubmitted`
//! naming the delivery). Its next try, once the host answers, settles it first
//! ([`Tmux::resolve_paste`]): the buffer pasted now if it had not arrived, or found gone
//! if it had. Either way the text is in the box exactly once, and the delivery goes on
//! as one whose Enter was held: submitted, never pasted again.

use super::deliver::DeliverError;
use super::hold::{Held, HoldReason};
use super::paste::Stopped;
use crate::session::registry::SessionRecord;
use crate::session::sessions::Sessions;
use crate::tmux::{self, BufferName, PaneId, Paste, Tmux};
use crate::work_item::WorkItemRef;

/// What a paste in doubt is held as: its host does not answer, and the text may be in
/// the box.
const IN_DOUBT: Held = Held {
    reason: HoldReason::HostUnreachable,
    pasted: true,
};

impl Sessions {
    /// A paste that ended in doubt is held, naming the buffer that settles it; any other
    /// outcome passes through. `key` names the delivery (a paste without one cannot be
    /// told apart later: its failure passes through).
    pub(super) async fn hold_in_doubt<T>(
        &self,
        record: &SessionRecord,
        key: &str,
        outcome: Result<T, Stopped>,
    ) -> Result<T, Stopped> {
        let buffer = match &outcome {
            Err(Stopped::Failed(error)) if !key.is_empty() => error.in_doubt(),
            _ => None,
        };
        let Some(buffer) = buffer else {
            return outcome;
        };
        let (key, buffer) = (key.to_string(), buffer.as_str().to_string());
        tracing::warn!(work_item = %record.work_item, %buffer, "a paste is in doubt; held until its host answers");
        let saved = self
            .registry
            .update_async(&record.work_item, move |r| {
                r.hold.unsubmitted = Some(key);
                r.hold.in_doubt = Some(buffer);
            })
            .await;
        match saved {
            Ok(_) => Err(Stopped::Held(IN_DOUBT)),
            // Not recorded, it could not be settled later: report it as it is.
            Err(error) => {
                tracing::warn!(work_item = %record.work_item, "the paste in doubt was not recorded: {error}");
                outcome
            }
        }
    }

    /// Settles `record`'s paste in doubt, when it is this delivery's (`ours`): the text
    /// is in the box afterwards, pasted now or before. Still away, it stays held; any
    /// other failure ends the doubt (the pane died: nothing reached a live agent).
    pub(super) async fn settle_in_doubt(
        &self,
        tmux: &dyn Tmux,
        pane: &PaneId,
        record: &SessionRecord,
        ours: bool,
    ) -> Result<(), Stopped> {
        let Some(buffer) = record.hold.in_doubt.as_deref().filter(|_| ours) else {
            return Ok(());
        };
        let item = &record.work_item;
        let settled = match BufferName::new(buffer) {
            Ok(buffer) => tmux.resolve_paste(&buffer, pane, Paste::Bracketed).await,
            Err(error) => Err(error),
        };
        let clear = |also_unsubmitted: bool| {
            self.registry.update_async(item, move |r| {
                r.hold.in_doubt = None;
                if also_unsubmitted {
                    r.hold.unsubmitted = None;
                }
            })
        };
        match settled {
            Ok(pasted_now) => {
                tracing::info!(%item, pasted_now, "the paste in doubt is settled: in the box once");
                if let Err(error) = clear(false).await {
                    tracing::warn!(%item, "the settled paste was not recorded: {error}");
                }
                Ok(())
            }
            Err(
                tmux::Error::InDoubt { .. }
                | tmux::Error::Unreachable { .. }
                | tmux::Error::Timeout { .. },
            ) => Err(Stopped::Held(IN_DOUBT)),
            Err(error) => {
                tracing::warn!(%item, "the paste in doubt could not be settled: {error}");
                if let Err(error) = clear(true).await {
                    tracing::warn!(%item, "the ended doubt was not recorded: {error}");
                }
                Err(Stopped::Failed(DeliverError::Paste {
                    pane: pane.to_string(),
                    error,
                }))
            }
        }
    }
}

impl Sessions {
    /// Records (or clears) the paste a dialog stopped before its Enter.
    pub(super) async fn set_unsubmitted(&self, item: &WorkItemRef, key: Option<&str>) {
        let key = key.map(str::to_string);
        let saved = self
            .registry
            .update_async(item, |r| r.hold.unsubmitted = key)
            .await;
        if let Err(error) = saved {
            tracing::warn!(%item, "held paste not recorded: {error}");
        }
    }
}
