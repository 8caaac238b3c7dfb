//! Safe delivery (SPEC §18) over the fake tmux and a stand-in for Claude Code's screen:
//! the look before every paste, the look before the Enter, a held event keeping its
//! lane, held replies, and how a hold ends.

use crate::ingress::{Disposition, Ingest};
use crate::session::delivery::HoldReason;
use crate::session::delivery::{DeliveryFailure, Held};
use crate::session::reply::{ReplyError, ReplyRequest, Via};
use crate::session::test_support::*;
use crate::session::{PromptInputs, Replier};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

fn event(n: u64, id: &str) -> PromptInputs {
    PromptInputs {
        delivery_id: id.into(),
        ..PromptInputs::manual(&item(n), "test")
    }
}

fn held(reason: HoldReason, pasted: bool) -> Held {
    Held { reason, pasted }
}

/// For each case: `reset`, the case's screen, then an event is held for its reason and
/// no byte reaches the pane.
async fn held_in_each(
    f: &Fixture,
    pane: &crate::tmux::PaneId,
    reset: &dyn Fn(),
    cases: [(&dyn Fn(), HoldReason); 3],
) {
    for (set, reason) in cases {
        reset();
        set();
        let failure = f
            .sessions
            .deliver_event(&item(1), &event(1, "d-1"))
            .await
            .unwrap_err();
        assert!(
            matches!(failure, DeliveryFailure::Held(h) if h == held(reason, false)),
            "{reason:?}: {failure:?}"
        );
        assert!(
            f.tmux.fake.pane_input(pane).is_empty(),
            "{reason:?}: no byte reached the pane"
        );
    }
    reset();
}

#[tokio::test]
async fn nothing_is_pasted_into_a_dialog_a_draft_or_a_harness_not_ready() {
    let f = Fixture::new();
    let (pane, claude) = f.claude_session(1);
    let cases: [(&dyn Fn(), HoldReason); 3] = [
        (
            &|| claude.dialog.store(true, Ordering::SeqCst),
            HoldReason::PermissionDialog,
        ),
        (
            &|| *claude.draft.lock().unwrap() = "half a tho".into(),
            HoldReason::OperatorDraft,
        ),
        (
            &|| claude.undrawn.store(true, Ordering::SeqCst),
            HoldReason::NotReady,
        ),
    ];
    let reset = || {
        claude.dialog.store(false, Ordering::SeqCst);
        claude.undrawn.store(false, Ordering::SeqCst);
        claude.draft.lock().unwrap().clear();
    };
    held_in_each(&f, &pane, &reset, cases).await;
}

#[tokio::test]
async fn a_ready_box_gets_the_paste_and_one_enter_once_the_paste_shows() {
    let f = Fixture::new();
    let (pane, _claude) = f.claude_session(1);
    let delivered = f
        .sessions
        .deliver_event(&item(1), &event(1, "d-1"))
        .await
        .unwrap();
    assert_eq!(delivered.pane, pane);
    assert_eq!(f.pasted(&pane).len(), 1);
    assert_eq!(f.enters(&pane), 1);
    assert_eq!(f.record(1).unwrap().recent_deliveries, vec!["d-1"]);
}

#[tokio::test]
async fn a_reported_permission_request_holds_before_the_dialog_is_drawn() {
    let f = Fixture::new();
    let (pane, _claude) = f.claude_session(1);
    f.sessions
        .registry()
        .update(&item(1), |r| {
            r.reported = Some(crate::session::hooks::Reported {
                harness: "claude".into(),
                state: crate::session::hooks::ReportedState::AwaitingPermission,
                at: crate::time::now_ts(),
                event: "PermissionRequest".into(),
                permission: None,
                last_tool: None,
                conversation: None,
                model: None,
                prompts: 0,
            });
        })
        .unwrap();
    let failure = f
        .sessions
        .deliver_event(&item(1), &event(1, "d-1"))
        .await
        .unwrap_err();
    assert!(
        matches!(failure, DeliveryFailure::Held(h) if h.reason == HoldReason::PermissionDialog),
        "{failure:?}"
    );
    assert!(f.tmux.fake.pane_input(&pane).is_empty());
}

