//! Ending sessions (SPEC §7.5): stop (an operator or a control comment), close (the
//! item closed or merged on GitHub) and reset (stop and forget).
//!
//! Stop and close end the harness — SIGTERM, a grace period, SIGKILL — and **keep** the
//! tmux session: with `remain-on-exit` its pane shows that the harness ended and the
//! operator can still attach and read what the agent did; a later `start` clears the
//! dead pane (verified) before spawning. Reset kills the tmux session too: it forgets
//! everything. A live tmux session the record does not lead to is never touched.
//!
//! Once the harness has ended, the session's worktree follows the ending rule of
//! SPEC §16.3 (`workspace::Workspaces::finish`): removed when nothing would be lost,
//! else kept and said why; reset with `discard_workspace` removes it whatever it holds.
//! A stop or close of an already closed session checks a kept worktree again (the work
//! may have been pushed since).

use super::registry::{SessionRecord, Status};
use super::sessions::{Origin, PaneState, SessionError, Sessions};
use crate::events::{Event, EventType, Source};
use crate::work_item::WorkItemRef;
use crate::workspace::Finished;

/// What ending a session did.
#[derive(Debug, Clone, PartialEq)]
pub struct Ended {
    pub record: SessionRecord,
    /// A harness was running and was ended.
    pub was_running: bool,
    /// The tmux session was killed (reset only).
    pub tmux_killed: bool,
    /// The record was already closed: nothing was done.
    pub already_closed: bool,
    /// What happened to the session's worktree.
    pub workspace: Finished,
}

impl Sessions {
    /// Ends the harness and marks the session closed (`session.stopped`).
    pub async fn stop(&self, item: &WorkItemRef, origin: &Origin) -> Result<Ended, SessionError> {
        let mut ended = self.end(item).await?;
        if !ended.already_closed {
            self.emit(
                Event::new(origin.source, EventType::SessionStopped)
                    .with("work_item", ended.record.work_item.to_string())
                    .with("actor", origin.actor.clone())
                    .with("via", origin.via)
                    .with("tmux_killed", false),
            );
        }
        ended.workspace = self.settle_workspace(&ended.record, origin.source).await;
        Ok(ended)
    }

    /// The item closed on GitHub (`merged` for a merged PR): as stop, `session.closed`.
    pub async fn close(
        &self,
        item: &WorkItemRef,
        merged: bool,
        origin: &Origin,
    ) -> Result<Ended, SessionError> {
        let mut ended = self.end(item).await?;
        if !ended.already_closed {
            self.emit(
                Event::new(origin.source, EventType::SessionClosed)
                    .with("work_item", ended.record.work_item.to_string())
                    .with("state", if merged { "merged" } else { "closed" })
                    .with("tmux_killed", false),
            );
        }
        ended.workspace = self.settle_workspace(&ended.record, origin.source).await;
        Ok(ended)
    }

    /// Stops the session, kills its (now dead) tmux session, forgets the record and the
    /// item's ledger entry (`session.reset`). Its worktree follows the ending rule.
    pub async fn reset(&self, item: &WorkItemRef, origin: &Origin) -> Result<Ended, SessionError> {
        self.reset_with(item, origin, false).await
    }

    /// [`Sessions::reset`]; with `discard_workspace` the worktree and its branch are
    /// removed whatever they hold (`sessions reset --discard-workspace`).
    pub async fn reset_with(
        &self,
        item: &WorkItemRef,
        origin: &Origin,
        discard_workspace: bool,
    ) -> Result<Ended, SessionError> {
        let mut ended = self.end(item).await?;
        ended.workspace = if discard_workspace {
            let discarded = self
                .workspaces()
                .discard(&ended.record.work_item, origin.source)
                .await?;
            self.note_workspace(&ended.record.work_item, &discarded);
            discarded
        } else {
            self.settle_workspace(&ended.record, origin.source).await
        };
        let record = &ended.record;
        if let PaneState::Dead(_) = self.locate(record).await {
            match self
                .tmux_of(record)?
                .kill_session(&record.tmux_session)
                .await
            {
                Ok(()) => ended.tmux_killed = true,
                Err(crate::tmux::Error::SessionMissing { .. }) => {}
                Err(error) => return Err(error.into()),
            }
        }
        self.registry.remove(&record.work_item)?;
        let ledger = self
            .ledger
            .as_ref()
            .map(|hook| hook.forget_item(&record.work_item));
        if let Some(Err(error)) = &ledger {
            tracing::warn!(work_item = %record.work_item, "ledger entry not forgotten: {error}");
        }
        self.emit(
            Event::new(origin.source, EventType::SessionReset)
                .with("work_item", record.work_item.to_string())
                .with("actor", origin.actor.clone())
                .with("via", origin.via)
                .with("tmux_killed", ended.tmux_killed)
                .with("ledger_forgotten", matches!(ledger, Some(Ok(true))))
                .with_opt("ledger_error", ledger.and_then(Result::err)),
        );
        Ok(ended)
    }

