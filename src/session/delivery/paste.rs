//! Pasting into a session (SPEC §7.3–7.5, §8.2). [`Sessions::paste_into`] is the one
//! way text reaches a session's harness — an event prompt from the dispatcher
//! ([`Sessions::deliver_event`]), an operator's reply (`reply`). Under the session's
//! paste lock ([`paste_lock`]) it re-reads the record (a session paused or closed while
//! the text waited gets nothing), finds the pane by name, pastes through the one paste
//! path ([`deliver`]) and records the delivery on the session.
//!
//! What differs is the [`PastePolicy`]:
//!
//! | | event | reply |
//! |---|---|---|
//! | record not open and active | refused after the lock | refused before and after it |
//! | lock not had in time | pasted anyway, with a warning | refused, nothing pasted |
//! | dead or absent pane | respawned with the prompt as boot prompt (`respawn`) | refused |
//! | liveness unknown | pasted into the recorded pane, never respawned | refused |
//! | recorded | the delivery id, the pane, `last_event_at` | the pane, `last_event_at` |
//!
//! A reply never respawns: the agent that asked is gone, and a fresh one would not know
//! the question. tmux not answering never leads to a respawn either way.

use super::deliver::{DeliverError, SubmitCheck, confirm_submitted, paste_text, submit};
use super::hold::{self, HoldReason};
use super::paste_lock::{self, PasteLock, PasteLockError};
use super::screen::{Reader, Screen};
use super::witnesses::{Verdict, Witnessed};
use crate::harness::Harness;
use crate::session::hooks::Reported;
use crate::session::registry::{RegistryError, SessionRecord, Status};
use crate::session::sessions::{PaneState, Sessions};
use crate::session::spawn::PromptInputs;
use crate::tmux::{self, PaneId, Tmux};
use crate::work_item::WorkItemRef;
use std::time::Duration;

/// How long an event waits for a reply being pasted into the same session.
const EVENT_LOCK_WAIT: Duration = Duration::from_secs(30);

/// A delivery that reached the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered {
    pub pane: PaneId,
    /// Bytes pasted (or passed as the boot prompt of a respawn).
    pub bytes: usize,
    /// `Some(resumed)` when the harness was respawned for this delivery.
    pub respawned: Option<bool>,
    /// The protocol it went by (`ChannelRecord::name`); `None`: pasted.
    pub channel: Option<&'static str>,
}

pub use super::failure::DeliveryFailure;
pub use super::hold::Held;

/// What differs between pasting an event and a reply (see the module docs).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PastePolicy<'a> {
    /// How long to wait for a paste in progress to the same session.
    lock_wait: Duration,
    /// The lock not had in time: paste anyway (with a warning) rather than hold the
    /// text back behind a paste that never finishes; else refuse.
    paste_when_busy: bool,
    /// Refuse a session that is not open and active before waiting for its lock too.
    check_first: bool,
    /// A dead or absent pane is respawned with these inputs as its boot prompt; `None`:
    /// refused.
    respawn: Option<&'a PromptInputs>,
    /// tmux not answering whether the pane runs: paste into the recorded pane; else
    /// refuse.
    paste_blind: bool,
    /// Recorded on the session (none when empty).
    delivery_id: &'a str,
    /// Names the paste while a dialog keeps it in the box unsubmitted
    /// (`hold.unsubmitted`): the event's delivery id, a reply's id.
    key: &'a str,
    /// The operator confirmed pasting into a session over budget (SPEC §20.4).
    over_budget_confirmed: bool,
}

impl<'a> PastePolicy<'a> {
    /// An event prompt rendered from `inputs`.
    pub fn event(inputs: &'a PromptInputs) -> Self {
        Self {
            lock_wait: EVENT_LOCK_WAIT,
            paste_when_busy: true,
            check_first: false,
            respawn: Some(inputs),
            paste_blind: true,
            delivery_id: &inputs.delivery_id,
            key: &inputs.delivery_id,
            over_budget_confirmed: false,
        }
    }

    /// An operator's reply named `id`, waiting up to `lock_wait` for the lock.
    pub fn reply(lock_wait: Duration, id: &'a str) -> Self {
        Self {
            lock_wait,
            paste_when_busy: false,
            check_first: true,
            respawn: None,
            paste_blind: false,
            delivery_id: "",
            key: id,
            over_budget_confirmed: false,
        }
    }

