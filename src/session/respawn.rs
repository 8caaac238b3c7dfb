//! Delivering an event prompt to a session, respawning a dead harness on the way
//! (SPEC §7.3–7.5).
//!
//! - A live pane gets the event prompt through the one paste path ([`deliver`]).
//! - A dead or absent pane is respawned and the pending prompt becomes its boot prompt:
//!   the recorded conversation is resumed when the adapter can and
//!   `sessions.tmux.resumeOnRespawn` is on, and must survive [`Timings::resume_check`];
//!   otherwise (or when the resume died) a fresh conversation starts with the spawn
//!   template filled with the pending event, so the new agent learns both its work item
//!   and what just happened.
//! - tmux not answering (liveness unknown) never leads to a respawn: the paste is
//!   attempted on the recorded pane and a failure is transient.
//!
//! [`Timings::resume_check`]: super::settings::Timings

use super::deliver::{DeliverError, deliver};
use super::lifecycle::{PaneState, PromptInputs, SessionError, Sessions, spawn_spec};
use super::registry::{SessionRecord, Status};
use crate::events::{Event, EventType, Level, Source};
use crate::harness::Harness;
use crate::tmux::{self, PaneId};
use crate::work_item::WorkItemRef;

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

impl Sessions {
    /// Delivers `inputs` rendered by the event template to `item`'s session. The record
    /// is re-read first: a session paused or closed while the event waited in its
    /// queue gets nothing. On success the delivery id is recorded on the session.
    pub async fn deliver_event(
        &self,
        item: &WorkItemRef,
        inputs: &PromptInputs,
    ) -> Result<Delivered, DeliveryFailure> {
        let record = self
            .registry
            .get(item)
            .map_err(|e| DeliveryFailure::Transient(e.to_string()))?
            .ok_or_else(|| DeliveryFailure::NoSession(item.clone()))?;
        match record.status {
            Status::Closed => return Err(DeliveryFailure::Closed(record.work_item)),
            Status::Paused => return Err(DeliveryFailure::Paused(record.work_item)),
            Status::Active => {}
        }
        let settings = self.settings();
        let prompt = settings
            .templates
            .render_event(&inputs.vars(&record.work_item));
        let delivered = match self.locate(&record.tmux_session).await {
            PaneState::Live(pane) => match self.paste(&pane, &prompt).await {
                Ok(delivered) => delivered,
                Err(PasteFailure::PaneGone(_)) => self.respawn(&record, inputs).await?,
                Err(other) => return Err(other.into()),
            },
            PaneState::Dead(_) | PaneState::Absent => self.respawn(&record, inputs).await?,
            PaneState::Unknown(tmux::Error::NotInstalled) => {
                return Err(DeliveryFailure::Transient(
                    tmux::Error::NotInstalled.to_string(),
                ));
            }
            PaneState::Unknown(error) => {
                let Some(pane) = record
                    .pane_id
                    .as_deref()
                    .and_then(|p| PaneId::parse(p).ok())
                else {
                    return Err(DeliveryFailure::Transient(error.to_string()));
                };
                tracing::warn!(%pane, "liveness unknown ({error}); pasting into the recorded pane");
                self.paste(&pane, &prompt).await.map_err(|e| match e {
                    PasteFailure::NotSubmitted(m) => DeliveryFailure::NotSubmitted(m),
                    PasteFailure::PaneGone(m) | PasteFailure::Other(m) => {
                        DeliveryFailure::Transient(format!(
                            "{m} (liveness unknown: {error}; not respawning)"
                        ))
                    }
                })?
            }
        };
        let pane = delivered.pane.to_string();
        // Under the record's file lock, with an fsync: off the async runtime (SPEC §15.6).
        let (registry, item, delivery_id) = (
            self.registry.clone(),
            record.work_item.clone(),
            inputs.delivery_id.clone(),
        );
        let saved = tokio::task::spawn_blocking(move || {
            registry.update(&item, |r| {
                r.record_delivery(&delivery_id);
                r.pane_id = Some(pane);
            })
        })
        .await;
        match saved {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => {
                tracing::warn!(work_item = %record.work_item, "delivery not recorded: {error}");
            }
            Err(error) => {
                tracing::warn!(work_item = %record.work_item, "delivery not recorded: {error}");
            }
        }
        Ok(delivered)
    }

