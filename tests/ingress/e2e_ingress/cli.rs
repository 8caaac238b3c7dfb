//! `the-loop run` from the outside: `--once` delivers and exits, and every refusal is a
//! clear one-line error with the exit code of SPEC §1.

use crate::support::e2e::{Setup, World};
use predicates::prelude::*;
use serde_json::Value;
use the_loop::paths::StatePaths;
use the_loop::supervisor::lock::SupervisorLock;

fn once(w: &World) -> Value {
    let out = w.cli(&["run", "--once"]).output().unwrap();
    assert!(
        out.status.success(),
        "run --once: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON summary on stdout")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_once_baselines_then_delivers_and_waits_for_the_paste() {
    let w = World::new(Setup::default()).await;
    w.watched_issue(15);
    w.comment(15, "alice", "ONCE-OLD-TEXT");
    w.start_session(15).await;

    let first = once(&w);
    assert_eq!(
        first["delivered"], 0,
        "the first cycle reads no history: {first}"
    );
    assert_eq!(first["items"], 1);
    w.comment(15, "alice", "ONCE-NEW-TEXT");
    let second = once(&w);
    assert_eq!(second["delivered"], 1, "{second}");
    // It returned after the paste: the agent has it already.
    assert_eq!(w.pasted_count("ONCE-NEW-TEXT"), 1);
    assert_eq!(w.pasted_count("ONCE-OLD-TEXT"), 0);
    let stopped = w.events_named("supervisor.stopped");
    assert_eq!(stopped.len(), 2);
    assert!(
        stopped
            .iter()
            .all(|e| e["reason"] == "once-done" && e["mode"] == "run-once")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_refuses_clearly_with_the_right_exit_code() {
    let w = World::new(Setup::default()).await;

    // Another supervisor holds the lock (this test process).
    let lock = SupervisorLock::try_acquire(&StatePaths::new(&w.home))
        .unwrap()
        .unwrap();
    w.cli(&["run"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(format!(
            "another supervisor is running (pid {}); use `the-loop tui` to attach as a viewer",
            std::process::id()
        )));
    drop(lock);

    std::fs::write(&w.config, "routing:\n  authorizedUsers: [alice]\n").unwrap();
    w.cli(&["run", "--once"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no repos configured in"));

    std::fs::write(
        &w.config,
        "repos:\n  - name: octo/repo\npolling:\n  intervalSeconds: 1\n",
    )
    .unwrap();
    w.cli(&["run"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("polling.intervalSeconds"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_once_exits_1_when_github_cannot_be_read() {
    let w = World::new(Setup::default()).await;
    w.watched_issue(15);
    // Nothing listens on port 9 of the loopback.
    w.cli(&["run", "--once"])
        .env("THE_LOOP_GITHUB_API_URL", "http://127.0.0.1:9")
        .assert()
        .code(1)
        .stdout(predicate::str::contains("\"errors\":1"))
        .stderr(predicate::str::contains("the poll cycle failed"));
    // A bad token is refused by GitHub: also exit 1, and the token is never shown.
    let out = w
        .cli(&["run", "--once"])
        .env("GH_TOKEN", "ghp_wrongtoken_0123456789")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let all = format!(
        "{}{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(w.home.join("events.jsonl")).unwrap()
    );
    assert!(!all.contains("ghp_wrongtoken_0123456789"), "{all}");
}