#[tokio::test]
async fn a_dialog_between_paste_and_enter_gets_no_enter_and_the_paste_is_submitted_later() {
    let f = Fixture::new();
    let (pane, claude) = f.claude_session(1);
    claude.dialog_on_paste.store(true, Ordering::SeqCst);
    let failure = f
        .sessions
        .deliver_event(&item(1), &event(1, "d-1"))
        .await
        .unwrap_err();
    assert!(
        matches!(failure, DeliveryFailure::Held(h) if h == held(HoldReason::PermissionDialog, true)),
        "{failure:?}"
    );
    assert_eq!(f.pasted(&pane).len(), 1, "pasted");
    assert_eq!(f.enters(&pane), 0, "no Enter into the dialog");
    assert_eq!(
        f.record(1).unwrap().hold.unsubmitted.as_deref(),
        Some("d-1")
    );

    // Still up: still held, nothing more sent.
    let again = f
        .sessions
        .deliver_event(&item(1), &event(1, "d-1"))
        .await
        .unwrap_err();
    assert!(matches!(again, DeliveryFailure::Held(_)), "{again:?}");
    assert_eq!(f.enters(&pane), 0);

    // Answered: the paste in the box is submitted, not pasted again.
    claude.dialog.store(false, Ordering::SeqCst);
    f.sessions
        .deliver_event(&item(1), &event(1, "d-1"))
        .await
        .unwrap();
    assert_eq!(f.pasted(&pane).len(), 1, "never pasted twice");
    assert_eq!(f.enters(&pane), 1);
    assert_eq!(f.record(1).unwrap().hold.unsubmitted, None);
}

#[tokio::test]
async fn a_harness_whose_screen_is_unknown_is_pasted_without_a_look() {
    let f = Fixture::new();
    let pane = f.live_session(1);
    f.sessions
        .deliver_event(&item(1), &event(1, "d-1"))
        .await
        .unwrap();
    let captures = f
        .tmux
        .fake
        .calls()
        .iter()
        .filter(|c| matches!(c, crate::tmux::fake::Call::CapturePane { .. }))
        .count();
    assert_eq!(captures, 0);
    assert_eq!(f.pasted(&pane).len(), 1);
}

/// Waits (briefly, in steps) for `check`; the fixture's hold check is 20 ms.
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..500 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for {what}");
}

/// A comment by alice on #1 behind a dialog: its settlement, once the lane holds it.
async fn held_comment(f: &Fixture, id: u64, body: &str) -> tokio::task::JoinHandle<Disposition> {
    let settled = tokio::spawn(f.dispatcher.ingest(comment_by("alice", id, 1, body)));
    eventually("the hold", || {
        f.record(1).is_some_and(|r| r.hold.events.is_some())
    })
    .await;
    settled
}

