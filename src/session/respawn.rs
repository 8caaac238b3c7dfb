//! Respawning a dead harness for an event on its way in (SPEC §7.3–7.5; `delivery`
//! decides when): the pending prompt becomes the boot prompt. The recorded
//! conversation is resumed when the adapter can and `sessions.tmux.resumeOnRespawn` is
//! on, and must survive [`Timings::resume_check`]; otherwise (or when the resume died)
//! a fresh conversation starts with the spawn template filled with the pending event,
//! so the new agent learns both its work item and what just happened.
//!
//! [`Timings::resume_check`]: super::settings::Timings

use super::delivery::{Delivered, DeliveryFailure};
use super::registry::SessionRecord;
use super::sessions::{PaneState, SessionError, Sessions};
use super::spawn::{PromptInputs, spawn_spec};
use crate::channel::ChannelRecord;
use crate::events::{Event, EventType, Level, Source};
use crate::harness::Harness;
use crate::tmux::{self, PaneId};

/// Which conversation a respawned harness runs.
enum Conversation {
    /// The recorded one, resumed.
    Resumed,
    /// A new one, with the id the-loop minted for it (if the harness takes one).
    Fresh(Option<String>),
}

impl Sessions {
    /// Restarts the harness of a dead or absent session with the pending prompt as its
    /// boot prompt, resuming the conversation when possible.
    pub(super) async fn respawn(
        &self,
        record: &SessionRecord,
        inputs: &PromptInputs,
    ) -> Result<Delivered, DeliveryFailure> {
        // opencode (issue 44): its server and TUI together, `session::opencode`.
        if matches!(
            record.channel,
            Some(crate::channel::ChannelRecord::OpencodeServer { .. })
        ) {
            return self.respawn_opencode(record, inputs).await;
        }
        let item = &record.work_item;
        let settings = self.settings();
        let spawn_failed = |error: SessionError| {
            let error = self.spawn_failed(item, Some(&record.harness), Source::Dispatch, error);
            DeliveryFailure::Transient(format!("respawn failed: {error}"))
        };
        let harness = Harness::resolve(&record.harness, &settings.sessions)
            .map_err(|e| spawn_failed(e.into()))?
            .with_permission_mode(settings.permission_mode(item))
            .with_codex_policy(settings.codex_policy(item));
        let host = record
            .host
            .as_deref()
            .and_then(|h| self.hosts().get(h).cloned());
        let (harness, version, placed) = match &host {
            // On another host: its own client, in the directory it ran in.
            Some(host) => {
                let version = super::remote::client_version(host, &harness).await;
                self.mark_trusted_on(host, &harness, &record.cwd, item, Source::Dispatch)
                    .await;
                let harness = super::remote::wire_hooks(host, harness, item).await;
                (harness, version, record.clone())
            }
            None => {
                let program = harness
                    .locate(settings.search_path.as_deref())
                    .map_err(|e| spawn_failed(e.into()))?;
                let version = super::spawn::client_version(&harness, &program, item).await;
                let harness = super::hooks::wire(harness, &settings, item);
                let placed = self.respawn_dir(record).await.map_err(&spawn_failed)?;
                self.mark_trusted(&harness, &placed.cwd, item, Source::Dispatch)
                    .await;
                let harness = self
                    .with_codex_app_server(harness, item, &placed.cwd, version.as_deref())
                    .map_err(&spawn_failed)?;
                (harness, version, placed)
            }
        };
        let record = &placed;
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
            let (pane, channel) = self.spawn_over_dead(record, &harness, argv).await?;
            tokio::time::sleep(settings.timings.resume_check).await;
            match self.locate(record).await {
                PaneState::Live(now) if now == pane => {
                    return Ok(self.respawned(
                        record,
                        &harness,
                        version,
                        (pane, channel),
                        bytes,
                        Conversation::Resumed,
                    ));
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
        let spawned = self.spawn_over_dead(record, &harness, argv).await?;
        Ok(self.respawned(
            record,
            &harness,
            version,
            spawned,
            boot.len(),
            Conversation::Fresh(session_id),
        ))
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
        harness: &Harness,
        argv: Vec<String>,
    ) -> Result<(PaneId, Option<ChannelRecord>), DeliveryFailure> {
        let settings = self.settings();
        let host = record
            .host
            .as_deref()
            .and_then(|h| self.hosts().get(h).cloned());
        let spec = spawn_spec(&settings, record, host.as_deref(), argv);
        // What the previous harness process reported is over; the new one reports anew.
        if let Err(error) = self
            .registry
            .update(&record.work_item, |r| r.reported = None)
        {
            tracing::warn!(work_item = %record.work_item, "old harness report not cleared: {error}");
        }
        let tmux = self
            .tmux_of(record)
            .map_err(|error| DeliveryFailure::Transient(error.to_string()))?;
        self.spawn_panes(tmux.as_ref(), harness, spec)
            .await
            .map_err(|error| match error {
                SessionError::Tmux(
                    tmux::Error::SessionBusy { .. } | tmux::Error::LivenessUnknown { .. },
                ) => DeliveryFailure::Transient(error.to_string()),
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
        version: Option<String>,
        (pane, channel): (PaneId, Option<ChannelRecord>),
        bytes: usize,
        conversation: Conversation,
    ) -> Delivered {
        let (resumed, session_id) = match conversation {
            Conversation::Resumed => (true, record.harness_session_id.clone()),
            Conversation::Fresh(id) => (false, id),
        };
        let pane_str = pane.to_string();
        let id = session_id.clone();
        let mode = harness.permission_mode();
        if let Err(error) = self.registry.update(&record.work_item, |r| {
            r.pane_id = Some(pane_str);
            r.harness_session_id = id;
            r.permission_mode = mode;
            r.harness_version = version;
            r.channel = channel;
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
            channel: None,
        }
    }
}
