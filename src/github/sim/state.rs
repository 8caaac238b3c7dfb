//! The simulated GitHub's data: repositories, issues and PRs, comments, reviews, the
//! clock, the rate budget, scripted faults and the request log. Plain data behind one
//! mutex; the HTTP layer (`routes.rs`) and the test API (`mod.rs`) both work on it.

use super::clock::SimClock;
use super::{Fault, RequestRecord, SimError};
use std::collections::{BTreeMap, VecDeque};
use time::OffsetDateTime;

/// One hour, GitHub's rate-limit window.
const RATE_WINDOW: time::Duration = time::Duration::hours(1);

#[derive(Debug, Clone)]
pub(crate) struct PullInfo {
    pub head_ref: String,
    /// The branch it merges into (`main` unless opened through the API with another).
    pub base_ref: String,
    /// The head commit; `push_commit` moves it. Empty: derived from the PR's id.
    pub head_sha: String,
    pub draft: bool,
    pub merged_at: Option<OffsetDateTime>,
}

/// An entry of an item's event timeline (`GET /repos/{o}/{r}/issues/{n}/events`).
#[derive(Debug, Clone)]
pub(crate) struct IssueEvent {
    pub id: u64,
    pub number: u64,
    /// `labeled`, `unlabeled`, `closed`, `reopened`, …
    pub event: String,
    pub actor: String,
    pub label: Option<String>,
    pub created_at: OffsetDateTime,
}

/// A check run on a commit (`GET /repos/{o}/{r}/commits/{sha}/check-runs`).
#[derive(Debug, Clone)]
pub(crate) struct CheckRun {
    pub id: u64,
    pub head_sha: String,
    pub name: String,
    /// `queued`, `in_progress` or `completed`.
    pub status: String,
    pub conclusion: Option<String>,
    pub summary: String,
    pub started_at: OffsetDateTime,
    pub completed_at: Option<OffsetDateTime>,
}

#[derive(Debug, Clone)]
pub(crate) struct Issue {
    pub id: u64,
    pub number: u64,
    pub title: String,
    pub body: String,
    pub labels: Vec<String>,
    pub open: bool,
    pub author: String,
    pub pull: Option<PullInfo>,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
    pub closed_at: Option<OffsetDateTime>,
}

#[derive(Debug, Clone)]
pub(crate) struct Comment {
    pub id: u64,
    pub number: u64,
    pub login: String,
    pub body: String,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

#[derive(Debug, Clone)]
pub(crate) struct ReviewComment {
    pub id: u64,
    pub number: u64,
    pub review_id: Option<u64>,
    pub login: String,
    pub path: String,
    pub line: u64,
    /// The first line of a comment on several lines.
    pub start_line: Option<u64>,
    pub body: String,
    /// The first comment of the thread, when this one is a reply in it.
    pub in_reply_to: Option<u64>,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

/// What the comment listings filter and sort on.
pub(crate) trait Threaded {
    fn id(&self) -> u64;
    fn number(&self) -> u64;
    fn created_at(&self) -> OffsetDateTime;
    fn updated_at(&self) -> OffsetDateTime;
}

macro_rules! threaded {
    ($($t:ty),*) => {$(
        impl Threaded for $t {
            fn id(&self) -> u64 { self.id }
            fn number(&self) -> u64 { self.number }
            fn created_at(&self) -> OffsetDateTime { self.created_at }
            fn updated_at(&self) -> OffsetDateTime { self.updated_at }
        }
    )*};
}
threaded!(Comment, ReviewComment);

#[derive(Debug, Clone)]
pub(crate) struct Review {
    pub id: u64,
    pub number: u64,
    pub login: String,
    pub state: String,
    pub body: String,
    pub submitted_at: Option<OffsetDateTime>,
}

#[derive(Debug, Default)]
pub(crate) struct Repo {
    pub id: u64,
    pub owner: String,
    pub name: String,
    pub issues: BTreeMap<u64, Issue>,
    pub comments: BTreeMap<u64, Comment>,
    pub review_comments: BTreeMap<u64, ReviewComment>,
    pub reviews: BTreeMap<u64, Review>,
    pub pull_files: BTreeMap<u64, Vec<super::pull_reviews::PullFile>>,
    pub issue_events: BTreeMap<u64, IssueEvent>,
    pub check_runs: BTreeMap<u64, CheckRun>,
}

impl Repo {
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }
}

#[derive(Debug)]
pub(crate) struct RateBudget {
    pub limit: u64,
    pub remaining: u64,
    pub reset: OffsetDateTime,
}

#[derive(Debug)]
pub(crate) struct ScriptedFault {
    pub fault: Fault,
    /// Only requests whose path contains this are affected (`None`: any request).
    pub path_contains: Option<String>,
}

#[derive(Debug)]
pub(crate) struct SimState {
    pub api_base: String,
    pub html_base: String,
    pub clock: SimClock,
    pub repos: BTreeMap<String, Repo>,
    next_id: u64,
    pub bot_login: String,
    pub required_token: Option<String>,
    /// Where the branches of a repository are known (`None`: any head is accepted).
    pub branches: Option<super::pulls::Branches>,
    pub rate: RateBudget,
    pub poll_interval: Option<u64>,
    pub faults: VecDeque<ScriptedFault>,
    pub log: Vec<RequestRecord>,
}

fn repo_key(repo: &str) -> String {
    repo.to_ascii_lowercase()
}

impl SimState {
    pub fn new(api_base: String) -> Self {
        let clock = SimClock::new();
        let reset = clock.now() + RATE_WINDOW;
        Self {
            api_base,
            html_base: "https://github.com".into(),
            clock,
            repos: BTreeMap::new(),
            next_id: 1000,
            bot_login: "the-loop-operator".into(),
            required_token: None,
            branches: None,
            rate: RateBudget {
                limit: 5000,
                remaining: 5000,
                reset,
            },
            poll_interval: None,
            faults: VecDeque::new(),
            log: Vec::new(),
        }
    }