#[tokio::test]
async fn a_held_event_keeps_its_lane_and_goes_out_once_in_order_when_the_dialog_is_answered() {
    let f = Fixture::new();
    let (pane, claude) = f.claude_session(1);
    claude.dialog.store(true, Ordering::SeqCst);
    let first = held_comment(&f, 1, "first").await;
    let second = tokio::spawn(f.dispatcher.ingest(comment_by("alice", 2, 1, "second")));
    eventually("both waiting", || {
        f.record(1)
            .and_then(|r| r.hold.events)
            .is_some_and(|e| e.waiting == 2)
    })
    .await;
    assert!(f.dispatcher.holding("d-1") && f.dispatcher.holding("d-2"));
    let summary = f.record(1).unwrap().hold.summary().unwrap();
    assert_eq!(
        (summary.count, summary.reason),
        (2, HoldReason::PermissionDialog)
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(f.tmux.fake.pane_input(&pane).is_empty(), "nothing pasted");
    assert_eq!(
        f.events_named("session.delivery_held").len(),
        1,
        "once per hold"
    );

    claude.dialog.store(false, Ordering::SeqCst);
    assert_eq!(first.await.unwrap(), Disposition::Delivered);
    assert_eq!(second.await.unwrap(), Disposition::Delivered);
    let pasted = f.pasted(&pane);
    assert_eq!(pasted.len(), 2, "each once");
    assert!(pasted[0].contains("first") && pasted[1].contains("second"));
    assert_eq!(f.enters(&pane), 2);
    let released = f.events_named("session.delivery_released");
    assert_eq!(released.len(), 1, "{released:?}");
    assert_eq!(released[0]["delivery_id"], "d-1");
    assert!(f.record(1).unwrap().hold.is_empty());
    assert!(!f.dispatcher.holding("d-1"));
}

#[tokio::test]
async fn a_stop_queued_behind_a_held_event_ends_it_as_session_ended() {
    let f = Fixture::new();
    let (pane, claude) = f.claude_session(1);
    claude.dialog.store(true, Ordering::SeqCst);
    let held = held_comment(&f, 1, "first").await;
    let stop = f
        .dispatcher
        .ingest(comment_by("alice", 2, 1, "@the-loop stop"))
        .await;
    assert_eq!(stop, Disposition::Delivered, "the stop ran");
    assert_eq!(
        held.await.unwrap(),
        Disposition::Dropped {
            reason: "session-ended".into()
        }
    );
    let failed = f.events_named("dispatch.failed");
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0]["reason"], "session-ended");
    assert_eq!(failed[0]["retryable"], false);
    assert!(f.pasted(&pane).is_empty(), "nothing reached the dialog");
    assert_eq!(f.enters(&pane), 0);
}

fn reply_request(text: &str) -> ReplyRequest {
    ReplyRequest {
        work_item: item(1).to_string(),
        text: text.into(),
        actor: Some("op".into()),
        comment: false,
        via: Via::Tui,
        over_budget: false,
    }
}

#[tokio::test]
async fn a_reply_to_a_held_session_is_queued_and_released_once() {
    let f = Fixture::new();
    let (pane, claude) = f.claude_session(1);
    claude.dialog.store(true, Ordering::SeqCst);
    let replier = Replier::new(Arc::clone(&f.sessions));
    let error = replier
        .reply(reply_request("use 5 retries"))
        .await
        .unwrap_err();
    let ReplyError::Held { reason, id, .. } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(*reason, HoldReason::PermissionDialog);
    assert!(
        error
            .to_string()
            .contains("waits on a permission dialog — answer it first"),
        "{error}"
    );
    let record = f.record(1).unwrap();
    assert_eq!(record.hold.replies.len(), 1);
    assert_eq!(&record.hold.replies[0].id, id);
    assert_eq!(f.events_named("session.delivery_held").len(), 1);

    assert_eq!(replier.release_held(&item(1)).await, 0, "still held");
    assert!(f.tmux.fake.pane_input(&pane).is_empty());

    claude.dialog.store(false, Ordering::SeqCst);
    assert_eq!(replier.release_held(&item(1)).await, 1);
    assert_eq!(replier.release_held(&item(1)).await, 0, "once");
    let pasted = f.pasted(&pane);
    assert_eq!(pasted.len(), 1);
    assert!(pasted[0].contains("use 5 retries"));
    assert_eq!(f.enters(&pane), 1);
    assert!(f.record(1).unwrap().hold.is_empty());
    assert_eq!(f.events_named("session.delivery_released").len(), 1);
    assert_eq!(f.events_named("session.reply_sent").len(), 1);
}

#[tokio::test]
async fn a_reply_never_jumps_an_event_held_before_it() {
    let f = Fixture::new();
    let (pane, claude) = f.claude_session(1);
    claude.dialog.store(true, Ordering::SeqCst);
    let event = held_comment(&f, 1, "the comment").await;
    let replier = Replier::new(Arc::clone(&f.sessions));
    let error = replier.reply(reply_request("the reply")).await.unwrap_err();
    assert!(matches!(error, ReplyError::Held { .. }), "{error:?}");
    claude.dialog.store(false, Ordering::SeqCst);
    assert_eq!(event.await.unwrap(), Disposition::Delivered);
    assert_eq!(replier.release_held(&item(1)).await, 1);
    let pasted = f.pasted(&pane);
    assert_eq!(pasted.len(), 2);
    assert!(pasted[0].contains("the comment") && pasted[1].contains("the reply"));
}