    /// Pastes even into a session over its budget: the operator confirmed.
    pub fn over_budget_confirmed(mut self, confirmed: bool) -> Self {
        self.over_budget_confirmed = confirmed;
        self
    }
}

/// A paste that reached the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pasted {
    /// The session's item, as its record spells it.
    pub work_item: WorkItemRef,
    pub delivered: Delivered,
}

/// Why [`Sessions::paste_into`] pasted nothing (or only part); each caller says it its
/// own way (`DeliveryFailure`, `ReplyError`).
#[derive(Debug)]
pub(crate) enum PasteError {
    /// The paste lock was not had in time (under a policy that refuses then).
    Lock(WorkItemRef, PasteLockError),
    Registry(RegistryError),
    /// (The item as asked.)
    NoSession(WorkItemRef),
    Closed(WorkItemRef),
    Paused(WorkItemRef),
    /// The harness exited, or its pane went away under the paste; not respawned.
    NoLivePane(WorkItemRef),
    /// tmux did not say whether the pane runs; nothing was pasted.
    Unavailable(WorkItemRef, tmux::Error),
    /// The paste failed ([`DeliverError::pasted`]: only its submit did).
    Paste(WorkItemRef, DeliverError),
    /// The paste into the recorded pane, while liveness was unknown, failed.
    Blind {
        item: WorkItemRef,
        error: DeliverError,
        liveness: tmux::Error,
    },
    /// Respawning the harness failed.
    Respawn(WorkItemRef, DeliveryFailure),
    /// The session cannot take a paste now (SPEC §18.2).
    Held(WorkItemRef, Held),
}

/// Why [`Sessions::paste`] stopped.
#[derive(Debug)]
pub(super) enum Stopped {
    Failed(DeliverError),
    Held(Held),
    /// The session's harness is gone though a pane of it lives (its channel's server
    /// died; that pane was ended): respawn, as for a dead pane.
    Gone,
}

impl From<DeliverError> for Stopped {
    fn from(error: DeliverError) -> Self {
        Self::Failed(error)
    }
}

impl Sessions {
    /// Delivers `inputs` rendered by the event template to `item`'s session (the
    /// dispatcher's lane calls it, one at a time per session). On success the delivery
    /// id is recorded on the session.
    pub async fn deliver_event(
        &self,
        item: &WorkItemRef,
        inputs: &PromptInputs,
    ) -> Result<Delivered, DeliveryFailure> {
        let prompt =
            |item: &WorkItemRef| self.settings().templates.render_event(&inputs.vars(item));
        self.paste_into(item, prompt, &PastePolicy::event(inputs))
            .await
            .map(|pasted| pasted.delivered)
            .map_err(|error| DeliveryFailure::from(*error))
    }

    /// Pastes `text` (made for the item as its record spells it) into `item`'s session
    /// under `policy`; see the module docs.
    pub(crate) async fn paste_into(
        &self,
        item: &WorkItemRef,
        text: impl FnOnce(&WorkItemRef) -> String,
        policy: &PastePolicy<'_>,
    ) -> Result<Pasted, Box<PasteError>> {
        self.paste_into_then(item, text, policy, |_| {}).await
    }

