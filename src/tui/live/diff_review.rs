//! The diff view's review on the real backend (SPEC §21.2, §21.3): the pending review
//! through `session::review::store`, the findings of the item's latest critic round
//! that has any (its saved envelope, found through the event log's rounds), and
//! sending through the one [`crate::session::Replier`] — the note framed with the
//! worktree's branch and `HEAD`, against the diff as it is at send time.

use super::LiveBackend;
use crate::critic::Envelope;
use crate::critic::findings::Finding;
use crate::session::ReplyError;
use crate::session::delivery::HeldReview;
use crate::session::review::{self, ReviewComment, store::ReviewStore};
use crate::tui::backend::{ActionError, ActionResult};
use crate::tui::diff_view::ReviewMaterial;
use crate::tui::text::short_ref;
use crate::work_item::WorkItemRef;
use crate::workspace::diff_model::DiffModel;

impl LiveBackend {
    fn reviews(&self) -> ReviewStore {
        ReviewStore::new(&self.paths)
    }

    pub(super) async fn material(&self, item: &WorkItemRef) -> ReviewMaterial {
        let store = self.reviews();
        let owned = item.clone();
        let pending = tokio::task::spawn_blocking(move || store.load(&owned))
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r.map_err(|e| e.to_string()));
        ReviewMaterial {
            pending,
            findings: self.latest_findings(item).await,
        }
    }

    /// The findings of the latest recorded round on `item` whose envelope has any.
    async fn latest_findings(&self, item: &WorkItemRef) -> Vec<Finding> {
        let paths: Vec<_> = {
            let st = self.feed.state();
            st.rounds
                .rounds()
                .filter(|r| &r.work_item == item)
                .filter_map(|r| r.finished.as_ref()?.path.clone())
                .collect()
        };
        tokio::task::spawn_blocking(move || {
            paths.iter().rev().find_map(|path| {
                let bytes = std::fs::read(path).ok()?;
                let envelope: Envelope = serde_json::from_slice(&bytes).ok()?;
                (!envelope.findings.is_empty()).then_some(envelope.findings)
            })
        })
        .await
        .ok()
        .flatten()
        .unwrap_or_default()
    }

    pub(super) async fn keep_comment(
        &self,
        item: &WorkItemRef,
        comment: &ReviewComment,
    ) -> ActionResult {
        let store = self.reviews();
        let (owned, comment) = (item.clone(), comment.clone());
        let place = format!("{}:{}", comment.anchor.path, comment.anchor.line);
        let saved = tokio::task::spawn_blocking(move || {
            store.add(&owned, comment)?;
            store.load(&owned).map(|all| all.len())
        })
        .await
        .map_err(|e| ActionError::Failed(e.to_string()))?
        .map_err(|e| ActionError::Failed(format!("the comment was not kept: {e}")))?;
        Ok(format!(
            "Comment on {place} kept: {saved} pending for {}",
            short_ref(item)
        ))
    }

    pub(super) async fn drop_comments(&self, item: &WorkItemRef, ids: &[String]) -> ActionResult {
        let left = self.remove(item, ids).await?;
        Ok(format!(
            "Discarded {} on {} ({left} left)",
            crate::tui::text::counted(ids.len(), "comment"),
            short_ref(item)
        ))
    }

    async fn remove(&self, item: &WorkItemRef, ids: &[String]) -> Result<usize, ActionError> {
        let store = self.reviews();
        let (owned, ids) = (item.clone(), ids.to_vec());
        tokio::task::spawn_blocking(move || store.remove(&owned, &ids))
            .await
            .map_err(|e| ActionError::Failed(e.to_string()))?
            .map_err(|e| ActionError::Failed(format!("the pending review was not updated: {e}")))
    }

    /// The note against the worktree as it is now, pasted (or queued behind a hold);
    /// either way the comments leave the pending review.
    pub(super) async fn send_comments(
        &self,
        item: &WorkItemRef,
        comments: &[ReviewComment],
        over_budget: bool,
    ) -> ActionResult {
        if comments.is_empty() {
            return Err(ActionError::Refused("no pending comments to send".into()));
        }
        let super::actions::Place { cwd, base, git, .. } = self.review_place(item)?;
        let now = crate::workspace::status::changes(&git, &cwd, base.as_deref())
            .await
            .ok()
            .map(|c| DiffModel::parse(&c.diff));
        let sha = git
            .line(&cwd, &["rev-parse", "--short", "HEAD"])
            .await
            .ok()
            .flatten()
            .unwrap_or_else(|| "an unborn HEAD".into());
        let branch = git
            .line(&cwd, &["symbolic-ref", "--quiet", "--short", "HEAD"])
            .await
            .ok()
            .flatten()
            .unwrap_or_else(|| "a detached HEAD".into());
        let note = review::note(&branch, &sha, comments, now.as_ref());
        let ids: Vec<String> = comments.iter().map(|c| c.id.clone()).collect();
        let n = comments.len();
        let what = crate::tui::text::counted(n, "comment");
        let review = HeldReview {
            comments: n,
            sha: sha.clone(),
        };
        match self
            .replier
            .send_review(item, &note, review, over_budget)
            .await
        {
            Ok(sent) => {
                self.remove(item, &ids).await?;
                Ok(format!(
                    "Review sent to {}: {what} at {sha}",
                    short_ref(&sent.work_item)
                ))
            }
            Err(ReplyError::Held { reason, .. }) => {
                self.remove(item, &ids).await?;
                Ok(format!(
                    "Review of {what} held: {} waits on {} — {}; it is queued and goes out once that clears",
                    short_ref(item),
                    reason.describe_waiting(),
                    reason.advice()
                ))
            }
            Err(e) => Err(match e.status() {
                500 => ActionError::Failed(e.to_string()),
                _ => ActionError::Refused(e.to_string()),
            }),
        }
    }
}
