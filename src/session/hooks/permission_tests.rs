use super::*;
use crate::session::hooks::ReportedState;
use crate::session::hooks::Reporter;
use crate::session::hooks::report;
use crate::session::test_support::{Fixture, item};
use crate::tmux::{BufferName, PaneId, Paste, Tmux};
use serde_json::json;
use std::sync::Arc;

/// What Claude Code 2.1.197 draws for a Bash call that needs permission (a real capture).
const DIALOG: &str = include_str!("../delivery/screen/claude/fixtures/dialog_bash.100x30.txt");

/// Records Claude's hook `payloads` for issue #1's session, in order.
fn report_claude(fx: &Fixture, payloads: &[serde_json::Value]) {
    let paths = crate::paths::StatePaths::new(fx.dir.path());
    for payload in payloads {
        report::record(
            &paths,
            &item(1),
            Reporter::Claude,
            payload.to_string().as_bytes(),
        )
        .unwrap();
    }
}

/// Issue #1's session, whose harness reported a Bash call waiting for permission.
async fn waiting(fx: &Fixture, screen: &str) -> PaneId {
    waiting_in(fx, screen, "claude").await
}

/// [`waiting`], the session running `harness` at a release whose screen was recorded.
async fn waiting_in(fx: &Fixture, screen: &str, harness: &str) -> PaneId {
    let release = if harness == "codex" {
        "0.171.0"
    } else {
        "2.1.332"
    };
    waiting_at(fx, screen, harness, release).await
}

/// [`waiting`], the session running `harness` at `release`.
async fn waiting_at(fx: &Fixture, screen: &str, harness: &str, release: &str) -> PaneId {
    let pane = fx.live_session(1);
    fx.sessions
        .registry()
        .update(&item(1), |r| {
            r.harness = harness.into();
            r.harness_version = Some(release.into());
        })
        .unwrap();
    report_claude(
        fx,
        &[
            json!({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                   "tool_input": {"command": "rm -rf build"}, "tool_use_id": "toolu_7"}),
            json!({"hook_event_name": "PermissionRequest", "tool_name": "Bash",
                   "tool_input": {"command": "rm -rf build"}}),
        ],
    );
    fx.tmux
        .paste_text(
            &BufferName::unique(),
            screen.as_bytes(),
            &pane,
            Paste::Plain,
        )
        .await
        .unwrap();
    pane
}

/// Makes issue #1's request old enough to have been drawn, then looks at the sessions
/// as a screen does, reconciling their requests; what the look saw.
async fn reconcile_an_old_request(fx: &Fixture) -> Vec<crate::session::SessionActivity> {
    fx.sessions
        .registry()
        .update(&item(1), |r| {
            let p = r.reported.as_mut().unwrap().permission.as_mut().unwrap();
            p.requested_at = "2026-01-01T00:00:00.000Z".into();
        })
        .unwrap();
    let records = fx.sessions.registry().list().unwrap();
    let mut tracker = crate::session::ActivityTracker::new();
    let seen = crate::session::observe(
        |r| fx.sessions.tmux_of(r),
        &records,
        &mut tracker,
        |_| false,
        1,
    )
    .await;
    reconcile(&fx.sessions, &records, &seen, Source::Tui).await;
    seen
}

fn input_after_screen(fx: &Fixture, pane: &PaneId, screen: &str) -> Vec<u8> {
    fx.tmux.fake.pane_input(pane)[screen.len()..].to_vec()
}

