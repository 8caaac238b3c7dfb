use super::*;
use crate::tmux::fake::{Call, Failure, FakeTmux, Op};
use crate::tmux::{BufferName, Paste};
use std::sync::Arc;

/// Every record's sessions on the one fake server.
fn on(
    tmux: &Arc<FakeTmux>,
) -> impl Fn(&SessionRecord) -> Result<Arc<dyn Tmux>, crate::tmux::Error> + '_ {
    move |_| Ok(Arc::clone(tmux) as Arc<dyn Tmux>)
}

fn record(n: u64, status: Status) -> SessionRecord {
    let mut r = SessionRecord::new(
        &WorkItemRef::new("octo", "repo", n),
        "claude",
        "/src".into(),
    );
    r.status = status;
    r
}

fn snapshot(window_activity: u64, hash: &str, changed_at: u64) -> ActivitySnapshot {
    ActivitySnapshot {
        state: String::new(),
        window_activity,
        capture_hash: hash.into(),
        changed_at,
        shown_mode: None,
    }
}

#[test]
fn classify_truth_table() {
    use ActivityState::*;
    use Liveness::{Absent, Dead as D, Live, Unknown as U};
    let now = 1000;
    let recent = Some(now - 1);
    let old = Some(now - WORKING_WINDOW_SECS);
    let cases = [
        // status, liveness, open question, changed_at → state
        (Status::Active, Live, false, recent, Working),
        (Status::Active, Live, false, old, Idle),
        (Status::Active, Live, false, None, Idle),
        (Status::Active, Live, true, recent, AwaitingInput),
        (Status::Active, D, false, recent, Dead),
        (Status::Active, Absent, true, None, Dead),
        (Status::Active, U, false, recent, Unknown),
        (Status::Paused, Live, false, recent, Paused),
        (Status::Paused, Live, true, recent, Paused),
        (Status::Paused, D, false, None, Dead),
        (Status::Paused, U, false, None, Unknown),
        (Status::Closed, Live, true, recent, Closed),
        (Status::Closed, D, false, None, Closed),
        (Status::Closed, U, false, None, Closed),
    ];
    for (status, liveness, question, changed, expected) in cases {
        assert_eq!(
            classify(status, liveness, question, changed, now),
            expected,
            "{status:?} {liveness:?} question={question} changed={changed:?}"
        );
    }
}

#[test]
fn a_capture_is_taken_only_after_new_output() {
    let before = snapshot(100, "aa", 90);
    assert!(needs_capture(None, 100));
    assert!(!needs_capture(Some(&before), 100));
    assert!(needs_capture(Some(&before), 101));
}

#[test]
fn the_screen_change_time_moves_only_when_the_text_changes() {
    let before = snapshot(100, "aa", 90);
    // No capture taken: nothing changed.
    assert_eq!(advance(Some(&before), 100, None).changed_at, 90);
    // Output, same text (a redraw): still 90.
    let same = advance(Some(&before), 105, Some("aa".into()));
    assert_eq!((same.window_activity, same.changed_at), (105, 90));
    // Output, new text: dated by the window's last output.
    let changed = advance(Some(&before), 105, Some("bb".into()));
    assert_eq!(
        (changed.capture_hash.as_str(), changed.changed_at),
        ("bb", 105)
    );
    // First look: the last output is the best guess.
    assert_eq!(advance(None, 100, Some("aa".into())).changed_at, 100);
    assert_eq!(capture_hash("x"), capture_hash("x"));
    assert_ne!(capture_hash("x"), capture_hash("y"));
    assert_eq!(capture_hash("x").len(), 16);
}

async fn type_into(tmux: &FakeTmux, pane: &PaneId, text: &str) {
    let buffer = BufferName::unique();
    tmux.paste_text(&buffer, text.as_bytes(), pane, Paste::Plain)
        .await
        .unwrap();
}

