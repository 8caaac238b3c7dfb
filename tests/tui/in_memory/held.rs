//! Held deliveries on the screen (SPEC §18.3): the Sessions row's `⏸ 2 held: …` mark
//! (shortened on narrow panes) and the selected session's line saying for how long and
//! what to do; the count behind a permission dialog in Questions; a hold past
//! `sessions.holdNotifySeconds` notifying once; a reply to a held session queued.

use crate::support::tui_app::*;
use the_loop::config::NotifyMode;
use the_loop::session::delivery::HoldReason;
use the_loop::tui::action::{Action, Effect, Notification};
use the_loop::tui::app::{App, AppSettings};
use the_loop::tui::backend::Backend;
use the_loop::tui::fake::FakeBackend;
use the_loop::tui::sample;
use time::Duration;

fn held_app(w: u16, h: u16) -> App {
    let mut app = app_with(sample::snapshot_with_holds(NOW), w, h);
    capture(&mut app);
    app
}

#[test]
fn a_held_session_is_marked_and_its_dialog_says_how_many_wait() {
    let mut app = held_app(120, 32);
    snap("held_120x32", screen(&app));
    let text = screen(&app);
    assert!(text.contains("⏸ 2 held"), "{text}");
    assert!(
        text.contains("⏸ 2 held: permission dialog · 35s"),
        "the selected session says why and since when: {text}"
    );
    assert!(text.contains("· 2 waiting"), "{text}");

    // Narrower: the row's mark shrinks, the dialog's count stays on its row.
    keys(&mut app, &["3"]);
    send(
        &mut app,
        Action::Resize {
            width: 100,
            height: 30,
        },
    );
    snap("held_100x30", screen(&app));
    let text = screen(&app);
    assert!(
        text.contains("· 2 waiting"),
        "kept when the text is cut: {text}"
    );

    let mut app = held_app(60, 12);
    keys(&mut app, &["j"]);
    snap("held_60x12_sessions", screen(&app));
    let text = screen(&app);
    assert!(text.contains("⏸ 1"), "{text}");
    assert!(text.contains("operator's draft"), "{text}");
}

fn notes(fx: &[Effect]) -> Vec<Effect> {
    fx.iter()
        .filter(|e| matches!(e, Effect::Desktop(_) | Effect::Bell))
        .cloned()
        .collect()
}

fn notifying_app(secs: u64) -> App {
    app_from(
        AppSettings {
            notify: NotifyMode::Desktop,
            hold_notify_secs: secs,
            ..settings()
        },
        sample::snapshot_with_holds(NOW),
        120,
        32,
    )
}

#[test]
fn a_long_hold_notifies_once_like_a_question() {
    // #18's hold was already past the minute when the screen opened: it is on screen,
    // so it stays quiet; #15's (35 s old) notifies when it reaches the minute.
    let mut app = notifying_app(60);
    assert!(notes(&send(&mut app, Action::Tick(NOW + Duration::seconds(24)))).is_empty());
    let fx = send(&mut app, Action::Tick(NOW + Duration::seconds(25)));
    assert_eq!(
        notes(&fx),
        [Effect::Desktop(Notification {
            title: "the-loop: deliveries held on octo/repo#15".into(),
            body: "2 held for 1m: permission dialog — answer it first".into(),
        })]
    );
    let later = NOW + Duration::minutes(5);
    assert!(
        notes(&send(&mut app, Action::Tick(later))).is_empty(),
        "once per hold"
    );
    // The hold cleared and a new one began: it notifies in its turn.
    let mut next = sample::snapshot_with_holds(later);
    next.sessions[1].held = None;
    send(&mut app, Action::Snapshot(Box::new(next)));
    let fx = send(&mut app, Action::Tick(later + Duration::seconds(30)));
    assert_eq!(notes(&fx).len(), 1, "{fx:?}");
}

#[test]
fn zero_hold_notify_seconds_never_notifies() {
    let mut app = notifying_app(0);
    let fx = send(&mut app, Action::Tick(NOW + Duration::hours(1)));
    assert!(notes(&fx).is_empty(), "{fx:?}");
}

