//! A Claude Code release nobody recorded (issues 30, 40): delivered when the hooks and
//! the screen agree, as a recorded one; held `screen-unread` when they disagree, naming
//! both and keeping the screen; released by hand one delivery at a time, only while the
//! hooks say the turn ended.

use super::UNREAD_AFTER;
use super::*;
use crate::session::delivery::HeldEvents;
use crate::session::hooks::{PermissionRequest, Reported, ReportedState};
use crate::session::spawn::PromptInputs;
use crate::session::test_support::*;
use crate::session::{DeliveryFailure, Sessions};
use crate::tmux::fake::FakeClaude;
use std::sync::Arc;
use std::sync::atomic::Ordering;

fn event(id: &str) -> PromptInputs {
    PromptInputs {
        delivery_id: id.into(),
        ..PromptInputs::manual(&item(1), "test")
    }
}

/// A session whose fake pane draws an empty, ready box, running `version`.
fn session(f: &Fixture, version: &str) -> (PaneId, Arc<FakeClaude>) {
    let (pane, claude) = f.claude_session(1);
    let version = version.to_string();
    f.sessions
        .registry()
        .update(&item(1), |r| r.harness_version = Some(version))
        .unwrap();
    (pane, claude)
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
                reason: HoldReason::ScreenUnread,
                since: crate::time::now_ts(),
                waiting: 1,
            });
        })
        .unwrap();
}

async fn held_once(sessions: &Sessions, id: &str) -> HoldReason {
    match sessions.deliver_event(&item(1), &event(id)).await {
        Err(DeliveryFailure::Held(held)) => held.reason,
        other => panic!("{other:?}"),
    }
}

/// Why the delivery waits once any disagreement has lasted, as the held lane sees it:
/// a disagreement is waited out (`not-ready`) until it lasts [`UNREAD_AFTER`], then it
/// is `screen-unread`.
async fn held(sessions: &Sessions, id: &str) -> HoldReason {
    held_once(sessions, id).await;
    lasted(sessions);
    held_once(sessions, id).await
}

/// The disagreement on record began longer than [`UNREAD_AFTER`] ago.
fn lasted(sessions: &Sessions) {
    sessions
        .registry()
        .update(&item(1), |r| {
            if let Some(unread) = r.hold.unread.as_mut() {
                let then = time::OffsetDateTime::now_utc() - UNREAD_AFTER - Duration::from_secs(1);
                unread.since = crate::time::format_ts(then);
            }
        })
        .unwrap();
}

/// Makes the witnesses disagree while the hooks say the turn ended: the screen shows
/// something that is not an input box.
fn unreadable(claude: &FakeClaude) {
    claude.undrawn.store(true, Ordering::SeqCst);
}

#[tokio::test]
async fn a_release_not_recorded_is_delivered_when_hooks_and_screen_agree() {
    let f = Fixture::new();
    let (pane, _) = session(&f, "2.1.400");
    report(&f, ReportedState::Idle, false);
    f.sessions
        .deliver_event(&item(1), &event("d-1"))
        .await
        .unwrap();
    assert_eq!(f.pasted(&pane).len(), 1, "no hand release needed");
    assert_eq!(f.enters(&pane), 1);
    let seen = f
        .sessions
        .client_releases()
        .seen(super::super::screen::Reader::Claude, "2.1.400");
    assert!(seen.idle.is_some() && seen.dialog.is_none(), "{seen:?}");
    assert_eq!(
        f.sessions.client_reading(&f.record(1).unwrap()).unwrap(),
        format!(
            "Claude Code 2.1.400 · read with {}'s rules · seen live: idle ✓ dialog – draft –",
            super::super::screen::Reader::Claude.newest_recorded()
        )
    );
    // A turn running waits for its end (a recorded release would take it mid-turn).
    report(&f, ReportedState::Working, false);
    assert_eq!(held(&f.sessions, "d-2").await, HoldReason::TurnRunning);
    assert_eq!(f.pasted(&pane).len(), 1);
}

