//! The agent's work goes out through the-loop (SPEC §19.3, §19.4): an agent proposes
//! (`the-loop propose`), the operator ships — `y` on the request in the Questions pane,
//! `P` in the Sessions pane, or `the-loop sessions ship`, all through [`Shipper::ship`].
//!
//! - A request lives in the session's record (`shipRequest`, one per session; a new one
//!   replaces it) with the head it was made at; `ship.requested` tells every screen.
//! - Shipping refuses, with the reason (`ship.refused`), what must not go out: changes
//!   not committed, nothing ahead of the base, a head that moved since the operator saw
//!   it, a shared workspace, a fork's pull request branch.
//! - Then the commit the operator saw is pushed (`workspace::push`: the token through
//!   askpass to that one git process), a draft pull request is opened for an issue's
//!   branch (stamped: it is inert to the loop), the session gets a framed note through
//!   the one paste path, and the pull request is linked to the session
//!   (`pullRequest`), so the poller follows it and its reviews reach the session.
//! - A failed step (`ship.failed`) changes nothing that came before it: a retry does
//!   not push again what was pushed (`pushed` in the record), nor open a second pull
//!   request (it finds the open one).
//! - A worktree on another host (issue 32) is read and pushed there, over its
//!   connection: git there asks the-loop installed there (this version, or the ship is
//!   refused `on-host` with what to run) for the token, which it got on that one
//!   push's stdin (`Git::with_relay`): never argv, never a file there.

use super::Sessions;
use super::registry::SessionRecord;
use crate::events::{Event, EventType, Level, Source};
use crate::github::{Client, NewPull};
use crate::work_item::WorkItemRef;
use crate::workspace::push::{self, Credentials, PushError};
use crate::workspace::{Git, Kind, WorkspaceRecord};
use std::path::PathBuf;
use std::sync::Arc;

mod refusal;
mod request;
mod text;
pub use super::records::{LinkedPull, Pushed, ShipRequest};
pub use refusal::{MAX_BODY_CHARS, MAX_TITLE_CHARS, Refusal};
pub use request::{Preview, Proposal, Proposed, propose, propose_from_host};
use request::{preview, worktree_of};
use text::{base_branch, linked, one_line, plural, short};
pub use text::{framed_note, pull_body};

/// The step of a ship that failed (`ship.failed`'s `step`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Push,
    PullRequest,
}

impl Step {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Push => "push",
            Self::PullRequest => "pull-request",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShipError {
    #[error("refused: {0}")]
    Refused(Refusal),
    #[error("the {} step failed: {message}; fix it and ship again (what succeeded is not repeated)", .step.as_str())]
    Failed { step: Step, message: String },
}

impl From<Refusal> for ShipError {
    fn from(refusal: Refusal) -> Self {
        Self::Refused(refusal)
    }
}

/// What the operator asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Order {
    pub work_item: WorkItemRef,
    /// The head the operator was shown (the popup's, the CLI's prompt): the commit
    /// that goes out, or nothing does.
    pub seen_head: String,
    /// Overrides of the request's (or, without one, the defaults').
    pub title: Option<String>,
    pub body: Option<String>,
    pub draft: Option<bool>,
    pub source: Source,
    pub actor: String,
}

/// A ship that went through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shipped {
    pub work_item: WorkItemRef,
    pub branch: String,
    pub sha: String,
    pub commits: usize,
    /// `false` when an earlier attempt had pushed it already.
    pub pushed_now: bool,
    pub pull: LinkedPull,
    /// `false` when an open pull request for the branch existed (or the item is one).
    pub pull_opened: bool,
    /// Why the session did not get the note, when it did not.
    pub note_error: Option<String>,
}

impl Shipped {
    /// The note the session gets, and what the CLI prints.
    pub fn note(&self) -> String {
        format!(
            "Pushed {} commit{} to {} ({}); pull request #{}: {}",
            self.commits,
            plural(self.commits),
            self.branch,
            short(&self.sha),
            self.pull.number,
            self.pull.url
        )
    }
}

/// Ships sessions' work (one implementation for the TUI, the Sessions key and the CLI).
#[derive(Clone)]
pub struct Shipper {
    sessions: Arc<Sessions>,
    github: Arc<Client>,
    /// git's askpass program: the running `the-loop` binary.
    askpass: PathBuf,
}

impl Shipper {
    pub fn new(sessions: Arc<Sessions>, github: Arc<Client>) -> Self {
        let askpass = sessions.settings().bin.clone();
        Self {
            sessions,
            github,
            askpass,
        }
    }

