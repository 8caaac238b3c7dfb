//! The first five minutes, compressed: the scripted events show up on their own, the
//! operator answers the agent inline, runs the demo critic, quits — and nothing is left.

use crate::support::demo::{Outer, assert_all_gone, events, wait_until};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// What the operator must see without pressing a key (each text stays on screen at
/// least for a moment; newer rows may push older ones out, so sightings accumulate).
const UNPROMPTED: [(&str, &str); 7] = [
    ("a delivered comment", "✓ delivered"),
    ("the stranger refused", "⊘ unauthorized-actor"),
    ("the tool's own comment refused", "⊘ self-authored"),
    ("the review routed", "→ routed"),
    ("the agent's question", "Should the retry cap"),
    ("the footer inviting an answer", "answer #12"),
    ("the footer inviting a critic", "run a critic"),
];

#[test]
fn the_demo_shows_the_guards_takes_an_answer_and_a_critic_and_leaves_nothing() {
    let outer = Outer::start_demo();
    let demo = outer.demo_pid();
    let root: PathBuf = wait_until(
        "the demo's state root",
        Duration::from_secs(30),
        || outer.state_root(),
        || outer.screen(),
    );

    // 1. The script plays; the operator only watches.
    let seen: RefCell<BTreeSet<&str>> = RefCell::default();
    let mut pids = BTreeSet::new();
    let mut sockets = BTreeSet::new();
    wait_until(
        "routing, refusals, a delivery and a question on screen",
        Duration::from_secs(90),
        || {
            let screen = outer.screen();
            for (what, text) in UNPROMPTED {
                if screen.contains(text) {
                    seen.borrow_mut().insert(what);
                }
            }
            pids.extend(outer.demo_processes(demo));
            sockets.extend(outer.demo_sockets());
            (seen.borrow().len() == UNPROMPTED.len()).then_some(())
        },
        || format!("seen so far: {:?}\n{}", seen.borrow(), outer.screen()),
    );
    // The refusals carry their reasons in the log too, and the review went to #12.
    let log = events(&root);
    let reasons: BTreeSet<&str> = log
        .iter()
        .filter(|e| e["event"] == "routing.dropped")
        .filter_map(|e| e["reason"].as_str())
        .collect();
    assert!(reasons.contains("unauthorized-actor"), "{reasons:?}");
    assert!(reasons.contains("self-authored"), "{reasons:?}");
    assert!(log.iter().any(|e| e["event"] == "routing.routed"
        && e["gh_event"] == "pull_request_review"
        && e["work_items"][0] == "github:octo/demo#12"));
    let screen = outer.screen();
    assert!(
        !screen.contains("evil.example"),
        "the injection is never shown as if it were delivered:\n{screen}"
    );

    // 2. Answer inline, with the keys the README gives: the selected session asks, so
    //    the reply key answers it; type; send.
    outer.keys(&["r"]);
    wait_until(
        "the reply box",
        Duration::from_secs(10),
        || outer.screen().contains("Reply to").then_some(()),
        || outer.screen(),
    );
    outer.type_text("Per repository, please.");
    outer.keys(&["C-s"]);
    wait_until(
        "the reply delivered",
        Duration::from_secs(30),
        || {
            let screen = outer.screen();
            pids.extend(outer.demo_processes(demo));
            (screen.contains("↩ reply sent") && screen.contains("No open questions")).then_some(())
        },
        || outer.screen(),
    );
    let agent_log = std::fs::read_to_string(root.join("fake-agent.jsonl")).unwrap();
    let reply: serde_json::Value = agent_log
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|l| {
            l["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("Reply from the operator via the-loop"))
        })
        .expect("the agent received the answer");
    assert!(
        reply["text"]
            .as_str()
            .unwrap()
            .contains("Per repository, please.")
    );
    assert_eq!(reply["bracketed"], true, "one clean bracketed paste");

    // 3. The first critic launch: the critic key, then pick the demo critic.
    outer.keys(&["c"]);
    wait_until(
        "the critic picker",
        Duration::from_secs(10),
        || outer.screen().contains("demo-critic").then_some(()),
        || outer.screen(),
    );
    outer.keys(&["Enter"]);
    wait_until(
        "the demo critic's result",
        Duration::from_secs(60),
        || {
            pids.extend(outer.demo_processes(demo));
            outer
                .screen()
                .contains("demo-critic reviewed")
                .then_some(())
        },
        || outer.screen(),
    );
    assert!(events(&root).iter().any(|e| e["event"] == "critic.finished"
        && e["critic"] == "demo-critic"
        && e["ok"] == true));

    // 4. Quit; everything the demo started is gone.
    pids.extend(outer.demo_processes(demo));
    assert!(
        pids.len() >= 4,
        "demo, screen, tmux server, agent: {pids:?}"
    );
    assert!(!sockets.is_empty());
    outer.keys(&["q"]);
    assert_eq!(
        outer.wait_exit(Duration::from_secs(30)),
        0,
        "{}",
        outer.screen()
    );
    assert_all_gone(&outer, &pids);
    for socket in &sockets {
        let ls = Command::new("tmux")
            .arg("-S")
            .arg(socket)
            .arg("list-sessions")
            .env_remove("TMUX")
            .output()
            .unwrap();
        assert!(
            !ls.status.success(),
            "a tmux server still answers on {socket:?}"
        );
    }
    assert!(!root.exists());
    let after = outer.screen();
    assert!(
        !outer.alternate_screen(),
        "the terminal is back on its main screen"
    );
    assert!(after.contains("cleaned up"), "{after}");
}

#[test]
fn without_tmux_the_demo_says_how_to_install_it() {
    let empty = tempfile::tempdir().unwrap();
    let temp = tempfile::tempdir().unwrap();
    let out = Command::new(crate::support::demo::BIN)
        .arg("demo")
        .env("PATH", empty.path())
        .env("TMPDIR", temp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no `tmux` was found on PATH"), "{stderr}");
    for hint in [
        "sudo apt install tmux",
        "sudo dnf install tmux",
        "brew install tmux",
    ] {
        assert!(stderr.contains(hint), "{stderr}");
    }
    assert!(out.stdout.is_empty());
    assert_eq!(std::fs::read_dir(temp.path()).unwrap().count(), 0);
}

#[test]
fn without_a_terminal_the_demo_points_to_headless() {
    let temp = tempfile::tempdir().unwrap();
    let out = Command::new(crate::support::demo::BIN)
        .arg("demo")
        .env("TMPDIR", temp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("needs a terminal"), "{stderr}");
    assert!(stderr.contains("the-loop demo --headless"), "{stderr}");
    assert_eq!(std::fs::read_dir(temp.path()).unwrap().count(), 0);
}
