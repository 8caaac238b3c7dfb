//! `the-loop sessions …` exit codes and messages (SPEC §1: 0 ok, 1 failed, 2 usage or
//! configuration).

use super::env::*;
use predicates::str::contains;

#[test]
fn a_bad_ref_is_a_usage_error() {
    let w = World::new();
    for cmd in ["start", "pause", "resume", "stop", "attach", "reset"] {
        w.cli(&["sessions", cmd, "octo/repo#15"])
            .assert()
            .code(2)
            .stderr(contains("expected `github:owner/repo#N`"));
    }
}

#[test]
fn an_unknown_session_fails_with_a_clear_message() {
    let w = World::new();
    for cmd in ["pause", "resume", "stop", "attach", "reset"] {
        w.cli(&["sessions", cmd, ITEM])
            .assert()
            .code(1)
            .stderr(contains("no session for github:octo/repo#15"))
            .stderr(contains("the-loop sessions start github:octo/repo#15"));
    }
}

#[test]
fn an_empty_registry_lists_nothing() {
    let w = World::new();
    w.cli(&["sessions", "list"])
        .assert()
        .success()
        .stdout(contains("no sessions"));
    w.cli(&["sessions", "list", "--json"])
        .assert()
        .success()
        .stdout("[]\n");
}

#[test]
fn a_missing_harness_binary_fails_clearly_and_is_logged() {
    let w = World::with_harness("/nonexistent/agent-cli");
    w.cli(&["sessions", "start", ITEM])
        .assert()
        .code(1)
        .stderr(contains(
            "harness `fake` needs `/nonexistent/agent-cli`, which is not on PATH",
        ));
    let failed = w.events("session.spawn_failed");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["source"], "cli");
    assert!(w.list().is_empty());
}

#[test]
fn missing_tmux_fails_clearly() {
    let w = World::new();
    let empty = tempfile::tempdir().unwrap();
    w.cli(&["sessions", "start", ITEM])
        .env("PATH", empty.path())
        .assert()
        .code(1)
        .stderr(contains("tmux was not found on PATH: install tmux"));
    assert_eq!(w.events("session.spawn_failed").len(), 1);
}

#[test]
fn an_unknown_harness_in_the_config_is_a_configuration_error() {
    let w = World::new();
    w.write_config("sessions:\n  harness: nope\n");
    w.cli(&["sessions", "start", ITEM])
        .assert()
        .code(2)
        .stderr(contains("unknown harness `nope`"));
}

#[test]
fn a_missing_working_directory_is_a_configuration_error() {
    let w = World::new();
    w.write_config(&format!(
        "repos:\n  - name: octo/repo\n    path: /nonexistent/checkout\nsessions:\n  harness: fake\n  harnesses:\n    fake:\n      command: {}\n      args: [fake-agent, \"{{prompt}}\"]\n",
        crate::support::tmux_server::BIN
    ));
    w.cli(&["sessions", "start", ITEM])
        .assert()
        .code(2)
        .stderr(contains(
            "the working directory /nonexistent/checkout for github:octo/repo#15 does not exist",
        ));
}

#[test]
fn attach_to_a_vanished_tmux_session_fails_clearly() {
    let w = World::new();
    w.cli(&["sessions", "start", ITEM]).assert().success();
    let killed = w
        .server
        .raw(&["kill-session", "-t", "=loop-github-octo-repo-15"]);
    assert!(killed.status.success());
    w.cli(&["sessions", "attach", ITEM])
        .assert()
        .code(1)
        .stderr(contains("no longer exists"));
}