    /// What shipping `item` would push now, or why it cannot.
    pub async fn preview(&self, item: &WorkItemRef) -> Result<Preview, Refusal> {
        let (record, workspace) = self.worktree_of(item)?;
        preview(
            &request::git_of(&self.sessions, &workspace)?,
            self.sessions.events().path(),
            &record,
            &workspace,
        )
        .await
    }

    /// Ships `order` (SPEC §19.4), each step recorded; see the module docs.
    pub async fn ship(&self, order: &Order) -> Result<Shipped, ShipError> {
        let result = self.ship_steps(order).await;
        let note = match &result {
            Ok(shipped) => shipped.note(),
            Err(ShipError::Refused(refusal)) => {
                self.emit(
                    Event::new(order.source, EventType::ShipRefused)
                        .level(Level::Warning)
                        .with("work_item", order.work_item.to_string())
                        .with("reason", refusal.code())
                        .with("message", refusal.to_string())
                        .with("actor", order.actor.as_str()),
                );
                format!("The operator's ship of your work was refused: {refusal}")
            }
            Err(ShipError::Failed { step, message }) => {
                format!(
                    "Shipping your work failed at the {} step: {message}. The operator may retry.",
                    step.as_str()
                )
            }
        };
        let pasted = self.paste_note(&order.work_item, &note).await;
        result.map(|mut shipped| {
            shipped.note_error = pasted.err();
            shipped
        })
    }

    async fn ship_steps(&self, order: &Order) -> Result<Shipped, ShipError> {
        let item = &order.work_item;
        let (record, workspace) = self.worktree_of(item)?;
        let git = request::git_of(&self.sessions, &workspace)?;
        let shown = preview(&git, self.sessions.events().path(), &record, &workspace).await?;
        if shown.dirty > 0 {
            return Err(Refusal::Dirty { count: shown.dirty }.into());
        }
        if shown.head != order.seen_head {
            return Err(Refusal::HeadMoved {
                seen: order.seen_head.clone(),
                now: shown.head,
            }
            .into());
        }
        if shown.ahead == 0 {
            return Err(Refusal::NothingAhead {
                branch: shown.branch,
                base: shown.base,
            }
            .into());
        }
        let sha = shown.head.clone();
        let branch = shown.branch.clone();
        let pushed_now = self
            .push_once(order, &record, &workspace, git, &branch, &sha, shown.ahead)
            .await?;
        let (pull, pull_opened) = self
            .pull_request(order, &record, &workspace, &shown)
            .await?;
        let linked = pull.clone();
        let kept = self
            .sessions
            .registry()
            .update_async(item, move |r| {
                r.pull_request = Some(linked);
                r.ship_request = None;
            })
            .await;
        if let Err(error) = kept {
            tracing::warn!(%item, "the pull request is open but not linked to the session: {error}");
        }
        Ok(Shipped {
            work_item: record.work_item.clone(),
            branch,
            sha,
            commits: shown.ahead,
            pushed_now,
            pull,
            pull_opened,
            note_error: None,
        })
    }

    /// Step 2: the push, unless the record says this very commit went out already.
    /// From a worktree on a host the push runs there, its askpass the-loop installed
    /// there (this version, or the push is refused), the token on that one push's
    /// stdin over the connection ([`Git::with_relay`]).
    #[allow(clippy::too_many_arguments)]
    async fn push_once(
        &self,
        order: &Order,
        record: &SessionRecord,
        workspace: &WorkspaceRecord,
        git: Git,
        branch: &str,
        sha: &str,
        commits: usize,
    ) -> Result<bool, ShipError> {
        let done = record
            .pushed
            .as_ref()
            .is_some_and(|p| p.branch == branch && p.sha == sha);
        if done {
            return Ok(false);
        }
        let (git, askpass) = match &workspace.host {
            None => (git, self.askpass.clone()),
            Some(name) => {
                let refused = |why: String| Refusal::OnHost {
                    host: name.clone(),
                    why,
                };
                let host =
                    self.sessions.hosts().get(name).ok_or_else(|| {
                        refused("the host is not in the config's hosts".to_string())
                    })?;
                let (bin, _) = host.installed().await.map_err(refused)?;
                (git.with_relay(bin.clone()), PathBuf::from(bin))
            }
        };
        let credentials = self.github.token().await.map(|token| Credentials {
            token,
            askpass: &askpass,
        });
        if let Err(error) = push::push(&git, workspace, sha, branch, credentials).await {
            let message = match &error {
                PushError::Git(git) => git.to_string(),
                other => other.to_string(),
            };
            return Err(self.failed(order, Step::Push, message));
        }
        let pushed = Pushed {
            branch: branch.to_string(),
            sha: sha.to_string(),
        };
        let kept = self
            .sessions
            .registry()
            .update_async(&order.work_item, move |r| r.pushed = Some(pushed))
            .await;
        if let Err(error) = kept {
            // A retry then pushes the same commit again: a no-op for the remote.
            tracing::warn!(item = %order.work_item, "the push is not recorded: {error}");
        }
        self.emit(
            Event::new(order.source, EventType::ShipPushed)
                .with("work_item", order.work_item.to_string())
                .with("branch", branch)
                .with("sha", sha)
                .with("commits", commits)
                .with("actor", order.actor.as_str()),
        );
        Ok(true)
    }

