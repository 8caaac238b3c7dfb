//! What each session is doing (SPEC §7.5): `working`, `idle`, `awaiting-input`, `dead`,
//! `paused` — plus `closed` (the record says so) and `unknown` (tmux did not answer).
//!
//! Cheap enough for every second over 50 sessions: one `list-panes -a` for all of them
//! (liveness, pane and `#{window_activity}`), then a capture only of a session whose
//! window had output since the last look. Output alone is not work — a harness may
//! redraw an identical screen — so a session is `working` while its visible text
//! changed within [`WORKING_WINDOW_SECS`], and `idle` after that.
//!
//! That heuristic is a guess, used only for harnesses that say nothing about
//! themselves. A session whose harness reports through hooks (SPEC §17, claude; codex
//! for turn ends) shows what it reported — `working`, `awaiting-permission`, `idle` —
//! and every view says which it is (`stateSource: hooks | screen`).

use super::hooks::{PermissionRequest, Reported, ReportedState};
use super::registry::{ActivitySnapshot, Registry, SessionRecord, Status};
use crate::tmux::{self, Liveness, PaneId, SessionInfo, Tmux};
use crate::work_item::WorkItemRef;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Arc;

/// A session whose screen changed this recently is working.
pub const WORKING_WINDOW_SECS: u64 = 5;

/// A reported `working` whose screen has not changed for this long is not believed:
/// a busy harness redraws (its spinner, its timer), so a report was lost.
pub const STALE_WORKING_SECS: u64 = 60;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ActivityState {
    /// The visible text changed within the last [`WORKING_WINDOW_SECS`].
    Working,
    /// Running, screen unchanged for longer.
    Idle,
    /// Running with an open question to the operator (SPEC §8.1).
    AwaitingInput,
    /// The harness shows a permission dialog and waits for the operator (SPEC §17.4).
    AwaitingPermission,
    /// The record is open but no harness runs (pane exited, or tmux session gone).
    Dead,
    /// Running; deliveries are held back by the operator.
    Paused,
    /// Stopped or its item closed.
    Closed,
    /// tmux did not answer: nothing is known.
    Unknown,
    /// The session's host does not answer over SSH (issue 32): not dead, never
    /// respawned; deliveries wait for it.
    Unreachable,
}

impl ActivityState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::Idle => "idle",
            Self::AwaitingInput => "awaiting-input",
            Self::AwaitingPermission => "awaiting-permission",
            Self::Dead => "dead",
            Self::Paused => "paused",
            Self::Closed => "closed",
            Self::Unknown => "unknown",
            Self::Unreachable => "unreachable",
        }
    }
}

impl std::fmt::Display for ActivityState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a state comes from (`stateSource`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StateSource {
    /// The harness reported it.
    Hooks,
    /// Guessed from the screen (and liveness, pause, open questions).
    Screen,
}

impl StateSource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hooks => "hooks",
            Self::Screen => "screen",
        }
    }
}

/// One session's observed activity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionActivity {
    pub work_item: WorkItemRef,
    pub state: ActivityState,
    /// Seconds since the visible text last changed (running sessions only).
    pub idle_seconds: Option<u64>,
    /// The pane currently hosting the session, found by its tmux name.
    pub pane: Option<PaneId>,
    pub liveness: Liveness,
    /// What to remember for the next look (running sessions only).
    pub snapshot: Option<ActivitySnapshot>,
    pub source: StateSource,
    /// The open permission request, while `awaiting-permission`.
    pub permission: Option<PermissionRequest>,
}

/// Remembers the last snapshot per session between looks (the TUI keeps one). A
/// session it has not seen starts from the snapshot stored in its record.
#[derive(Debug, Default, Clone)]
pub struct ActivityTracker {
    last: HashMap<String, ActivitySnapshot>,
}

impl ActivityTracker {
    pub fn new() -> Self {
        Self::default()
    }
}