#[tokio::test]
async fn approve_sends_enter_to_the_dialog_and_resolves_the_request() {
    let fx = Fixture::new();
    let pane = waiting(&fx, DIALOG).await;
    let requested = fx.events_named("session.permission_requested");
    assert_eq!(requested.len(), 1);
    assert_eq!(requested[0]["tool"], "Bash");
    assert_eq!(requested[0]["summary"], "rm -rf build");
    assert_eq!(requested[0]["source"], "hook");

    let done = answer(
        &fx.sessions,
        &item(1),
        Decision::Approved,
        Some("toolu_7"),
        Some("alice".into()),
        Source::Tui,
    )
    .await
    .unwrap();
    assert!(
        matches!(
            done,
            Answered::Sent {
                decision: Decision::Approved,
                ..
            }
        ),
        "{done:?}"
    );
    assert_eq!(
        input_after_screen(&fx, &pane, DIALOG),
        b"\r",
        "Enter, one key"
    );
    let resolved = fx.events_named("session.permission_resolved");
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0]["decision"], "approved");
    assert_eq!(resolved[0]["actor"], "alice");
    assert_eq!(resolved[0]["source"], "tui");
    let reported = fx.record(1).unwrap().reported.unwrap();
    assert_eq!(reported.state, ReportedState::Working);
    assert_eq!(reported.permission, None);

    // The tool's own report afterwards resolves nothing a second time.
    report_claude(
        &fx,
        &[json!({"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "toolu_7"})],
    );
    assert_eq!(fx.events_named("session.permission_resolved").len(), 1);

    let again = answer(
        &fx.sessions,
        &item(1),
        Decision::Approved,
        None,
        None,
        Source::Cli,
    )
    .await;
    assert!(
        matches!(again, Err(AnswerError::NothingWaiting(_))),
        "{again:?}"
    );
}

/// Issue #1's fixture with `Timings::dialog_confirm` set: each key is watched.
fn watching_keys(confirm: std::time::Duration) -> Fixture {
    let fx = Fixture::new();
    let mut settings = (*fx.sessions.settings()).clone();
    settings.timings.dialog_confirm = confirm;
    fx.sessions.set_settings(settings);
    fx
}

/// Claude Code drops a key that lands just after its dialog is drawn: a dialog still
/// there after the key, with no newer request, gets it again, a bounded number of times.
#[tokio::test]
async fn a_key_the_dialog_dropped_is_pressed_again_a_bounded_number_of_times() {
    let fx = watching_keys(std::time::Duration::from_millis(30));
    let pane = waiting(&fx, DIALOG).await;
    answer(
        &fx.sessions,
        &item(1),
        Decision::Approved,
        None,
        None,
        Source::Cli,
    )
    .await
    .unwrap();
    // The fake pane never takes the key: the dialog stays, and the key goes out three
    // times in all, then no more.
    assert_eq!(input_after_screen(&fx, &pane, DIALOG), b"\r\r\r");
    assert_eq!(fx.events_named("session.permission_resolved").len(), 1);
}

/// A dialog still on screen once a newer request was reported is that newer request's:
/// the answer's key never goes to it.
#[tokio::test]
async fn a_key_is_never_pressed_again_on_a_newer_request() {
    let fx = watching_keys(std::time::Duration::from_millis(400));
    let pane = waiting(&fx, DIALOG).await;
    let sessions = Arc::clone(&fx.sessions);
    let answering = tokio::spawn(async move {
        answer(
            &sessions,
            &item(1),
            Decision::Approved,
            None,
            None,
            Source::Cli,
        )
        .await
    });
    while input_after_screen(&fx, &pane, DIALOG).is_empty() {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    report_claude(
        &fx,
        &[
            json!({"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "toolu_7"}),
            json!({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                   "tool_input": {"command": "rm -rf dist"}, "tool_use_id": "toolu_8"}),
            json!({"hook_event_name": "PermissionRequest", "tool_name": "Bash",
                   "tool_input": {"command": "rm -rf dist"}}),
        ],
    );
    answering.await.unwrap().unwrap();
    assert_eq!(input_after_screen(&fx, &pane, DIALOG), b"\r", "one key");
    // The tool's report settled the answer before its sender did: still the answer's.
    let resolved = fx.events_named("session.permission_resolved");
    assert_eq!(resolved.len(), 1, "{resolved:#?}");
    assert_eq!(resolved[0]["decision"], "approved");
    assert_eq!(resolved[0]["source"], "cli");
    let pending = pending(&fx.record(1).unwrap()).unwrap();
    assert_eq!(pending.id, "toolu_8");
    assert_eq!(pending.answering, None);
}

#[tokio::test]
async fn deny_sends_escape() {
    let fx = Fixture::new();
    let pane = waiting(&fx, DIALOG).await;
    answer(
        &fx.sessions,
        &item(1),
        Decision::Denied,
        None,
        None,
        Source::Cli,
    )
    .await
    .unwrap();
    assert_eq!(input_after_screen(&fx, &pane, DIALOG), b"\x1b");
    let resolved = fx.events_named("session.permission_resolved");
    assert_eq!(resolved[0]["decision"], "denied");
    assert_eq!(
        fx.record(1).unwrap().reported.unwrap().state,
        ReportedState::Idle
    );
}

/// Codex 0.171.0's approval request (a real capture, with attributes).
const CODEX_APPROVAL: &str = include_str!("../delivery/screen/codex/fixtures/approval.100x30.ansi");

#[tokio::test]
async fn a_codex_approval_request_is_answered_with_its_own_keys() {
    for (decision, key) in [(Decision::Approved, b"\r"), (Decision::Denied, b"\x1b")] {
        let fx = Fixture::new();
        let pane = waiting_in(&fx, CODEX_APPROVAL, "codex").await;
        answer(&fx.sessions, &item(1), decision, None, None, Source::Cli)
            .await
            .unwrap();
        assert_eq!(input_after_screen(&fx, &pane, CODEX_APPROVAL), key);
    }
    // Claude's dialog in a codex session, Codex's in a claude one: not theirs.
    for (screen, harness) in [(DIALOG, "codex"), (CODEX_APPROVAL, "claude")] {
        let fx = Fixture::new();
        let pane = waiting_in(&fx, screen, harness).await;
        let done = answer(
            &fx.sessions,
            &item(1),
            Decision::Approved,
            None,
            None,
            Source::Cli,
        )
        .await
        .unwrap();
        assert!(
            matches!(done, Answered::Elsewhere(_)),
            "{harness}: {done:?}"
        );
        assert!(
            input_after_screen(&fx, &pane, screen).is_empty(),
            "{harness}"
        );
    }
}

#[tokio::test]
async fn no_key_reaches_a_pane_that_does_not_show_the_dialog() {
    let fx = Fixture::new();
    // Answered in the pane already: the prompt is back, and so is a half-typed line
    // that an Enter would submit.
    let screen = "● Bash(rm -rf build)\n  ⎿  (No output)\n❯ half-typed instructions";
    let pane = waiting(&fx, screen).await;
    let done = answer(
        &fx.sessions,
        &item(1),
        Decision::Approved,
        None,
        None,
        Source::Cli,
    )
    .await
    .unwrap();
    assert!(matches!(done, Answered::Elsewhere(_)), "{done:?}");
    assert!(
        input_after_screen(&fx, &pane, screen).is_empty(),
        "nothing sent"
    );
    let resolved = fx.events_named("session.permission_resolved");
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0]["decision"], "elsewhere");
}

#[tokio::test]
async fn on_a_release_nobody_recorded_an_unread_dialog_is_never_taken_for_answered() {
    // The hooks report the request; the screen of 2.1.999 shows no dialog the-loop
    // reads (its wording may have moved): no key, and the request stays pending.
    let fx = Fixture::new();
    let screen = "● Bash(rm -rf build)\n  ⎿  (No output)\n❯ half-typed instructions";
    let pane = waiting_at(&fx, screen, "claude", "2.1.999").await;
    let refused = answer(
        &fx.sessions,
        &item(1),
        Decision::Approved,
        None,
        None,
        Source::Cli,
    )
    .await
    .unwrap_err();
    assert!(matches!(refused, AnswerError::Unread { .. }), "{refused}");
    assert!(refused.is_refusal());
    assert!(
        refused.to_string().contains("Claude Code 2.1.999"),
        "{refused}"
    );
    assert!(
        input_after_screen(&fx, &pane, screen).is_empty(),
        "nothing sent"
    );
    reconcile_an_old_request(&fx).await;
    assert!(fx.events_named("session.permission_resolved").is_empty());
    assert!(pending(&fx.record(1).unwrap()).is_some(), "still pending");

    // Both witnesses read the dialog: the answer goes out, and the release has been
    // seen live with a dialog.
    let fx = Fixture::new();
    let pane = waiting_at(&fx, DIALOG, "claude", "2.1.999").await;
    let done = answer(
        &fx.sessions,
        &item(1),
        Decision::Approved,
        None,
        None,
        Source::Cli,
    )
    .await
    .unwrap();
    assert!(matches!(done, Answered::Sent { .. }), "{done:?}");
    assert_eq!(input_after_screen(&fx, &pane, DIALOG), b"\r");
    let seen = fx
        .sessions
        .client_releases()
        .seen(crate::session::delivery::ScreenReader::Claude, "2.1.999");
    assert!(seen.dialog.is_some(), "{seen:?}");
}

#[tokio::test]
async fn an_answer_for_an_older_request_never_lands_on_a_newer_dialog() {
    let fx = Fixture::new();
    let pane = waiting(&fx, DIALOG).await;
    let err = answer(
        &fx.sessions,
        &item(1),
        Decision::Approved,
        Some("toolu_1"),
        None,
        Source::Tui,
    )
    .await
    .unwrap_err();
    assert!(matches!(err, AnswerError::Changed { .. }), "{err:?}");
    assert!(err.to_string().contains("rm -rf build"), "{err}");
    assert!(input_after_screen(&fx, &pane, DIALOG).is_empty());
    assert!(fx.events_named("session.permission_resolved").is_empty());
}

#[tokio::test]
async fn nothing_waiting_or_no_session() {
    let fx = Fixture::new();
    fx.live_session(1);
    let err = answer(
        &fx.sessions,
        &item(1),
        Decision::Approved,
        None,
        None,
        Source::Cli,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, AnswerError::NothingWaiting(_)) && err.is_refusal(),
        "{err:?}"
    );
    let err = answer(
        &fx.sessions,
        &item(2),
        Decision::Denied,
        None,
        None,
        Source::Cli,
    )
    .await
    .unwrap_err();
    assert!(matches!(err, AnswerError::NoSession(_)), "{err:?}");
}

#[tokio::test]
async fn a_dialog_answered_in_the_pane_is_reconciled_as_elsewhere() {
    let fx = Fixture::new();
    let pane = waiting(&fx, "❯ ").await;
    let seen = reconcile_an_old_request(&fx).await;
    assert_eq!(
        seen[0].state,
        crate::session::ActivityState::AwaitingPermission
    );
    assert_eq!(seen[0].source, crate::session::StateSource::Hooks);
    assert_eq!(seen[0].permission.as_ref().unwrap().summary, "rm -rf build");
    let resolved = fx.events_named("session.permission_resolved");
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0]["decision"], "elsewhere");
    assert!(
        fx.tmux.fake.pane_input(&pane).ends_with(b"\xe2\x9d\xaf "),
        "nothing sent"
    );

    // A fresh request is given time to be drawn.
    report_claude(
        &fx,
        &[
            json!({"hook_event_name": "PermissionRequest", "tool_name": "Bash",
                 "tool_input": {"command": "make"}}),
        ],
    );
    let records = fx.sessions.registry().list().unwrap();
    reconcile(&fx.sessions, &records, &seen, Source::Tui).await;
    assert_eq!(fx.events_named("session.permission_resolved").len(), 1);
}
