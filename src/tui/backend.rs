//! What the screen needs from the rest of the product, as one small trait.
//!
//! The TUI is a view: it renders a [`Snapshot`] of supervisor state and the event
//! stream, and turns keys into requests. Whoever owns the state — the in-process
//! supervisor, or a viewer following another supervisor's event log and registry
//! (SPEC §11.6) — implements [`Backend`]; tests use [`super::fake::FakeBackend`].
//! Nothing here routes, polls or talks to tmux.

use crate::config::PermissionMode;
use crate::events::{Event, EventType};
use crate::session::delivery::HeldSummary;
use crate::session::review::ReviewComment;
pub use crate::session::ship::Preview;
pub use crate::ssh::HostState;
use crate::work_item::WorkItemRef;
use futures::future::BoxFuture;
use std::path::PathBuf;
use time::OffsetDateTime;
use tokio::sync::broadcast;

/// What a session is doing (SPEC §7.5), plus `NoSession` for a watched item without one
/// (listed dimmed so the operator can start it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SessionState {
    Working,
    Idle,
    AwaitingInput,
    /// The harness's permission dialog waits for the operator (SPEC §17.4).
    AwaitingPermission,
    Dead,
    Paused,
    NoSession,
    /// Its host does not answer over SSH: not dead, never respawned (issue 32).
    Unreachable,
}

impl SessionState {
    pub fn label(self) -> &'static str {
        match self {
            SessionState::Working => "working",
            SessionState::Idle => "idle",
            SessionState::AwaitingInput => "awaiting",
            SessionState::AwaitingPermission => "permission",
            SessionState::Dead => "dead",
            SessionState::Paused => "paused",
            SessionState::NoSession => "no session",
            SessionState::Unreachable => "unreachable",
        }
    }

    pub fn glyph(self) -> &'static str {
        match self {
            SessionState::Working => "●",
            SessionState::Idle => "○",
            SessionState::AwaitingInput => "?",
            SessionState::AwaitingPermission => "!",
            SessionState::Dead => "✗",
            SessionState::Paused => "‖",
            SessionState::NoSession => "·",
            SessionState::Unreachable => "⌁",
        }
    }

    /// A harness process exists (alive or not) for this item.
    pub fn has_session(self) -> bool {
        self != SessionState::NoSession
    }
}

/// One row of the Sessions pane: a session, or a watched item with no session yet.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionView {
    pub work_item: WorkItemRef,
    /// The item's title, when known (shown in the Pane title).
    pub title: Option<String>,
    pub harness: Option<String>,
    /// Registry status (`active`, `paused`, `closed`); `None` without a session.
    pub status: Option<String>,
    pub state: SessionState,
    /// `working` / `idle` guessed from the screen: the harness does not report itself.
    pub guessed: bool,
    /// Seconds since the pane last showed activity.
    pub idle_secs: Option<u64>,
    pub tmux_name: Option<String>,
    pub pane: Option<String>,
    pub url: String,
    pub cwd: Option<PathBuf>,
    /// The session's own git worktree, when it has one (SPEC §16.4).
    pub workspace: Option<WorkspaceView>,
    /// Deliveries waiting for the session to take a paste (SPEC §18.3): how many, why,
    /// since when.
    pub held: Option<HeldSummary>,
    /// The number of the pull request the session's work went to (SPEC §19.4).
    pub pull_request: Option<u64>,
    /// What the session's model used and cost (SPEC §20.3); `None`: unknown (`—`).
    pub usage: Option<UsageView>,
    /// The permission mode a claude session was started in, and the one its screen
    /// shows when that differs (issue 30).
    pub mode: Option<ModeView>,
    /// How the-loop reads its client's screen, for a release nobody recorded: `Claude
    /// Code 2.1.337 · read with 2.1.332's rules · seen live: idle ✓ dialog –` (issue 40).
    pub client: Option<String>,
    /// The approval policy and sandbox a codex session runs under (issue 41).
    pub policy: Option<crate::config::CodexPolicy>,
    /// The permission policy an opencode session runs under (issue 44).
    pub opencode: Option<crate::config::OpencodePolicy>,
}

/// A session's permission mode as the Sessions pane shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModeView {
    /// As configured and passed at start (`default`, `auto`, …).
    pub started: PermissionMode,
    /// What the footer of its screen last named, when that is another mode (the
    /// operator pressed shift+tab in the pane).
    pub shown: Option<PermissionMode>,
}

impl ModeView {
    /// The mode on now, as far as the-loop can tell.
    pub fn now(&self) -> PermissionMode {
        self.shown.unwrap_or(self.started)
    }
}

