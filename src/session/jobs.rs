//! What a session's worker does with each queued job, and the events that say how it
//! went (`dispatch.*`, `control.refused`; the lifecycle logs `session.*`).

use super::delivery::{Delivered, DeliveryFailure, deliver_through_holds};
use super::dispatcher::{Inner, Job, JobKind, non_empty};
use super::sessions::{Origin, SessionError, Toggle};
use super::spawn::StartOutcome;
use crate::events::{Event, EventType, Level, Source};
use crate::ingress::Disposition;
use crate::routing::ControlCommand;
use crate::tmux::PaneId;
use crate::work_item::WorkItemRef;
use std::time::Instant;

fn dropped(reason: &str) -> Disposition {
    Disposition::Dropped {
        reason: reason.to_string(),
    }
}

impl Inner {
    /// Runs one job and answers its submitter. A spawn is followed by a wait for the
    /// harness to draw its screen, so the next job in the lane reaches a ready program.
    pub async fn run(&self, job: Job) {
        let Job {
            source,
            delivery_id,
            gh_event,
            item,
            kind,
            reply,
        } = job;
        let mut spawned: Option<PaneId> = None;
        let disposition = match kind {
            JobKind::Deliver {
                inputs,
                actor,
                ci_key,
            } => {
                let started = Instant::now();
                // Under the session's paste lock: an operator's reply (any process)
                // never lands between this paste and its submit. A held session keeps
                // the lane until the hold clears (SPEC §18.3).
                let queued = |lane: &str| self.lanes.depth(lane);
                let result =
                    deliver_through_holds(&self.sessions, &self.holds, queued, &item, &inputs)
                        .await;
                self.holds().queued.remove(&delivery_id);
                if let Ok(Delivered {
                    pane,
                    respawned: Some(_),
                    ..
                }) = &result
                {
                    spawned = Some(pane.clone());
                }
                if let (Err(DeliveryFailure::Transient(_)), Some(key)) = (&result, &ci_key) {
                    self.dedupe().release(key);
                }
                self.delivered(&item, &delivery_id, &gh_event, actor, started, result)
            }
            JobKind::Start { inputs, origin } => {
                // Under the account's limit a new session would fail too: it waits.
                let waited = self.wait_for_account(&item, &delivery_id, &origin).await;
                let (disposition, pane) = match waited {
                    Ok(()) => {
                        let result = self.sessions.start(&item, &inputs, &origin).await;
                        self.started(source, &item, &delivery_id, result, &origin)
                    }
                    Err(ended) => (ended, None),
                };
                self.pending().remove(&item.slug());
                spawned = pane;
                disposition
            }
            JobKind::Pause { origin } => {
                let result = self.sessions.pause(&item, &origin);
                self.toggled(&item, &delivery_id, ControlCommand::Pause, result, &origin)
            }
            JobKind::Resume { origin } => {
                let result = self.sessions.resume(&item, &origin);
                self.toggled(&item, &delivery_id, ControlCommand::Resume, result, &origin)
            }
            JobKind::Stop { origin } => match self
                .end_lane(&item, self.sessions.stop(&item, &origin).await)
            {
                Ok(ended) if ended.already_closed => {
                    let command = ControlCommand::Stop;
                    self.refused(source, &item, command, "session-closed", None, &origin);
                    dropped("session-closed")
                }
                Ok(_) => Disposition::Delivered,
                Err(error) => {
                    self.control_failed(&item, &delivery_id, ControlCommand::Stop, error, &origin)
                }
            },
            JobKind::Close { merged, origin } => {
                match self.end_lane(&item, self.sessions.close(&item, merged, &origin).await) {
                    Ok(ended) if ended.already_closed => dropped("session-closed"),
                    Ok(_) => Disposition::Delivered,
                    Err(SessionError::NoSession(_)) => dropped("no-session"),
                    Err(error) => self.failed(&item, &delivery_id, &error.to_string(), true),
                }
            }
        };
        let _ = reply.send(disposition);
        if let Some(pane) = spawned {
            self.sessions.settle(&item, &pane).await;
        }
    }

    /// The settlement of a start, and the pane it spawned.
    fn started(
        &self,
        source: Source,
        item: &WorkItemRef,
        delivery_id: &str,
        result: Result<StartOutcome, SessionError>,
        origin: &Origin,
    ) -> (Disposition, Option<PaneId>) {
        match result {
            Ok(StartOutcome::Spawned(record)) => {
                let pane = record
                    .pane_id
                    .as_deref()
                    .and_then(|p| PaneId::parse(p).ok());
                (Disposition::Delivered, pane)
            }
            Ok(StartOutcome::AlreadyRunning(_)) => {
                let command = ControlCommand::Start;
                self.refused(source, item, command, "already-running", None, origin);
                (dropped("already-running"), None)
            }
            Err(error) => {
                let command = ControlCommand::Start;
                let failed = self.control_failed(item, delivery_id, command, error, origin);
                (failed, None)
            }
        }
    }

