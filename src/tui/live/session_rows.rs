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
use crate::tui::backend::{PermissionView, SessionState, SessionView, WorkspaceView};
use crate::work_item::WorkItemRef;
use crate::workspace::WorkspaceRecord;
use crate::workspace::status::Status as TreeStatus;
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
    pub tmux_unknown: bool,
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
                sessions.tmux().as_ref(),
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
        Rows {
            sessions: merge(&records, &seen, watched, &trees),
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
        let git = workspaces.git().clone();
        let fresh = futures::future::join_all(stale.iter().map(|ws| {
            let git = git.clone();
            async move {
                let status = crate::workspace::status::status(&git, ws).await.ok();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RepoConfig;
    use crate::tmux::Liveness;

    fn item(n: u64) -> WorkItemRef {
        WorkItemRef::new("octo", "repo", n)
    }

    fn record(n: u64, status: Status) -> SessionRecord {
        let mut r = SessionRecord::new(&item(n), "claude", "/work".into());
        r.status = status;
        r
    }

    fn seen(n: u64, state: ActivityState) -> SessionActivity {
        SessionActivity {
            work_item: item(n),
            state,
            idle_seconds: Some(7),
            pane: Some(PaneId::parse("%3").unwrap()),
            liveness: Liveness::Live,
            snapshot: None,
            source: StateSource::Hooks,
            permission: None,
        }
    }

    fn watched(n: u64) -> WatchedItem {
        WatchedItem {
            work_item: item(n),
            title: Some(format!("Issue {n}")),
            url: Some(format!("https://github.com/octo/repo/issues/{n}")),
        }
    }

    #[test]
    fn sessions_come_first_then_watched_items_without_one() {
        let records = [
            record(15, Status::Active),
            record(16, Status::Closed),
            record(17, Status::Paused),
        ];
        let seen = [
            seen(15, ActivityState::AwaitingInput),
            seen(16, ActivityState::Closed),
            seen(17, ActivityState::Unknown),
        ];
        let rows = merge(
            &records,
            &seen,
            vec![watched(15), watched(16), watched(20)],
            &HashMap::new(),
        );
        let listed: Vec<(u64, SessionState)> =
            rows.iter().map(|r| (r.work_item.number, r.state)).collect();
        assert_eq!(
            listed,
            [
                (15, SessionState::AwaitingInput),
                (17, SessionState::Paused),
                (16, SessionState::NoSession),
                (20, SessionState::NoSession),
            ]
        );
        assert_eq!(rows[0].title.as_deref(), Some("Issue 15"));
        assert_eq!(rows[0].pane.as_deref(), Some("%3"));
        assert_eq!(rows[0].idle_secs, Some(7));
        assert_eq!(
            rows[2].harness, None,
            "a closed session is offered to start again"
        );
    }

    #[test]
    fn worktrees_show_on_their_sessions_and_a_kept_one_stays_listed() {
        let mut closed = record(16, Status::Closed);
        closed.workspace_kept = Some("1 changed file".into());
        let records = [record(15, Status::Active), closed];
        let seen = [
            seen(15, ActivityState::Working),
            seen(16, ActivityState::Closed),
        ];
        let view = |kept: Option<&str>| WorkspaceView {
            branch: "the-loop/issue-15".into(),
            base: "origin/main".into(),
            changed_files: Some(2),
            ahead: Some(1),
            kept: kept.map(String::from),
        };
        let trees = HashMap::from([
            (item(15), view(None)),
            (item(16), view(Some("1 changed file"))),
        ]);
        let rows = merge(&records, &seen, vec![], &trees);
        assert_eq!(rows.len(), 2, "the kept one is listed though not watched");
        assert_eq!(rows[0].workspace, Some(view(None)));
        assert_eq!(rows[1].work_item, item(16));
        assert_eq!(rows[1].state, SessionState::NoSession);
        assert_eq!(
            rows[1].workspace.as_ref().unwrap().kept.as_deref(),
            Some("1 changed file")
        );
    }

    #[test]
    fn unknown_is_never_shown_as_dead() {
        assert_eq!(
            state_of(Status::Active, ActivityState::Unknown),
            SessionState::Idle
        );
        assert_eq!(
            state_of(Status::Active, ActivityState::Dead),
            SessionState::Dead
        );
    }

    #[test]
    fn watched_items_come_from_the_ledger_and_follow_its_changes() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        let config = Config {
            repos: vec![RepoConfig {
                name: "octo/repo".into(),
                path: None,
                label: "the-loop".into(),
                issues: true,
                pull_requests: true,
                ..RepoConfig::named("")
            }],
            ..Config::default()
        };
        let file = ledger_path(&paths, "octo/repo");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let write = |json: serde_json::Value| std::fs::write(&file, json.to_string()).unwrap();
        write(serde_json::json!({
            "version": 1, "repo": "octo/repo", "etags": {},
            "items": {
                "15": {"item": {"number": 15, "title": "Retry cap", "state": "open",
                                "html_url": "https://github.com/octo/repo/issues/15"},
                       "watched": true, "comments": {"1": "2026-01-01T00:00:00Z"}},
                "16": {"item": {"number": 16, "title": "Gone", "state": "open"}, "watched": false},
                "17": {"item": {"number": 17, "title": "Shut", "state": "closed"}, "watched": true}
            }
        }));
        let mut cache = WatchedCache::default();
        let items = cache.items(&config, &paths);
        assert_eq!(items.len(), 1, "{items:?}");
        assert_eq!(items[0].work_item, item(15));
        assert_eq!(items[0].title.as_deref(), Some("Retry cap"));

        write(serde_json::json!({"items": {
            "15": {"item": {"title": "Retry cap"}, "watched": true},
            "18": {"item": {"title": "New one, longer file"}, "watched": true}
        }}));
        let numbers: Vec<u64> = cache
            .items(&config, &paths)
            .iter()
            .map(|w| w.work_item.number)
            .collect();
        assert_eq!(numbers, [15, 18]);
        std::fs::write(&file, "{not json").unwrap();
        assert!(
            cache.items(&config, &paths).is_empty(),
            "unreadable: skipped"
        );
    }
}