    /// Ends the harness of an open record and marks it closed.
    async fn end(&self, item: &WorkItemRef) -> Result<Ended, SessionError> {
        let record = self
            .registry
            .get(item)?
            .ok_or_else(|| SessionError::NoSession(item.to_string()))?;
        if record.status == Status::Closed {
            return Ok(Ended {
                record,
                was_running: false,
                tmux_killed: false,
                already_closed: true,
                workspace: Finished::NoWorkspace,
            });
        }
        let was_running = self.end_harness(&record).await?;
        // What waited on the session goes with it: said, never delivered (SPEC §18.3).
        let (record, dropped) = self
            .registry
            .update(&record.work_item, |r| {
                r.status = Status::Closed;
                r.last_event_at = Some(crate::time::now_ts());
                let dropped = std::mem::take(&mut r.hold.replies);
                r.hold.unsubmitted = None;
                (r.clone(), dropped)
            })?
            .unwrap_or((record, Vec::new()));
        self.held_replies_ended(&record.work_item, dropped);
        Ok(Ended {
            record,
            was_running,
            tmux_killed: false,
            already_closed: false,
            workspace: Finished::NoWorkspace,
        })
    }

    /// The ending rule for the session's worktree, recorded on the session. Failing to
    /// decide (the state dir unwritable) is logged; nothing is removed then.
    async fn settle_workspace(&self, record: &SessionRecord, source: Source) -> Finished {
        match self.workspaces().finish(&record.work_item, source).await {
            Ok(finished) => {
                self.note_workspace(&record.work_item, &finished);
                finished
            }
            Err(error) => {
                tracing::warn!(work_item = %record.work_item, "workspace not settled: {error}");
                Finished::NoWorkspace
            }
        }
    }

    fn note_workspace(&self, item: &WorkItemRef, finished: &Finished) {
        let noted = self.registry.update(item, |r| match finished {
            Finished::NoWorkspace => {}
            Finished::Removed { .. } => {
                r.workspace = None;
                r.branch = None;
                r.workspace_kept = None;
            }
            Finished::Kept { reason, .. } => r.workspace_kept = Some(reason.clone()),
        });
        if let Err(error) = noted {
            tracing::warn!(work_item = %item, "workspace outcome not recorded: {error}");
        }
    }

    /// SIGTERM to the harness, then SIGKILL after the grace period. True when one ran.
    /// tmux not answering is an error: the session is left as it is.
    async fn end_harness(&self, record: &SessionRecord) -> Result<bool, SessionError> {
        let pane = match self.locate(record).await {
            PaneState::Live(pane) => pane,
            PaneState::Dead(_) | PaneState::Absent => return Ok(false),
            PaneState::Unknown(error) => return Err(error.into()),
        };
        let tmux = self.tmux_of(record)?;
        if record.host.is_some() {
            // Another host's pids are not ours to signal: its tmux hangs the harness up.
            return match tmux.kill_session(&record.tmux_session).await {
                Ok(()) | Err(crate::tmux::Error::SessionMissing { .. }) => Ok(true),
                Err(error) => Err(error.into()),
            };
        }
        let pid = tmux.pane_pid(&pane).await?;
        let timings = self.settings().timings;
        for (kill, wait) in [(false, timings.stop_grace), (true, timings.stop_grace)] {
            self.signaller
                .signal(pid, kill)
                .map_err(|error| SessionError::Signal {
                    pid,
                    pane: pane.to_string(),
                    error,
                })?;
            if self.wait_not_live(record, wait).await? {
                return Ok(true);
            }
        }
        Err(SessionError::StillRunning {
            pane: pane.to_string(),
        })
    }

    /// Polls until the session's pane no longer runs; false when `limit` passed first.
    async fn wait_not_live(
        &self,
        record: &SessionRecord,
        limit: std::time::Duration,
    ) -> Result<bool, SessionError> {
        let poll = self.settings().timings.poll;
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            match self.locate(record).await {
                PaneState::Dead(_) | PaneState::Absent => return Ok(true),
                PaneState::Unknown(error) => return Err(error.into()),
                PaneState::Live(_) => {}
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(false);
            }
            tokio::time::sleep(poll).await;
        }
    }
}
