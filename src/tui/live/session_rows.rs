//! The Sessions pane's rows: every open session from the registry with its activity
//! (`session::activity::observe`: one `list-panes -a` for all of them, a capture only of
//! a window that had output), then the watched items without a session, read from the
//! poller's ledgers — re-parsed only when a ledger file changed, so a refresh every
//! second stays cheap with 50 sessions. A session in its own worktree carries its branch,
//! changed files and commits ahead (SPEC §16.4): git is asked again about a worktree at
//! most every [`WORKTREE_EVERY`], and about a few worktrees per refresh, so the git
//! cost of a refresh is bounded whatever the number of sessions. Ended sessions whose
//! worktree was kept are listed too, marked.

use crate::config::Config;
use crate::events::Source;
use crate::ingress::ledger::{self, ledger_path};
use crate::paths::StatePaths;
use crate::session::activity::{
    self, ActivityState, ActivityTracker, SessionActivity, StateSource,
};
use crate::session::hooks;
use crate::session::registry::same_item;
use crate::session::{OpenQuestions, SessionRecord, Sessions, Status};
use crate::tmux::PaneId;
use crate::tui::backend::{ModeView, PermissionView, SessionState, SessionView, WorkspaceView};
use crate::work_item::WorkItemRef;
use crate::workspace::status::Status as TreeStatus;
use crate::workspace::{WorkspaceRecord, Workspaces};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

/// How old a worktree's counts may get before git is asked again.
pub const WORKTREE_EVERY: Duration = Duration::from_secs(5);
/// At most this many worktrees are looked at per refresh.
const WORKTREES_PER_REFRESH: usize = 4;

/// The rows, the open permission dialogs, and whether tmux failed to answer (states
/// are then unknown).
pub struct Rows {
    pub sessions: Vec<SessionView>,
    pub permissions: Vec<PermissionView>,
    /// The ship requests of open sessions (SPEC §19.3).
    pub ship_requests: Vec<(WorkItemRef, crate::session::ship::ShipRequest)>,
    pub tmux_unknown: bool,
    /// The limits that hold deliveries (the starts waiting are the log's to add).
    pub limit: Option<crate::tui::backend::LimitView>,
}

/// What the pane keeps between refreshes.
#[derive(Default)]
pub struct SessionRows {
    tracker: tokio::sync::Mutex<ActivityTracker>,
    /// The pane each session was last seen in, for captures between refreshes.
    panes: Mutex<HashMap<WorkItemRef, PaneId>>,
    watched: Mutex<WatchedCache>,
    /// Each worktree's last counts and when they were taken.
    trees: Mutex<HashMap<WorkItemRef, (Instant, Option<TreeStatus>)>>,
}

impl SessionRows {
    /// The session's pane as last observed (falling back to the one its record names).
    pub fn pane_of(&self, item: &WorkItemRef, record: Option<&SessionRecord>) -> Option<PaneId> {
        let known = self
            .panes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(item)
            .cloned();
        known.or_else(|| {
            record
                .and_then(|r| r.pane_id.as_deref())
                .and_then(|p| PaneId::parse(p).ok())
        })
    }

