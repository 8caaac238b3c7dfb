//! A simulated GitHub (SPEC §12): an axum server on `127.0.0.1:0` speaking the REST
//! endpoints the product uses, with state that tests and the demo script directly.
//! It lives in the library so the end-to-end tests and `the-loop demo` share one
//! implementation.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use the_loop::github::sim::{IssueSpec, SimGithub};
//! let sim = SimGithub::start().await?;
//! let n = sim.add_issue("octo/repo", IssueSpec::new("Flaky test").labels(&["the-loop"])).unwrap();
//! sim.add_comment("octo/repo", n, "alice", "Please take this one.").unwrap();
//! // point the client at sim.base_url()
//! # Ok(()) }
//! ```

mod clock;
mod gate;
mod pull_reviews;
mod pulls;
mod routes;
mod shapes;
mod state;

pub use pull_reviews::{PullFile, SimLineComment, SimReview};
pub use pulls::SimPull;
use state::{ItemFields, PullInfo, ScriptedFault, SimState};
use std::collections::BTreeMap;
use std::ops::Deref;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use time::OffsetDateTime;

/// A scripted failure for the next matching request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Answer with this status and a GitHub-style error body.
    Status(u16),
    /// 429 with `retry-after` (GitHub's secondary rate limit).
    RateLimited { retry_after: Duration },
    /// Wait this long, then answer normally (exercises client timeouts).
    Delay(Duration),
}

/// One request the simulator received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    /// `None` while in flight, or if the client gave up before the answer.
    pub status: Option<u16>,
    pub not_modified: bool,
    /// An `Authorization` header was sent (its value is never recorded).
    pub had_token: bool,
    /// An `If-None-Match` header was sent.
    pub conditional: bool,
}

/// Request counters for tests and measurements.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimStats {
    pub total: u64,
    pub not_modified: u64,
    /// Requests per path (no query).
    pub by_path: BTreeMap<String, u64>,
}

impl SimStats {
    pub fn path(&self, path: &str) -> u64 {
        self.by_path.get(path).copied().unwrap_or(0)
    }
}

/// A misuse of the test API (e.g. commenting on an item that does not exist).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    #[error("`{0}` is not an `owner/name` repository")]
    BadRepo(String),
    #[error("no repository `{0}` in the simulator; add an issue or call add_repo first")]
    NoRepo(String),
    #[error("no issue or pull request #{1} in `{0}`")]
    NoItem(String, u64),
    #[error("#{1} in `{0}` is an issue, not a pull request")]
    NotAPull(String, u64),
    #[error("#{1} already exists in `{0}`")]
    Duplicate(String, u64),
    #[error("no comment with id {0}")]
    NoComment(u64),
    #[error("no check run with id {0}")]
    NoCheckRun(u64),
}

/// A review's state as the REST API spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReviewState {
    Approved,
    ChangesRequested,
    Commented,
    /// Not submitted yet: listed without `submitted_at`.
    Pending,
}

impl ReviewState {
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewState::Approved => "APPROVED",
            ReviewState::ChangesRequested => "CHANGES_REQUESTED",
            ReviewState::Commented => "COMMENTED",
            ReviewState::Pending => "PENDING",
        }
    }
}

/// A new issue: `IssueSpec::new("title").author("carol").labels(&["the-loop"])`.
#[derive(Debug, Clone)]
pub struct IssueSpec {
    number: Option<u64>,
    fields: ItemFields,
}

impl IssueSpec {
    pub fn new(title: &str) -> Self {
        Self {
            number: None,
            fields: ItemFields {
                title: title.to_string(),
                body: String::new(),
                labels: Vec::new(),
                author: "octocat".into(),
                pull: None,
            },
        }
    }
    /// A specific number (default: the next free one).
    pub fn number(mut self, number: u64) -> Self {
        self.number = Some(number);
        self
    }
    pub fn body(mut self, body: &str) -> Self {
        self.fields.body = body.to_string();
        self
    }
    pub fn author(mut self, login: &str) -> Self {
        self.fields.author = login.to_string();
        self
    }
    pub fn labels(mut self, labels: &[&str]) -> Self {
        self.fields.labels = labels.iter().map(|l| l.to_string()).collect();
        self
    }
}

