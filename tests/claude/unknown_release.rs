//! A Claude Code release nobody recorded (issues 30, 40), with the real client — the
//! pinned release answering `--version` as 2.1.999 — and the tests' fake model: its
//! deliveries go out when the hooks and the screen agree, exactly as on a recorded
//! release, with no hand release; a comment during its permission dialog waits and the
//! tool runs only after `sessions approve`; the operator's draft is never sent; and the
//! release's live sightings are shown.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::safe_delivery::{ran, requests_with, wait_request_with};
use crate::support::claude_world::{ClaudeWorld, item};
use crate::support::fake_model::Turn;
use std::time::Duration;
use the_loop::session::{Origin, PromptInputs};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unrecorded_release_is_delivered_on_agreement_and_waits_out_its_dialog_and_draft() {
    let Some(mut world) = ClaudeWorld::supervised().await else {
        return;
    };
    world.claude_reporting("2.1.999");
    // The boot prompt's turn asks for a command: a permission dialog is up.
    world.model.script([
        Turn::bash("echo agreed-$((6*7)) | tee ran.txt"),
        Turn::text("It ran."),
    ]);
    world
        .sessions
        .start(
            &item(),
            &PromptInputs::manual(&item(), "test"),
            &Origin::cli(),
        )
        .await
        .unwrap();
    world.wait_screen("Do you want to proceed?").await;
    world.wait_listed("awaiting-permission", "hooks").await;
    let row = world.listed();
    assert_eq!(row["harnessVersion"], "2.1.999", "{row:#}");

    // During the dialog: both witnesses say so; the comment waits for the operator.
    world.start_supervisor();
    world.wait_cycles(1).await;
    world.comment("alice", "OSPREY: please also bump the cap to 5.");
    let held = world.wait_events("session.delivery_held", 1).await;
    assert_eq!(held[0]["reason"], "permission-dialog", "{held:#?}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!ran(&world), "nothing answered the dialog");
    assert!(requests_with(&world, "OSPREY").is_empty());

    // The operator approves (both witnesses read the dialog); the tool runs, the turn
    // ends, and the comment goes out by itself, once.
    let out = world.cli(&["sessions", "approve", &item().to_string()]);
    assert!(out.status.success(), "{out:?}");
    world.wait_events("session.turn_ended", 1).await;
    assert!(ran(&world));
    wait_request_with(&world, "OSPREY").await;
    world.wait_events("session.delivery_released", 1).await;
    world.wait_listed("idle", "hooks").await;

    // The operator's draft: held, never sent with a comment, and the comment goes out
    // alone once the box is empty again.
    let target = format!("={}:", item().tmux_session_name());
    world
        .tmux
        .raw(&["send-keys", "-t", &target, "-l", "my own draft LAPWING"]);
    world.wait_screen("LAPWING").await;
    world.comment("alice", "HERON: one more thing.");
    let held = world.wait_events("session.delivery_held", 2).await;
    assert_eq!(held[1]["reason"], "operator-draft", "{held:#?}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(requests_with(&world, "HERON").is_empty());
    assert!(
        requests_with(&world, "LAPWING").is_empty(),
        "the draft was sent"
    );
    world.tmux.raw(&["send-keys", "-t", &target, "C-u"]);
    wait_request_with(&world, "HERON").await;
    world.wait_listed("idle", "hooks").await;
    world.wait_cycles(2).await;

    // Each exactly once, no hand release, no screen-unread, the draft never.
    assert_eq!(requests_with(&world, "OSPREY").len(), 1);
    assert_eq!(requests_with(&world, "HERON").len(), 1);
    assert!(requests_with(&world, "LAPWING").is_empty());
    let reasons: Vec<String> = world
        .events_named("session.delivery_held")
        .iter()
        .map(|e| e["reason"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(
        !reasons.iter().any(|r| r == "screen-unread"),
        "{:#?}",
        world.events_named("session.delivery_held")
    );
    let row = world.listed();
    let read = row["screenRead"].as_str().unwrap_or_default();
    assert!(
        read.starts_with("Claude Code 2.1.999 · read with ")
            && read.contains("seen live: idle ✓ dialog ✓ draft ✓"),
        "{row:#}"
    );
    let out = world.cli(&["config", "check"]);
    let said =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("seen live: idle ✓ dialog ✓ draft ✓"),
        "config check says how the release is read: {said}"
    );
    world.stop_supervisor().await;
}

/// The mode is the operator's (issue 30): configured `auto`, the session starts in it,
/// the row says so and the screen's footer agrees, and a command Claude Code judges
/// lower-risk runs without a dialog — which is what `auto` means. `default`, the
/// default, raised the dialog in every test above.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_auto_mode_is_passed_shown_and_runs_unasked() {
    let Some(world) = ClaudeWorld::new().await else {
        return;
    };
    world.permission_mode("auto");
    world
        .model
        .script([Turn::bash("touch auto-marker.txt"), Turn::text("Done.")]);
    world.start().await;
    let row = world.listed();
    assert_eq!(row["permissionMode"], "auto", "{row:#}");
    assert_eq!(row["shownPermissionMode"], "auto", "{row:#}");
    world
        .wait("the command to run unasked", || {
            world
                .home
                .project
                .join("auto-marker.txt")
                .exists()
                .then_some(())
        })
        .await;
    assert!(
        world
            .events_named("session.permission_requested")
            .is_empty()
    );
}