/// A stop or a reset ends the session: each reply held on it is reported, never
/// delivered, and nothing reaches the pane.
#[tokio::test]
async fn replies_held_on_a_session_that_ends_are_reported_not_delivered() {
    for reset in [false, true] {
        let f = Fixture::new();
        let (pane, claude) = f.claude_session(1);
        claude.dialog.store(true, Ordering::SeqCst);
        let replier = Replier::new(Arc::clone(&f.sessions));
        replier.reply(reply_request("too late")).await.unwrap_err();
        let origin = crate::session::Origin::cli();
        if reset {
            f.sessions.reset(&item(1), &origin).await.unwrap();
        } else {
            f.sessions.stop(&item(1), &origin).await.unwrap();
        }
        claude.dialog.store(false, Ordering::SeqCst);
        assert_eq!(replier.release_held(&item(1)).await, 0);
        let failed = f.events_named("session.reply_failed");
        assert_eq!(failed.len(), 1, "reset {reset}: {failed:?}");
        assert_eq!(failed[0]["reason"], "session-ended");
        assert!(f.pasted(&pane).is_empty());
        match f.record(1) {
            Some(record) => assert!(!reset && record.hold.replies.is_empty()),
            None => assert!(reset, "a stop keeps the record"),
        }
    }
}

#[tokio::test]
async fn a_codex_session_gets_the_same_look_before_the_paste_and_the_enter() {
    let f = Fixture::new();
    let (pane, codex) = f.codex_session(1);
    let cases: [(&dyn Fn(), HoldReason); 3] = [
        (
            &|| codex.approval.store(true, Ordering::SeqCst),
            HoldReason::PermissionDialog,
        ),
        (
            &|| *codex.draft.lock().unwrap() = "half a tho".into(),
            HoldReason::OperatorDraft,
        ),
        (
            &|| codex.undrawn.store(true, Ordering::SeqCst),
            HoldReason::NotReady,
        ),
    ];
    let reset = || {
        codex.approval.store(false, Ordering::SeqCst);
        codex.undrawn.store(false, Ordering::SeqCst);
        codex.draft.lock().unwrap().clear();
    };
    held_in_each(&f, &pane, &reset, cases).await;
    codex.undrawn.store(false, Ordering::SeqCst);

    // A release nobody recorded, its hooks silent: never pasted on the screen's word.
    let release = |v: &str| {
        let v = v.to_string();
        f.sessions
            .registry()
            .update(&item(1), move |r| r.harness_version = Some(v))
            .unwrap();
    };
    release("0.170.0");
    let first = f
        .sessions
        .deliver_event(&item(1), &event(1, "d-1"))
        .await
        .unwrap_err();
    assert!(
        matches!(first, DeliveryFailure::Held(h) if h == held(HoldReason::NotReady, false)),
        "seen once, waited out: {first:?}"
    );
    f.sessions
        .registry()
        .update(&item(1), |r| {
            let unread = r.hold.unread.as_mut().unwrap();
            unread.since = "2026-01-01T00:00:00.000Z".into();
        })
        .unwrap();
    let failure = f
        .sessions
        .deliver_event(&item(1), &event(1, "d-1"))
        .await
        .unwrap_err();
    assert!(
        matches!(failure, DeliveryFailure::Held(h) if h == held(HoldReason::ScreenUnread, false)),
        "{failure:?}"
    );
    assert!(f.tmux.fake.pane_input(&pane).is_empty());

    release("0.171.0");
    f.sessions
        .deliver_event(&item(1), &event(1, "d-1"))
        .await
        .unwrap();
    assert_eq!(f.pasted(&pane).len(), 1);
    assert_eq!(f.enters(&pane), 1, "one Enter, once the paste showed");
}
