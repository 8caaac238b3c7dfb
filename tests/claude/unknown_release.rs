//! A Claude Code release the-loop has not recorded (issue 30), with the real client —
//! standing in as release 2.1.400 — and the tests' fake model: everything for it is
//! held and says which release; the operator lets one delivery out by hand, which is
//! refused while a permission is pending and goes out exactly once when the hooks
//! report the turn ended.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::claude_world::{ClaudeWorld, item};
use crate::support::fake_model::Turn;
use the_loop::session::{Origin, PromptInputs};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unrecorded_release_is_held_and_released_by_hand_once() {
    let Some(mut world) = ClaudeWorld::supervised().await else {
        return;
    };
    world.claude_reporting("2.1.400");
    // The boot prompt's turn asks for a command: a permission dialog is up.
    world.model.script([
        Turn::bash("echo by-hand-$((6*7)) | tee ran.txt"),
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
    assert_eq!(row["harnessVersion"], "2.1.400", "{row:#}");
    assert_eq!(row["permissionMode"], "default", "{row:#}");

    world.start_supervisor();
    world.wait_cycles(1).await;
    world.comment("alice", "OSPREY: please also bump the cap to 5.");
    let held = world.wait_events("session.delivery_held", 1).await;
    assert_eq!(held[0]["reason"], "screen-unknown", "{held:#?}");
    let row = world.listed();
    assert_eq!(row["held"]["reason"], "screen-unknown", "{row:#}");
    assert_eq!(row["held"]["client"], "Claude Code 2.1.400", "{row:#}");

    // A permission is pending: the release by hand is refused, nothing is pasted.
    let out = world.cli(&["sessions", "deliver", &item().to_string(), "--wait", "2"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("permission is pending"), "{said}");
    assert!(
        !world.home.project.join("ran.txt").exists(),
        "nothing answered the dialog"
    );

    // The operator approves; the turn ends; now one delivery goes out, once.
    let out = world.cli(&["sessions", "approve", &item().to_string()]);
    assert!(out.status.success(), "{out:?}");
    world.wait_events("session.turn_ended", 1).await;
    assert!(world.home.project.join("ran.txt").exists());
    world.wait_listed("idle", "hooks").await;
    let out = world.cli(&["sessions", "deliver", &item().to_string(), "--wait", "30"]);
    assert!(out.status.success(), "{out:?}");
    world
        .wait("the comment to reach the model", || {
            let found: Vec<String> = world
                .model
                .agent_requests()
                .iter()
                .filter_map(|r| r.fresh_text())
                .filter(|t| t.contains("OSPREY"))
                .collect();
            (!found.is_empty()).then_some(found)
        })
        .await;
    world.wait_events("session.delivery_released", 1).await;
    // Exactly once, and nothing else went out unasked.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let carrying = world
        .model
        .agent_requests()
        .iter()
        .filter_map(|r| r.fresh_text())
        .filter(|t| t.contains("OSPREY"))
        .count();
    assert_eq!(carrying, 1);
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
