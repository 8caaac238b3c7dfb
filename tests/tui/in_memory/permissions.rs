//! Permission requests in the Questions pane (SPEC §17.4): listed before questions with
//! their tool, command and age; `y` approves and `n` denies the selected one (or, on a
//! session, the one it waits on); a new request rings like a question; a state guessed
//! from the screen says so.

use crate::support::tui_app::*;
use the_loop::config::NotifyMode;
use the_loop::tui::action::{Action, Effect, Notification, Request};
use the_loop::tui::app::AppSettings;
use the_loop::tui::sample;
use time::Duration;

fn requests(fx: &[Effect]) -> Vec<Request> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Request(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

fn permission_app() -> the_loop::tui::app::App {
    let mut app = app_with(sample::snapshot_with_permission(NOW), 120, 32);
    capture(&mut app);
    app
}

#[test]
fn the_request_is_listed_before_the_questions_and_the_session_reads_permission() {
    let mut app = permission_app();
    snap("permission_120x32", screen(&app));
    keys(&mut app, &["3"]);
    snap("permission_selected_100x30", {
        send(
            &mut app,
            Action::Resize {
                width: 100,
                height: 30,
            },
        );
        screen(&app)
    });
    let text = screen(&app);
    assert!(text.contains("! repo#15 40s Bash: cargo test"), "{text}");
    assert!(text.contains("permission"), "{text}");
    assert!(text.contains("idle?"), "a guess says so: {text}");
    assert!(text.contains("y approve"), "{text}");
}

#[test]
fn y_approves_and_n_denies_the_selected_request() {
    let mut app = permission_app();
    let fx = keys(&mut app, &["3", "y"]);
    assert_eq!(
        requests(&fx),
        [Request::Permission {
            work_item: sample::item("octo/repo", 15),
            request_id: "toolu_01".into(),
            approve: true,
        }]
    );
    let fx = keys(&mut app, &["n"]);
    assert_eq!(
        requests(&fx),
        [Request::Permission {
            work_item: sample::item("octo/repo", 15),
            request_id: "toolu_01".into(),
            approve: false,
        }]
    );
    // Below the request, the question: `y` has nothing to approve there.
    let fx = keys(&mut app, &["j", "y"]);
    assert!(requests(&fx).is_empty(), "{fx:?}");
    assert!(
        app.message
            .as_ref()
            .is_some_and(|m| m.text.contains("Nothing selected is waiting")),
        "{:?}",
        app.message
    );
    // `r` on the question still answers the question.
    keys(&mut app, &["r"]);
    assert!(matches!(app.mode, the_loop::tui::app::Mode::Reply(_)));
}

#[test]
fn on_a_session_the_keys_answer_the_dialog_it_waits_on() {
    let mut app = permission_app();
    let fx = keys(&mut app, &["1", "y"]);
    assert_eq!(requests(&fx).len(), 1, "#15 is selected and waits: {fx:?}");
    let fx = keys(&mut app, &["j", "y"]);
    assert!(requests(&fx).is_empty(), "#18 waits on no dialog: {fx:?}");
}

#[test]
fn a_new_request_notifies_like_a_question() {
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
        Action::Snapshot(Box::new(sample::snapshot_with_permission(NOW))),
    );
    let notes: Vec<&Effect> = fx
        .iter()
        .filter(|e| matches!(e, Effect::Desktop(_) | Effect::Bell))
        .collect();
    assert_eq!(
        notes,
        [&Effect::Desktop(Notification {
            title: "the-loop: octo/repo#15 needs permission".into(),
            body: "Bash: cargo test --workspace && git push origin the-loop/issue-15".into(),
        })]
    );
    let mut again = sample::snapshot_with_permission(NOW);
    again.permissions[0].requested_at = NOW - Duration::seconds(1);
    let fx = send(&mut app, Action::Snapshot(Box::new(again)));
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::Desktop(_))),
        "the same request (by id) does not notify twice"
    );
}

#[test]
fn the_selection_stays_on_a_question_when_a_request_arrives_above_it() {
    let mut app = app_with(sample::snapshot(NOW), 120, 32);
    keys(&mut app, &["3"]);
    assert!(app.selected_question().is_some());
    send(
        &mut app,
        Action::Snapshot(Box::new(sample::snapshot_with_permission(NOW))),
    );
    assert_eq!(
        app.selected_question().map(|q| q.question.as_str()),
        Some("Should the retry cap be per repo or global?")
    );
}