    fn fresh_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    pub fn ensure_repo(&mut self, repo: &str) -> Result<&mut Repo, SimError> {
        let (owner, name) = repo
            .split_once('/')
            .filter(|(o, n)| !o.is_empty() && !n.is_empty() && !n.contains('/'))
            .ok_or_else(|| SimError::BadRepo(repo.to_string()))?;
        let key = repo_key(repo);
        if !self.repos.contains_key(&key) {
            let id = self.fresh_id();
            let repo = Repo {
                id,
                owner: owner.to_string(),
                name: name.to_string(),
                ..Repo::default()
            };
            self.repos.insert(key.clone(), repo);
        }
        self.repos
            .get_mut(&key)
            .ok_or_else(|| SimError::BadRepo(repo.to_string()))
    }

    pub fn repo(&self, repo: &str) -> Option<&Repo> {
        self.repos.get(&repo_key(repo))
    }

    pub(crate) fn repo_mut(&mut self, repo: &str) -> Result<&mut Repo, SimError> {
        self.repos
            .get_mut(&repo_key(repo))
            .ok_or_else(|| SimError::NoRepo(repo.to_string()))
    }

    pub(crate) fn issue_mut(&mut self, repo: &str, number: u64) -> Result<&mut Issue, SimError> {
        self.repo_mut(repo)?
            .issues
            .get_mut(&number)
            .ok_or_else(|| SimError::NoItem(repo.to_string(), number))
    }

    /// Creates an issue (or a PR when `pull` is set); `number` is the next free one
    /// unless given.
    pub fn create_item(
        &mut self,
        repo: &str,
        number: Option<u64>,
        fields: ItemFields,
    ) -> Result<u64, SimError> {
        let now = self.clock.tick();
        let id = self.fresh_id();
        let r = self.ensure_repo(repo)?;
        let number = number.unwrap_or_else(|| r.issues.keys().max().map_or(1, |n| n + 1));
        if r.issues.contains_key(&number) {
            return Err(SimError::Duplicate(repo.to_string(), number));
        }
        // Opened with labels: the author applied them, as the timeline says.
        for label in &fields.labels {
            let event_id = id * 1000 + r.issue_events.len() as u64;
            r.issue_events.insert(
                event_id,
                IssueEvent {
                    id: event_id,
                    number,
                    event: "labeled".into(),
                    actor: fields.author.clone(),
                    label: Some(label.clone()),
                    created_at: now,
                },
            );
        }
        r.issues.insert(
            number,
            Issue {
                id,
                number,
                title: fields.title,
                body: fields.body,
                labels: fields.labels,
                open: true,
                author: fields.author,
                pull: fields.pull,
                created_at: now,
                updated_at: now,
                closed_at: None,
            },
        );
        Ok(number)
    }