    /// [`Self::paste_into`], with `then` applied to the session's record together with
    /// the delivery, still under the paste lock (a held reply leaves its queue so).
    pub(crate) async fn paste_into_then(
        &self,
        item: &WorkItemRef,
        text: impl FnOnce(&WorkItemRef) -> String,
        policy: &PastePolicy<'_>,
        then: impl FnOnce(&mut SessionRecord) + Send + 'static,
    ) -> Result<Pasted, Box<PasteError>> {
        let item = if policy.check_first {
            self.active_record(item)?.work_item
        } else {
            item.clone()
        };
        let _lock = self.lock_for_paste(&item, policy).await?;
        let record = self.witness_rollout(self.active_record(&item)?).await;
        // Over budget or under a limit, nothing goes to the session (`gate`).
        if let Some(held) = self.gate(&record, policy.over_budget_confirmed) {
            return Err(PasteError::Held(record.work_item, held).into());
        }
        let text =
            super::gate::with_resume_note(&record, &self.settings(), text(&record.work_item));
        let unreachable = Held {
            reason: HoldReason::HostUnreachable,
            pasted: false,
        };
        let delivered = match self.locate(&record).await {
            PaneState::Live(pane) => match self.paste(&pane, &text, &record, policy).await {
                Ok(delivered) => delivered,
                Err(Stopped::Held(held)) => {
                    return Err(PasteError::Held(record.work_item, held).into());
                }
                // Nothing reached the pane: it waits for the host, in its place.
                Err(Stopped::Failed(error)) if error.host_away() => {
                    return Err(PasteError::Held(record.work_item, unreachable).into());
                }
                Err(Stopped::Gone) => self.respawn_or_refuse(&record, policy).await?,
                Err(Stopped::Failed(error)) if error.pane_gone() => {
                    self.respawn_or_refuse(&record, policy).await?
                }
                Err(Stopped::Failed(error)) => {
                    return Err(PasteError::Paste(record.work_item, error).into());
                }
            },
            PaneState::Dead(_) | PaneState::Absent => {
                self.respawn_or_refuse(&record, policy).await?
            }
            PaneState::Unknown(tmux::Error::Unreachable { reason }) => {
                tracing::info!(work_item = %record.work_item, "held: {reason}");
                return Err(PasteError::Held(record.work_item, unreachable).into());
            }
            PaneState::Unknown(liveness) => {
                let recorded = record
                    .pane_id
                    .as_deref()
                    .and_then(|p| PaneId::parse(p).ok())
                    .filter(|_| policy.paste_blind)
                    .filter(|_| !matches!(liveness, tmux::Error::NotInstalled));
                let Some(pane) = recorded else {
                    return Err(PasteError::Unavailable(record.work_item, liveness).into());
                };
                tracing::warn!(%pane, "liveness unknown ({liveness}); pasting into the recorded pane");
                match self.paste(&pane, &text, &record, policy).await {
                    Ok(delivered) => delivered,
                    Err(Stopped::Held(held)) => {
                        return Err(PasteError::Held(record.work_item, held).into());
                    }
                    Err(Stopped::Gone) => self.respawn_or_refuse(&record, policy).await?,
                    Err(Stopped::Failed(error)) => {
                        let item = record.work_item;
                        return Err(PasteError::Blind {
                            item,
                            error,
                            liveness,
                        }
                        .into());
                    }
                }
            }
        };
        // Only a delivery the gate let through with the limit already on record is its
        // one try: one that went out as the turn it started failed is not.
        let the_try = record.limit.clone();
        let then = move |r: &mut SessionRecord| {
            super::gate::mark_try(r, the_try.as_ref());
            then(r);
        };
        self.record_delivery(&record.work_item, &delivered.pane, policy.delivery_id, then)
            .await;
        Ok(Pasted {
            work_item: record.work_item,
            delivered,
        })
    }

    /// `item`'s paste lock, or — when it is not had in time and the policy says so —
    /// none, with a warning.
    async fn lock_for_paste(
        &self,
        item: &WorkItemRef,
        policy: &PastePolicy<'_>,
    ) -> Result<Option<PasteLock>, Box<PasteError>> {
        match paste_lock::acquire(self.registry.dir(), item, policy.lock_wait).await {
            Ok(lock) => Ok(Some(lock)),
            Err(error) if policy.paste_when_busy => {
                tracing::warn!(%item, "delivering without the paste lock: {error}");
                Ok(None)
            }
            Err(error) => Err(PasteError::Lock(item.clone(), error).into()),
        }
    }

    /// The record of `item`'s session, when it is open and active.
    fn active_record(&self, item: &WorkItemRef) -> Result<SessionRecord, Box<PasteError>> {
        let record = self
            .registry
            .get(item)
            .map_err(PasteError::Registry)?
            .ok_or_else(|| PasteError::NoSession(item.clone()))?;
        match record.status {
            Status::Active => Ok(record),
            Status::Paused => Err(PasteError::Paused(record.work_item).into()),
            Status::Closed => Err(PasteError::Closed(record.work_item).into()),
        }
    }

    async fn respawn_or_refuse(
        &self,
        record: &SessionRecord,
        policy: &PastePolicy<'_>,
    ) -> Result<Delivered, Box<PasteError>> {
        match policy.respawn {
            Some(inputs) => self
                .respawn(record, inputs)
                .await
                .map_err(|failure| PasteError::Respawn(record.work_item.clone(), failure).into()),
            None => Err(PasteError::NoLivePane(record.work_item.clone()).into()),
        }
    }