    pub async fn rows(
        &self,
        sessions: &Sessions,
        config: &Config,
        paths: &StatePaths,
        questions: &OpenQuestions,
    ) -> Rows {
        let mut records = match sessions.registry().list() {
            Ok(records) => records,
            Err(e) => {
                tracing::warn!(error = %e, "session registry unreadable");
                Vec::new()
            }
        };
        records.sort_by_key(|r| r.work_item.to_string());
        let seen = {
            let mut tracker = self.tracker.lock().await;
            activity::observe(
                |r: &SessionRecord| sessions.tmux_of(r),
                &records,
                &mut tracker,
                |item| questions.awaiting(item),
                activity::unix_now(),
            )
            .await
        };
        // A dialog answered in the pane resolves as `elsewhere` (SPEC §17.4).
        hooks::reconcile(sessions, &records, &seen, Source::Tui).await;
        let tmux_unknown = seen.iter().any(|a| a.state == ActivityState::Unknown);
        {
            let mut panes = self.panes.lock().unwrap_or_else(|e| e.into_inner());
            panes.clear();
            for a in &seen {
                if let Some(pane) = &a.pane {
                    panes.insert(a.work_item.clone(), pane.clone());
                }
            }
        }
        let watched = self
            .watched
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .items(config, paths);
        let trees = self.worktrees(sessions, &records).await;
        let ship_requests = records
            .iter()
            .filter(|r| r.status.is_open())
            .filter_map(|r| Some((r.work_item.clone(), r.ship_request.clone()?)))
            .collect();
        let mut rows = merge(&records, &seen, watched, &trees);
        let budgets = &sessions.settings().budgets;
        let today = crate::usage::today();
        let day = crate::session::usage::day_total(&records, &today);
        for row in &mut rows {
            if let Some(record) = records.iter().find(|r| r.work_item == row.work_item) {
                row.usage = usage_view(record, (&today, &day), budgets);
                row.client = sessions.client_reading(record);
            }
        }
        let backoff = crate::session::limits::Backoff::from_config(&sessions.settings().sessions);
        let now = time::OffsetDateTime::now_utc();
        let limit = super::supervision::limit_view(&records, &rows, &backoff, now);
        Rows {
            ship_requests,
            limit,
            sessions: rows,
            permissions: permissions(&seen),
            tmux_unknown,
        }
    }

    /// The worktree view of every session that has one (or kept one), counts refreshed
    /// for the stalest few.
    async fn worktrees(
        &self,
        sessions: &Sessions,
        records: &[SessionRecord],
    ) -> HashMap<WorkItemRef, WorkspaceView> {
        let wanted: Vec<&SessionRecord> = records
            .iter()
            .filter(|r| r.workspace.is_some() || r.workspace_kept.is_some())
            .collect();
        if wanted.is_empty() {
            return HashMap::new();
        }
        let workspaces = sessions.workspaces();
        let known: Vec<(&SessionRecord, WorkspaceRecord)> = wanted
            .into_iter()
            .filter_map(|r| Some((r, workspaces.record(&r.work_item).ok().flatten()?)))
            .collect();
        let now = Instant::now();
        let stale: Vec<&WorkspaceRecord> = {
            let trees = self.trees.lock().unwrap_or_else(|e| e.into_inner());
            let mut stale: Vec<(Option<Instant>, &WorkspaceRecord)> = known
                .iter()
                .map(|(_, ws)| (trees.get(&ws.work_item).map(|t| t.0), ws))
                .filter(|(at, _)| at.is_none_or(|at| now.duration_since(at) >= WORKTREE_EVERY))
                .collect();
            stale.sort_by_key(|(at, _)| *at);
            stale
                .into_iter()
                .take(WORKTREES_PER_REFRESH)
                .map(|(_, ws)| ws)
                .collect()
        };
        let fresh = futures::future::join_all(stale.iter().map(|ws| {
            // A worktree on a host is counted there, while the host is up.
            let there = workspaces.reaching(ws).ok().filter(Workspaces::reachable);
            async move {
                let status = match there {
                    Some(there) => crate::workspace::status::status(there.git(), ws).await.ok(),
                    None => None,
                };
                (ws.work_item.clone(), status)
            }
        }))
        .await;
        let mut trees = self.trees.lock().unwrap_or_else(|e| e.into_inner());
        for (item, status) in fresh {
            trees.insert(item, (now, status));
        }
        trees.retain(|item, _| known.iter().any(|(_, ws)| &ws.work_item == item));
        known
            .iter()
            .map(|(record, ws)| {
                let counts = trees.get(&ws.work_item).and_then(|t| t.1.clone());
                let view = WorkspaceView {
                    branch: counts
                        .as_ref()
                        .and_then(|c| c.branch.clone())
                        .unwrap_or_else(|| ws.branch.clone()),
                    base: ws.base_label().to_string(),
                    changed_files: counts.as_ref().map(|c| c.changed_files),
                    ahead: counts.as_ref().map(|c| c.ahead),
                    kept: record.workspace_kept.clone().or_else(|| ws.kept.clone()),
                };
                (record.work_item.clone(), view)
            })
            .collect()
    }
}