    /// Adds a conversation comment; the item's `updated_at` moves too, as on GitHub.
    pub fn create_comment(
        &mut self,
        repo: &str,
        number: u64,
        login: &str,
        body: &str,
    ) -> Result<u64, SimError> {
        self.issue_mut(repo, number)?;
        let now = self.clock.tick();
        let id = self.fresh_id();
        let r = self.repo_mut(repo)?;
        r.comments.insert(
            id,
            Comment {
                id,
                number,
                login: login.to_string(),
                body: body.to_string(),
                created_at: now,
                updated_at: now,
            },
        );
        self.issue_mut(repo, number)?.updated_at = now;
        Ok(id)
    }

    pub fn update_comment(&mut self, repo: &str, id: u64, body: &str) -> Result<(), SimError> {
        let now = self.clock.tick();
        let c = self
            .repo_mut(repo)?
            .comments
            .get_mut(&id)
            .ok_or(SimError::NoComment(id))?;
        c.body = body.to_string();
        c.updated_at = now;
        Ok(())
    }

    pub fn create_review(
        &mut self,
        repo: &str,
        number: u64,
        login: &str,
        state: &str,
        body: &str,
    ) -> Result<u64, SimError> {
        self.require_pull(repo, number)?;
        let now = self.clock.tick();
        let id = self.fresh_id();
        let pending = state == "PENDING";
        self.repo_mut(repo)?.reviews.insert(
            id,
            Review {
                id,
                number,
                login: login.to_string(),
                state: state.to_string(),
                body: body.to_string(),
                submitted_at: (!pending).then_some(now),
            },
        );
        // A submitted review moves the PR's `updated_at`, as on GitHub.
        if !pending {
            self.issue_mut(repo, number)?.updated_at = now;
        }
        Ok(id)
    }

    pub fn create_review_comment(
        &mut self,
        repo: &str,
        number: u64,
        login: &str,
        path: &str,
        line: u64,
        body: &str,
    ) -> Result<u64, SimError> {
        self.require_pull(repo, number)?;
        let now = self.clock.tick();
        let id = self.fresh_id();
        self.repo_mut(repo)?.review_comments.insert(
            id,
            ReviewComment {
                id,
                number,
                review_id: None,
                login: login.to_string(),
                path: path.to_string(),
                line,
                start_line: None,
                body: body.to_string(),
                in_reply_to: None,
                created_at: now,
                updated_at: now,
            },
        );
        Ok(id)
    }

    /// A reply by `login` in the thread of review comment `to` on PR `number`, as
    /// `POST /repos/{o}/{r}/pulls/{n}/comments/{id}/replies` makes it: on the same line,
    /// `in_reply_to` the thread's first comment. A comment that is not on that PR is
    /// [`SimError::NoComment`] (GitHub answers 404).
    pub fn reply_to_review_comment(
        &mut self,
        repo: &str,
        number: u64,
        to: u64,
        login: &str,
        body: &str,
    ) -> Result<u64, SimError> {
        self.require_pull(repo, number)?;
        let parent = self
            .repo(repo)
            .and_then(|r| r.review_comments.get(&to))
            .filter(|c| c.number == number)
            .cloned()
            .ok_or(SimError::NoComment(to))?;
        let now = self.clock.tick();
        let id = self.fresh_id();
        self.repo_mut(repo)?.review_comments.insert(
            id,
            ReviewComment {
                id,
                login: login.to_string(),
                body: body.to_string(),
                in_reply_to: Some(parent.in_reply_to.unwrap_or(parent.id)),
                created_at: now,
                updated_at: now,
                ..parent
            },
        );
        Ok(id)
    }

    fn require_pull(&mut self, repo: &str, number: u64) -> Result<(), SimError> {
        match self.issue_mut(repo, number)?.pull {
            Some(_) => Ok(()),
            None => Err(SimError::NotAPull(repo.to_string(), number)),
        }
    }

