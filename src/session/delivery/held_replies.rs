//! Operator replies that waited on a held session (SPEC §18.3). A reply whose session
//! cannot take a paste — a permission dialog, the operator's draft, a harness not ready
//! — is queued in the session's record (`hold.replies`), never pasted into the dialog or
//! the draft. [`Replier::release_held`] delivers the queue, oldest first, as soon as the
//! session takes a paste; the supervisor calls it for every session with replies
//! queued, and `the-loop reply` while it waits (`--wait`). A reply leaves the queue
//! under the paste lock it went out under, so two releasers never deliver it twice; one
//! whose session ends while it waits is reported (`session.reply_failed`,
//! `session-ended`), never delivered.

use super::hold::{Held, HeldReply, HoldReason};
use super::paste::{PasteError, PastePolicy};
use crate::events::{Event, EventType, Level};
use crate::session::reply::{Replier, ReplyError, Via};
use crate::session::sessions::Sessions;
use crate::work_item::WorkItemRef;

impl Replier {
    /// Queues a held reply (or review) in its session's record and says so
    /// (`session.delivery_held`) — except one held for its session's budget: that is
    /// refused, never queued, until the operator confirms it (SPEC §20.4).
    pub(in crate::session) async fn queue(
        &self,
        item: &WorkItemRef,
        reply: HeldReply,
        held: Held,
        via: Via,
    ) -> ReplyError {
        if held.reason == HoldReason::OverBudget {
            let error = ReplyError::OverBudget {
                item: item.to_string(),
            };
            self.refused(item, &reply.actor, via, &error);
            return error;
        }
        let queued = reply.clone();
        let saved = self
            .sessions
            .registry()
            .update_async(item, |r| {
                r.hold.replies.push(queued);
                r.hold.summary().map_or(1, |s| s.count)
            })
            .await;
        let waiting = match saved {
            Ok(Some(waiting)) => waiting,
            Ok(None) => {
                let error = ReplyError::NoSession(item.to_string());
                self.refused(item, &reply.actor, via, &error);
                return error;
            }
            Err(error) => {
                let error = ReplyError::Registry(error);
                self.refused(item, &reply.actor, via, &error);
                return error;
            }
        };
        self.sessions.emit(
            Event::new(via.source(), EventType::SessionDeliveryHeld)
                .level(Level::Warning)
                .with("work_item", item.to_string())
                .with("reason", held.reason.as_str())
                .with("waiting", waiting)
                .with("reply_id", reply.id.as_str())
                .with("pasted", held.pasted.then_some(true)),
        );
        ReplyError::Held {
            item: item.to_string(),
            reason: held.reason,
            id: reply.id,
        }
    }

    /// Delivers `item`'s queued replies, oldest first, for as long as its session takes
    /// them; a reply is never delivered ahead of an event held before it. Returns how
    /// many went out. The supervisor calls it for every session with replies queued;
    /// `reply --wait` calls it while it waits.
    pub async fn release_held(&self, item: &WorkItemRef) -> usize {
        let mut released = 0;
        loop {
            let Ok(Some(record)) = self.sessions.registry().get(item) else {
                return released;
            };
            let Some(next) = record.hold.replies.first().cloned() else {
                return released;
            };
            if record
                .hold
                .events
                .as_ref()
                .is_some_and(|e| e.since <= next.since)
            {
                return released;
            }
            let via = Via::parse(&next.via);
            let policy = PastePolicy::reply(self.lock_wait, &next.id)
                .over_budget_confirmed(next.over_budget);
            let text = next.text.clone();
            let id = next.id.clone();
            // The reply leaves the queue under the paste lock it went out under, so two
            // releasers never deliver it twice.
            let outcome = self
                .sessions
                .paste_into_then(
                    item,
                    move |_| text,
                    &policy,
                    move |r| r.hold.replies.retain(|q| q.id != id),
                )
                .await;
            match outcome {
                Ok(pasted) => {
                    released += 1;
                    self.sessions.emit(
                        Event::new(via.source(), EventType::SessionDeliveryReleased)
                            .with("work_item", pasted.work_item.to_string())
                            .with("held_seconds", held_seconds(&next.since))
                            .with("reply_id", next.id.as_str()),
                    );
                    match &next.review {
                        Some(review) => self.review_delivered(&pasted, review, via),
                        None => {
                            self.delivered(pasted, &next.actor, via, next.comment, &next.reply)
                                .await;
                        }
                    }
                }
                Err(error) => match *error {
                    PasteError::Held(_, held) => {
                        if held.reason != next.reason {
                            let id = next.id.clone();
                            let noted = self
                                .sessions
                                .registry()
                                .update_async(item, move |r| {
                                    let queued = r.hold.replies.iter_mut().find(|q| q.id == id);
                                    if let Some(q) = queued {
                                        q.reason = held.reason;
                                    }
                                })
                                .await;
                            if let Err(error) = noted {
                                tracing::warn!(%item, "a held reply's reason not recorded: {error}");
                            }
                        }
                        return released;
                    }
                    // Ended: `Sessions::end` reported what the queue held.
                    PasteError::Closed(_) | PasteError::NoSession(_) => return released,
                    other => {
                        tracing::debug!(%item, "a held reply waits on: {}", ReplyError::from(other));
                        return released;
                    }
                },
            }
        }
    }
}

impl Sessions {
    /// Replies that were held on a session that ended (stopped, closed, reset): each is
    /// reported (`session.reply_failed`, `session-ended`), never delivered.
    pub(in crate::session) fn held_replies_ended(
        &self,
        item: &WorkItemRef,
        replies: Vec<HeldReply>,
    ) {
        for reply in replies {
            self.emit(
                Event::new(
                    Via::parse(&reply.via).source(),
                    EventType::SessionReplyFailed,
                )
                .level(Level::Warning)
                .with("work_item", item.to_string())
                .with("actor", reply.actor.as_str())
                .with("via", reply.via.as_str())
                .with("reason", "session-ended")
                .with("reply_id", reply.id.as_str())
                .with(
                    "error",
                    "the session ended while the reply was held; it was not delivered",
                ),
            );
        }
    }
}

/// Seconds since an RFC 3339 time (0 when it does not parse).
fn held_seconds(since: &str) -> f64 {
    time::OffsetDateTime::parse(since, &time::format_description::well_known::Rfc3339)
        .map(|t| {
            (time::OffsetDateTime::now_utc() - t)
                .as_seconds_f64()
                .max(0.0)
        })
        .unwrap_or(0.0)
}