/// The permission dialogs the observed sessions wait on, oldest first.
fn permissions(seen: &[SessionActivity]) -> Vec<PermissionView> {
    let now = time::OffsetDateTime::now_utc();
    let mut out: Vec<PermissionView> = seen
        .iter()
        .filter_map(|a| {
            let p = a.permission.as_ref()?;
            Some(PermissionView {
                work_item: a.work_item.clone(),
                request_id: p.id.clone(),
                tool: p.tool.clone(),
                summary: p.summary.clone(),
                requested_at: crate::time::parse_ts(&p.requested_at).unwrap_or(now),
            })
        })
        .collect();
    out.sort_by_key(|p| p.requested_at);
    out
}

/// Open sessions first (by ref), then watched items that have none (closed sessions
/// among them, since the start key applies to them again). A closed session of an item
/// no longer watched is not listed.
///
/// (Usage is added by [`usage_view`], the client's reading by `client_reading`.)
fn merge(
    records: &[SessionRecord],
    seen: &[SessionActivity],
    watched: Vec<WatchedItem>,
    trees: &HashMap<WorkItemRef, WorkspaceView>,
) -> Vec<SessionView> {
    let title_of = |item: &WorkItemRef| {
        watched
            .iter()
            .find(|w| same_item(&w.work_item, item))
            .and_then(|w| w.title.clone())
    };
    let mut rows: Vec<SessionView> = records
        .iter()
        .zip(seen)
        .filter(|(r, _)| r.status.is_open())
        .map(|(record, activity)| SessionView {
            work_item: record.work_item.clone(),
            title: title_of(&record.work_item),
            harness: Some(record.harness.clone()),
            status: Some(record.status.as_str().to_string()),
            state: state_of(record.status, activity.state),
            guessed: activity.source == StateSource::Screen
                && matches!(activity.state, ActivityState::Working | ActivityState::Idle),
            idle_secs: activity.idle_seconds,
            tmux_name: Some(record.tmux_session.clone()),
            pane: activity
                .pane
                .as_ref()
                .map(ToString::to_string)
                .or_else(|| record.pane_id.clone()),
            url: record.url.clone(),
            cwd: Some(record.cwd.clone()),
            workspace: trees.get(&record.work_item).cloned(),
            held: record.held(),
            pull_request: record.pull_request.as_ref().map(|p| p.number),
            usage: None,
            mode: record.permission_mode.map(|started| ModeView {
                started,
                shown: activity
                    .snapshot
                    .as_ref()
                    .or(record.activity.as_ref())
                    .and_then(|s| s.shown_mode)
                    .filter(|shown| *shown != started),
            }),
            client: None,
            policy: record.codex_policy,
            opencode: record.opencode_policy,
        })
        .collect();
    // An ended session whose worktree was kept: listed (watched or not), marked.
    let kept: Vec<SessionView> = records
        .iter()
        .filter(|r| !r.status.is_open())
        .filter_map(|r| {
            let view = trees.get(&r.work_item).filter(|v| v.kept.is_some())?;
            let mut row = SessionView::watched(r.work_item.clone());
            row.title = title_of(&r.work_item);
            row.cwd = Some(r.cwd.clone());
            row.workspace = Some(view.clone());
            Some(row)
        })
        .collect();
    for item in watched {
        if rows
            .iter()
            .chain(&kept)
            .any(|r| same_item(&r.work_item, &item.work_item))
        {
            continue;
        }
        let mut row = SessionView::watched(item.work_item);
        row.title = item.title;
        if let Some(url) = item.url {
            row.url = url;
        }
        rows.push(row);
    }
    rows.extend(kept);
    rows
}

