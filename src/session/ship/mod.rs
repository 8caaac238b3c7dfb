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

use super::Sessions;
use super::registry::SessionRecord;
use crate::events::{Event, EventType, Level, Source};
use crate::github::{Client, NewPull};
use crate::work_item::WorkItemRef;
use crate::workspace::push::{self, Credentials, PushError};
use crate::workspace::{Git, Kind, WorkspaceRecord};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;

mod request;
mod text;
pub use request::propose;
use request::{preview, worktree_of};
use text::{base_branch, linked, one_line, plural, short};
pub use text::{framed_note, pull_body};

/// A request's title is one line of at most this many characters.
pub const MAX_TITLE_CHARS: usize = 256;
/// A request's body is at most this many characters.
pub const MAX_BODY_CHARS: usize = 20_000;

/// An agent's request to ship its work, in its session's record (`shipRequest`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShipRequest {
    pub id: String,
    pub title: String,
    #[serde(default)]
    pub body: String,
    /// `--draft` / `--ready`; `None`: `ship.draft`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft: Option<bool>,
    pub branch: String,
    /// The commit the request was made at: what the operator is shown, and ships.
    pub head: String,
    pub requested_at: String,
}

/// The pull request a session's work went to (`pullRequest`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LinkedPull {
    pub number: u64,
    pub url: String,
    pub draft: bool,
}

/// The last push that succeeded (`pushed`): a retry after a later step failed does not
/// push again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pushed {
    pub branch: String,
    pub sha: String,
}

/// What the agent asks for (`the-loop propose`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposal {
    pub title: String,
    pub body: String,
    pub draft: Option<bool>,
}

/// Why a request or a ship did not go ahead, before anything was pushed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("no open session for {0}")]
    NoSession(WorkItemRef),
    #[error(
        "{0} works in a shared workspace (the repository's own checkout): the-loop ships only a worktree's branch of its own"
    )]
    Shared(WorkItemRef),
    #[error(
        "{item} works on `{branch}`, a fork's pull request branch: the-loop has no right to push there; the fork's owner pushes"
    )]
    ForkBranch { item: WorkItemRef, branch: String },
    #[error(
        "{count} uncommitted or untracked {} in the worktree: the agent must commit (or remove) {} first",
        if *.count == 1 { "change" } else { "changes" },
        if *.count == 1 { "it" } else { "them" }
    )]
    Dirty { count: usize },
    #[error("`{branch}` has no commits ahead of {base}: nothing to ship")]
    NothingAhead { branch: String, base: String },
    #[error(
        "the head moved since it was shown: {} then, {} now; look again at what would go out",
        short(.seen), short(.now)
    )]
    HeadMoved { seen: String, now: String },
    #[error("the worktree is not on its branch `{branch}` (HEAD is {head}); check it out again")]
    OffBranch { branch: String, head: String },
    #[error("the title is empty: pass --title")]
    NoTitle,
    #[error("the title is {chars} characters long; at most {MAX_TITLE_CHARS} fit")]
    TitleTooLong { chars: usize },
    #[error("the body is {chars} characters long; at most {MAX_BODY_CHARS} fit")]
    BodyTooLong { chars: usize },
    #[error("git could not say what the worktree holds: {0}")]
    Git(String),
    #[error("the session's record could not be written: {0}")]
    Record(String),
    #[error(
        "this process runs in the session of {own}: it may propose only {own}'s work, not {item}'s"
    )]
    OtherSession { own: String, item: String },
}

impl Refusal {
    /// The `reason` of `ship.refused`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NoSession(_) => "no-session",
            Self::Shared(_) => "shared-workspace",
            Self::ForkBranch { .. } => "fork-branch",
            Self::Dirty { .. } => "uncommitted-changes",
            Self::NothingAhead { .. } => "nothing-ahead",
            Self::HeadMoved { .. } => "head-moved",
            Self::OffBranch { .. } => "off-branch",
            Self::NoTitle | Self::TitleTooLong { .. } | Self::BodyTooLong { .. } => "bad-request",
            Self::Git(_) => "git",
            Self::Record(_) => "state",
            Self::OtherSession { .. } => "other-session",
        }
    }

    /// A usage error (exit 2) rather than a refusal of the work (exit 1).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Self::NoTitle | Self::TitleTooLong { .. } | Self::BodyTooLong { .. }
        )
    }
}

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

/// What would go out, as the operator is shown it before confirming.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preview {
    pub work_item: WorkItemRef,
    pub branch: String,
    /// The branch's tip now.
    pub head: String,
    /// The base the branch is measured against, e.g. `origin/main`.
    pub base: String,
    pub ahead: usize,
    pub files: usize,
    pub insertions: usize,
    pub deletions: usize,
    /// Uncommitted or untracked files (a ship refuses while any).
    pub dirty: usize,
    /// The agent's request, when there is one.
    pub request: Option<ShipRequest>,
    /// The latest critic round on `head`: `review: ok`, or why there is none.
    pub verdict: String,
    /// The pull request the branch already has.
    pub pull: Option<LinkedPull>,
}

impl Preview {
    /// `3 commits · 4 files +120 −8` for the popup and the CLI.
    pub fn summary(&self) -> String {
        format!(
            "{} commit{} · {} file{} +{} −{}",
            self.ahead,
            plural(self.ahead),
            self.files,
            plural(self.files),
            self.insertions,
            self.deletions
        )
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

    fn git(&self) -> Git {
        self.sessions.workspaces().git().clone()
    }

    /// What shipping `item` would push now, or why it cannot.
    pub async fn preview(&self, item: &WorkItemRef) -> Result<Preview, Refusal> {
        let (record, workspace) = self.worktree_of(item)?;
        preview(
            &self.git(),
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
        let git = self.git();
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
            .push_once(order, &record, &workspace, &branch, &sha, shown.ahead)
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
    async fn push_once(
        &self,
        order: &Order,
        record: &SessionRecord,
        workspace: &WorkspaceRecord,
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
        let credentials = self.github.token().await.map(|token| Credentials {
            token,
            askpass: &self.askpass,
        });
        if let Err(error) = push::push(&self.git(), workspace, sha, branch, credentials).await {
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