/// A session's usage as the Sessions pane and the header show it.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageView {
    /// `1.2M $3.41`; `$?` where a model has no price.
    pub label: String,
    /// The session's deliveries are held for a budget (SPEC §20.4).
    pub over_budget: bool,
    /// At 80 % of a budget or more.
    pub budget_warning: bool,
    /// Today's tokens and cost (`None`: a model has no price), for the header total.
    pub today_tokens: u64,
    pub today_usd: Option<f64>,
}

/// A session's worktree as the Sessions pane shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceView {
    pub branch: String,
    /// What "ahead" counts from, as the operator reads it: `origin/main`.
    pub base: String,
    /// Uncommitted or untracked files; `None` until first looked at.
    pub changed_files: Option<usize>,
    /// Commits not in the base.
    pub ahead: Option<usize>,
    /// Why it was kept when its session ended (`2 changed files`).
    pub kept: Option<String>,
}

impl SessionView {
    /// A watched item without a session.
    pub fn watched(work_item: WorkItemRef) -> Self {
        Self {
            url: work_item.html_url(),
            work_item,
            title: None,
            harness: None,
            status: None,
            state: SessionState::NoSession,
            guessed: false,
            idle_secs: None,
            tmux_name: None,
            pane: None,
            cwd: None,
            workspace: None,
            held: None,
            pull_request: None,
            usage: None,
            mode: None,
            client: None,
            policy: None,
            opencode: None,
        }
    }
}

/// An open question (SPEC §8.1): a `session.awaiting_input` not yet answered.
#[derive(Debug, Clone, PartialEq)]
pub struct QuestionView {
    pub work_item: WorkItemRef,
    pub question: String,
    pub asked_at: OffsetDateTime,
    pub comment_url: Option<String>,
}

/// A harness's open permission dialog (SPEC §17.4): the agent waits for the operator.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionView {
    pub work_item: WorkItemRef,
    /// Names the request: an answer is refused when the dialog changed since.
    pub request_id: String,
    /// `Bash`, `Edit`, …
    pub tool: String,
    /// One sanitized line: the command, the file path, …
    pub summary: String,
    pub requested_at: OffsetDateTime,
}

/// An agent's request to ship its work (SPEC §19.3), listed in the Questions pane.
#[derive(Debug, Clone, PartialEq)]
pub struct ShipView {
    pub work_item: WorkItemRef,
    /// Names the request (a new one replaces it, and notifies again).
    pub request_id: String,
    pub title: String,
    pub branch: String,
    pub requested_at: OffsetDateTime,
    /// What would go out, as last looked at: `None` until then; `Err`: why it cannot.
    pub preview: Option<Result<Preview, String>>,
}

/// Whether this screen runs the supervisor or watches another one (SPEC §11.6).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Role {
    #[default]
    Supervisor,
    Viewer {
        /// The supervisor's pid, when the lock file says.
        pid: Option<u32>,
    },
}

/// The last `poll.cycle` (SPEC §4.1).
#[derive(Debug, Clone, PartialEq)]
pub struct PollSummary {
    pub at: OffsetDateTime,
    pub items: u64,
    pub requests: u64,
    pub not_modified: u64,
    pub delivered: u64,
    pub dropped: u64,
    pub errors: u64,
    pub rate_remaining: Option<u64>,
    pub duration_ms: u64,
}

impl PollSummary {
    /// Reads a `poll.cycle` event; `None` for any other event or a bad timestamp.
    pub fn from_event(event: &Event) -> Option<Self> {
        if event.event != EventType::PollCycle {
            return None;
        }
        let n = |k: &str| event.fields.get(k).and_then(serde_json::Value::as_u64);
        Some(Self {
            at: crate::time::parse_ts(&event.ts)?,
            items: n("items").unwrap_or(0),
            requests: n("requests").unwrap_or(0),
            not_modified: n("not_modified").unwrap_or(0),
            delivered: n("delivered").unwrap_or(0),
            dropped: n("dropped").unwrap_or(0),
            errors: n("errors").unwrap_or(0),
            rate_remaining: n("rate_remaining"),
            duration_ms: n("duration_ms").unwrap_or(0),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimit {
    pub remaining: u64,
    pub limit: Option<u64>,
}

/// The optional webhook server (SPEC §4.2).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum WebhookState {
    #[default]
    Off,
    Listening {
        listen: String,
        /// False when the route accepts unsigned requests (`allowUnsigned`): a warning.
        signed: bool,
    },
    Failed(String),
}

/// The status bar's data.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StatusView {
    pub role: Role,
    /// `owner/name` of every configured repo.
    pub repos: Vec<String>,
    pub polling_enabled: bool,
    pub last_poll: Option<PollSummary>,
    pub rate: Option<RateLimit>,
    pub webhook: WebhookState,
    /// Standing warnings about the config (shown until they go away).
    pub config_warnings: Vec<String>,
    /// The last `config.reload_failed` error, until a reload succeeds.
    pub reload_error: Option<String>,
    /// `routing.authorizedUsers` is empty: nothing human-authored is acted on.
    pub allowlist_empty: bool,
    /// The configured hosts (`hosts:`, issue 32) by name; none: the bar shows nothing of
    /// them.
    pub hosts: Vec<HostView>,
    /// A limit holding deliveries (issue 43); none: the bar shows nothing of it.
    pub limit: Option<LimitView>,
}

/// The limits that hold deliveries now (issue 43), for the status bar:
/// `⏸ limit · resets 14:00 · 3 deliveries · 1 start`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitView {
    /// An expired login holds (it waits for a turn that succeeds), else a limit.
    pub login: bool,
    /// When the longest one stops holding: the reset the client printed, or the
    /// back-off's end; none for a login, or when only the tries after it are out.
    pub until: Option<OffsetDateTime>,
    /// Deliveries waiting on it.
    pub deliveries: usize,
    /// Starts waiting on it (`session.spawn_held`).
    pub starts: usize,
}

/// A configured host's connection as last seen: `state.label()` (`up`, `unreachable`,
/// `unknown`), `state.rtt_ms()`, `state.reason()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostView {
    pub name: String,
    pub state: HostState,
}