#[tokio::test]
async fn observing_costs_one_listing_plus_a_capture_per_session_with_output() {
    let tmux = Arc::new(FakeTmux::new());
    let records: Vec<SessionRecord> = (1..=3).map(|n| record(n, Status::Active)).collect();
    let panes: Vec<PaneId> = records
        .iter()
        .map(|r| tmux.add_session(&r.tmux_session, false))
        .collect();
    tmux.set_activity(1000);
    let mut tracker = ActivityTracker::new();

    let first = observe(on(&tmux), &records, &mut tracker, |_| false, 1001).await;
    assert!(first.iter().all(|a| a.state == ActivityState::Working));
    let captures = |calls: &[Call]| {
        calls
            .iter()
            .filter(|c| matches!(c, Call::CapturePane { .. }))
            .count()
    };
    let lists = |calls: &[Call]| calls.iter().filter(|c| **c == Call::ListSessions).count();
    assert_eq!(lists(&tmux.calls()), 1);
    assert_eq!(captures(&tmux.calls()), 3, "first look captures each");

    // No output since: no capture at all; the screens go idle with time.
    let quiet = observe(on(&tmux), &records, &mut tracker, |_| false, 1010).await;
    assert_eq!(lists(&tmux.calls()), 2);
    assert_eq!(captures(&tmux.calls()), 3);
    assert!(quiet.iter().all(|a| a.state == ActivityState::Idle));
    assert_eq!(quiet[0].idle_seconds, Some(10));

    // Output with a changed screen in session 2 only (activity is server-wide in the
    // fake, so all three are captured; only 2's text differs).
    type_into(&tmux, &panes[1], "thinking…").await;
    tmux.set_activity(1011);
    let busy = observe(on(&tmux), &records, &mut tracker, |_| false, 1012).await;
    assert_eq!(captures(&tmux.calls()), 6);
    let states: Vec<ActivityState> = busy.iter().map(|a| a.state).collect();
    assert_eq!(
        states,
        [
            ActivityState::Idle,
            ActivityState::Working,
            ActivityState::Idle
        ]
    );
    assert_eq!(busy[1].pane.as_ref(), Some(&panes[1]));
}

#[tokio::test]
async fn dead_paused_closed_unknown_and_awaiting_input() {
    let tmux = Arc::new(FakeTmux::new());
    let records = [
        record(1, Status::Active),
        record(2, Status::Paused),
        record(3, Status::Closed),
        record(4, Status::Active),
        record(5, Status::Active),
    ];
    tmux.add_session(&records[0].tmux_session, true);
    tmux.add_session(&records[1].tmux_session, false);
    tmux.add_session(&records[4].tmux_session, false);
    // records[3] has no tmux session at all.
    let question = |item: &WorkItemRef| item.number == 5;
    let seen = observe(
        on(&tmux),
        &records,
        &mut ActivityTracker::new(),
        question,
        50,
    )
    .await;
    let states: Vec<ActivityState> = seen.iter().map(|a| a.state).collect();
    assert_eq!(
        states,
        [
            ActivityState::Dead,
            ActivityState::Paused,
            ActivityState::Closed,
            ActivityState::Dead,
            ActivityState::AwaitingInput,
        ]
    );
    assert_eq!(seen[3].liveness, Liveness::Absent);

    tmux.fail(Op::List, Failure::Timeout);
    let seen = observe(
        on(&tmux),
        &records,
        &mut ActivityTracker::new(),
        question,
        50,
    )
    .await;
    let states: Vec<ActivityState> = seen.iter().map(|a| a.state).collect();
    assert_eq!(
        states,
        [
            ActivityState::Unknown,
            ActivityState::Unknown,
            ActivityState::Closed,
            ActivityState::Unknown,
            ActivityState::Unknown,
        ]
    );
}

#[tokio::test]
async fn a_one_shot_reader_starts_from_the_snapshot_in_the_record() {
    let tmux = Arc::new(FakeTmux::new());
    let mut r = record(1, Status::Active);
    tmux.add_session(&r.tmux_session, false);
    tmux.set_activity(500);
    r.activity = Some(snapshot(500, &capture_hash(""), 400));
    let seen = observe(on(&tmux), &[r], &mut ActivityTracker::new(), |_| false, 520).await;
    assert_eq!(seen[0].state, ActivityState::Idle);
    assert_eq!(seen[0].idle_seconds, Some(120));
    assert!(
        !tmux
            .calls()
            .iter()
            .any(|c| matches!(c, Call::CapturePane { .. })),
        "no new output, no capture"
    );
}

#[tokio::test]
async fn snapshots_are_saved_when_the_state_changes() {
    let dir = tempfile::tempdir().unwrap();
    let paths = crate::paths::StatePaths::new(dir.path());
    let registry = Registry::new(
        &paths,
        crate::events::EventLog::open(&paths),
        crate::events::Source::Cli,
    );
    let r = record(1, Status::Active);
    registry.put(&r).unwrap();
    let tmux = Arc::new(FakeTmux::new());
    tmux.add_session(&r.tmux_session, false);
    tmux.set_activity(100);
    let records = registry.list().unwrap();
    let seen = observe(
        on(&tmux),
        &records,
        &mut ActivityTracker::new(),
        |_| false,
        200,
    )
    .await;
    save_snapshots(&registry, &records, &seen);
    let stored = registry
        .get(&r.work_item)
        .unwrap()
        .unwrap()
        .activity
        .unwrap();
    assert_eq!(stored.state, "idle");
    assert_eq!(stored.window_activity, 100);
}