    /// The one paste path, with the pane it went to. For a harness whose screen the-loop
    /// knows (SPEC §18.2), a look at the pane comes first and decides: paste, or hold.
    /// Pasted, the Enter is pressed only once a fresh capture shows the paste in the box
    /// and no dialog; a dialog that appears in between leaves the paste in the box, held
    /// (recorded as `hold.unsubmitted`, so the next try submits it instead of pasting it
    /// again). Submitted, the submit is made sure of (§7.4). Any other harness is pasted
    /// and submitted after `submitDelayMs`, as before. A session with a channel gets
    /// the text through it instead (`channel`): no look, no paste, no key.
    async fn paste(
        &self,
        pane: &PaneId,
        text: &str,
        record: &SessionRecord,
        policy: &PastePolicy<'_>,
    ) -> Result<Delivered, Stopped> {
        if let Some(channel) = &record.channel {
            return self.send_by_channel(channel, pane, text, record).await;
        }
        let outcome = self.paste_now(pane, text, record, policy).await;
        self.hold_in_doubt(record, policy.key, outcome).await
    }

    /// [`Self::paste`], before a paste left in doubt is held.
    async fn paste_now(
        &self,
        pane: &PaneId,
        text: &str,
        record: &SessionRecord,
        policy: &PastePolicy<'_>,
    ) -> Result<Delivered, Stopped> {
        let settings = self.settings();
        let tmux = self.tmux_of(record).map_err(|_| {
            Stopped::Held(Held {
                reason: HoldReason::HostUnreachable,
                pasted: false,
            })
        })?;
        let tmux = tmux.as_ref();
        let key = policy.key;
        let ours_in_box = !key.is_empty() && record.hold.unsubmitted.as_deref() == Some(key);
        self.settle_in_doubt(tmux, pane, record, ours_in_box)
            .await?;
        let harness = Harness::resolve(&record.harness, &settings.sessions).ok();
        let screen = match &harness {
            Some(harness) => self.screen_of(harness, record).await,
            None => Screen::NotRead,
        };
        let reader = harness.as_ref().and_then(|h| Reader::of(h.screen()));
        let (reader, unrecorded) = match screen {
            Screen::Known => (reader, None),
            Screen::Unrecorded(version) => (reader, Some(version)),
            Screen::NotRead => (None, None),
        };
        let Some(reader) = reader else {
            let in_box = ours_in_box.then_some(&record.work_item);
            return self.paste_blind(tmux, pane, text, in_box).await;
        };
        let reported = self.settled_report(&record.work_item).await;
        let bytes = if ours_in_box {
            crate::guard::sanitize(text).len()
        } else {
            let screen = capture(tmux, pane).await?;
            let look = reader.look(&screen);
            let reason = match &unrecorded {
                None => hold::decide(&look, reported.as_ref()),
                Some(version) => {
                    let said = Witnessed {
                        reader,
                        version: version.as_deref(),
                        screen: &screen,
                        look: &look,
                        reported: reported.as_ref(),
                    };
                    match self.hear_witnesses(record, &said).await {
                        Verdict::Unread(_) if record.hold.release_one.is_some() => {
                            return self
                                .paste_by_hand(tmux, pane, text, record, ours_in_box)
                                .await;
                        }
                        verdict => verdict.hold(),
                    }
                }
            };
            if let Some(reason) = reason {
                return Err(Stopped::Held(Held {
                    reason,
                    pasted: false,
                }));
            }
            paste_text(tmux, pane, text).await?.bytes
        };
        let shown = self.await_paste(tmux, pane, text, reader, record).await;
        match shown {
            Shown::Ready => {}
            Shown::Gone if ours_in_box => {
                // Someone pressed Enter after answering the dialog (or cleared the box):
                // pasting again could make it twice.
                tracing::warn!(%pane, "the held paste left the input box without the-loop's Enter; taking it as submitted");
                self.set_unsubmitted(&record.work_item, None).await;
                return Ok(Delivered {
                    pane: pane.clone(),
                    bytes,
                    respawned: None,
                    channel: None,
                });
            }
            Shown::Gone => {
                return Err(Stopped::Failed(DeliverError::NotShown {
                    pane: pane.to_string(),
                }));
            }
            Shown::Held(reason) => {
                if !ours_in_box {
                    self.set_unsubmitted(&record.work_item, Some(key)).await;
                }
                return Err(Stopped::Held(Held {
                    reason,
                    pasted: true,
                }));
            }
        }
        let prompts = || {
            self.registry
                .get(&record.work_item)
                .ok()
                .flatten()
                .and_then(|r| r.reported)
                .map_or(0, |r| r.prompts)
        };
        let before = prompts();
        submit(tmux, pane).await?;
        if ours_in_box {
            self.set_unsubmitted(&record.work_item, None).await;
        }
        let check = SubmitCheck {
            wait: settings.timings.submit_check,
            grace: settings.timings.submit_grace,
            poll: settings.timings.poll,
        };
        confirm_submitted(tmux, pane, reader, check, || prompts() > before).await;
        Ok(Delivered {
            pane: pane.clone(),
            bytes,
            respawned: None,
            channel: None,
        })
    }

