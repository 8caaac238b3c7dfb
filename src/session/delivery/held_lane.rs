//! A session's lane waiting out a hold (SPEC §18.3). An event whose session cannot take
//! a paste (`hold`) keeps the head of its lane — the events behind it keep
//! their order — and stays pending in the poll ledger, so a restart loses nothing. The
//! pane is looked at again every `Timings::hold_check` (500 ms) while something is
//! held, and only then; the delivery goes out once, as soon as the hold clears.
//!
//! A held delivery ends only delivered, or with its session: stopped, closed or reset
//! while it waits (a stop or close queued behind it ends the wait at once, rather than
//! waiting in front of it), reported as `dispatch.failed` with `reason: session-ended`.

use super::hold::{Held, HeldEvents, HoldReason};
use super::paste::{Delivered, DeliveryFailure};
use crate::events::{Event, EventType, Level, Source};
use crate::session::sessions::Sessions;
use crate::session::spawn::PromptInputs;
use crate::work_item::WorkItemRef;
use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

/// The dispatcher's view of held lanes (SPEC §18.3), keyed by session slug.
#[derive(Default)]
pub(crate) struct LaneHolds {
    /// Lanes whose head delivery is held.
    pub held: HashSet<String>,
    /// Queued and running deliveries: delivery id → lane.
    pub queued: HashMap<String, String>,
    /// Lanes with a stop or close queued: a held delivery there ends with the session
    /// instead of waiting in front of the stop.
    pub ending: HashSet<String>,
}

/// A hold in progress.
struct Holding {
    reason: HoldReason,
    started: Instant,
    since: String,
    waiting: usize,
}

/// Delivers `inputs` to `item`'s session, waiting out any hold. The dispatcher's lane
/// lends its `holds` and how many jobs its lane has `queued` behind this one.
pub(crate) async fn deliver_through_holds(
    sessions: &Sessions,
    holds: &Mutex<LaneHolds>,
    queued: impl Fn(&str) -> usize,
    item: &WorkItemRef,
    inputs: &PromptInputs,
) -> Result<Delivered, DeliveryFailure> {
    HeldLane { sessions, holds }
        .deliver(queued, item, inputs)
        .await
}

/// A lane's way through a hold: what the dispatcher lends it.
struct HeldLane<'a> {
    sessions: &'a Sessions,
    holds: &'a Mutex<LaneHolds>,
}

impl HeldLane<'_> {
    async fn deliver(
        &self,
        queued: impl Fn(&str) -> usize,
        item: &WorkItemRef,
        inputs: &PromptInputs,
    ) -> Result<Delivered, DeliveryFailure> {
        let lane = item.slug();
        let mut holding: Option<Holding> = None;
        loop {
            let result = self.sessions.deliver_event(item, inputs).await;
            let held = match (&result, &holding) {
                (Err(DeliveryFailure::Held(held)), _) => Some(*held),
                // Paused while held: it keeps waiting (resumed, it goes out).
                (Err(DeliveryFailure::Paused(_)), Some(h)) => Some(Held {
                    reason: h.reason,
                    pasted: false,
                }),
                (Err(DeliveryFailure::Closed(_) | DeliveryFailure::NoSession(_)), Some(_)) => {
                    self.stop_holding(item, &lane).await;
                    return Err(DeliveryFailure::Ended(item.clone()));
                }
                (_, Some(h)) => {
                    self.stop_holding(item, &lane).await;
                    if result.is_ok() {
                        self.released(item, &inputs.delivery_id, h);
                    }
                    return result;
                }
                (_, None) => return result,
            };
            let Some(held) = held else {
                return result;
            };
            let waiting = queued(&lane) + 1;
            match &mut holding {
                None => {
                    let h = Holding {
                        reason: held.reason,
                        started: Instant::now(),
                        since: crate::time::now_ts(),
                        waiting,
                    };
                    self.holds().held.insert(lane.clone());
                    self.write_hold(item, Some(&h)).await;
                    self.emit_held(item, held, waiting, &inputs.delivery_id);
                    holding = Some(h);
                }
                Some(h) if h.reason != held.reason || h.waiting != waiting => {
                    // Witnesses that now disagree need the operator: said again.
                    if held.reason == HoldReason::ScreenUnread && h.reason != held.reason {
                        self.emit_held(item, held, waiting, &inputs.delivery_id);
                    }
                    h.reason = held.reason;
                    h.waiting = waiting;
                    self.write_hold(item, Some(h)).await;
                }
                Some(_) => {}
            }
            if self.holds().ending.contains(&lane) {
                self.stop_holding(item, &lane).await;
                return Err(DeliveryFailure::Ended(item.clone()));
            }
            let wait = self.sessions.settings().timings.hold_check;
            tokio::time::sleep(wait).await;
        }
    }

    fn holds(&self) -> MutexGuard<'_, LaneHolds> {
        self.holds
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn emit(&self, event: Event) {
        self.sessions.emit(event);
    }

    /// `session.delivery_held`; for `screen-unread`, with what each witness said and
    /// where the screen was kept (the paste path recorded them).
    fn emit_held(&self, item: &WorkItemRef, held: Held, waiting: usize, delivery_id: &str) {
        let unread = (held.reason == HoldReason::ScreenUnread)
            .then(|| self.sessions.registry().get(item).ok().flatten())
            .flatten()
            .and_then(|r| r.hold.unread);
        self.emit(
            Event::new(Source::Dispatch, EventType::SessionDeliveryHeld)
                .level(Level::Warning)
                .with("work_item", item.to_string())
                .with("reason", held.reason.as_str())
                .with("waiting", waiting)
                .with("delivery_id", non_empty(delivery_id))
                .with("pasted", held.pasted.then_some(true))
                .with("hooks", unread.as_ref().map(|u| u.said.hooks.clone()))
                .with("screen", unread.as_ref().map(|u| u.said.screen.clone()))
                .with(
                    "kept",
                    unread
                        .as_ref()
                        .and_then(|u| u.kept.as_ref())
                        .map(|p| p.display().to_string()),
                ),
        );
    }

    async fn stop_holding(&self, item: &WorkItemRef, lane: &str) {
        self.holds().held.remove(lane);
        self.write_hold(item, None).await;
    }

    fn released(&self, item: &WorkItemRef, delivery_id: &str, h: &Holding) {
        self.emit(
            Event::new(Source::Dispatch, EventType::SessionDeliveryReleased)
                .with("work_item", item.to_string())
                .with("held_seconds", h.started.elapsed().as_secs_f64())
                .with("delivery_id", non_empty(delivery_id)),
        );
    }

    /// The lane's hold in the session's record, for every process to see: under the
    /// record's lock, off the async runtime. A failure is a warning: the hold goes on.
    async fn write_hold(&self, item: &WorkItemRef, h: Option<&Holding>) {
        let events = h.map(|h| HeldEvents {
            reason: h.reason,
            since: h.since.clone(),
            waiting: h.waiting,
        });
        let written = self
            .sessions
            .registry()
            .update_async(item, |r| r.hold.events = events)
            .await;
        if let Err(error) = written {
            tracing::warn!(%item, "the hold was not recorded on the session: {error}");
        }
    }
}

/// `None` for an empty id (as the dispatcher writes it).
fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

#[cfg(test)]
#[path = "held_lane_tests.rs"]
mod tests;
