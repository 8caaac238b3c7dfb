//! Sending the operator's review (SPEC §21.2): the note goes through the one paste into
//! a session under the reply's policy (the paste lock, the look at the screen, no
//! respawn). A session that cannot take a paste now gets it queued with the held
//! replies (SPEC §18.3) and it goes out once the hold clears — never into a dialog or a
//! draft, never lost. `session.review_sent` records it when it is pasted.

use crate::events::{Event, EventType};
use crate::session::delivery::{HeldReply, HeldReview, PasteError, PastePolicy, Pasted};
use crate::session::reply::{Replier, ReplyError, Via, claimed_actor, reply_id, reply_text};
use crate::work_item::WorkItemRef;

/// A review that reached the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewSent {
    pub work_item: WorkItemRef,
    pub comments: usize,
    pub bytes: usize,
}

impl Replier {
    /// Pastes the review `note` (already framed, see [`super::note`]) into `item`'s
    /// session; `over_budget`: confirmed for a session over its budget.
    /// `Err(ReplyError::Held)` means it is queued and goes out when the hold clears; any
    /// other error (`OverBudget` unconfirmed among them) means nothing was pasted and
    /// nothing queued.
    pub async fn send_review(
        &self,
        item: &WorkItemRef,
        note: &str,
        review: HeldReview,
        over_budget: bool,
    ) -> Result<ReviewSent, ReplyError> {
        let text = reply_text(note).ok_or(ReplyError::EmptyText)?;
        let actor = claimed_actor(None);
        let via = Via::Tui;
        let id = reply_id();
        let policy = PastePolicy::reply(self.lock_wait, &id).over_budget_confirmed(over_budget);
        let pasted = self
            .sessions
            .paste_into(item, |_| text.clone(), &policy)
            .await;
        match pasted.map_err(|e| *e) {
            Ok(pasted) => {
                self.review_delivered(&pasted, &review, via);
                Ok(ReviewSent {
                    work_item: pasted.work_item,
                    comments: review.comments,
                    bytes: pasted.delivered.bytes,
                })
            }
            Err(PasteError::Held(item, held)) => {
                let queued = HeldReply {
                    id,
                    text: text.clone(),
                    reply: text,
                    actor,
                    via: via.as_str().to_string(),
                    comment: false,
                    reason: held.reason,
                    since: crate::time::now_ts(),
                    over_budget,
                    review: Some(review),
                };
                Err(self.queue(&item, queued, held, via).await)
            }
            Err(error) => {
                let error = ReplyError::from(error);
                self.refused(item, &actor, via, &error);
                Err(error)
            }
        }
    }

    /// `session.review_sent` for a review that was pasted (now, or released from a hold).
    pub(in crate::session) fn review_delivered(
        &self,
        pasted: &Pasted,
        review: &HeldReview,
        via: Via,
    ) {
        self.sessions.emit(
            Event::new(via.source(), EventType::SessionReviewSent)
                .with("work_item", pasted.work_item.to_string())
                .with("comments", review.comments)
                .with("sha", review.sha.as_str())
                .with("pane", pasted.delivered.pane.to_string())
                .with("bytes", pasted.delivered.bytes),
        );
    }
}