    /// What the harness last reported, once a turn-end report is `Timings::settle`
    /// old. Claude Code 2.1.197 ends a turn by running its `Stop` hooks; an Enter that
    /// lands meanwhile is taken, yet the paste stays in the box, where the next Enter
    /// (the operator's, or the submit check's) sends it again. Waits at most twice
    /// `settle`: a harness that keeps reporting turn ends is not waited out forever.
    pub(super) async fn settled_report(&self, item: &WorkItemRef) -> Option<Reported> {
        let settle = self.settings().timings.settle;
        let deadline = tokio::time::Instant::now() + settle * 2;
        loop {
            let reported = self
                .registry
                .get(item)
                .ok()
                .flatten()
                .and_then(|r| r.reported);
            let wait = reported
                .as_ref()
                .and_then(|r| hold::settling(r, settle, time::OffsetDateTime::now_utc()));
            match wait {
                Some(wait) if tokio::time::Instant::now() + wait <= deadline => {
                    tokio::time::sleep(wait).await;
                }
                _ => return reported,
            }
        }
    }

    /// After a paste into an empty box: looks until the box shows it with no dialog up
    /// ([`Shown::Ready`]), for up to `Timings::paste_show`.
    async fn await_paste(
        &self,
        tmux: &dyn Tmux,
        pane: &PaneId,
        text: &str,
        reader: Reader,
        record: &SessionRecord,
    ) -> Shown {
        let timings = self.settings().timings;
        let clean = crate::guard::sanitize(text);
        let deadline = tokio::time::Instant::now() + timings.paste_show;
        loop {
            let Ok(now) = capture(tmux, pane).await else {
                return Shown::Held(HoldReason::NotReady);
            };
            let look = reader.look(&now);
            if let Some(reason) = hold::dialog(&look, None) {
                return Shown::Held(reason);
            }
            if reader.shows_paste(&now, &clean) {
                // The hook may have said so before the dialog is drawn.
                let reported = self
                    .registry
                    .get(&record.work_item)
                    .ok()
                    .flatten()
                    .and_then(|r| r.reported);
                return hold::dialog(&look, reported.as_ref()).map_or(Shown::Ready, Shown::Held);
            }
            if tokio::time::Instant::now() >= deadline {
                return hold::decide(&look, None).map_or(Shown::Gone, Shown::Held);
            }
            tokio::time::sleep(timings.poll).await;
        }
    }

    /// The pane and `last_event_at` (and the delivery id, when there is one) on the
    /// record: under its file lock, with an fsync, off the async runtime (SPEC §15.6).
    /// A failure is a warning: the text has reached the session.
    async fn record_delivery(
        &self,
        item: &WorkItemRef,
        pane: &PaneId,
        delivery_id: &str,
        then: impl FnOnce(&mut SessionRecord) + Send + 'static,
    ) {
        let (pane, delivery_id) = (pane.to_string(), delivery_id.to_string());
        let saved = self
            .registry
            .update_async(item, move |r| {
                r.record_delivery(&delivery_id);
                r.pane_id = Some(pane);
                then(r);
            })
            .await;
        if let Err(error) = saved {
            tracing::warn!(%item, "delivery not recorded on the session: {error}");
        }
    }
}

/// The pane with its attributes: only the dim attribute tells a placeholder in an
/// empty box from a draft (`screen::claude`, `screen::codex`).
async fn capture(tmux: &dyn Tmux, pane: &PaneId) -> Result<String, DeliverError> {
    tmux.capture_pane(pane, true)
        .await
        .map_err(|error| DeliverError::Paste {
            pane: pane.to_string(),
            error,
        })
}

/// What the box showed after a paste.
enum Shown {
    /// The paste, and no dialog: press Enter.
    Ready,
    /// An empty box: the paste never showed (or, held, it was submitted by hand).
    Gone,
    /// Something stands between the paste and its Enter.
    Held(HoldReason),
}

#[cfg(test)]
#[path = "paste_tests.rs"]
mod tests;