/// The pane's state for an open session. tmux not answering is shown as what the record
/// says (paused, else idle): never as dead, since the agent may well be running.
fn state_of(status: Status, state: ActivityState) -> SessionState {
    match state {
        ActivityState::Working => SessionState::Working,
        ActivityState::Idle => SessionState::Idle,
        ActivityState::AwaitingInput => SessionState::AwaitingInput,
        ActivityState::AwaitingPermission => SessionState::AwaitingPermission,
        ActivityState::Dead => SessionState::Dead,
        ActivityState::Paused => SessionState::Paused,
        ActivityState::Closed => SessionState::NoSession,
        ActivityState::Unknown if status == Status::Paused => SessionState::Paused,
        ActivityState::Unknown => SessionState::Idle,
        ActivityState::Unreachable => SessionState::Unreachable,
    }
}

/// A watched item as the poller last listed it.
#[derive(Debug, Clone, PartialEq)]
pub struct WatchedItem {
    pub work_item: WorkItemRef,
    pub title: Option<String>,
    pub url: Option<String>,
}

/// A file's modification time and size: when neither changed, neither did the file.
type Stamp = Option<(SystemTime, u64)>;

/// The ledgers' watched items, re-read only when a file's size or mtime changes.
#[derive(Default)]
struct WatchedCache {
    files: HashMap<PathBuf, (Stamp, Vec<WatchedItem>)>,
}

impl WatchedCache {
    fn items(&mut self, config: &Config, paths: &StatePaths) -> Vec<WatchedItem> {
        let mut out = Vec::new();
        let mut wanted = Vec::new();
        for repo in &config.repos {
            let path = ledger_path(paths, &repo.name);
            let stamp = std::fs::metadata(&path)
                .ok()
                .and_then(|m| Some((m.modified().ok()?, m.len())));
            let entry = self.files.entry(path.clone()).or_default();
            if entry.0 != stamp || stamp.is_none() {
                entry.1 = stamp.map_or_else(Vec::new, |_| read_watched(&path, &repo.name));
                entry.0 = stamp;
            }
            out.extend(entry.1.iter().cloned());
            wanted.push(path);
        }
        self.files.retain(|p, _| wanted.contains(p));
        out
    }
}

/// The watched, open items of the ledger at `path` (read through the one ledger reader).
fn read_watched(path: &std::path::Path, repo: &str) -> Vec<WatchedItem> {
    let Some((owner, name)) = repo.split_once('/') else {
        return Vec::new();
    };
    match ledger::read_file(path) {
        Ok(ledger) => ledger
            .iter()
            .flat_map(|l| l.watched())
            .filter(|(_, e)| !e.is_closed())
            .map(|(number, e)| WatchedItem {
                work_item: WorkItemRef::new(owner, name, number),
                title: e.title().map(str::to_string),
                url: e.html_url().map(str::to_string),
            })
            .collect(),
        Err(e) => {
            // The poller moves a corrupt ledger aside and says so; the pane just skips it.
            tracing::debug!(error = %e, "ledger not readable for the Sessions pane");
            Vec::new()
        }
    }
}

/// A session's usage for the screen; `None` when nothing is known. `(today, day)`:
/// the local day and every session's usage on it, worked out once per refresh.
fn usage_view(
    record: &SessionRecord,
    (today, day): (&str, &crate::usage::Tally),
    budgets: &crate::usage::Budgets,
) -> Option<crate::tui::backend::UsageView> {
    if !record.usage.is_known() {
        return None;
    }
    let tally = record.usage.tally();
    let mine_today = budgets.prices.cost(&tally.day(today));
    let standing = budgets.standing(&tally, day);
    Some(crate::tui::backend::UsageView {
        label: budgets.prices.cost(&tally).label(),
        over_budget: standing == crate::usage::Standing::Over,
        budget_warning: standing >= crate::usage::Standing::Warning,
        today_tokens: mine_today.tokens.total(),
        today_usd: mine_today.cost_usd(),
    })
}

#[cfg(test)]
#[path = "session_rows_tests.rs"]
mod tests;