/// Observes every record's session: at most one `list-panes -a` plus one capture per
/// session whose window had output since the last look. `open_question` is the hook of
/// the ask work: true when the item has an unanswered `session.awaiting_input`.
pub async fn observe(
    tmux_of: impl Fn(&SessionRecord) -> Result<Arc<dyn Tmux>, tmux::Error>,
    records: &[SessionRecord],
    tracker: &mut ActivityTracker,
    open_question: impl Fn(&WorkItemRef) -> bool,
    now: u64,
) -> Vec<SessionActivity> {
    // One listing per host (`None`: this machine), only where a session is open.
    let mut listings: HashMap<Option<String>, Result<Vec<SessionInfo>, tmux::Error>> =
        HashMap::new();
    for record in records.iter().filter(|r| r.status.is_open()) {
        if listings.contains_key(&record.host) {
            continue;
        }
        let listing = match tmux_of(record) {
            Ok(tmux) => tmux.list_sessions().await,
            Err(error) => Err(error),
        };
        if let Err(error) = &listing {
            tracing::debug!(host = ?record.host, "activity: tmux did not list sessions: {error}");
        }
        listings.insert(record.host.clone(), listing);
    }
    let mut out = Vec::with_capacity(records.len());
    for record in records {
        let listing = listings.get(&record.host);
        let info = match listing {
            None => Some(None),
            Some(Ok(all)) => Some(all.iter().find(|s| s.name == record.tmux_session)),
            Some(Err(_)) => None,
        };
        let tmux = tmux_of(record);
        let mut activity = observe_one(
            tmux.as_deref().ok(),
            record,
            info,
            tracker,
            &open_question,
            now,
        )
        .await;
        // A host that does not answer: its session is neither dead nor respawned.
        let away = matches!(listing, Some(Err(tmux::Error::Unreachable { .. })))
            || matches!(tmux, Err(tmux::Error::Unreachable { .. }));
        if away && record.status.is_open() {
            activity.state = ActivityState::Unreachable;
        }
        out.push(activity);
    }
    out
}

/// `info`: `None` when tmux did not answer, `Some(None)` when the session is absent.
async fn observe_one(
    tmux: Option<&dyn Tmux>,
    record: &SessionRecord,
    info: Option<Option<&SessionInfo>>,
    tracker: &mut ActivityTracker,
    open_question: &impl Fn(&WorkItemRef) -> bool,
    now: u64,
) -> SessionActivity {
    let mut activity = SessionActivity {
        work_item: record.work_item.clone(),
        state: ActivityState::Closed,
        idle_seconds: None,
        pane: None,
        liveness: Liveness::Unknown,
        snapshot: None,
        source: StateSource::Screen,
        permission: None,
    };
    if let Some(info) = info {
        activity.liveness = info.map_or(Liveness::Absent, |i| i.liveness);
        activity.pane = info.map(|i| i.pane.clone());
    }
    let running = info
        .flatten()
        .filter(|i| i.liveness == Liveness::Live && record.status.is_open());
    if let (Some(info), Some(tmux)) = (running, tmux) {
        let previous = tracker
            .last
            .get(&record.tmux_session)
            .or(record.activity.as_ref());
        let mut shown_mode = None;
        let hash = if needs_capture(previous, info.activity) {
            match tmux.capture_pane(&info.pane, false).await {
                Ok(text) => {
                    // Only a claude session records a mode; its footer names the one on now.
                    if record.permission_mode.is_some() {
                        shown_mode = crate::session::delivery::shown_mode(&text);
                    }
                    Some(capture_hash(&text))
                }
                Err(error) => {
                    tracing::debug!(pane = %info.pane, "activity: capture failed: {error}");
                    None
                }
            }
        } else {
            None
        };
        let mut snapshot = advance(previous, info.activity, hash);
        snapshot.shown_mode = shown_mode.or(previous.and_then(|p| p.shown_mode));
        activity.idle_seconds = Some(now.saturating_sub(snapshot.changed_at));
        activity.snapshot = Some(snapshot);
    }
    let running_state = activity.snapshot.as_ref().map(|s| s.changed_at);
    let guess = classify(
        record.status,
        activity.liveness,
        open_question(&record.work_item),
        running_state,
        now,
    );
    (activity.state, activity.source) = with_report(
        guess,
        record.status,
        activity.liveness,
        open_question(&record.work_item),
        running_state,
        record.reported.as_ref(),
        now,
    );
    if activity.state == ActivityState::AwaitingPermission {
        activity.permission = record.reported.as_ref().and_then(|r| r.permission.clone());
    }
    if let Some(snapshot) = &mut activity.snapshot {
        snapshot.state = activity.state.as_str().to_string();
        tracker
            .last
            .insert(record.tmux_session.clone(), snapshot.clone());
    }
    activity
}

/// The state from what is known. `changed_at`: when the screen last changed, for a
/// running session.
pub fn classify(
    status: Status,
    liveness: Liveness,
    open_question: bool,
    changed_at: Option<u64>,
    now: u64,
) -> ActivityState {
    match (status, liveness) {
        (Status::Closed, _) => ActivityState::Closed,
        (_, Liveness::Unknown) => ActivityState::Unknown,
        (_, Liveness::Dead | Liveness::Absent) => ActivityState::Dead,
        (Status::Paused, Liveness::Live) => ActivityState::Paused,
        (Status::Active, Liveness::Live) if open_question => ActivityState::AwaitingInput,
        (Status::Active, Liveness::Live) => match changed_at {
            Some(at) if now.saturating_sub(at) < WORKING_WINDOW_SECS => ActivityState::Working,
            _ => ActivityState::Idle,
        },
    }
}