    /// Step 3: the pull request — the item itself for a pull request's branch, the
    /// branch's open one, else a new one.
    async fn pull_request(
        &self,
        order: &Order,
        record: &SessionRecord,
        workspace: &WorkspaceRecord,
        shown: &Preview,
    ) -> Result<(LinkedPull, bool), ShipError> {
        let item = &order.work_item;
        if workspace.kind == Kind::Pull {
            let pull = record.pull_request.clone().unwrap_or_else(|| LinkedPull {
                number: item.number,
                url: item.html_url(),
                draft: false,
            });
            return Ok((pull, false));
        }
        let repo = item.repo_full_name();
        let fail = |e: crate::github::Error| self.failed(order, Step::PullRequest, e.to_string());
        if let Some(open) = self
            .github
            .open_pull_for_head(&repo, &item.owner, &shown.branch)
            .await
            .map_err(fail)?
        {
            return Ok((linked(&open), false));
        }
        let request = shown.request.as_ref().filter(|r| r.head == shown.head);
        let title = match order
            .title
            .clone()
            .or_else(|| request.map(|r| r.title.clone()))
        {
            Some(title) => title,
            None => self.item_title(item).await,
        };
        let body = order
            .body
            .clone()
            .or_else(|| request.map(|r| r.body.clone()))
            .unwrap_or_default();
        let draft = order
            .draft
            .or_else(|| request.and_then(|r| r.draft))
            .unwrap_or(self.sessions.settings().ship_draft);
        let new = NewPull {
            head: shown.branch.clone(),
            base: base_branch(&workspace.base),
            title,
            body: pull_body(&body, item.number),
            draft,
        };
        let created = self.github.create_pull(&repo, &new).await.map_err(fail)?;
        let pull = linked(&created);
        self.emit(
            Event::new(order.source, EventType::ShipPrOpened)
                .with("work_item", item.to_string())
                .with("number", pull.number)
                .with("url", pull.url.as_str())
                .with("draft", pull.draft)
                .with("branch", shown.branch.as_str()),
        );
        Ok((pull, true))
    }

    /// The work item's title on GitHub, else a plain one.
    async fn item_title(&self, item: &WorkItemRef) -> String {
        self.github
            .get_issue(&item.repo_full_name(), item.number)
            .await
            .ok()
            .and_then(|issue| issue["title"].as_str().map(one_line))
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| format!("Work on #{}", item.number))
    }

    fn failed(&self, order: &Order, step: Step, message: String) -> ShipError {
        let message = crate::secrets::redact(&message).into_owned();
        self.emit(
            Event::new(order.source, EventType::ShipFailed)
                .level(Level::Error)
                .with("work_item", order.work_item.to_string())
                .with("step", step.as_str())
                .with("error", message.as_str())
                .with("actor", order.actor.as_str()),
        );
        ShipError::Failed { step, message }
    }

    /// The session's record and its worktree's, or why there is nothing to ship.
    fn worktree_of(&self, item: &WorkItemRef) -> Result<(SessionRecord, WorkspaceRecord), Refusal> {
        worktree_of(&self.sessions, item)
    }

    /// Step 5: the framed note, through the one paste path.
    async fn paste_note(&self, item: &WorkItemRef, note: &str) -> Result<(), String> {
        let text = framed_note(item, note);
        let id = format!("ship-{}", uuid::Uuid::new_v4().simple());
        self.sessions
            .paste_into(
                item,
                |_| text,
                &super::delivery::PastePolicy::reply(NOTE_LOCK_WAIT, &id),
            )
            .await
            .map(|_| ())
            .map_err(|e| {
                let failure = super::DeliveryFailure::from(*e);
                tracing::warn!(%item, "the ship note was not pasted: {failure}");
                failure.to_string()
            })
    }

    fn emit(&self, event: Event) {
        self.sessions.emit(event);
    }
}

/// How long the note waits for the session's paste lock.
const NOTE_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

#[cfg(test)]
mod tests;