    /// The events and settlement of a delivery.
    fn delivered(
        &self,
        item: &WorkItemRef,
        delivery_id: &str,
        gh_event: &str,
        actor: Option<String>,
        started: Instant,
        result: Result<Delivered, DeliveryFailure>,
    ) -> Disposition {
        let dispatch_dropped = |reason: &str, item: &WorkItemRef| {
            self.emit(
                Event::new(Source::Dispatch, EventType::DispatchDropped)
                    .with("work_item", item.to_string())
                    .with("delivery_id", non_empty(delivery_id))
                    .with("gh_event", gh_event)
                    .with("reason", reason),
            );
            dropped(reason)
        };
        match result {
            Ok(delivered) => {
                self.emit(
                    Event::new(Source::Dispatch, EventType::DispatchSucceeded)
                        .with("work_item", item.to_string())
                        .with("delivery_id", non_empty(delivery_id))
                        .with("gh_event", gh_event)
                        .with("actor", actor)
                        .with("pane", delivered.pane.to_string())
                        .with("bytes", delivered.bytes)
                        .with("respawned", delivered.respawned.is_some())
                        .with("resumed", delivered.respawned)
                        .with("channel", delivered.channel.unwrap_or("paste"))
                        .with("duration_ms", started.elapsed().as_millis() as u64),
                );
                Disposition::Delivered
            }
            Err(DeliveryFailure::NoSession(item)) => dispatch_dropped("no-session", &item),
            Err(DeliveryFailure::Closed(item)) => dispatch_dropped("session-closed", &item),
            Err(DeliveryFailure::Paused(item)) => dispatch_dropped("session-paused", &item),
            Err(DeliveryFailure::Transient(error)) => self.failed(item, delivery_id, &error, true),
            Err(DeliveryFailure::Ended(item)) => {
                self.emit(
                    Event::new(Source::Dispatch, EventType::DispatchFailed)
                        .level(Level::Warning)
                        .with("work_item", item.to_string())
                        .with("delivery_id", non_empty(delivery_id))
                        .with(
                            "error",
                            "the session ended while the delivery was held; it was not delivered",
                        )
                        .with("retryable", false)
                        .with("reason", "session-ended"),
                );
                dropped("session-ended")
            }
            // `deliver_through_holds` waits a hold out.
            Err(DeliveryFailure::Held(held)) => self.failed(
                item,
                delivery_id,
                &format!("held: {}", held.reason.describe()),
                true,
            ),
            Err(DeliveryFailure::NotSubmitted(error)) => {
                // Settled: delivering again would paste the text twice.
                self.failed(item, delivery_id, &error, false);
                dropped("not-submitted")
            }
        }
    }

    /// `dispatch.failed`; a retryable failure releases the delivery id (so the retry is
    /// not a duplicate) and leaves the event unsettled.
    fn failed(
        &self,
        item: &WorkItemRef,
        delivery_id: &str,
        error: &str,
        retryable: bool,
    ) -> Disposition {
        self.emit(
            Event::new(Source::Dispatch, EventType::DispatchFailed)
                .level(if retryable {
                    Level::Warning
                } else {
                    Level::Error
                })
                .with("work_item", item.to_string())
                .with("delivery_id", non_empty(delivery_id))
                .with("error", error)
                .with("retryable", retryable),
        );
        if retryable {
            self.dedupe().release(delivery_id);
        }
        Disposition::Failed {
            error: error.to_string(),
        }
    }

    fn toggled(
        &self,
        item: &WorkItemRef,
        delivery_id: &str,
        command: ControlCommand,
        result: Result<Toggle, SessionError>,
        origin: &Origin,
    ) -> Disposition {
        match result {
            Ok(_) => Disposition::Delivered,
            Err(error) => self.control_failed(item, delivery_id, command, error, origin),
        }
    }

    /// A control command that could not be carried out: refused for good (no session,
    /// closed, misconfigured), or failed for now (tmux, I/O) and retried.
    fn control_failed(
        &self,
        item: &WorkItemRef,
        delivery_id: &str,
        command: ControlCommand,
        error: SessionError,
        origin: &Origin,
    ) -> Disposition {
        let reason = match &error {
            SessionError::NoSession(_) => Some("no-session"),
            SessionError::Closed(_) => Some("session-closed"),
            _ if error.exit_code() == 2 => Some("misconfigured"),
            _ => None,
        };
        let message = error.to_string();
        self.refused(
            origin.source,
            item,
            command,
            reason.unwrap_or("failed"),
            Some(&message),
            origin,
        );
        match reason {
            Some(reason) => dropped(reason),
            None => self.failed(item, delivery_id, &message, true),
        }
    }

    /// `control.refused`.
    pub fn refused(
        &self,
        source: Source,
        item: &WorkItemRef,
        command: ControlCommand,
        reason: &str,
        error: Option<&str>,
        origin: &Origin,
    ) {
        self.emit(
            Event::new(source, EventType::ControlRefused)
                .level(Level::Warning)
                .with("work_item", item.to_string())
                .with("actor", origin.actor.clone())
                .with("keyword", command.as_str())
                .with("reason", reason)
                .with("error", error),
        );
    }
}