    /// The one paste path, its errors sorted for the caller.
    async fn paste(&self, pane: &PaneId, text: &str) -> Result<Delivered, PasteFailure> {
        deliver(self.tmux.as_ref(), pane, text, self.submit_delay())
            .await
            .map(|d| Delivered {
                pane: pane.clone(),
                bytes: d.bytes,
                respawned: None,
            })
            .map_err(PasteFailure::from)
    }

    /// Restarts the harness of a dead or absent session with the pending prompt as its
    /// boot prompt, resuming the conversation when possible.
    async fn respawn(
        &self,
        record: &SessionRecord,
        inputs: &PromptInputs,
    ) -> Result<Delivered, DeliveryFailure> {
        let item = &record.work_item;
        let settings = self.settings();
        let spawn_failed = |error: SessionError| {
            let error = self.spawn_failed(item, Some(&record.harness), Source::Dispatch, error);
            DeliveryFailure::Transient(format!("respawn failed: {error}"))
        };
        let harness = Harness::resolve(&record.harness, &settings.sessions)
            .map_err(|e| spawn_failed(e.into()))?;
        harness
            .locate(settings.search_path.as_deref())
            .map_err(|e| spawn_failed(e.into()))?;
        let harness = super::hooks::wire(harness, &settings, item);
        let placed = self.respawn_dir(record).await.map_err(&spawn_failed)?;
        let record = &placed;
        self.mark_trusted(&harness, &record.cwd, item, Source::Dispatch)
            .await;
        let vars = inputs.vars(item);

        let resume = record
            .harness_session_id
            .as_deref()
            .filter(|_| settings.sessions.tmux.resume_on_respawn)
            .and_then(|id| {
                let prompt = settings.templates.render_event(&vars);
                Some((harness.resume_argv(&prompt, id)?, prompt.len()))
            });
        if let Some((argv, bytes)) = resume {
            let pane = self.spawn_over_dead(record, argv).await?;
            tokio::time::sleep(settings.timings.resume_check).await;
            match self.locate(&record.tmux_session).await {
                PaneState::Live(now) if now == pane => {
                    return Ok(self.respawned(record, &harness, pane, bytes, true, None));
                }
                PaneState::Unknown(error) => {
                    return Err(DeliveryFailure::Transient(format!(
                        "could not check the resumed session ({error}); not starting another over it"
                    )));
                }
                _ => self.emit(
                    Event::new(Source::Dispatch, EventType::SessionResumeFailed)
                        .level(Level::Warning)
                        .with("work_item", item.to_string())
                        .with("harness", harness.name())
                        .with("harness_session_id", record.harness_session_id.clone())
                        .with(
                            "error",
                            format!(
                                "the resumed conversation exited within {}s; starting a fresh one",
                                settings.timings.resume_check.as_secs_f32()
                            ),
                        ),
                ),
            }
        }

        let session_id = harness.mint_session_id();
        let boot = settings.templates.render_spawn(&vars);
        let argv = harness.fresh_argv(&boot, session_id.as_deref());
        let pane = self.spawn_over_dead(record, argv).await?;
        Ok(self.respawned(record, &harness, pane, boot.len(), false, session_id))
    }

