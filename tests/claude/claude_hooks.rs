//! Harness-reported state against the real Claude Code (each pinned release) and the test's own fake
//! of the Messages API (SPEC §17.6): sessions started by the-loop with its per-session
//! settings file, Claude running `the-loop hook claude` at every state change.
//!
//! Each test waits with generous limits and asserts what happened, never how fast.
//! Without Claude Code installed (scripts/check installs it) the tests say so and pass,
//! except under CI.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::claude_world::{ClaudeWorld, item};
use crate::support::fake_model::Turn;
use crate::support::{claude, claude_world, tmux_server};
use std::time::{Duration, Instant};

/// The dialog Claude Code draws for a Bash call that needs permission.
const DIALOG: &str = "Do you want to proceed?";

/// A comment delivered by the-loop reaches the model as one user message: the whole
/// multi-line prompt in one request, not split and not repeated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivered_comment_is_one_user_message() {
    let Some(world) = ClaudeWorld::new().await else {
        return;
    };
    world.start().await;
    let before = world.model.agent_requests().len();
    let body = "Please settle the retry cap.\n\nLine two: KINGFISHER\n\tand a tab\n> quoted";
    let prompt = world.deliver("d-1", body).await;
    world.wait_events("session.turn_ended", 2).await;

    let requests = world.model.agent_requests();
    let with_comment: Vec<String> = requests
        .iter()
        .filter_map(|r| r.last_user_text())
        .filter(|t| t.contains("KINGFISHER"))
        .collect();
    assert_eq!(
        with_comment.len(),
        1,
        "one request carries the comment: {with_comment:#?}"
    );
    assert_eq!(requests.len(), before + 1, "and it is one turn");
    // Claude Code's input box expands tabs to four spaces; nothing else changes.
    let sent = prompt.replace('\t', "    ");
    assert_eq!(
        with_comment[0],
        world
            .version()
            .folded_paste_as_received(&sent, &with_comment[0])
    );
    // Claude Code writes its transcript after the turn, not before `Stop`.
    let messages: Vec<String> = world
        .wait("the comment in Claude Code's transcript", || {
            let found: Vec<String> = world
                .home
                .user_messages()
                .into_iter()
                .filter(|m| m.contains("KINGFISHER"))
                .collect();
            (!found.is_empty()).then_some(found)
        })
        .await;
    assert_eq!(messages.len(), 1, "{messages:#?}");
    let row = world.listed();
    assert_eq!(row["state"], "idle");
    assert_eq!(row["stateSource"], "hooks");
}

/// A Bash call that needs permission shows as `awaiting-permission` with its command;
/// `sessions approve` sends the key only to the dialog, and the tool's output reaches
/// the model; the request resolves once, as approved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_from_the_cli_delivers_the_tool_result_to_the_model() {
    let Some(world) = ClaudeWorld::new().await else {
        return;
    };
    world.start().await;
    world.model.script([
        Turn::bash("echo approved-$((6*7)) | tee approved.txt"),
        Turn::text("It printed the answer."),
    ]);
    world.deliver("d-1", "Run the check, please.").await;
    let requested = world.wait_events("session.permission_requested", 1).await;
    assert_eq!(requested[0]["tool"], "Bash");
    assert_eq!(
        requested[0]["summary"],
        "echo approved-$((6*7)) | tee approved.txt"
    );
    assert_eq!(requested[0]["work_item"], item().to_string());
    let row = world.wait_listed("awaiting-permission", "hooks").await;
    assert_eq!(row["permission"]["tool"], "Bash");
    assert_eq!(
        row["permission"]["summary"],
        "echo approved-$((6*7)) | tee approved.txt"
    );
    world.wait_screen(DIALOG).await;
    let sent_before = world.model.agent_requests().len();

    let out = world.cli(&["sessions", "approve", &item().to_string()]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("approved"),
        "{out:?}"
    );
    let requests = world.wait_agent_requests(sent_before + 1).await;
    let results = requests[sent_before].tool_results();
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].1.contains("approved-42"), "{results:?}");
    world.wait_events("session.turn_ended", 2).await;
    world.wait_listed("idle", "hooks").await;
    let resolved = world.events_named("session.permission_resolved");
    assert_eq!(resolved.len(), 1, "{resolved:#?}");
    assert_eq!(resolved[0]["decision"], "approved");
    assert_eq!(resolved[0]["source"], "cli");
    assert!(resolved[0]["actor"].is_string(), "{resolved:#?}");

    // Nothing waits any more: a second approve sends nothing and says so.
    let out = world.cli(&["sessions", "approve", &item().to_string()]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("nothing is waiting"),
        "{out:?}"
    );
}

