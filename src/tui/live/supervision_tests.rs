use super::*;
use crate::events::{Event, EventType, Source};
use crate::session::delivery::{HeldSummary, HoldReason};
use crate::session::limits::Limit;
use crate::tui::backend::SessionState;
use crate::tui::live::log_follower::Observed;
use crate::tui::sample;
use time::Duration;
use time::macros::datetime;

const NOW: OffsetDateTime = datetime!(2026-12-03 10:00:00 UTC);

fn limited(n: u64, kind: LimitKind, resets: Option<OffsetDateTime>) -> SessionRecord {
    let item = sample::item("octo/repo", n);
    let mut r = SessionRecord::new(&item, "claude", std::path::PathBuf::from("/tmp"));
    r.limit = Some(Limit {
        kind,
        resets: resets.map(crate::time::format_ts),
        source: "hook:StopFailure".into(),
        said: String::new(),
        at: crate::time::format_ts(NOW - Duration::minutes(5)),
        since: None,
        failures: 1,
        released: None,
    });
    r
}

fn held_row(n: u64, count: usize, reason: HoldReason) -> SessionView {
    let mut s = sample::session("octo/repo", n, "claude", SessionState::Idle, 0);
    s.held = Some(HeldSummary {
        count,
        ..sample::held(NOW, count, reason, 30)
    });
    s
}

#[test]
fn the_longest_standing_limit_and_the_deliveries_held_on_limits_are_shown() {
    let backoff = Backoff::default();
    let usage = LimitKind::UsageLimit;
    let records = [
        limited(1, usage, Some(NOW + Duration::hours(4))),
        limited(2, usage, Some(NOW + Duration::hours(1))),
        limited(3, usage, Some(NOW - Duration::hours(1))), // over: tries
    ];
    let rows = [
        held_row(1, 2, HoldReason::Limit),
        held_row(2, 1, HoldReason::Limit),
        held_row(4, 5, HoldReason::PermissionDialog), // not a limit's
    ];
    let view = limit_view(&records, &rows, &backoff, NOW).unwrap();
    assert_eq!(
        view,
        LimitView {
            login: false,
            // The printed reset plus the margin (the client prints the minute).
            until: Some(NOW + Duration::hours(4) + Duration::minutes(1)),
            deliveries: 3,
            starts: 0,
        }
    );
    // None holds: nothing to show.
    assert_eq!(limit_view(&records[2..], &rows, &backoff, NOW), None);
    // A login holds until a turn succeeds: no time.
    let login = [limited(5, LimitKind::Authentication, None)];
    let view = limit_view(&login, &[], &backoff, NOW).unwrap();
    assert!(view.login && view.until.is_none());
}

#[test]
fn a_start_waits_from_its_spawn_held_until_it_spawned_failed_or_was_refused() {
    let mut observed = Observed::default();
    let held = |n: u64| {
        Event::new(Source::Dispatch, EventType::SessionSpawnHeld)
            .with("work_item", format!("github:octo/repo#{n}"))
    };
    for n in [1, 2, 3] {
        observed.observe(&held(n));
    }
    assert_eq!(observed.waiting_starts.len(), 3);
    observed.observe(
        &Event::new(Source::Dispatch, EventType::SessionSpawned)
            .with("work_item", "github:octo/repo#1"),
    );
    observed.observe(
        &Event::new(Source::Dispatch, EventType::ControlRefused)
            .with("work_item", "github:octo/repo#2")
            .with("keyword", "stop"),
    );
    assert_eq!(
        observed.waiting_starts.len(),
        2,
        "a stop's refusal is not the start's"
    );
    observed.observe(
        &Event::new(Source::Dispatch, EventType::ControlRefused)
            .with("work_item", "github:octo/repo#2")
            .with("keyword", "start"),
    );
    assert_eq!(
        observed.waiting_starts.iter().collect::<Vec<_>>(),
        ["github:octo/repo#3"]
    );
}