#[tokio::test]
async fn a_reply_to_a_held_session_is_queued_behind_the_hold() {
    let backend = FakeBackend::new(sample::snapshot_with_holds(NOW));
    let item = sample::item("octo/repo", 18);
    let said = backend.reply(&item, "use the repo cap", false).await;
    assert_eq!(
        said,
        Ok("held: octo/repo#18 waits on the operator's draft in its input box — send or clear the draft in the pane first; the reply goes out once that clears".into())
    );
    let snapshot = backend.snapshot().await;
    let held = snapshot.sessions[1].held.as_ref().unwrap();
    assert_eq!((held.count, held.reason), (2, HoldReason::OperatorDraft));
}

/// Issue 30: a claude session's permission mode beside its harness, the mode its screen
/// shows when the operator changed it (marked), a mode that runs calls unasked said on
/// the selected session's line; a release whose screen is unknown named in the hold.
#[test]
fn the_permission_mode_and_an_unknown_release_are_shown() {
    use the_loop::config::PermissionMode;
    use the_loop::tui::backend::ModeView;
    let mut snapshot = sample::snapshot_with_holds(NOW);
    snapshot.sessions[0].mode = Some(ModeView {
        started: PermissionMode::Default,
        shown: Some(PermissionMode::Auto),
    });
    snapshot.sessions[1].mode = Some(ModeView {
        started: PermissionMode::Default,
        shown: None,
    });
    let mut held = sample::held(NOW, 1, HoldReason::ScreenUnread, 5);
    held.client = Some("Claude Code 2.1.400".into());
    held.witnesses = Some(the_loop::session::delivery::Disagreement {
        hooks: "a permission request pending".into(),
        screen: "an empty input box, no dialog".into(),
    });
    snapshot.sessions[1].held = Some(held);
    snapshot.sessions[1].client = Some(
        "Claude Code 2.1.400 · read with 2.1.332's rules · seen live: idle ✓ dialog – draft –"
            .into(),
    );
    let mut app = app_with(snapshot, 140, 32);
    capture(&mut app);
    let text = screen(&app);
    assert!(text.contains("claude auto!"), "{text}");
    assert!(text.contains("claude default"), "{text}");
    assert!(
        text.contains("⏵ mode auto (started default)"),
        "the narrow pane's form: {text}"
    );
    keys(&mut app, &["j"]);
    let text = screen(&app);
    // The narrow pane's forms (`held::details` puts both witnesses first, for a pane
    // that fits them).
    assert!(
        text.contains("⏸ 1 held: screen unread (Claude Code 2.1.400) · 5s"),
        "{text}"
    );
    assert!(
        text.contains("◇ Claude Code 2.1.400 · read with 2.1.332's rules"),
        "how its screen is read: {text}"
    );
    assert!(
        !text.contains("⏵ "),
        "a plain default says nothing more: {text}"
    );
}

/// A limit holding deliveries (issue 43): the status bar says when it resets, in local
/// time (the tests' is UTC), and how many deliveries and starts wait; kept when narrow.
#[test]
fn a_limit_shows_in_the_status_bar_with_its_reset_and_what_waits() {
    use the_loop::tui::backend::LimitView;
    let limited = |limit: LimitView, w: u16, h: u16| {
        let mut snapshot = sample::snapshot_with_holds(NOW);
        snapshot.status.limit = Some(limit);
        app_with(snapshot, w, h)
    };
    let limit = LimitView {
        login: false,
        until: Some(NOW + Duration::minutes(115)),
        deliveries: 3,
        starts: 1,
    };
    let app = limited(limit.clone(), 120, 32);
    snap("limit_120x32", screen(&app));
    let top = screen(&app).lines().next().unwrap().to_string();
    assert!(
        top.contains("⏸ limit · resets 14:00 · 3 deliveries · 1 start"),
        "{top}"
    );
    let app = limited(limit, 60, 12);
    let top = screen(&app).lines().next().unwrap().to_string();
    assert!(
        top.contains("⏸ limit · resets 14:00"),
        "kept when narrow: {top}"
    );

    let login = LimitView {
        login: true,
        until: None,
        deliveries: 1,
        starts: 0,
    };
    let app = limited(login, 120, 32);
    let top = screen(&app).lines().next().unwrap().to_string();
    assert!(top.contains("⏸ login expired · 1 delivery ·"), "{top}");
}