    /// Applies a change to an item and moves its `updated_at`.
    pub fn touch_item(
        &mut self,
        repo: &str,
        number: u64,
        change: impl FnOnce(&mut Issue, OffsetDateTime) -> Result<(), SimError>,
    ) -> Result<(), SimError> {
        let now = self.clock.tick();
        let issue = self.issue_mut(repo, number)?;
        change(issue, now)?;
        issue.updated_at = now;
        Ok(())
    }

    /// Records an entry of an item's timeline.
    pub fn record_issue_event(
        &mut self,
        repo: &str,
        number: u64,
        event: &str,
        actor: &str,
        label: Option<&str>,
    ) -> Result<u64, SimError> {
        let now = self.clock.now();
        let id = self.fresh_id();
        self.repo_mut(repo)?.issue_events.insert(
            id,
            IssueEvent {
                id,
                number,
                event: event.to_string(),
                actor: actor.to_string(),
                label: label.map(str::to_string),
                created_at: now,
            },
        );
        Ok(id)
    }

    /// The head commit of a PR.
    pub fn head_sha(&self, repo: &str, number: u64) -> Result<String, SimError> {
        let issue = self
            .repo(repo)
            .and_then(|r| r.issues.get(&number))
            .ok_or_else(|| SimError::NoItem(repo.to_string(), number))?;
        match &issue.pull {
            Some(p) if !p.head_sha.is_empty() => Ok(p.head_sha.clone()),
            Some(_) => Ok(default_sha(issue.id)),
            None => Err(SimError::NotAPull(repo.to_string(), number)),
        }
    }

    /// Adds a check run on a PR's head commit; returns its id.
    pub fn create_check_run(
        &mut self,
        repo: &str,
        number: u64,
        name: &str,
        conclusion: Option<&str>,
    ) -> Result<u64, SimError> {
        let sha = self.head_sha(repo, number)?;
        let now = self.clock.tick();
        let id = self.fresh_id();
        self.repo_mut(repo)?.check_runs.insert(
            id,
            CheckRun {
                id,
                head_sha: sha,
                name: name.to_string(),
                status: if conclusion.is_some() {
                    "completed"
                } else {
                    "in_progress"
                }
                .into(),
                conclusion: conclusion.map(str::to_string),
                summary: format!("{name}: {}", conclusion.unwrap_or("running")),
                started_at: now,
                completed_at: conclusion.map(|_| now),
            },
        );
        Ok(id)
    }

    pub fn complete_check_run(
        &mut self,
        repo: &str,
        id: u64,
        conclusion: &str,
    ) -> Result<(), SimError> {
        let now = self.clock.tick();
        let run = self
            .repo_mut(repo)?
            .check_runs
            .get_mut(&id)
            .ok_or(SimError::NoCheckRun(id))?;
        run.status = "completed".into();
        run.conclusion = Some(conclusion.to_string());
        run.summary = format!("{}: {conclusion}", run.name);
        run.completed_at = Some(now);
        Ok(())
    }

    /// Refills the budget once its window has passed; returns what is left.
    pub fn rate_remaining(&mut self) -> u64 {
        let now = self.clock.now();
        if now >= self.rate.reset {
            self.rate.remaining = self.rate.limit;
            self.rate.reset = now + RATE_WINDOW;
        }
        self.rate.remaining
    }

    pub fn charge(&mut self) {
        self.rate.remaining = self.rate.remaining.saturating_sub(1);
    }

    /// The next scripted fault that applies to `path`, if any.
    pub fn take_fault(&mut self, path: &str) -> Option<Fault> {
        let index = self.faults.iter().position(|f| {
            f.path_contains
                .as_deref()
                .is_none_or(|needle| path.contains(needle))
        })?;
        self.faults.remove(index).map(|f| f.fault)
    }
}

/// The head sha of a PR nobody pushed to: derived from its id.
pub(crate) fn default_sha(id: u64) -> String {
    format!("{id:040x}")
}

/// What a new item is made of (see `IssueSpec` / `PullSpec`).
#[derive(Debug, Clone)]
pub(crate) struct ItemFields {
    pub title: String,
    pub body: String,
    pub labels: Vec<String>,
    pub author: String,
    pub pull: Option<PullInfo>,
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
