use super::*;
use crate::config::SpawnPolicy;
use crate::ingress::Ingest;
use crate::session::hooks::state::Signal;
use crate::session::test_support::*;
use std::time::Duration;

async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..1000 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for {what}");
}

/// What the hooks record for `n`'s turn: failed on `error` (`message`), or ended well.
fn turn(f: &Fixture, n: u64, failed: Option<(&str, &str)>) {
    let signal = match failed {
        Some((error, message)) => Signal::TurnFailed {
            error: error.into(),
            message: message.into(),
        },
        None => Signal::TurnEnded,
    };
    f.sessions
        .registry()
        .update(&item(n), |r| {
            limits::on_signal(&mut r.limit, &signal, &crate::time::now_ts())
        })
        .unwrap();
}

fn labeled_policy() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    Fixture::with_config(dir, |c| c.routing.spawn = SpawnPolicy::Labeled)
}

#[tokio::test]
async fn a_labeled_issue_under_the_accounts_limit_spawns_nothing_then_once_after() {
    let f = labeled_policy();
    f.live_session(1);
    turn(&f, 1, Some(("authentication_failed", "Please run /login")));
    let settled = tokio::spawn(f.dispatcher.ingest(labeled(7, 9, "the-loop")));
    eventually("the start held", || {
        !f.events_named("session.spawn_held").is_empty()
    })
    .await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(
        f.events_named("session.spawned").is_empty(),
        "nothing spawned"
    );
    assert!(f.record(9).is_none());
    assert!(
        f.dispatcher.holding("d-7"),
        "the poller need not wait for it"
    );
    let held = &f.events_named("session.spawn_held")[0];
    assert_eq!(held["work_item"], "github:octo/repo#9");
    assert_eq!(held["reason"], "login");
    assert_eq!(held["limited"], "github:octo/repo#1");
    assert_eq!(held["trigger"], "labeled");
    // A second label event while it waits does not start another.
    assert_eq!(
        f.ingest(labeled(8, 9, "the-loop")).await,
        Disposition::Dropped {
            reason: "already-running".into()
        }
    );

    turn(&f, 1, None); // the limited session's turn ends well: the limit clears
    assert_eq!(settled.await.unwrap(), Disposition::Delivered);
    let spawned = f.events_named("session.spawned");
    assert_eq!(spawned.len(), 1, "started once");
    assert_eq!(spawned[0]["work_item"], "github:octo/repo#9");
    assert!(f.record(9).is_some());
    assert!(!f.dispatcher.holding("d-7"));
    assert_eq!(f.events_named("session.spawn_held").len(), 1);
}

#[tokio::test]
async fn a_start_command_waits_out_the_back_off_and_a_stop_behind_it_ends_the_wait() {
    let dir = tempfile::tempdir().unwrap();
    let f = Fixture::with_config(dir, |c| {
        c.sessions.limit_backoff_seconds = 1;
        c.sessions.limit_backoff_max_seconds = 1;
    });
    f.live_session(1);
    turn(&f, 1, Some(("server_error", "API Error: 529 overloaded")));
    // Started while the back-off runs: it waits for it, then starts by itself.
    let settled = f.ingest(comment(5, 9, "the-loop start")).await;
    assert_eq!(settled, Disposition::Delivered);
    let held = &f.events_named("session.spawn_held")[0];
    assert_eq!(held["trigger"], "command");
    assert!(held["until"].is_string());
    assert_eq!(f.events_named("session.spawned").len(), 1);

    // Another limit; a start with a stop queued behind it never spawns.
    turn(&f, 1, Some(("authentication_failed", "Please run /login")));
    let start = tokio::spawn(f.dispatcher.ingest(comment(6, 10, "the-loop start")));
    eventually("the second start held", || {
        f.events_named("session.spawn_held").len() == 2
    })
    .await;
    let stop = f.ingest(comment(7, 10, "the-loop stop")).await;
    assert!(matches!(stop, Disposition::Dropped { .. }), "{stop:?}");
    assert_eq!(
        start.await.unwrap(),
        Disposition::Dropped {
            reason: "session-ended".into()
        }
    );
    assert_eq!(f.events_named("session.spawned").len(), 1);
    assert!(f.record(10).is_none());
}

#[test]
fn only_open_sessions_of_the_harness_here_whose_limit_holds_count_and_the_longest_wins() {
    let backoff = Backoff::default();
    let now = OffsetDateTime::now_utc();
    let limited = |n: u64, harness: &str, kind: LimitKind, resets: Option<OffsetDateTime>| {
        let mut r = SessionRecord::new(&item(n), harness, std::path::PathBuf::from("/tmp"));
        r.limit = Some(limits::Limit {
            kind,
            resets: resets.map(crate::time::format_ts),
            source: "hook:StopFailure".into(),
            said: String::new(),
            at: crate::time::format_ts(now),
            since: None,
            failures: 1,
            released: None,
        });
        r
    };
    let hour = time::Duration::hours(1);
    let usage = LimitKind::UsageLimit;
    let mut elsewhere = limited(3, "agent", usage, Some(now + hour * 5));
    elsewhere.host = Some("build".into());
    // Hit two hours ago, its reset an hour ago: passed.
    let mut passed = limited(5, "agent", usage, Some(now - hour));
    if let Some(limit) = passed.limit.as_mut() {
        limit.at = crate::time::format_ts(now - hour * 2);
    }
    let records = vec![
        limited(1, "agent", usage, Some(now + hour)),
        limited(2, "agent", usage, Some(now + hour * 2)),
        elsewhere,
        limited(4, "codex", usage, Some(now + hour * 5)),
        passed,
    ];
    let found = account_limit(&records, "agent", &backoff, now).unwrap();
    assert_eq!(found.session, item(2));
    assert_eq!(found.reason(), "limit");
    assert!(account_limit(&records, "other", &backoff, now).is_none());
    assert!(account_limit(&records[4..], "agent", &backoff, now).is_none());

    let mut with_login = records.clone();
    with_login.push(limited(6, "agent", LimitKind::Authentication, None));
    let found = account_limit(&with_login, "agent", &backoff, now).unwrap();
    assert_eq!((&found.session, found.until), (&item(6), None));
    assert_eq!(found.reason(), "login");
}
