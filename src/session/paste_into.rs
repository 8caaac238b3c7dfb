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

use super::deliver::{DeliverError, confirm_submitted, deliver};
use super::paste_lock::{self, PasteLock, PasteLockError};
use super::registry::{RegistryError, SessionRecord, Status};
use super::sessions::{PaneState, Sessions};
use super::spawn::PromptInputs;
use crate::harness::Harness;
use crate::tmux::{self, PaneId};
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
}

/// Why a delivery did not reach the session.
#[derive(Debug, thiserror::Error)]
pub enum DeliveryFailure {
    #[error("no session for {0}")]
    NoSession(WorkItemRef),
    #[error("the session for {0} is closed")]
    Closed(WorkItemRef),
    #[error("the session for {0} is paused")]
    Paused(WorkItemRef),
    /// Worth retrying later (tmux busy or not answering, a paste failed).
    #[error("{0}")]
    Transient(String),
    /// The text is in the agent's input box but was not submitted: never re-deliver.
    #[error("{0}")]
    NotSubmitted(String),
}

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
        }
    }

    /// An operator's reply, waiting up to `lock_wait` for the lock.
    pub fn reply(lock_wait: Duration) -> Self {
        Self {
            lock_wait,
            paste_when_busy: false,
            check_first: true,
            respawn: None,
            paste_blind: false,
            delivery_id: "",
        }
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
        let item = if policy.check_first {
            self.active_record(item)?.work_item
        } else {
            item.clone()
        };
        let _lock = self.lock_for_paste(&item, policy).await?;
        let record = self.active_record(&item)?;
        let text = text(&record.work_item);
        let delivered = match self.locate(&record.tmux_session).await {
            PaneState::Live(pane) => match self.paste(&pane, &text, &record.harness).await {
                Ok(delivered) => delivered,
                Err(error) if pane_gone(&error) => self.respawn_or_refuse(&record, policy).await?,
                Err(error) => return Err(PasteError::Paste(record.work_item, error).into()),
            },
            PaneState::Dead(_) | PaneState::Absent => {
                self.respawn_or_refuse(&record, policy).await?
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
                match self.paste(&pane, &text, &record.harness).await {
                    Ok(delivered) => delivered,
                    Err(error) => {
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
        self.record_delivery(&record.work_item, &delivered.pane, policy.delivery_id)
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

    /// The one paste path, with the pane it went to; for a harness whose screen shows
    /// an unsubmitted paste, the submit is made sure of.
    async fn paste(
        &self,
        pane: &PaneId,
        text: &str,
        harness: &str,
    ) -> Result<Delivered, DeliverError> {
        let delivered = deliver(self.tmux.as_ref(), pane, text, self.submit_delay()).await?;
        let settings = self.settings();
        let marker = Harness::resolve(harness, &settings.sessions)
            .ok()
            .and_then(|h| h.paste_marker());
        if let Some(marker) = marker {
            let wait = settings.timings.submit_check;
            confirm_submitted(self.tmux.as_ref(), pane, marker, wait).await;
        }
        Ok(Delivered {
            pane: pane.clone(),
            bytes: delivered.bytes,
            respawned: None,
        })
    }

    /// The pane and `last_event_at` (and the delivery id, when there is one) on the
    /// record: under its file lock, with an fsync, off the async runtime (SPEC §15.6).
    /// A failure is a warning: the text has reached the session.
    async fn record_delivery(&self, item: &WorkItemRef, pane: &PaneId, delivery_id: &str) {
        let (registry, item, pane, delivery_id) = (
            self.registry.clone(),
            item.clone(),
            pane.to_string(),
            delivery_id.to_string(),
        );
        let work_item = item.clone();
        let saved = tokio::task::spawn_blocking(move || {
            registry.update(&item, |r| {
                r.record_delivery(&delivery_id);
                r.pane_id = Some(pane);
            })
        })
        .await;
        let error = match saved {
            Ok(Ok(_)) => return,
            Ok(Err(error)) => error.to_string(),
            Err(error) => error.to_string(),
        };
        tracing::warn!(%work_item, "delivery not recorded on the session: {error}");
    }
}

/// The pane died or vanished before the text reached it (respawn, when liveness is
/// known).
fn pane_gone(error: &DeliverError) -> bool {
    !error.pasted()
        && matches!(
            error.tmux_error(),
            Some(tmux::Error::PaneDead { .. } | tmux::Error::SessionMissing { .. })
        )
}

impl From<PasteError> for DeliveryFailure {
    fn from(error: PasteError) -> Self {
        match error {
            PasteError::NoSession(item) => Self::NoSession(item),
            PasteError::Closed(item) => Self::Closed(item),
            PasteError::Paused(item) => Self::Paused(item),
            PasteError::Respawn(_, failure) => failure,
            PasteError::Paste(_, error) if error.pasted() => Self::NotSubmitted(error.to_string()),
            PasteError::Blind { error, .. } if error.pasted() => {
                Self::NotSubmitted(error.to_string())
            }
            PasteError::Blind {
                error, liveness, ..
            } => Self::Transient(format!(
                "{error} (liveness unknown: {liveness}; not respawning)"
            )),
            PasteError::Paste(_, error) => Self::Transient(error.to_string()),
            PasteError::Unavailable(_, error) => Self::Transient(error.to_string()),
            PasteError::Lock(_, error) => Self::Transient(error.to_string()),
            PasteError::Registry(error) => Self::Transient(error.to_string()),
            // Not under the event policy, which respawns.
            PasteError::NoLivePane(item) => Self::Transient(format!("no live pane for {item}")),
        }
    }
}

#[cfg(test)]
#[path = "paste_into_tests.rs"]
mod tests;