#[tokio::test]
async fn a_pending_request_beside_an_idle_looking_box_is_held_unread_naming_both() {
    // The stand-in whose dialog wording changed: the screen reads an empty box while
    // the hooks have a permission request pending.
    let f = Fixture::new();
    let (pane, claude) = session(&f, "2.1.400");
    report(&f, ReportedState::AwaitingPermission, true);
    // Until it lasts, it is waited out unannounced; then announced.
    assert_eq!(held_once(&f.sessions, "d-1").await, HoldReason::NotReady);
    assert_eq!(held_once(&f.sessions, "d-1").await, HoldReason::NotReady);
    assert!(f.record(1).unwrap().hold.unread.unwrap().kept.is_none());
    lasted(&f.sessions);
    assert_eq!(
        held_once(&f.sessions, "d-1").await,
        HoldReason::ScreenUnread
    );
    assert!(
        f.tmux.fake.pane_input(&pane).is_empty(),
        "nothing reached the pane"
    );
    hold_lane(&f);
    let record = f.record(1).unwrap();
    let summary = record.held().unwrap();
    assert_eq!(
        summary.label(),
        "⏸ 1 held: screen unread (Claude Code 2.1.400)"
    );
    let said = summary.witnesses.unwrap();
    assert_eq!(said.hooks, "a permission request pending");
    assert_eq!(said.screen, "an empty input box, no dialog");
    // The screen is kept, private, to become a fixture; once per distinct screen.
    let kept = record.hold.unread.as_ref().unwrap().kept.clone().unwrap();
    let text = std::fs::read_to_string(&kept).unwrap();
    assert!(text.contains("❯\u{a0}"), "{text}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&kept).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "{mode:o}");
    assert_eq!(held(&f.sessions, "d-1").await, HoldReason::ScreenUnread);
    assert_eq!(
        std::fs::read_dir(kept.parent().unwrap()).unwrap().count(),
        1
    );
    // The screen now reads the dialog too: they agree it is a dialog.
    claude.dialog.store(true, Ordering::SeqCst);
    assert_eq!(held(&f.sessions, "d-1").await, HoldReason::PermissionDialog);
    assert!(f.record(1).unwrap().hold.unread.is_none(), "cleared");
    let seen = f
        .sessions
        .client_releases()
        .seen(super::super::screen::Reader::Claude, "2.1.400");
    assert!(seen.dialog.is_some(), "{seen:?}");
    assert!(f.tmux.fake.pane_input(&pane).is_empty());
}

#[tokio::test]
async fn a_dialog_or_a_screen_the_hooks_know_nothing_of_is_held_unread() {
    let f = Fixture::new();
    let (pane, claude) = session(&f, "2.1.400");
    report(&f, ReportedState::Idle, false);
    claude.dialog.store(true, Ordering::SeqCst);
    assert_eq!(held(&f.sessions, "d-1").await, HoldReason::ScreenUnread);
    let said = f.record(1).unwrap().hold.unread.unwrap().said;
    assert_eq!(
        said.describe(),
        "hooks: turn ended, no permission pending; screen: a permission dialog"
    );
    claude.dialog.store(false, Ordering::SeqCst);
    unreadable(&claude);
    assert_eq!(held(&f.sessions, "d-1").await, HoldReason::ScreenUnread);
    claude.undrawn.store(false, Ordering::SeqCst);
    // Its footer naming another mode than the session was started in.
    f.sessions
        .registry()
        .update(&item(1), |r| {
            r.permission_mode = Some(crate::config::PermissionMode::Auto)
        })
        .unwrap();
    assert_eq!(held(&f.sessions, "d-1").await, HoldReason::ScreenUnread);
    let said = f.record(1).unwrap().hold.unread.unwrap().said;
    assert!(
        said.screen
            .contains("footer naming default (started in auto)"),
        "{said:?}"
    );
    // A draft is no disagreement: it waits for the operator, and is never sent.
    f.sessions
        .registry()
        .update(&item(1), |r| r.permission_mode = None)
        .unwrap();
    *claude.draft.lock().unwrap() = "half a thought".into();
    assert_eq!(held(&f.sessions, "d-1").await, HoldReason::OperatorDraft);
    assert!(f.tmux.fake.pane_input(&pane).is_empty());
    claude.draft.lock().unwrap().clear();
    f.sessions
        .deliver_event(&item(1), &event("d-1"))
        .await
        .unwrap();
    assert_eq!(f.pasted(&pane).len(), 1);
    let seen = f
        .sessions
        .client_releases()
        .seen(super::super::screen::Reader::Claude, "2.1.400");
    assert!(seen.draft.is_some() && seen.idle.is_some(), "{seen:?}");
}

#[tokio::test]
async fn by_hand_is_refused_unless_the_hooks_say_the_turn_ended() {
    let f = Fixture::new();
    let _ = session(&f, "2.1.400");
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
    let (pane, claude) = session(&f, "2.1.400");
    report(&f, ReportedState::Idle, false);
    unreadable(&claude);
    hold_lane(&f);
    let one = item(1);
    let by_hand = f.sessions.deliver_by_hand(&one, Duration::from_secs(5));
    let lane = async {
        // The lane's next tries, as the held lane makes them.
        for _ in 0..100 {
            lasted(&f.sessions);
            match f.sessions.deliver_event(&item(1), &event("d-1")).await {
                Ok(delivered) => return delivered,
                Err(DeliveryFailure::Held(h)) => assert!(
                    matches!(h.reason, HoldReason::ScreenUnread | HoldReason::NotReady),
                    "{h:?}"
                ),
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
    assert_eq!(held(&f.sessions, "d-2").await, HoldReason::ScreenUnread);
    assert_eq!(f.pasted(&pane).len(), 1);
}

#[tokio::test]
async fn a_release_nobody_takes_is_taken_back() {
    let f = Fixture::new();
    let _ = session(&f, "2.1.400");
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