/// `sessions deny` sends Escape: the command never runs and nothing more reaches the
/// model; the session is idle again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn denying_sends_nothing_to_the_model() {
    let Some(world) = ClaudeWorld::new().await else {
        return;
    };
    world.start().await;
    world.model.script([
        Turn::bash("touch denied-marker"),
        Turn::text("should never be asked for"),
    ]);
    world.deliver("d-1", "Make the marker.").await;
    world.wait_events("session.permission_requested", 1).await;
    world.wait_screen(DIALOG).await;
    let sent_before = world.model.agent_requests().len();

    let out = world.cli(&["sessions", "deny", &item().to_string()]);
    assert!(out.status.success(), "{out:?}");
    world.wait_screen("Interrupted").await;
    world.wait_listed("idle", "hooks").await;
    // Give a wrongly sent tool result time to arrive before judging.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(world.model.agent_requests().len(), sent_before);
    assert!(!world.home.project.join("denied-marker").exists());
    let resolved = world.events_named("session.permission_resolved");
    assert_eq!(resolved.len(), 1, "{resolved:#?}");
    assert_eq!(resolved[0]["decision"], "denied");
}

/// The TUI lists the request in Questions with its command; `y` approves it and the
/// tool's output reaches the model. Prints the time from Claude's `PermissionRequest`
/// to the screen showing it (a figure, never asserted).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_with_the_tui_key_delivers_the_tool_result() {
    let Some(world) = ClaudeWorld::new().await else {
        return;
    };
    world.start().await;
    let screen = world.open_screen("operator");
    screen.wait_text("supervising octo/repo").await;
    screen.wait_text("#15").await;
    world.model.script([
        Turn::bash("echo tui-approved-$((7*6)) | tee tui.txt"),
        Turn::text("Done with the check."),
    ]);
    world.deliver("d-1", "Run it from the screen.").await;
    let requested_seen = wait_instant(|| {
        !world
            .events_named("session.permission_requested")
            .is_empty()
    })
    .await;
    let shown = screen.wait_text("Bash: echo tui-approved").await;
    let on_screen = Instant::now();
    let requested = world.events_named("session.permission_requested");
    let logged = the_loop::time::parse_ts(requested[0]["ts"].as_str().unwrap()).unwrap();
    println!(
        "figure: PermissionRequest → TUI row: {:.0} ms after the event was logged (seen in the log {:.0} ms before the screen)",
        (time::OffsetDateTime::now_utc() - logged).as_seconds_f64() * 1000.0,
        on_screen.duration_since(requested_seen).as_secs_f64() * 1000.0,
    );
    assert!(
        shown.contains("permission"),
        "the session reads permission:\n{shown}"
    );
    world.wait_screen(DIALOG).await;
    let sent_before = world.model.agent_requests().len();

    screen.keys(&["3"]);
    screen.wait_text("y approve").await;
    screen.keys(&["y"]);
    let requests = world.wait_agent_requests(sent_before + 1).await;
    let results = requests[sent_before].tool_results();
    assert!(
        results
            .iter()
            .any(|(_, out)| out.contains("tui-approved-42")),
        "{results:?}"
    );
    screen.wait_text("Approved Bash").await;
    let resolved = world.wait_events("session.permission_resolved", 1).await;
    assert_eq!(resolved[0]["decision"], "approved");
    assert_eq!(resolved[0]["source"], "tui");
    screen.keys(&["q"]);
    assert_eq!(screen.wait_exit().await, 0);
}

async fn wait_instant(mut check: impl FnMut() -> bool) -> Instant {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < claude_world::PATIENCE, "timed out");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Instant::now()
}

/// A slow model turn reads `working` (reported, not guessed) while the model thinks,
/// and `idle` when the turn ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_turn_reads_working_and_its_end_idle() {
    let Some(world) = ClaudeWorld::new().await else {
        return;
    };
    world.start().await;
    world.wait_listed("idle", "hooks").await;
    world.model.script([Turn::slow(
        Duration::from_secs(8),
        Turn::text("That took a while."),
    )]);
    let sent_before = world.model.agent_requests().len();
    world.deliver("d-1", "Think about it for a while.").await;
    world.wait_agent_requests(sent_before + 1).await;
    // The model has the request and has not answered: the session is working.
    let row = world.wait_listed("working", "hooks").await;
    assert_eq!(row["permission"], serde_json::Value::Null);
    assert!(
        world.events_named("session.turn_ended").len() == 1,
        "the slow turn has not ended yet"
    );
    world.wait_events("session.turn_ended", 2).await;
    world.wait_listed("idle", "hooks").await;
    world.wait_screen("That took a while.").await;
}