/// A configured critic, for the picker.
#[derive(Debug, Clone, PartialEq)]
pub struct CriticSpecView {
    pub name: String,
    pub harness: Option<String>,
    pub model: Option<String>,
    /// Why it cannot run (disabled, invalid entry); `None` when it can.
    pub problem: Option<String>,
}

/// Names one critic run for `post_critic` and the output view.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RunId(pub String);

/// A finished round's envelope fields (SPEC §9.4).
#[derive(Debug, Clone, PartialEq)]
pub struct CriticResult {
    pub ok: bool,
    pub exit_code: i32,
    pub duration_secs: f64,
    pub cost_usd: Option<f64>,
    /// `[<harness or name>/<model or default>]`: the output is shown under it.
    pub attribution: String,
    pub output: String,
    pub error: Option<String>,
    /// The places the output names in the worktree (SPEC §21.3), listed in the Critics
    /// pane under the selected round.
    pub findings: Vec<crate::critic::Finding>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum CriticRunState {
    Running,
    Finished(CriticResult),
}

#[derive(Debug, Clone, PartialEq)]
pub struct CriticRunView {
    pub id: RunId,
    pub critic: String,
    pub work_item: Option<WorkItemRef>,
    pub started_at: OffsetDateTime,
    pub state: CriticRunState,
    /// The comment URL once posted (SPEC §9.6).
    pub posted: Option<String>,
}

impl CriticRunView {
    pub fn is_running(&self) -> bool {
        self.state == CriticRunState::Running
    }

    pub fn result(&self) -> Option<&CriticResult> {
        match &self.state {
            CriticRunState::Finished(r) => Some(r),
            CriticRunState::Running => None,
        }
    }
}

/// Everything the panes show except the event stream and the pane capture.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Snapshot {
    pub sessions: Vec<SessionView>,
    pub questions: Vec<QuestionView>,
    /// Open permission dialogs, listed in the Questions pane beside the questions.
    pub permissions: Vec<PermissionView>,
    /// Agents' requests to ship, listed in the Questions pane after the permissions.
    pub ships: Vec<ShipView>,
    pub status: StatusView,
    pub critics: Vec<CriticSpecView>,
    pub runs: Vec<CriticRunView>,
}

/// How to attach to a session's tmux (SPEC §11.3). The backend decides (it knows the
/// socket and whether we run inside tmux); the event loop runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttachPlan {
    /// A blocking child that takes over the terminal (`tmux attach -t <name>`): the TUI
    /// suspends, runs it, and resumes when it exits (the operator detached).
    Foreground(Vec<String>),
    /// A quick command that moves the surrounding tmux client (`switch-client`); the TUI
    /// keeps running in its own pane.
    Background(Vec<String>),
}

/// A refused or failed operator action; the message is shown to the operator as is, so
/// it says what happened and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ActionError {
    /// The action does not apply (no session, paused, nothing to post): a warning.
    #[error("{0}")]
    Refused(String),
    /// It was attempted and failed (tmux, GitHub, a process): an error.
    #[error("{0}")]
    Failed(String),
}

/// `Ok` carries the message shown on success (e.g. "reply delivered to octo/repo#18").
pub type ActionResult = Result<String, ActionError>;

/// The supervisor (or a viewer of one) as the TUI sees it. Object-safe, so the loop
/// holds an `Arc<dyn Backend>`; every call that may do I/O is a future.
pub trait Backend: Send + Sync {
    /// The current state of sessions, questions, status and critics. Cheap enough to
    /// call every couple of seconds and after every batch of events.
    fn snapshot(&self) -> BoxFuture<'_, Snapshot>;