/// A new pull request: an [`IssueSpec`] plus its head branch.
#[derive(Debug, Clone)]
pub struct PullSpec {
    issue: IssueSpec,
    head_ref: String,
    draft: bool,
}

impl PullSpec {
    pub fn new(title: &str, head_ref: &str) -> Self {
        Self {
            issue: IssueSpec::new(title),
            head_ref: head_ref.to_string(),
            draft: false,
        }
    }
    pub fn number(mut self, number: u64) -> Self {
        self.issue = self.issue.number(number);
        self
    }
    pub fn body(mut self, body: &str) -> Self {
        self.issue = self.issue.body(body);
        self
    }
    pub fn author(mut self, login: &str) -> Self {
        self.issue = self.issue.author(login);
        self
    }
    pub fn labels(mut self, labels: &[&str]) -> Self {
        self.issue = self.issue.labels(labels);
        self
    }
    pub fn draft(mut self, draft: bool) -> Self {
        self.draft = draft;
        self
    }
}

/// A conversation comment as the simulator holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimComment {
    pub id: u64,
    pub number: u64,
    pub login: String,
    pub body: String,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

/// A review comment (inline, on a pull request's diff) as the simulator holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimReviewComment {
    pub id: u64,
    pub number: u64,
    pub login: String,
    pub body: String,
    /// The first comment of its thread, when it is a reply.
    pub in_reply_to: Option<u64>,
}

pub(crate) fn lock(shared: &Mutex<SimState>) -> MutexGuard<'_, SimState> {
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts simulators.
pub struct SimGithub;

impl SimGithub {
    /// Binds `127.0.0.1:0` and serves until the handle is dropped.
    pub async fn start() -> std::io::Result<SimHandle> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let base_url = format!("http://{addr}");
        let shared = Arc::new(Mutex::new(SimState::new(base_url.clone())));
        let app = routes::router(shared.clone());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
            if let Err(e) = served {
                tracing::warn!(error = %e, "simulated GitHub stopped with an error");
            }
        });
        Ok(SimHandle {
            control: SimControl { shared, base_url },
            shutdown: Some(tx),
        })
    }
}

/// The running simulator. Dereferences to [`SimControl`] (the test API); dropping it
/// shuts the server down.
pub struct SimHandle {
    control: SimControl,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Deref for SimHandle {
    type Target = SimControl;
    fn deref(&self) -> &SimControl {
        &self.control
    }
}

impl SimHandle {
    /// A cloneable controller (e.g. for a demo script task); it does not keep the
    /// server alive.
    pub fn control(&self) -> SimControl {
        self.control.clone()
    }
}

impl Drop for SimHandle {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// Reads and changes the simulator's state. Every write moves the simulated clock
/// forward, so `since` cursors see it.
#[derive(Clone)]
pub struct SimControl {
    shared: Arc<Mutex<SimState>>,
    base_url: String,
}

impl std::fmt::Debug for SimControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimControl")
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl SimControl {
    fn state(&self) -> MutexGuard<'_, SimState> {
        lock(&self.shared)
    }

    /// `http://127.0.0.1:<port>`: the client's `apiUrl`.
    pub fn base_url(&self) -> String {
        self.base_url.clone()
    }

    /// Creates an (empty) repository; adding an item creates its repository too.
    pub fn add_repo(&self, repo: &str) -> Result<(), SimError> {
        self.state().ensure_repo(repo).map(|_| ())
    }

    pub fn add_issue(&self, repo: &str, spec: IssueSpec) -> Result<u64, SimError> {
        self.state().create_item(repo, spec.number, spec.fields)
    }

    pub fn add_pull(&self, repo: &str, spec: PullSpec) -> Result<u64, SimError> {
        let mut fields = spec.issue.fields;
        fields.pull = Some(PullInfo {
            head_ref: spec.head_ref,
            base_ref: "main".into(),
            head_sha: String::new(),
            draft: spec.draft,
            merged_at: None,
        });
        self.state().create_item(repo, spec.issue.number, fields)
    }