/// The agent's own `the-loop ask` through its Bash tool needs no permission (the
/// settings file allows it), and the operator's reply arrives as the model's next user
/// message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_ask_needs_no_permission_and_the_reply_is_its_next_message() {
    let Some(world) = ClaudeWorld::new().await else {
        return;
    };
    world.start().await;
    let ask = format!(
        "{} ask --question 'Which way, left or right?'",
        tmux_server::BIN
    );
    world
        .model
        .script([Turn::bash(&ask), Turn::text("I asked the operator.")]);
    world.deliver("d-1", "Ask the operator which way.").await;
    let asked = world.wait_events("session.awaiting_input", 1).await;
    assert_eq!(asked[0]["question"], "Which way, left or right?");
    assert_eq!(asked[0]["work_item"], item().to_string());
    world.wait_events("session.turn_ended", 2).await;
    assert!(
        world
            .events_named("session.permission_requested")
            .is_empty(),
        "asking needed no permission: {:#?}",
        world.events()
    );
    world.wait_listed("awaiting-input", "hooks").await;
    let sent_before = world.model.agent_requests().len();

    let out = world.cli(&[
        "reply",
        "--work-item",
        &item().to_string(),
        "--text",
        "Go left.",
        "--no-comment",
    ]);
    assert!(out.status.success(), "{out:?}");
    let requests = world.wait_agent_requests(sent_before + 1).await;
    assert_eq!(
        requests[sent_before].last_user_text().as_deref(),
        Some(the_loop::session::reply::framed(&item(), "Go left.").as_str())
    );
}

/// A hook that cannot record (the registry's lock held elsewhere, then the registry
/// gone) never breaks Claude's turn: it gives up within its budget, prints nothing,
/// exits 0, and Claude answers as if nothing happened.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_or_failing_hook_never_breaks_claudes_turn() {
    let Some(world) = ClaudeWorld::new().await else {
        return;
    };
    world.start().await;

    // Slow: every hook waits on the record's lock until it gives up.
    let lock_path = world
        .state
        .join("sessions")
        .join(format!("{}.lock", item().slug()));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .unwrap();
    let held = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive).unwrap();
    world
        .model
        .script([Turn::text("Answered despite a slow hook: OSPREY.")]);
    // The paste path takes that lock too: type the prompt straight into the pane.
    type_prompt(&world, "First question.").await;
    world.wait_screen("OSPREY").await;
    drop(held);
    // Every hook of that turn exits within its budget: let the last ones go before the
    // record is taken away, so none of them writes it back.
    tokio::time::sleep(the_loop::session::hooks::report::BUDGET * 2).await;

    // Failing: the session's record is gone while Claude works.
    let sessions = world.state.join("sessions");
    let aside = world.state.join("sessions-aside");
    std::fs::rename(&sessions, &aside).unwrap();
    world
        .model
        .script([Turn::text("Answered despite a failing hook: HERON.")]);
    let before = world.model.agent_requests().len();
    type_prompt(&world, "Second question.").await;
    world.wait_screen("HERON").await;
    // A hook of the first turn that was still waiting for the lock may have written the
    // record again meanwhile (recreating the directory): the set-aside files win.
    std::fs::create_dir_all(&sessions).unwrap();
    for entry in std::fs::read_dir(&aside).unwrap() {
        let entry = entry.unwrap();
        std::fs::rename(entry.path(), sessions.join(entry.file_name())).unwrap();
    }
    std::fs::remove_dir(&aside).unwrap();
    assert_eq!(world.model.agent_requests().len(), before + 1);

    let screen = world.screen();
    assert!(
        !screen.to_lowercase().contains("hook error") && !screen.contains("hook failed"),
        "Claude showed no hook error:\n{screen}"
    );
    // The hooks did run, and gave up: the log says why, the turn never knew.
    let log: String = claude::walk(&world.state.join("logs"))
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .collect();
    assert!(log.contains("did not finish within"), "{log}");
    assert!(log.contains("no session record"), "{log}");
    // Claude is still well: a third turn, with hooks recording again.
    world.model.script([Turn::text("All good again: EGRET.")]);
    world.deliver("d-3", "Third question.").await;
    world.wait_screen("EGRET").await;
    world.wait_listed("idle", "hooks").await;
}

/// Types `text` into Claude's input box and submits it, bypassing the-loop.
async fn type_prompt(world: &ClaudeWorld, text: &str) {
    let target = format!("={}:", item().tmux_session_name());
    world.tmux.raw(&["send-keys", "-t", &target, "-l", text]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    world.tmux.raw(&["send-keys", "-t", &target, "Enter"]);
}

/// The allowance for `the-loop ask` is not a way around permissions: a command chained
/// after it still asks, and the operator's own Claude settings are never written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ask_allowance_does_not_cover_a_chained_command() {
    let Some(world) = ClaudeWorld::new().await else {
        return;
    };
    world.start().await;
    world.model.script([
        Turn::bash("the-loop ask --question 'ok?' && touch chained-marker"),
        Turn::text("should not get here without the operator"),
    ]);
    world.deliver("d-1", "Ask, then make the marker.").await;
    let requested = world.wait_events("session.permission_requested", 1).await;
    assert_eq!(
        requested[0]["summary"],
        "the-loop ask --question 'ok?' && touch chained-marker"
    );
    world.wait_screen(DIALOG).await;
    assert!(!world.home.project.join("chained-marker").exists());
    let out = world.cli(&["sessions", "deny", &item().to_string()]);
    assert!(out.status.success(), "{out:?}");
    world.wait_listed("idle", "hooks").await;
    for settings in [".claude/settings.json", ".claude/settings.local.json"] {
        let path = world.home.home.join(settings);
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            !text.contains("hook claude"),
            "{settings} was written: {text}"
        );
    }
}