    /// Each configured host's connection as last seen, by name (no I/O: the supervisor
    /// keeps it current). The loop puts it in every snapshot's status.
    fn hosts(&self) -> Vec<HostView>;

    /// The last `limit` events, oldest first, to fill the Events pane at start.
    fn recent_events(&self, limit: usize) -> BoxFuture<'_, Vec<Event>>;

    /// Events from now on (the supervisor's broadcast; a viewer feeds one from the log).
    fn subscribe(&self) -> broadcast::Receiver<Event>;

    /// The session's pane content with its colors (ANSI escapes).
    fn capture_pane<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
    ) -> BoxFuture<'a, Result<String, ActionError>>;

    /// The one reply path (SPEC §8.2), with the TUI as the entry point; `over_budget`:
    /// confirmed for a session over its budget (SPEC §20.4).
    fn reply<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
        text: &'a str,
        over_budget: bool,
    ) -> BoxFuture<'a, ActionResult>;

    fn start<'a>(&'a self, work_item: &'a WorkItemRef) -> BoxFuture<'a, ActionResult>;
    fn pause<'a>(&'a self, work_item: &'a WorkItemRef) -> BoxFuture<'a, ActionResult>;
    fn resume<'a>(&'a self, work_item: &'a WorkItemRef) -> BoxFuture<'a, ActionResult>;
    fn stop<'a>(&'a self, work_item: &'a WorkItemRef) -> BoxFuture<'a, ActionResult>;

    /// Lets one delivery held `screen-unread` go out (issue 40): only while the
    /// session's hooks report its turn ended and no permission pending.
    fn deliver_held<'a>(&'a self, work_item: &'a WorkItemRef) -> BoxFuture<'a, ActionResult>;

    /// Answers the session's permission dialog (SPEC §17.4): approve once (`true`) or
    /// deny, when it is still request `request_id` and still on screen.
    fn answer_permission<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
        request_id: &'a str,
        approve: bool,
    ) -> BoxFuture<'a, ActionResult>;

    /// Closes an open question without replying (`session.question_dismissed`).
    fn dismiss_question<'a>(&'a self, work_item: &'a WorkItemRef) -> BoxFuture<'a, ActionResult>;

    /// Starts a critic round in the background, in the session's working directory; its
    /// progress shows in later snapshots' `runs`.
    fn run_critic<'a>(
        &'a self,
        critic: &'a str,
        work_item: &'a WorkItemRef,
    ) -> BoxFuture<'a, ActionResult>;

    /// Posts a finished run's findings to its work item (SPEC §9.6).
    fn post_critic<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, ActionResult>;

    fn open_url<'a>(&'a self, url: &'a str) -> BoxFuture<'a, ActionResult>;

    /// The session's worktree diff against its base, as text (SPEC §16.4): what it is
    /// compared against, the file list, untracked files, the patch.
    fn diff<'a>(&'a self, work_item: &'a WorkItemRef)
    -> BoxFuture<'a, Result<String, ActionError>>;

    /// What the diff view shows beside the diff (SPEC §21.2, §21.3): the pending review
    /// of `work_item` and the findings of its latest critic round that has any.
    fn review_material<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
    ) -> BoxFuture<'a, super::diff_view::ReviewMaterial>;

    /// Adds a comment to the pending review (kept across restarts).
    fn save_comment<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
        comment: &'a ReviewComment,
    ) -> BoxFuture<'a, ActionResult>;

    /// Sends these comments to the session's agent as one framed note through the one
    /// paste path; sent (or queued behind a hold), they leave the pending review.
    /// `over_budget`: confirmed for a session over its budget (SPEC §20.4).
    fn send_review<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
        comments: &'a [ReviewComment],
        over_budget: bool,
    ) -> BoxFuture<'a, ActionResult>;

    /// Drops these comments from the pending review, unsent.
    fn discard_review<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
        ids: &'a [String],
    ) -> BoxFuture<'a, ActionResult>;

    fn attach<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
        read_only: bool,
    ) -> BoxFuture<'a, Result<AttachPlan, ActionError>>;

    /// What shipping the session's work would push now (SPEC §19.4), or why it cannot:
    /// what the confirmation shows.
    fn ship_preview<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
    ) -> BoxFuture<'a, Result<Preview, ActionError>>;

    /// Ships the session's work (`Shipper::ship`, source `tui`): `seen_head` is the head
    /// the confirmation showed — that commit goes out, or nothing does.
    fn ship<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
        seen_head: &'a str,
    ) -> BoxFuture<'a, ActionResult>;
}
