//! The fake's pending reviews (SPEC §21.2): kept in memory per work item; a send
//! "pastes" the note the real backend would (the same [`review::note`], against the
//! diff set for the item) and records it, refused for a paused or dead session and
//! queued behind a hold like a reply.

use super::{Call, FakeBackend};
use crate::events::{Event, EventType, Source};
use crate::session::review::{self, ReviewComment};
use crate::tui::action::Request;
use crate::tui::backend::{ActionError, ActionResult, SessionState};
use crate::tui::diff_view::ReviewMaterial;
use crate::tui::text::short_ref;
use crate::work_item::WorkItemRef;
use crate::workspace::diff_model::DiffModel;

impl FakeBackend {
    /// The pending review of `work_item`, as stored.
    pub fn pending_review(&self, work_item: &WorkItemRef) -> Vec<ReviewComment> {
        self.lock()
            .reviews
            .get(work_item)
            .cloned()
            .unwrap_or_default()
    }

    /// The review notes sent, oldest first: what the agent read.
    pub fn review_notes(&self) -> Vec<(WorkItemRef, String)> {
        self.lock().notes.clone()
    }

    pub(super) fn material(&self, work_item: &WorkItemRef) -> ReviewMaterial {
        let st = self.lock();
        ReviewMaterial {
            pending: Ok(st.reviews.get(work_item).cloned().unwrap_or_default()),
            findings: Vec::new(),
        }
    }

    pub(super) fn keep_comment(&self, work_item: &WorkItemRef, c: &ReviewComment) -> ActionResult {
        let request = Request::SaveComment {
            work_item: work_item.clone(),
            comment: Box::new(c.clone()),
        };
        if let Some(e) = self.record(Call::Action(request)) {
            return Err(e);
        }
        let mut st = self.lock();
        let list = st.reviews.entry(work_item.clone()).or_default();
        list.push(c.clone());
        Ok(format!(
            "Comment on {}:{} kept: {} pending for {}",
            c.anchor.path,
            c.anchor.line,
            list.len(),
            short_ref(work_item)
        ))
    }

    pub(super) fn drop_comments(&self, work_item: &WorkItemRef, ids: &[String]) -> ActionResult {
        let request = Request::DiscardReview {
            work_item: work_item.clone(),
            ids: ids.to_vec(),
        };
        if let Some(e) = self.record(Call::Action(request)) {
            return Err(e);
        }
        self.forget(work_item, ids);
        Ok(format!(
            "Discarded {}",
            crate::tui::text::counted(ids.len(), "comment")
        ))
    }

    fn forget(&self, work_item: &WorkItemRef, ids: &[String]) {
        if let Some(list) = self.lock().reviews.get_mut(work_item) {
            list.retain(|c| !ids.contains(&c.id));
        }
    }

    pub(super) fn send_comments(
        &self,
        work_item: &WorkItemRef,
        comments: &[ReviewComment],
        over_budget: bool,
    ) -> ActionResult {
        let request = Request::SendReview {
            work_item: work_item.clone(),
            comments: comments.to_vec(),
            over_budget,
        };
        if let Some(e) = self.record(Call::Action(request)) {
            return Err(e);
        }
        match self.live(work_item)? {
            SessionState::Paused => {
                return Err(ActionError::Refused(format!(
                    "{} is paused: resume it first",
                    short_ref(work_item)
                )));
            }
            SessionState::Dead => {
                return Err(ActionError::Refused(format!(
                    "{} has no live pane",
                    short_ref(work_item)
                )));
            }
            _ => {}
        }
        let ids: Vec<String> = comments.iter().map(|c| c.id.clone()).collect();
        let model = self
            .lock()
            .diffs
            .get(work_item)
            .map(|d| DiffModel::parse(d));
        let note = review::note("the-loop/branch", "abc1234", comments, model.as_ref());
        self.forget(work_item, &ids);
        if let Some(reason) = self.held_reason(work_item) {
            self.set_state(work_item, |s| s.held.iter_mut().for_each(|h| h.count += 1));
            return Ok(format!(
                "Review {}",
                crate::tui::held::reply_queued(work_item, reason)
            ));
        }
        self.lock().notes.push((work_item.clone(), note));
        self.emit(
            Event::new(Source::Tui, EventType::SessionReviewSent)
                .with("work_item", work_item.to_string())
                .with("comments", comments.len())
                .with("sha", "abc1234"),
        );
        Ok(format!(
            "Review sent to {}: {} comments at abc1234",
            short_ref(work_item),
            comments.len()
        ))
    }
}
