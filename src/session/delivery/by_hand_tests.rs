//! A Claude Code release whose screen the-loop has not recorded (issue 30): held, shown
//! with its release, and released by hand one delivery at a time, only while the hooks
//! say the turn ended.

use super::*;
use crate::session::delivery::HeldEvents;
use crate::session::hooks::{PermissionRequest, Reported, ReportedState};
use crate::session::spawn::PromptInputs;
use crate::session::test_support::*;
use crate::session::{DeliveryFailure, Sessions};

fn event(id: &str) -> PromptInputs {
    PromptInputs {
        delivery_id: id.into(),
        ..PromptInputs::manual(&item(1), "test")
    }
}

/// A session whose fake pane draws an empty, ready box, running `version`.
fn session(f: &Fixture, version: &str) -> PaneId {
    let (pane, _claude) = f.claude_session(1);
    let version = version.to_string();
    f.sessions
        .registry()
        .update(&item(1), |r| r.harness_version = Some(version))
        .unwrap();
    pane
}

fn report(f: &Fixture, state: ReportedState, permission: bool) {
    f.sessions
        .registry()
        .update(&item(1), |r| {
            r.reported = Some(Reported {
                harness: "claude".into(),
                state,
                at: crate::time::format_ts(
                    time::OffsetDateTime::now_utc() - time::Duration::seconds(30),
                ),
                event: "Stop".into(),
                permission: permission.then(|| PermissionRequest {
                    id: "p-1".into(),
                    tool: "Bash".into(),
                    summary: "rm -rf build".into(),
                    requested_at: crate::time::now_ts(),
                    answering: None,
                }),
                last_tool: None,
                conversation: None,
                model: None,
                prompts: 0,
            });
        })
        .unwrap();
}

/// Marks the held lane as the dispatcher does when a delivery is held.
fn hold_lane(f: &Fixture) {
    f.sessions
        .registry()
        .update(&item(1), |r| {
            r.hold.events = Some(HeldEvents {
                reason: HoldReason::ScreenUnknown,
                since: crate::time::now_ts(),
                waiting: 1,
            });
        })
        .unwrap();
}

async fn held(sessions: &Sessions, id: &str) -> HoldReason {
    match sessions.deliver_event(&item(1), &event(id)).await {
        Err(DeliveryFailure::Held(held)) => held.reason,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_release_not_recorded_is_held_and_shown_with_its_version() {
    let f = Fixture::new();
    let pane = session(&f, "2.1.400");
    report(&f, ReportedState::Idle, false);
    assert_eq!(held(&f.sessions, "d-1").await, HoldReason::ScreenUnknown);
    assert!(f.pasted(&pane).is_empty(), "nothing pasted on a guess");
    hold_lane(&f);
    let summary = f.record(1).unwrap().held().unwrap();
    assert_eq!(
        summary.label(),
        "⏸ 1 held: screen unknown (Claude Code 2.1.400)"
    );
    // The recorded releases are read as before.
    let f = Fixture::new();
    let pane = session(&f, "2.1.332");
    f.sessions
        .deliver_event(&item(1), &event("d-1"))
        .await
        .unwrap();
    assert_eq!(f.pasted(&pane).len(), 1);
}

#[tokio::test]
async fn by_hand_is_refused_unless_the_hooks_say_the_turn_ended() {
    let f = Fixture::new();
    session(&f, "2.1.400");
    let wait = Duration::from_millis(300);
    let refused = f
        .sessions
        .deliver_by_hand(&item(1), wait)
        .await
        .unwrap_err();
    assert!(matches!(refused, ByHandError::NothingHeld(_)), "{refused}");
    hold_lane(&f);
    let refused = f
        .sessions
        .deliver_by_hand(&item(1), wait)
        .await
        .unwrap_err();
    assert!(matches!(refused, ByHandError::NotIdle { .. }), "{refused}");
    report(&f, ReportedState::Working, false);
    let refused = f
        .sessions
        .deliver_by_hand(&item(1), wait)
        .await
        .unwrap_err();
    assert!(matches!(refused, ByHandError::NotIdle { .. }), "{refused}");
    report(&f, ReportedState::Idle, true);
    let refused = f
        .sessions
        .deliver_by_hand(&item(1), wait)
        .await
        .unwrap_err();
    assert!(
        matches!(refused, ByHandError::PermissionPending(_)),
        "{refused}"
    );
    report(&f, ReportedState::AwaitingPermission, false);
    let refused = f
        .sessions
        .deliver_by_hand(&item(1), wait)
        .await
        .unwrap_err();
    assert!(
        matches!(refused, ByHandError::PermissionPending(_)),
        "{refused}"
    );
    assert_eq!(
        f.record(1).unwrap().hold.release_one,
        None,
        "nothing left armed"
    );
}

#[tokio::test]
async fn one_release_lets_exactly_one_delivery_out() {
    let f = Fixture::new();
    let pane = session(&f, "2.1.400");
    report(&f, ReportedState::Idle, false);
    hold_lane(&f);
    let one = item(1);
    let by_hand = f.sessions.deliver_by_hand(&one, Duration::from_secs(5));
    let lane = async {
        // The lane's next tries, as the held lane makes them.
        for _ in 0..100 {
            match f.sessions.deliver_event(&item(1), &event("d-1")).await {
                Ok(delivered) => return delivered,
                Err(DeliveryFailure::Held(h)) => assert_eq!(h.reason, HoldReason::ScreenUnknown),
                Err(other) => panic!("{other:?}"),
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("never released");
    };
    let (by_hand, delivered) = tokio::join!(by_hand, lane);
    by_hand.unwrap();
    assert_eq!(delivered.pane, pane);
    assert_eq!(f.pasted(&pane).len(), 1);
    assert_eq!(f.record(1).unwrap().hold.release_one, None, "used up");
    // The next delivery waits for the next release.
    assert_eq!(held(&f.sessions, "d-2").await, HoldReason::ScreenUnknown);
    assert_eq!(f.pasted(&pane).len(), 1);
}

#[tokio::test]
async fn a_release_nobody_takes_is_taken_back() {
    let f = Fixture::new();
    session(&f, "2.1.400");
    report(&f, ReportedState::Idle, false);
    hold_lane(&f);
    let refused = f
        .sessions
        .deliver_by_hand(&item(1), Duration::from_millis(200))
        .await
        .unwrap_err();
    assert!(matches!(refused, ByHandError::NotTaken(_)), "{refused}");
    assert_eq!(f.record(1).unwrap().hold.release_one, None);
}
