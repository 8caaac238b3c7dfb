//! `the-loop tui` end to end (SPEC §11): the real binary in a tmux pane on a private
//! socket, against the simulated GitHub, with fake-agent sessions — driven with
//! `send-keys` and read with `capture-pane`, as an operator would use it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/tmux_server.rs"]
mod tmux_server;
#[path = "common/tui_world.rs"]
mod tui_world;

use serde_json::Value;
use the_loop::session::reply::framed;
use tui_world::*;

/// Distinctive words of the comment and the reply, to find them wherever they land.
const COMMENT: &str = "Please settle the retry cap BLUEBIRD ASK-OPERATOR";
const REPLY_LINES: [&str; 2] = ["Per repo, ZEBRA.", "Keep a global ceiling of 10."];

fn is_boot(line: &Value) -> bool {
    line["boot"] == true
}

/// The whole loop from the operator's screen: start a session on a watched item, see a
/// routed comment reach the agent, answer its question inline over two lines, attach
/// and come back, run a critic and read its result, watch it all from a second screen
/// (a viewer), and quit both with the terminal restored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_runs_the_loop_from_the_screen() {
    let world = TuiWorld::new().await;
    let screen = world.open_screen("supervisor", &[]);

    // First frame: this screen supervises; the watched item is listed without a session.
    screen.wait_text("supervising octo/repo").await;
    screen.wait_text("no session").await;

    // `s` starts a session on it (the first row is selected).
    screen.keys(&["s"]);
    world.wait_agent("the boot prompt", is_boot).await;
    let spawned = world.events_named("session.spawned");
    assert_eq!(spawned.len(), 1, "{spawned:?}");
    assert_eq!(spawned[0]["trigger"], "tui");
    tui_world::wait("the agent to be ready", || {
        world
            .agent_screen(15)
            .contains("fake-agent ready")
            .then_some(())
    })
    .await;

    // A comment from the authorized user is routed and delivered; the screen shows it.
    world.sim.add_comment(REPO, 15, OPERATOR, COMMENT).unwrap();
    let delivered = world
        .wait_agent("the comment in the agent", |l| {
            l["text"].as_str().is_some_and(|t| t.contains("BLUEBIRD"))
        })
        .await;
    assert_eq!(delivered["bracketed"], true, "{delivered}");
    screen.wait_text("delivered #15").await;

    // The agent asked (the comment held its trigger): the question is on screen.
    screen.wait_text("How should I proceed").await;
    screen.wait_text("Questions 1 ").await;

    // Answer inline: Questions pane, reply key, two lines (Enter is a new line in the
    // box), send with ctrl-s.
    screen.keys(&["3", "r"]);
    screen.wait_text("Reply to octo/repo#15").await;
    screen.type_text(REPLY_LINES[0]);
    screen.keys(&["Enter"]);
    screen.type_text(REPLY_LINES[1]);
    screen.keys(&["C-s"]);
    let text = REPLY_LINES.join("\n");
    let expected = framed(&item(15), &text);
    let reply = world
        .wait_agent("the reply in the agent", |l| {
            l["text"].as_str().is_some_and(|t| t.contains("ZEBRA"))
        })
        .await;
    assert_eq!(reply["text"], expected.as_str(), "{reply}");
    assert_eq!(reply["bracketed"], true, "one clean paste: {reply}");
    assert_eq!(reply["pastes"], 1, "one paste: {reply}");
    screen.wait_text("No open questions").await;
    screen.wait_text("Reply delivered to octo/repo#15").await;
    let sent = world.events_named("session.reply_sent");
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["via"], "tui");

    // Attach (`a` on the session) hands the terminal to tmux; detaching comes back.
    screen.keys(&["1", "a"]);
    screen
        .wait_for("the agent's session in place of the screen", |t| {
            t.contains("fake-agent ready") && !t.contains("supervising")
        })
        .await;
    screen.keys(&["C-b", "d"]);
    screen.wait_text("supervising octo/repo").await;

    // A second screen finds the lock held and becomes a viewer of the same events.
    let viewer = world.open_screen("viewer", &["--attach", "octo/repo#15"]);
    viewer.wait_text("viewer of pid").await;
    viewer.wait_text("delivered #15").await;
    viewer.wait_text("reply sent").await;

    // A critic by key: picker, run, spinner while it works, then its result.
    screen.keys(&["c"]);
    screen.wait_text("diffcheck").await;
    screen.keys(&["Enter"]);
    screen
        .wait_for("the running critic's spinner", |t| {
            ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]
                .iter()
                .any(|s| t.contains(&format!("{s} diffcheck")))
        })
        .await;
    screen.wait_text("diffcheck passed").await;
    // The viewer sees the same round live, from the log.
    viewer.wait_text("diffcheck passed").await;
    screen.keys(&["5", "Enter"]);
    screen
        .wait_text(&format!("saw {DIFF_MARK} in the diff"))
        .await;
    screen.keys(&["Escape"]);
    let finished = world.events_named("critic.finished");
    assert_eq!(finished.len(), 1, "{finished:?}");
    assert_eq!(finished[0]["ok"], true);
    let saved = finished[0]["path"].as_str().unwrap();
    assert!(
        std::path::Path::new(saved).is_file(),
        "envelope saved: {saved}"
    );

    // Quit both: each exits 0 and leaves the terminal as it found it.
    for s in [&viewer, &screen] {
        s.keys(&["q"]);
        assert_eq!(s.wait_exit().await, 0);
        assert_eq!(
            s.format("#{alternate_on}"),
            "0",
            "left the alternate screen"
        );
        assert_eq!(s.format("#{cursor_flag}"), "1", "the cursor is shown");
    }
    let stopped = world.events_named("supervisor.stopped");
    assert_eq!(stopped.len(), 1, "{stopped:?}");
    assert_eq!(stopped[0]["reason"], "quit");
    // Only the supervisor polled: the viewer never started one.
    assert_eq!(world.events_named("supervisor.started").len(), 1);
}
