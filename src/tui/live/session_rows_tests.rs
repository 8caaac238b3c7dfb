//! The rows' merge (sessions, watched items, kept worktrees, holds), the shown states,
//! and the watched items read from the ledgers.

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
    let mut held = record(15, Status::Active);
    held.hold.events = Some(crate::session::delivery::HeldEvents {
        reason: crate::session::delivery::HoldReason::PermissionDialog,
        since: "2026-12-03T10:00:00Z".into(),
        waiting: 2,
    });
    let records = [held, record(16, Status::Closed), record(17, Status::Paused)];
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
    let label = rows[0].held.as_ref().map(|h| h.label());
    assert_eq!(label.as_deref(), Some("⏸ 2 held: permission dialog"));
    assert_eq!(rows[1].held, None);
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