/// The state shown: what the harness reported, when it reports (`hooks`), else the
/// screen's `guess`. Liveness and the record come first (a pane that is gone is dead
/// whatever was reported); a permission dialog shows even while paused (the operator
/// is needed either way); an open question shows over `idle`, not over `working`.
pub fn with_report(
    guess: ActivityState,
    status: Status,
    liveness: Liveness,
    open_question: bool,
    changed_at: Option<u64>,
    reported: Option<&Reported>,
    now: u64,
) -> (ActivityState, StateSource) {
    let screen = (guess, StateSource::Screen);
    let Some(reported) = reported else {
        return screen;
    };
    let hooks = |state| (state, StateSource::Hooks);
    match (status, liveness) {
        (Status::Closed, _) | (_, Liveness::Unknown) => return screen,
        (_, Liveness::Dead | Liveness::Absent) => {
            return if reported.state == ReportedState::Exited {
                hooks(ActivityState::Dead)
            } else {
                screen
            };
        }
        (Status::Active | Status::Paused, Liveness::Live) => {}
    }
    if reported.permission.is_some() || reported.state == ReportedState::AwaitingPermission {
        return hooks(ActivityState::AwaitingPermission);
    }
    if status == Status::Paused {
        return hooks(ActivityState::Paused);
    }
    let reported_at = crate::time::parse_ts(&reported.at)
        .and_then(|t| u64::try_from(t.unix_timestamp()).ok())
        .unwrap_or(0);
    let quiet_for = now.saturating_sub(changed_at.unwrap_or(0).max(reported_at));
    match reported.state {
        ReportedState::Working if quiet_for >= STALE_WORKING_SECS => screen,
        ReportedState::Working => hooks(ActivityState::Working),
        ReportedState::Idle if open_question => hooks(ActivityState::AwaitingInput),
        // Codex reports only turn ends: output after the last one is a new turn.
        ReportedState::Idle
            if reported.harness == "codex" && changed_at.is_some_and(|c| c > reported_at + 2) =>
        {
            screen
        }
        ReportedState::Idle => hooks(ActivityState::Idle),
        ReportedState::Exited => hooks(ActivityState::Dead),
        ReportedState::AwaitingPermission => hooks(ActivityState::AwaitingPermission),
    }
}

/// A capture is needed unless the window has had no output since the last look.
pub fn needs_capture(previous: Option<&ActivitySnapshot>, window_activity: u64) -> bool {
    previous.is_none_or(|p| p.window_activity != window_activity)
}

/// The next snapshot. `hash` is `None` when no capture was taken (or it failed): the
/// screen is taken as unchanged. A changed screen is dated by the window's last output
/// (tmux's own clock), not by when we happened to look.
pub fn advance(
    previous: Option<&ActivitySnapshot>,
    window_activity: u64,
    hash: Option<String>,
) -> ActivitySnapshot {
    let (capture_hash, changed_at) = match (previous, hash) {
        (Some(p), None) => (p.capture_hash.clone(), p.changed_at),
        (Some(p), Some(h)) if p.capture_hash == h => (h, p.changed_at),
        (_, Some(h)) => (h, window_activity),
        (None, None) => (String::new(), window_activity),
    };
    ActivitySnapshot {
        state: String::new(),
        window_activity,
        capture_hash,
        changed_at,
        shown_mode: None,
    }
}

/// A short, stable hash of a capture (stored in records, compared across processes).
pub fn capture_hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    hex::encode(&digest[..8])
}

/// Stores each observed snapshot whose state differs from its record's, so the next
/// one-shot reader starts from it. Failures are logged, not returned: activity is a
/// view, never worth failing a command for.
pub fn save_snapshots(registry: &Registry, records: &[SessionRecord], seen: &[SessionActivity]) {
    for (record, activity) in records.iter().zip(seen) {
        let Some(snapshot) = &activity.snapshot else {
            continue;
        };
        let stored = record.activity.as_ref().map(|a| a.state.as_str());
        if stored == Some(snapshot.state.as_str()) {
            continue;
        }
        let result = registry.update(&record.work_item, |r| r.activity = Some(snapshot.clone()));
        if let Err(error) = result {
            tracing::warn!(work_item = %record.work_item, "activity not saved: {error}");
        }
    }
}

/// Now, in Unix seconds (tmux's clock for `#{window_activity}`).
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
#[path = "activity_tests.rs"]
mod tests;
