//! `the-loop comment` from inside the real Claude Code (each pinned release) (SPEC §19.2, §19.6), with
//! the tests' fake model and a supervisor polling the simulated GitHub: the agent's
//! Bash call needs no permission (the adapter's settings allow it), the comment lands on
//! the session's item marked exactly once with the harness named, and the next poll
//! drops it as `self-authored` — the agent never reads its own words back.
//!
//! Without Claude Code installed (scripts/check installs it) the test says so and
//! passes, except under CI.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::claude_world::{ClaudeWorld, item};
use crate::support::fake_model::Turn;
use the_loop::guard::{MARKER, attribution_for};

/// The dialog Claude Code draws for a Bash call that needs permission.
const DIALOG: &str = "Do you want to proceed?";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_comment_needs_no_permission_lands_marked_and_comes_back_dropped() {
    let Some(mut world) = ClaudeWorld::supervised().await else {
        return;
    };
    world.start().await;
    world.start_supervisor();
    world.wait_cycles(1).await;
    let supervisor = world.supervisor_pid();

    world.model.script([
        Turn::bash("the-loop comment --body 'PLOVER: the retry cap is now 5, per repository.'"),
        Turn::text("Posted the summary."),
    ]);
    world
        .deliver("d-1", "Tell them on GitHub what you changed.")
        .await;
    let commented = world.wait_events("session.commented", 1).await;
    world.wait_events("session.turn_ended", 2).await;
    world.wait_screen("Posted the summary.").await;
    assert!(
        world
            .events_named("session.permission_requested")
            .is_empty(),
        "commenting needed no permission: {:#?}",
        world.events()
    );
    assert!(!world.screen().contains(DIALOG), "{}", world.screen());

    // Posted by the supervisor (the pane has no token), on the session's own item.
    let event = &commented[0];
    assert_eq!(event["pid"], supervisor);
    assert_eq!(event["work_item"], item().to_string());
    let sim = &world.github.as_ref().unwrap().sim;
    let posted = sim.comments_on("octo/repo", item().number);
    assert_eq!(posted.len(), 1, "{posted:#?}");
    let body = &posted[0].body;
    assert_eq!(body.matches(MARKER).count(), 1, "{body}");
    // The attribution names the harness, and the model Claude Code reported.
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            world
                .state
                .join("sessions")
                .join(format!("{}.json", item().slug())),
        )
        .unwrap(),
    )
    .unwrap();
    let model = record["reported"]["model"].as_str();
    assert!(model.is_some(), "Claude Code reports its model: {record:#}");
    let line = attribution_for("claude", model);
    assert_eq!(
        body.as_str(),
        format!("PLOVER: the retry cap is now 5, per repository.\n\n{line}\n{MARKER}\n")
    );
    assert_eq!(
        event["url"],
        format!(
            "https://github.com/octo/repo/issues/15#issuecomment-{}",
            posted[0].id
        )
    );

    // The next poll sees it and drops it: it never reaches the model as a comment.
    let delivery = format!("poll-comment-{}", posted[0].id);
    world
        .wait(&format!("{delivery} dropped as self-authored"), || {
            world
                .events_named("routing.dropped")
                .into_iter()
                .find(|e| e["delivery_id"] == delivery.as_str() && e["reason"] == "self-authored")
        })
        .await;
    world.wait_cycles(1).await;
    let echoed = world
        .model
        .agent_requests()
        .iter()
        .filter_map(|r| r.fresh_text())
        .filter(|t| t.contains("PLOVER"))
        .count();
    assert_eq!(echoed, 0, "the agent's own comment was handed back to it");
    assert!(world.events_named("dispatch.succeeded").is_empty());
}

/// The allowance for `the-loop comment` is not a way around permissions: a command
/// chained after it still asks, and nothing runs or is posted until the operator says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_comment_allowance_does_not_cover_a_chained_command() {
    let Some(world) = ClaudeWorld::new().await else {
        return;
    };
    world.start().await;
    let chained = "the-loop comment --body 'ok' && touch chained-marker";
    world.model.script([
        Turn::bash(chained),
        Turn::text("should not get here without the operator"),
    ]);
    world.deliver("d-1", "Comment, then make the marker.").await;
    let requested = world.wait_events("session.permission_requested", 1).await;
    assert_eq!(requested[0]["summary"], chained);
    world.wait_screen(DIALOG).await;
    assert!(!world.home.project.join("chained-marker").exists());
    let out = world.cli(&["sessions", "deny", &item().to_string()]);
    assert!(out.status.success(), "{out:?}");
    world.wait_listed("idle", "hooks").await;
    assert!(world.events_named("session.commented").is_empty());
}
