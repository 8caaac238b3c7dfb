//! `the-loop excerpt --event NAME [FILE|-]` with the real binary.

use super::fixtures;
use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;
use std::path::Path;
use the_loop::routing::excerpt::excerpt;

// ---------------------------------------------------------------- the command

fn cli() -> (Command, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = Command::cargo_bin("the-loop").unwrap();
    cmd.env("THE_LOOP_HOME", home.path())
        .env("THE_LOOP_CONFIG", home.path().join("config.yaml"))
        .env_remove("TMUX")
        .env_remove("TMUX_PANE");
    (cmd, home)
}

#[test]
fn cli_prints_the_excerpt_of_every_fixture() {
    for (event, path) in fixtures() {
        let payload: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let (mut cmd, _home) = cli();
        cmd.args(["excerpt", "--event", &event])
            .arg(&path)
            .assert()
            .success()
            .stdout(format!("{}\n", excerpt(&event, &payload)));
    }
}

#[test]
fn cli_reads_standard_input() {
    let payload = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/webhook/status.json"),
    )
    .unwrap();
    for args in [
        &["excerpt", "--event", "status", "-"][..],
        &["excerpt", "--event", "status"],
    ] {
        let (mut cmd, _home) = cli();
        cmd.args(args)
            .write_stdin(payload.clone())
            .assert()
            .success()
            .stdout(predicate::str::starts_with(
                "{\n  \"state\": \"failure\",\n",
            ));
    }
    let (mut cmd, _home) = cli();
    cmd.args(["excerpt", "--event", "status"])
        .write_stdin("[1, 2]")
        .assert()
        .success()
        .stdout("{}\n");
}

#[test]
fn cli_rejects_invalid_json_with_its_position() {
    let (mut cmd, _home) = cli();
    cmd.args(["excerpt", "--event", "issue_comment", "-"])
        .write_stdin("{\n  \"comment\": {\"body\": \"x\",}\n}")
        .assert()
        .code(2)
        .stdout("")
        .stderr(
            predicate::str::contains("not valid JSON")
                .and(predicate::str::contains("line 2 column")),
        );
}

#[test]
fn cli_reports_a_missing_file_as_a_usage_error() {
    let (mut cmd, home) = cli();
    let missing = home.path().join("nope.json");
    cmd.args(["excerpt", "--event", "issues"])
        .arg(&missing)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("nope.json").and(predicate::str::contains("cannot read")));
}

#[test]
fn cli_requires_an_event_name() {
    let (mut cmd, _home) = cli();
    cmd.args(["excerpt"]).write_stdin("{}").assert().code(2);
}
