//! An in-memory [`Backend`] for tests, snapshots and benchmarks. It behaves like the
//! real thing where the screen can tell — a reply closes the question and emits
//! `session.reply_sent`, a reply to a paused session is refused, one to a held session
//! is queued behind the hold, a critic run shows up as running until finished — and
//! records every call so tests can assert on them.

use super::action::Request;
use super::backend::{
    ActionError, ActionResult, AttachPlan, Backend, CriticResult, CriticRunState, CriticRunView,
    RunId, SessionState, SessionView, Snapshot,
};
use super::text::short_ref;
use crate::events::{Event, EventType, Level, Source};
use crate::session::review::ReviewComment;
use crate::work_item::WorkItemRef;
use futures::future::BoxFuture;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

mod attach;
mod review;
mod ship;
use time::OffsetDateTime;
use tokio::sync::broadcast;

/// A call the screen made, in order: the polls, attaches, and operator actions (as the
/// same [`Request`] the app sends).
#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    Snapshot,
    Capture(WorkItemRef),
    Diff(WorkItemRef),
    /// What shipping the session's work would push was asked.
    ShipPreview(WorkItemRef),
    Attach {
        work_item: WorkItemRef,
        read_only: bool,
    },
    Action(Request),
}

#[derive(Debug, Default)]
pub(super) struct State {
    pub(super) snapshot: Snapshot,
    pub(super) history: Vec<Event>,
    pub(super) captures: HashMap<WorkItemRef, String>,
    pub(super) diffs: HashMap<WorkItemRef, String>,
    pub(super) ships: HashMap<WorkItemRef, super::backend::Preview>,
    pub(super) reviews: HashMap<WorkItemRef, Vec<ReviewComment>>,
    /// The review notes "pasted", as the agent would read them.
    pub(super) notes: Vec<(WorkItemRef, String)>,
    pub(super) calls: Vec<Call>,
    pub(super) fail_next: Option<ActionError>,
    pub(super) next_run: u64,
    pub(super) now: Option<OffsetDateTime>,
    pub(super) hosts: Vec<super::backend::HostView>,
}

pub struct FakeBackend {
    state: Mutex<State>,
    events: broadcast::Sender<Event>,
}

impl Default for FakeBackend {
    fn default() -> Self {
        Self::new(Snapshot::default())
    }
}

