//! Shipping from the screen (SPEC §19.3, §19.4): an agent's ship request is listed in
//! Questions and notifies like a question; `y` on it (or `P` on a session) looks at
//! what would go out and asks; `d` in the confirmation shows the diff and comes back;
//! confirming ships the head the confirmation showed; Esc leaves it; a shipped session
//! names its pull request.

use super::event_loop::{Rig, drive, wait};
use crate::support::tui_app::*;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use the_loop::config::NotifyMode;
use the_loop::tui::action::{Action, Effect, Notification, Request};
use the_loop::tui::app::{App, AppSettings, Mode};
use the_loop::tui::sample;

/// The effects but the pane captures a focus change asks for.
fn loads(fx: Vec<Effect>) -> Vec<Effect> {
    fx.into_iter()
        .filter(|e| !matches!(e, Effect::Capture(_)))
        .collect()
}

fn requests(fx: &[Effect]) -> Vec<Request> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Request(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

fn ship_app(w: u16, h: u16) -> App {
    let mut app = app_with(sample::snapshot_with_ship(NOW), w, h);
    capture(&mut app);
    app
}

/// `y` on the ship row, and the backend's preview arriving.
fn confirming(app: &mut App) {
    let fx = loads(keys(app, &["3", "y"]));
    assert_eq!(fx, [Effect::LoadShip(sample::item("octo/repo", 15))]);
    send(
        app,
        Action::ShipPreviewed {
            work_item: sample::item("octo/repo", 15),
            result: Ok(Box::new(sample::ship_preview(NOW))),
        },
    );
}

#[test]
fn a_ship_request_is_a_row_in_questions_with_what_would_go_out() {
    let mut app = ship_app(120, 32);
    keys(&mut app, &["3"]);
    let text = screen(&app);
    assert!(
        text.contains("⇪ repo#15  2m ship the-loop/issue-15"),
        "{text}"
    );
    assert!(text.contains("· ↑3 +120 −8 · review:"), "{text}");
    assert!(text.contains("y ship"), "{text}");
    snap("ship_request_120x32", text);
}

#[test]
fn y_on_the_request_asks_with_what_would_go_out_and_enter_ships_the_shown_head() {
    let mut app = ship_app(100, 30);
    confirming(&mut app);
    assert!(matches!(app.mode, Mode::Confirm(_)), "{:?}", app.mode);
    let text = screen(&app);
    assert!(text.contains("Cap delivery retries per repo"), "{text}");
    assert!(text.contains("3f2a9c1d0e4b"), "{text}");
    assert!(text.contains("3 commits · 4 files +120 −8"), "{text}");
    assert!(text.contains("critic: review: ok"), "{text}");
    snap("confirm_ship_100x30", text);
    let fx = keys(&mut app, &["enter"]);
    assert_eq!(
        requests(&fx),
        [Request::Ship {
            work_item: sample::item("octo/repo", 15),
            seen_head: sample::ship_preview(NOW).head,
        }]
    );
    assert!(matches!(app.mode, Mode::Normal));
}

#[test]
fn the_confirmation_says_when_uncommitted_changes_will_refuse_it() {
    let mut app = ship_app(100, 30);
    keys(&mut app, &["3", "y"]);
    let mut preview = sample::ship_preview(NOW);
    preview.dirty = 2;
    send(
        &mut app,
        Action::ShipPreviewed {
            work_item: preview.work_item.clone(),
            result: Ok(Box::new(preview)),
        },
    );
    let text = screen(&app);
    assert!(
        text.contains("2 uncommitted or untracked changes"),
        "{text}"
    );
}

#[test]
fn esc_or_n_leaves_it_and_nothing_ships() {
    for key in ["esc", "n"] {
        let mut app = ship_app(100, 30);
        confirming(&mut app);
        let fx = keys(&mut app, &[key]);
        assert!(requests(&fx).is_empty(), "{key}: {fx:?}");
        assert!(matches!(app.mode, Mode::Normal), "{key}");
    }
}

#[test]
fn d_in_the_confirmation_shows_the_diff_and_closing_it_comes_back() {
    let mut app = ship_app(100, 30);
    confirming(&mut app);
    let fx = loads(keys(&mut app, &["d"]));
    assert_eq!(fx, [Effect::LoadDiff(sample::item("octo/repo", 15))]);
    assert!(matches!(app.mode, Mode::Diff { .. }), "{:?}", app.mode);
    keys(&mut app, &["esc"]);
    let Mode::Confirm(confirm) = &app.mode else {
        panic!("back to the confirmation: {:?}", app.mode);
    };
    assert_eq!(
        confirm.request,
        Request::Ship {
            work_item: sample::item("octo/repo", 15),
            seen_head: sample::ship_preview(NOW).head,
        }
    );
}

#[test]
fn a_refused_preview_says_why_and_opens_nothing() {
    let mut app = ship_app(100, 30);
    keys(&mut app, &["3", "y"]);
    send(
        &mut app,
        Action::ShipPreviewed {
            work_item: sample::item("octo/repo", 15),
            result: Err("`the-loop/issue-15` has no commits ahead of origin/main".into()),
        },
    );
    assert!(matches!(app.mode, Mode::Normal));
    let message = app.message.as_ref().map(|m| m.text.clone());
    assert_eq!(
        message.as_deref(),
        Some("Cannot ship octo/repo#15: `the-loop/issue-15` has no commits ahead of origin/main")
    );
}

#[test]
fn p_on_a_session_ships_it_with_the_items_title() {
    let mut app = sample_app(100, 30);
    let fx = loads(keys(&mut app, &["1", "P"]));
    assert_eq!(fx, [Effect::LoadShip(sample::item("octo/repo", 15))]);
    let mut preview = sample::ship_preview(NOW);
    preview.request = None;
    send(
        &mut app,
        Action::ShipPreviewed {
            work_item: preview.work_item.clone(),
            result: Ok(Box::new(preview)),
        },
    );
    let Mode::Confirm(confirm) = &app.mode else {
        panic!("{:?}", app.mode);
    };
    assert_eq!(
        confirm.prompt,
        "Ship octo/repo#15: “Retry cap for failed deliveries”?"
    );
    // A watched item without a session has nothing to ship.
    keys(&mut app, &["esc", "G"]);
    let fx = loads(keys(&mut app, &["P"]));
    assert!(fx.is_empty(), "{fx:?}");
}

#[test]
fn a_new_ship_request_notifies_like_a_question() {
    let mut app = app_from(
        AppSettings {
            notify: NotifyMode::Desktop,
            ..settings()
        },
        sample::snapshot(NOW),
        120,
        32,
    );
    let fx = send(
        &mut app,
        Action::Snapshot(Box::new(sample::snapshot_with_ship(NOW))),
    );
    let notes: Vec<&Effect> = fx
        .iter()
        .filter(|e| matches!(e, Effect::Desktop(_) | Effect::Bell))
        .collect();
    assert_eq!(
        notes,
        [&Effect::Desktop(Notification {
            title: "the-loop: octo/repo#15 asks to ship".into(),
            body: "Cap delivery retries per repo".into(),
        })]
    );
    // The same request again does not.
    let fx = send(
        &mut app,
        Action::Snapshot(Box::new(sample::snapshot_with_ship(NOW))),
    );
    assert!(
        !fx.iter()
            .any(|e| matches!(e, Effect::Desktop(_) | Effect::Bell))
    );
}

#[test]
fn a_shipped_session_names_its_pull_request() {
    let mut s = sample::snapshot(NOW);
    s.sessions[0].pull_request = Some(7);
    let mut app = app_with(s, 120, 32);
    capture(&mut app);
    let text = screen(&app);
    assert!(
        text.contains("│● octo/repo#15 claude working     12s PR #7"),
        "{text}"
    );
    snap("sessions_pull_request_120x32", text);
    // Narrower, the row drops its worktree column; the selected session's own line
    // still names the pull request.
    let mut s = sample::snapshot(NOW);
    s.sessions[0].pull_request = Some(7);
    s.sessions[0].workspace = Some(the_loop::tui::backend::WorkspaceView {
        branch: "the-loop/issue-15".into(),
        base: "origin/main".into(),
        changed_files: Some(0),
        ahead: Some(3),
        kept: None,
    });
    let mut narrow = app_with(s, 100, 30);
    capture(&mut narrow);
    let text = screen(&narrow);
    assert!(!text.contains("12s PR #7"), "{text}");
    assert!(text.contains("⎇ the-loop/issue-15 · ~0 ↑3 PR #7"), "{text}");
}

/// Drives the loop: `3 y`, then `moved` (if any) becomes the branch's head while the
/// confirmation is open, then `enter`. Returns the screen.
async fn ship_through_the_loop(
    rig: &Rig,
    console: &mut super::event_loop::ScriptedConsole,
    moved: Option<&str>,
) -> String {
    let mut app = App::new(settings(), NOW);
    app.area = ratatui::layout::Rect::new(0, 0, 120, 32);
    let mut terminal = Terminal::new(TestBackend::new(120, 32)).unwrap();
    drive(rig, console, &mut app, &mut terminal, async move {
        wait(1_000).await;
        rig.press("3");
        rig.press("y");
        wait(500).await;
        if let Some(head) = moved {
            let mut later = sample::ship_preview(NOW);
            later.head = head.into();
            rig.backend.set_ship_preview(later);
        }
        rig.press("enter");
        wait(3_000).await;
        rig.press("q");
    })
    .await
    .unwrap();
    terminal.backend().to_string()
}

#[tokio::test(start_paused = true)]
async fn through_the_loop_the_backend_ships_and_the_pull_request_shows() {
    let (rig, mut console) = Rig::new(sample::snapshot_with_ship(NOW));
    rig.backend.set_ship_preview(sample::ship_preview(NOW));
    let screen = ship_through_the_loop(&rig, &mut console, None).await;
    assert_eq!(
        rig.backend.actions(),
        [Request::Ship {
            work_item: sample::item("octo/repo", 15),
            seen_head: sample::ship_preview(NOW).head,
        }]
    );
    assert!(screen.contains("pull request #7"), "{screen}");
    assert!(screen.contains("PR #7"), "{screen}");
    assert!(
        screen.contains("Questions 1 "),
        "the request is closed, the question stays: {screen}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_head_shown_ships_not_the_one_at_confirm_time() {
    let (rig, mut console) = Rig::new(sample::snapshot_with_ship(NOW));
    rig.backend.set_ship_preview(sample::ship_preview(NOW));
    let moved = "0000000000000000000000000000000000000000";
    let screen = ship_through_the_loop(&rig, &mut console, Some(moved)).await;
    assert_eq!(
        rig.backend.actions(),
        [Request::Ship {
            work_item: sample::item("octo/repo", 15),
            seen_head: sample::ship_preview(NOW).head,
        }]
    );
    assert!(screen.contains("the head moved"), "{screen}");
}