    /// The record to respawn from: its working directory as it is, or — a worktree
    /// removed by hand — the item's worktree placed again (reused or re-created, never
    /// over work).
    async fn respawn_dir(&self, record: &SessionRecord) -> Result<SessionRecord, SessionError> {
        let mut record = record.clone();
        if !record.cwd.is_dir() && record.workspace.is_some() {
            let settings = self.settings();
            let placement = self
                .workspaces()
                .place(
                    &record.work_item,
                    settings.repo(&record.work_item),
                    Source::Dispatch,
                )
                .await?;
            record.cwd = placement.cwd().to_path_buf();
            record.workspace = placement.record().map(|ws| ws.dir.clone());
            record.branch = placement.record().map(|ws| ws.branch.clone());
            let (cwd, workspace, branch) = (
                record.cwd.clone(),
                record.workspace.clone(),
                record.branch.clone(),
            );
            self.registry.update(&record.work_item, |r| {
                r.cwd = cwd;
                r.workspace = workspace;
                r.branch = branch;
            })?;
        }
        if !record.cwd.is_dir() {
            return Err(SessionError::NoWorkingDir {
                item: record.work_item.to_string(),
                path: record.cwd.clone(),
            });
        }
        Ok(record)
    }

    /// `new-session` under the collision rules: a dead occupant is cleared (verified), a
    /// live one is never killed (the delivery is retried later and will find it).
    async fn spawn_over_dead(
        &self,
        record: &SessionRecord,
        argv: Vec<String>,
    ) -> Result<PaneId, DeliveryFailure> {
        let settings = self.settings();
        let spec = spawn_spec(&settings, record, argv);
        // What the previous harness process reported is over; the new one reports anew.
        if let Err(error) = self
            .registry
            .update(&record.work_item, |r| r.reported = None)
        {
            tracing::warn!(work_item = %record.work_item, "old harness report not cleared: {error}");
        }
        self.tmux
            .new_session(&spec)
            .await
            .map_err(|error| match error {
                tmux::Error::SessionBusy { .. } | tmux::Error::LivenessUnknown { .. } => {
                    DeliveryFailure::Transient(error.to_string())
                }
                error => {
                    let error = self.spawn_failed(
                        &record.work_item,
                        Some(&record.harness),
                        Source::Dispatch,
                        error,
                    );
                    DeliveryFailure::Transient(format!("respawn failed: {error}"))
                }
            })
    }

    /// Records the new pane (and conversation id, for a fresh one) and logs
    /// `session.respawned`.
    fn respawned(
        &self,
        record: &SessionRecord,
        harness: &Harness,
        pane: PaneId,
        bytes: usize,
        resumed: bool,
        fresh_id: Option<String>,
    ) -> Delivered {
        let session_id = if resumed {
            record.harness_session_id.clone()
        } else {
            fresh_id
        };
        let pane_str = pane.to_string();
        let id = session_id.clone();
        if let Err(error) = self.registry.update(&record.work_item, |r| {
            r.pane_id = Some(pane_str);
            r.harness_session_id = id;
        }) {
            tracing::warn!(work_item = %record.work_item, "respawn not recorded: {error}");
        }
        self.emit(
            Event::new(Source::Dispatch, EventType::SessionRespawned)
                .with("work_item", record.work_item.to_string())
                .with("harness", harness.name())
                .with("resumed", resumed)
                .with("pane", pane.to_string())
                .with("harness_session_id", session_id),
        );
        Delivered {
            pane,
            bytes,
            respawned: Some(resumed),
        }
    }
}

/// How a paste failed, sorted by what the caller does next.
enum PasteFailure {
    /// The pane died or vanished under the paste: respawn (when liveness is known).
    PaneGone(String),
    /// Pasted but not submitted: never paste it again.
    NotSubmitted(String),
    Other(String),
}

impl From<DeliverError> for PasteFailure {
    fn from(error: DeliverError) -> Self {
        if error.pasted() {
            return Self::NotSubmitted(error.to_string());
        }
        match error.tmux_error() {
            Some(tmux::Error::PaneDead { .. } | tmux::Error::SessionMissing { .. }) => {
                Self::PaneGone(error.to_string())
            }
            _ => Self::Other(error.to_string()),
        }
    }
}

impl From<PasteFailure> for DeliveryFailure {
    fn from(failure: PasteFailure) -> Self {
        match failure {
            PasteFailure::NotSubmitted(m) => Self::NotSubmitted(m),
            PasteFailure::PaneGone(m) | PasteFailure::Other(m) => Self::Transient(m),
        }
    }
}
