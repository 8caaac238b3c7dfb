//! The operator's review of a diff, end to end (SPEC §21.2): the real `the-loop tui` in
//! a tmux pane on a private socket, a fake-agent session on a real git worktree. A line
//! comment written in the diff view survives quitting the screen, is still pending in a
//! new one, and `S` delivers it with a second, pasted one to the agent as one bracketed
//! paste naming the files, the lines and the hunk — escape sequences in the pasted
//! comment arrive as inert text.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::tui_world::*;
use std::os::unix::fs::PermissionsExt;

const WORDS: &str = "Cap the retries at five, OSPREY.";

/// Opens the diff view of #15 (`1 d`). Under a loaded machine a key can go missing
/// before the screen reads it; `d` is pressed again only when no diff view appeared
/// within a generous while (a second `d` on an open view would close it).
async fn open_diff(screen: &Screen) {
    for _ in 0..5 {
        screen.keys(&["1", "d"]);
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_secs(15) {
            if screen.text().contains("Diff · octo/repo#15") {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
    panic!("the diff view never opened:\n{}", screen.text());
}

async fn agent_ready(world: &TuiWorld) {
    wait("the agent to be ready", || {
        world
            .agent_screen(15)
            .contains("fake-agent ready")
            .then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_comment_survives_a_restart_and_reaches_the_agent_as_one_paste() {
    let world = TuiWorld::new().await;
    let screen = world.open_screen("first", &[]);
    screen.wait_text("supervising octo/repo").await;
    screen.keys(&["s"]);
    world
        .wait_agent("the boot prompt", |l| l["boot"] == true)
        .await;
    agent_ready(&world).await;

    // The agent edits its worktree; the diff view selects its first line of code.
    world.agent_edits(15);
    open_diff(&screen).await;
    screen
        .wait_text(&format!("+per_repo = true # {DIFF_MARK}"))
        .await;
    // `j` selects the added line; `o` opens the comment box on it.
    screen.keys(&["j", "o"]);
    screen.wait_text("Comment on retry.txt:2").await;
    screen.type_text(WORDS);
    screen.keys(&["C-s"]);
    screen.wait_text("● 1 pending").await;
    screen.wait_text(&format!("● you: {WORDS}")).await;
    let stored = world.home.join("reviews/github-octo-repo-15.json");
    wait("the pending review on disk", || {
        stored.is_file().then_some(())
    })
    .await;
    let mode = std::fs::metadata(&stored).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    assert!(
        world
            .agent_lines()
            .iter()
            .all(|l| !l.to_string().contains("OSPREY")),
        "nothing is sent before S"
    );

    // Close the view and quit the screen: the comment stays pending.
    screen.keys(&["Escape"]);
    screen
        .wait_for("the diff to close", |t| !t.contains("Diff · octo/repo#15"))
        .await;
    screen.keys(&["q"]);
    assert_eq!(screen.wait_exit().await, 0);
    assert!(stored.is_file(), "a restart keeps the pending review");

    // A new screen: the session is still there, and so is the comment.
    let again = world.open_screen("second", &[]);
    again.wait_text("supervising octo/repo").await;
    again
        .wait_for("the session listed", |t| !t.contains("no session"))
        .await;
    open_diff(&again).await;
    again.wait_text("● 1 pending").await;
    again.wait_text(&format!("● you: {WORDS}")).await;

    // A second comment, pasted (bracketed) with escape sequences in it, on the first
    // line of code: they arrive as inert text, never as escapes.
    again.keys(&["o"]);
    again.wait_text("Comment on retry.txt:1").await;
    let hostile = "Fine as is \u{1b}[2J\u{1b}]0;pwned\u{7} WREN.";
    let set = world.tmux.raw(&["set-buffer", "-b", "hostile", hostile]);
    assert!(set.status.success(), "{set:?}");
    let paste = world.tmux.raw(&[
        "paste-buffer",
        "-p",
        "-d",
        "-b",
        "hostile",
        "-t",
        "=second:",
    ]);
    assert!(paste.status.success(), "{paste:?}");
    again.wait_text("WREN.").await;
    again.keys(&["C-s"]);
    again.wait_text("● 2 pending").await;

    // `S` sends the review as one framed paste naming file, line and hunk.
    again.keys(&["S"]);
    let got = world
        .wait_agent("the review in the agent", |l| {
            l["text"].as_str().is_some_and(|t| t.contains("OSPREY"))
        })
        .await;
    let text = got["text"].as_str().unwrap();
    assert!(
        text.starts_with("Review from the operator on the-loop/issue-15 at "),
        "{text}"
    );
    assert!(text.contains("1. retry.txt line 2 (new side)"), "{text}");
    assert!(text.contains("@@ -1 +1,2 @@"), "{text}");
    assert!(
        text.contains(&format!("+per_repo = true # {DIFF_MARK}")),
        "{text}"
    );
    assert!(text.contains(&format!("Comment: {WORDS}")), "{text}");
    assert!(text.contains("retry.txt line 1 (new side)"), "{text}");
    assert!(text.contains("Fine as is [2J]0;pwned WREN."), "{text}");
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "no escape reaches the agent: {text:?}"
    );
    assert_eq!(got["bracketed"], true, "one clean paste: {got}");
    assert_eq!(got["pastes"], 1, "one paste: {got}");
    again.wait_text("Review sent to octo/repo#15").await;
    again
        .wait_for("the gutter to clear", |t| !t.contains("● 2 pending"))
        .await;
    let sent = world.events_named("session.review_sent");
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["comments"], 2);
    assert_eq!(sent[0]["work_item"], "github:octo/repo#15");
    assert!(sent[0]["sha"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(!stored.exists(), "sent: nothing pending");
    assert!(
        world.events_named("session.reply_sent").is_empty(),
        "a review is not a reply: it closes no question"
    );

    again.keys(&["Escape"]);
    again
        .wait_for("the diff to close", |t| !t.contains("Diff · octo/repo#15"))
        .await;
    again.keys(&["q"]);
    assert_eq!(again.wait_exit().await, 0);
}