    /// A conversation comment by `login`; returns its id.
    pub fn add_comment(
        &self,
        repo: &str,
        number: u64,
        login: &str,
        body: &str,
    ) -> Result<u64, SimError> {
        self.state().create_comment(repo, number, login, body)
    }

    pub fn edit_comment(&self, repo: &str, id: u64, body: &str) -> Result<(), SimError> {
        self.state().update_comment(repo, id, body)
    }

    pub fn add_review(
        &self,
        repo: &str,
        number: u64,
        login: &str,
        state: ReviewState,
        body: &str,
    ) -> Result<u64, SimError> {
        self.state()
            .create_review(repo, number, login, state.as_str(), body)
    }

    pub fn add_review_comment(
        &self,
        repo: &str,
        number: u64,
        login: &str,
        path: &str,
        line: u64,
        body: &str,
    ) -> Result<u64, SimError> {
        self.state()
            .create_review_comment(repo, number, login, path, line, body)
    }

    pub fn close_issue(&self, repo: &str, number: u64) -> Result<(), SimError> {
        self.state().touch_item(repo, number, |i, now| {
            i.open = false;
            i.closed_at = Some(now);
            Ok(())
        })
    }

    pub fn reopen_issue(&self, repo: &str, number: u64) -> Result<(), SimError> {
        self.state().touch_item(repo, number, |i, _| {
            i.open = true;
            i.closed_at = None;
            Ok(())
        })
    }

    /// Merges (and so closes) a pull request.
    pub fn merge_pull(&self, repo: &str, number: u64) -> Result<(), SimError> {
        let full = repo.to_string();
        self.state().touch_item(repo, number, |i, now| {
            let pull = i.pull.as_mut().ok_or(SimError::NotAPull(full, number))?;
            pull.merged_at = Some(now);
            i.open = false;
            i.closed_at = Some(now);
            Ok(())
        })
    }

    /// Labels an item as the repository's owner.
    pub fn add_label(&self, repo: &str, number: u64, label: &str) -> Result<(), SimError> {
        let owner = repo.split_once('/').map_or(repo, |(o, _)| o).to_string();
        self.add_label_by(repo, number, label, &owner)
    }

    /// Labels an item as `actor` (the item's timeline records who, SPEC §15.1).
    pub fn add_label_by(
        &self,
        repo: &str,
        number: u64,
        label: &str,
        actor: &str,
    ) -> Result<(), SimError> {
        let mut s = self.state();
        let mut added = false;
        s.touch_item(repo, number, |i, _| {
            if !i.labels.iter().any(|l| l.eq_ignore_ascii_case(label)) {
                i.labels.push(label.to_string());
                added = true;
            }
            Ok(())
        })?;
        if added {
            s.record_issue_event(repo, number, "labeled", actor, Some(label))?;
        }
        Ok(())
    }

    pub fn remove_label(&self, repo: &str, number: u64, label: &str) -> Result<(), SimError> {
        let owner = repo.split_once('/').map_or(repo, |(o, _)| o).to_string();
        let mut s = self.state();
        s.touch_item(repo, number, |i, _| {
            i.labels.retain(|l| !l.eq_ignore_ascii_case(label));
            Ok(())
        })?;
        s.record_issue_event(repo, number, "unlabeled", &owner, Some(label))?;
        Ok(())
    }

    /// A new head commit on a PR (its checks start over); returns the sha.
    pub fn push_commit(&self, repo: &str, number: u64) -> Result<String, SimError> {
        let mut s = self.state();
        let sha = format!(
            "{:040x}",
            s.clock.now().unix_timestamp_nanos() as u64 ^ number
        );
        let full = repo.to_string();
        let new = sha.clone();
        s.touch_item(repo, number, move |i, _| {
            let pull = i.pull.as_mut().ok_or(SimError::NotAPull(full, number))?;
            pull.head_sha = new;
            Ok(())
        })?;
        Ok(sha)
    }

    /// The head commit of a PR.
    pub fn head_sha(&self, repo: &str, number: u64) -> Result<String, SimError> {
        self.state().head_sha(repo, number)
    }