impl FakeBackend {
    pub fn new(snapshot: Snapshot) -> Self {
        let (events, _) = broadcast::channel(1024);
        Self {
            state: Mutex::new(State {
                snapshot,
                ..State::default()
            }),
            events,
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Times new runs and events with `now` instead of the wall clock.
    pub fn set_now(&self, now: OffsetDateTime) {
        self.lock().now = Some(now);
    }

    fn now(&self) -> OffsetDateTime {
        self.lock().now.unwrap_or_else(OffsetDateTime::now_utc)
    }

    pub fn set_snapshot(&self, snapshot: Snapshot) {
        self.lock().snapshot = snapshot;
    }

    pub fn with_snapshot<R>(&self, f: impl FnOnce(&mut Snapshot) -> R) -> R {
        f(&mut self.lock().snapshot)
    }

    pub fn set_history(&self, events: Vec<Event>) {
        self.lock().history = events;
    }

    pub fn set_capture(&self, work_item: &WorkItemRef, ansi: &str) {
        self.lock().captures.insert(work_item.clone(), ansi.into());
    }

    /// What the diff view shows for `work_item`.
    pub fn set_diff(&self, work_item: &WorkItemRef, text: &str) {
        self.lock().diffs.insert(work_item.clone(), text.into());
    }

    /// What shipping `preview.work_item` would push (without one, shipping is refused).
    pub fn set_ship_preview(&self, preview: super::backend::Preview) {
        self.lock().ships.insert(preview.work_item.clone(), preview);
    }

    /// The next action fails with this error.
    pub fn fail_next(&self, error: ActionError) {
        self.lock().fail_next = Some(error);
    }

    pub fn calls(&self) -> Vec<Call> {
        self.lock().calls.clone()
    }

    /// The operator actions asked for, in order.
    pub fn actions(&self) -> Vec<Request> {
        self.calls()
            .into_iter()
            .filter_map(|c| match c {
                Call::Action(r) => Some(r),
                _ => None,
            })
            .collect()
    }

    /// Appends to the history and broadcasts, like the event log does.
    pub fn emit(&self, mut event: Event) {
        event.ts = crate::time::format_ts(self.now());
        self.lock().history.push(event.clone());
        let _ = self.events.send(event);
    }

    /// Ends a running critic round.
    pub fn finish_run(&self, id: &RunId, result: CriticResult) {
        let (critic, item) = {
            let mut st = self.lock();
            let Some(run) = st.snapshot.runs.iter_mut().find(|r| &r.id == id) else {
                return;
            };
            run.state = CriticRunState::Finished(result.clone());
            (run.critic.clone(), run.work_item.clone())
        };
        self.emit(
            Event::new(Source::Critic, EventType::CriticFinished)
                .level(if result.ok {
                    Level::Info
                } else {
                    Level::Warning
                })
                .with("critic", critic)
                .with_opt("work_item", item.map(|i| i.to_string()))
                .with("ok", result.ok)
                .with("exit_code", result.exit_code)
                .with("duration_seconds", result.duration_secs)
                .with_opt("cost_usd", result.cost_usd),
        );
    }

    pub(super) fn record(&self, call: Call) -> Option<ActionError> {
        let mut st = self.lock();
        st.calls.push(call);
        st.fail_next.take()
    }

    fn state_of(&self, item: &WorkItemRef) -> Option<SessionState> {
        self.lock()
            .snapshot
            .sessions
            .iter()
            .find(|s| &s.work_item == item)
            .map(|s| s.state)
    }

    pub(super) fn held_reason(
        &self,
        item: &WorkItemRef,
    ) -> Option<crate::session::delivery::HoldReason> {
        let st = self.lock();
        let s = st.snapshot.sessions.iter().find(|s| &s.work_item == item);
        s.and_then(|s| s.held.as_ref()).map(|h| h.reason)
    }

    pub(super) fn set_state(&self, item: &WorkItemRef, f: impl FnOnce(&mut SessionView)) {
        let mut st = self.lock();
        if let Some(s) = st
            .snapshot
            .sessions
            .iter_mut()
            .find(|s| &s.work_item == item)
        {
            f(s);
        }
    }

    fn session_event(&self, t: EventType, item: &WorkItemRef) {
        self.emit(
            Event::new(Source::Tui, t)
                .with("work_item", item.to_string())
                .with("via", "tui"),
        );
    }

    /// A live session, or why not.
    pub(super) fn live(&self, item: &WorkItemRef) -> Result<SessionState, ActionError> {
        match self.state_of(item) {
            None | Some(SessionState::NoSession) => Err(ActionError::Refused(format!(
                "{} has no session (a reply never starts one)",
                short_ref(item)
            ))),
            Some(state) => Ok(state),
        }
    }
}

fn ready<'a, T: Send + 'a>(value: T) -> BoxFuture<'a, T> {
    Box::pin(async move { value })
}

impl Backend for FakeBackend {
    fn answer_permission<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
        request_id: &'a str,
        approve: bool,
    ) -> BoxFuture<'a, ActionResult> {
        let request = Request::Permission {
            work_item: work_item.clone(),
            request_id: request_id.to_string(),
            approve,
        };
        if let Some(e) = self.record(Call::Action(request)) {
            return ready(Err(e));
        }
        let found = {
            let mut st = self.lock();
            let before = st.snapshot.permissions.len();
            st.snapshot
                .permissions
                .retain(|p| !(&p.work_item == work_item && p.request_id == request_id));
            before != st.snapshot.permissions.len()
        };
        if !found {
            return ready(Err(ActionError::Refused(format!(
                "nothing is waiting for permission on {}",
                short_ref(work_item)
            ))));
        }
        let decision = if approve { "approved" } else { "denied" };
        self.set_state(work_item, |s| {
            s.state = if approve {
                SessionState::Working
            } else {
                SessionState::Idle
            }
        });
        self.emit(
            Event::new(Source::Tui, EventType::SessionPermissionResolved)
                .with("work_item", work_item.to_string())
                .with("decision", decision),
        );
        ready(Ok(format!(
            "{} the request on {}",
            if approve { "Approved" } else { "Denied" },
            short_ref(work_item)
        )))
    }

    fn snapshot(&self) -> BoxFuture<'_, Snapshot> {
        let mut st = self.lock();
        st.calls.push(Call::Snapshot);
        ready(st.snapshot.clone())
    }

    fn recent_events(&self, limit: usize) -> BoxFuture<'_, Vec<Event>> {
        let st = self.lock();
        let start = st.history.len().saturating_sub(limit);
        ready(st.history[start..].to_vec())
    }

    fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    fn capture_pane<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
    ) -> BoxFuture<'a, Result<String, ActionError>> {
        let mut st = self.lock();
        st.calls.push(Call::Capture(work_item.clone()));
        ready(st.captures.get(work_item).cloned().ok_or_else(|| {
            ActionError::Failed(format!("no tmux pane for {}", short_ref(work_item)))
        }))
    }

    fn reply<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
        text: &'a str,
        over_budget: bool,
    ) -> BoxFuture<'a, ActionResult> {
        let failed = self.record(Call::Action(Request::Reply {
            work_item: work_item.clone(),
            text: text.into(),
            over_budget,
        }));
        let held = self.held_reason(work_item);
        let result = match (failed, self.live(work_item), held) {
            (Some(e), _, _) | (None, Err(e), _) => Err(e),
            (None, Ok(SessionState::Paused), _) => Err(ActionError::Refused(format!(
                "{} is paused: resume it first",
                short_ref(work_item)
            ))),
            (None, Ok(SessionState::Dead), _) => Err(ActionError::Refused(format!(
                "{} has no live pane (a reply never respawns)",
                short_ref(work_item)
            ))),
            // Queued behind the hold, as the real reply path does (SPEC §18.3).
            (None, Ok(_), Some(reason)) => {
                self.set_state(work_item, |s| s.held.iter_mut().for_each(|h| h.count += 1));
                Ok(super::held::reply_queued(work_item, reason))
            }
            (None, Ok(_), None) => {
                self.lock()
                    .snapshot
                    .questions
                    .retain(|q| &q.work_item != work_item);
                self.set_state(work_item, |s| s.state = SessionState::Working);
                self.emit(
                    Event::new(Source::Tui, EventType::SessionReplySent)
                        .with("work_item", work_item.to_string())
                        .with("actor", "operator")
                        .with("via", "tui")
                        .with("comment_posted", false),
                );
                Ok(format!("Reply delivered to {}", short_ref(work_item)))
            }
        };
        ready(result)
    }

    fn start<'a>(&'a self, work_item: &'a WorkItemRef) -> BoxFuture<'a, ActionResult> {
        if let Some(e) = self.record(Call::Action(Request::Start(work_item.clone()))) {
            return ready(Err(e));
        }
        if self.live(work_item).is_ok() {
            return ready(Err(ActionError::Refused(format!(
                "{} already has a session",
                short_ref(work_item)
            ))));
        }
        self.set_state(work_item, |s| {
            s.state = SessionState::Working;
            s.harness = Some("claude".into());
            s.status = Some("active".into());
            s.tmux_name = Some(s.work_item.tmux_session_name());
            s.pane = Some("%1".into());
            s.idle_secs = Some(0);
        });
        self.session_event(EventType::SessionSpawned, work_item);
        ready(Ok(format!("Started a session on {}", short_ref(work_item))))
    }

    fn pause<'a>(&'a self, work_item: &'a WorkItemRef) -> BoxFuture<'a, ActionResult> {
        if let Some(e) = self.record(Call::Action(Request::Pause(work_item.clone()))) {
            return ready(Err(e));
        }
        if let Err(e) = self.live(work_item) {
            return ready(Err(e));
        }
        self.set_state(work_item, |s| {
            s.state = SessionState::Paused;
            s.status = Some("paused".into());
        });
        self.session_event(EventType::SessionPaused, work_item);
        ready(Ok(format!("Paused {}", short_ref(work_item))))
    }

    fn resume<'a>(&'a self, work_item: &'a WorkItemRef) -> BoxFuture<'a, ActionResult> {
        if let Some(e) = self.record(Call::Action(Request::Resume(work_item.clone()))) {
            return ready(Err(e));
        }
        self.set_state(work_item, |s| {
            s.state = SessionState::Idle;
            s.status = Some("active".into());
        });
        self.session_event(EventType::SessionResumed, work_item);
        ready(Ok(format!("Resumed {}", short_ref(work_item))))
    }

    fn stop<'a>(&'a self, work_item: &'a WorkItemRef) -> BoxFuture<'a, ActionResult> {
        if let Some(e) = self.record(Call::Action(Request::Stop(work_item.clone()))) {
            return ready(Err(e));
        }
        self.set_state(work_item, |s| {
            *s = SessionView::watched(s.work_item.clone())
        });
        self.session_event(EventType::SessionStopped, work_item);
        ready(Ok(format!("Stopped {}", short_ref(work_item))))
    }

    fn deliver_held<'a>(&'a self, work_item: &'a WorkItemRef) -> BoxFuture<'a, ActionResult> {
        if let Some(e) = self.record(Call::Action(Request::DeliverHeld(work_item.clone()))) {
            return ready(Err(e));
        }
        ready(Ok(format!(
            "Delivered one held delivery to {}",
            short_ref(work_item)
        )))
    }

    fn dismiss_question<'a>(&'a self, work_item: &'a WorkItemRef) -> BoxFuture<'a, ActionResult> {
        if let Some(e) = self.record(Call::Action(Request::Dismiss(work_item.clone()))) {
            return ready(Err(e));
        }
        self.lock()
            .snapshot
            .questions
            .retain(|q| &q.work_item != work_item);
        self.session_event(EventType::SessionQuestionDismissed, work_item);
        ready(Ok(format!(
            "Dismissed the question on {}",
            short_ref(work_item)
        )))
    }

    fn run_critic<'a>(
        &'a self,
        critic: &'a str,
        work_item: &'a WorkItemRef,
    ) -> BoxFuture<'a, ActionResult> {
        if let Some(e) = self.record(Call::Action(Request::RunCritic {
            critic: critic.into(),
            work_item: work_item.clone(),
        })) {
            return ready(Err(e));
        }
        let now = self.now();
        {
            let mut st = self.lock();
            st.next_run += 1;
            let id = RunId(format!("run-{}", st.next_run));
            st.snapshot.runs.push(CriticRunView {
                id,
                critic: critic.into(),
                work_item: Some(work_item.clone()),
                started_at: now,
                state: CriticRunState::Running,
                posted: None,
            });
        }
        self.emit(
            Event::new(Source::Critic, EventType::CriticStarted)
                .with("critic", critic)
                .with("work_item", work_item.to_string()),
        );
        ready(Ok(format!(
            "{critic} is running on {}",
            short_ref(work_item)
        )))
    }

    fn post_critic<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, ActionResult> {
        if let Some(e) = self.record(Call::Action(Request::PostCritic(run.clone()))) {
            return ready(Err(e));
        }
        let posted = {
            let mut st = self.lock();
            match st.snapshot.runs.iter_mut().find(|r| &r.id == run) {
                Some(r) if !r.is_running() => {
                    let item = r.work_item.clone();
                    let url = item
                        .as_ref()
                        .map(|i| format!("{}#issuecomment-1", i.html_url()))
                        .unwrap_or_default();
                    r.posted = Some(url.clone());
                    Ok((r.critic.clone(), item, url))
                }
                Some(_) => Err(ActionError::Refused("the critic is still running".into())),
                None => Err(ActionError::Refused("no such critic run".into())),
            }
        };
        let result = posted.map(|(critic, item, url)| {
            self.emit(
                Event::new(Source::Tui, EventType::CriticPosted)
                    .with("critic", critic.clone())
                    .with_opt("work_item", item.map(|i| i.to_string()))
                    .with("comment_url", url.clone()),
            );
            format!("Posted {critic}'s findings: {url}")
        });
        ready(result)
    }

    fn diff<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
    ) -> BoxFuture<'a, Result<String, ActionError>> {
        let mut st = self.lock();
        st.calls.push(Call::Diff(work_item.clone()));
        ready(
            st.diffs.get(work_item).cloned().ok_or_else(|| {
                ActionError::Refused(format!("no diff for {}", short_ref(work_item)))
            }),
        )
    }

    fn open_url<'a>(&'a self, url: &'a str) -> BoxFuture<'a, ActionResult> {
        if let Some(e) = self.record(Call::Action(Request::OpenUrl(url.into()))) {
            return ready(Err(e));
        }
        ready(Ok(format!("Opened {url}")))
    }

    fn attach<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
        read_only: bool,
    ) -> BoxFuture<'a, Result<AttachPlan, ActionError>> {
        ready(self.attach_plan(work_item, read_only))
    }

    fn hosts(&self) -> Vec<super::backend::HostView> {
        self.host_views()
    }

    fn ship_preview<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
    ) -> BoxFuture<'a, Result<super::backend::Preview, ActionError>> {
        let mut st = self.lock();
        st.calls.push(Call::ShipPreview(work_item.clone()));
        ready(st.ships.get(work_item).cloned().ok_or_else(|| {
            ActionError::Refused(format!("no open session for {}", short_ref(work_item)))
        }))
    }

    /// Like the engine: refuses a moved head, else opens pull request #7, links it to
    /// the session and closes the request.
    fn ship<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
        seen_head: &'a str,
    ) -> BoxFuture<'a, ActionResult> {
        ready(self.ship_now(work_item, seen_head))
    }

    fn review_material<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
    ) -> BoxFuture<'a, super::diff_view::ReviewMaterial> {
        ready(self.material(work_item))
    }

    fn save_comment<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
        comment: &'a ReviewComment,
    ) -> BoxFuture<'a, ActionResult> {
        ready(self.keep_comment(work_item, comment))
    }

    fn send_review<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
        comments: &'a [ReviewComment],
        over_budget: bool,
    ) -> BoxFuture<'a, ActionResult> {
        ready(self.send_comments(work_item, comments, over_budget))
    }

    fn discard_review<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
        ids: &'a [String],
    ) -> BoxFuture<'a, ActionResult> {
        ready(self.drop_comments(work_item, ids))
    }
}