    /// A check run on a PR's head commit, running (`conclusion: None`) or completed
    /// (`Some("failure")`, `Some("success")`, …); returns its id.
    pub fn add_check_run(
        &self,
        repo: &str,
        number: u64,
        name: &str,
        conclusion: Option<&str>,
    ) -> Result<u64, SimError> {
        self.state()
            .create_check_run(repo, number, name, conclusion)
    }

    /// Completes a running check run with `conclusion`.
    pub fn complete_check_run(
        &self,
        repo: &str,
        id: u64,
        conclusion: &str,
    ) -> Result<(), SimError> {
        self.state().complete_check_run(repo, id, conclusion)
    }

    /// The conversation of one item, oldest first (what a test asserts on after the
    /// product posted something).
    pub fn comments_on(&self, repo: &str, number: u64) -> Vec<SimComment> {
        let s = self.state();
        let Some(r) = s.repo(repo) else {
            return Vec::new();
        };
        r.comments
            .values()
            .filter(|c| c.number == number)
            .map(|c| SimComment {
                id: c.id,
                number: c.number,
                login: c.login.clone(),
                body: c.body.clone(),
                created_at: c.created_at,
                updated_at: c.updated_at,
            })
            .collect()
    }

    /// The review comments of one PR, oldest first.
    pub fn review_comments_on(&self, repo: &str, number: u64) -> Vec<SimReviewComment> {
        let s = self.state();
        let Some(r) = s.repo(repo) else {
            return Vec::new();
        };
        r.review_comments
            .values()
            .filter(|c| c.number == number)
            .map(|c| SimReviewComment {
                id: c.id,
                number: c.number,
                login: c.login.clone(),
                body: c.body.clone(),
                in_reply_to: c.in_reply_to,
            })
            .collect()
    }

    /// The login that comments posted through the API are attributed to (the
    /// operator's account in real life).
    pub fn set_bot_login(&self, login: &str) {
        self.state().bot_login = login.to_string();
    }

    /// Require `Authorization: Bearer <token>` on every request (`None`: anonymous ok).
    pub fn require_token(&self, token: Option<&str>) {
        self.state().required_token = token.map(str::to_string);
    }

    /// Sets the hourly budget and refills it.
    pub fn set_rate_limit(&self, limit: u64) {
        let mut s = self.state();
        s.rate.limit = limit;
        s.rate.remaining = limit;
    }

    pub fn rate_remaining(&self) -> u64 {
        self.state().rate_remaining()
    }

    /// Sends `x-poll-interval: <secs>` on every answer (`None`: no header).
    pub fn set_poll_interval(&self, secs: Option<u64>) {
        self.state().poll_interval = secs;
    }

    /// The next `n` requests fail with `fault`.
    pub fn fail_next(&self, n: usize, fault: Fault) {
        self.push_faults(n, fault, None);
    }

    /// The next `n` requests whose path contains `path_contains` fail with `fault`.
    pub fn fail_next_on(&self, path_contains: &str, n: usize, fault: Fault) {
        self.push_faults(n, fault, Some(path_contains.to_string()));
    }

    fn push_faults(&self, n: usize, fault: Fault, path_contains: Option<String>) {
        let mut s = self.state();
        for _ in 0..n {
            s.faults.push_back(ScriptedFault {
                fault: fault.clone(),
                path_contains: path_contains.clone(),
            });
        }
    }

    pub fn requests(&self) -> Vec<RequestRecord> {
        self.state().log.clone()
    }

    pub fn stats(&self) -> SimStats {
        let s = self.state();
        let mut stats = SimStats::default();
        for r in &s.log {
            stats.total += 1;
            stats.not_modified += u64::from(r.not_modified);
            *stats.by_path.entry(r.path.clone()).or_insert(0) += 1;
        }
        stats
    }

    /// Forgets the request log (e.g. after a test's setup).
    pub fn clear_requests(&self) {
        self.state().log.clear();
    }

    /// The simulated time (what the `Date` header says).
    pub fn now(&self) -> OffsetDateTime {
        self.state().clock.now()
    }

    /// Moves simulated time forward (e.g. past a rate-limit reset).
    pub fn advance_clock(&self, by: Duration) {
        self.state().clock.advance(by);
    }
}
