//! `the-loop ask` without a session or a supervisor (SPEC §8.1): usage errors exit 2 and
//! record nothing; GitHub down still records the question (warning) and exits 1.

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;
use tempfile::TempDir;
use the_loop::github::sim::{IssueSpec, SimGithub};

const TOKEN: &str = "ghp_askclitesttoken_0123456789abcdef";

fn home(api_url: &str) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.yaml"),
        format!("github: {{apiUrl: \"{api_url}\"}}\n"),
    )
    .unwrap();
    dir
}

fn ask(dir: &Path) -> Command {
    let mut cmd = Command::cargo_bin("the-loop").unwrap();
    cmd.arg("ask")
        .env("THE_LOOP_HOME", dir.join("state"))
        .env("THE_LOOP_CONFIG", dir.join("config.yaml"))
        .env("GH_TOKEN", TOKEN)
        .env_remove("GITHUB_TOKEN")
        .env_remove("THE_LOOP_GITHUB_API_URL")
        .env_remove("THE_LOOP_WORK_ITEM")
        .env_remove("THE_LOOP_LOG");
    cmd
}

fn events(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("state/events.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A loopback port nobody listens on.
fn closed_port_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

#[test]
fn usage_errors_exit_2_and_record_nothing() {
    let dir = home(&closed_port_url());
    let cases: [(&[&str], Option<&str>, &str); 5] = [
        (&["--question", "  "], Some("github:octo/repo#15"), "empty"),
        (&["--question", "Why?"], None, "THE_LOOP_WORK_ITEM"),
        (
            &["--question", "Why?"],
            Some("octo/repo#15"),
            "expected `github:owner/repo#N`",
        ),
        (
            &["--work-item", "nonsense", "--question", "Why?"],
            None,
            "invalid work-item ref",
        ),
        (&["--work-item", "github:octo/repo#15"], None, "--question"),
    ];
    for (args, env, says) in cases {
        let mut cmd = ask(dir.path());
        if let Some(env) = env {
            cmd.env("THE_LOOP_WORK_ITEM", env);
        }
        let out = cmd.args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    let out = ask(dir.path())
        .args([
            "--work-item",
            "github:octo/repo#15",
            "--question-file",
            "/nonexistent/q",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        events(dir.path()).is_empty(),
        "no question, nothing recorded"
    );
}

#[test]
fn github_down_still_records_the_question_and_exits_1() {
    let dir = home(&closed_port_url());
    let out = ask(dir.path())
        .env("THE_LOOP_WORK_ITEM", "github:octo/repo#15")
        .args(["--question", "Per repo or global?"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("operator will answer in the-loop's TUI"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
    let events = events(dir.path());
    assert_eq!(events.len(), 1);
    let event = &events[0];
    assert_eq!(event["event"], "session.awaiting_input");
    assert_eq!(event["level"], "warning");
    assert_eq!(event["work_item"], "github:octo/repo#15");
    assert_eq!(event["question"], "Per repo or global?");
    assert_eq!(event["comment_posted"], false);
    assert!(event.get("comment_url").is_none());
    assert!(
        event["error"]
            .as_str()
            .unwrap()
            .contains("could not reach GitHub"),
        "{event}"
    );
    assert!(
        !std::fs::read_to_string(dir.path().join("state/events.jsonl"))
            .unwrap()
            .contains(TOKEN)
    );
}

#[test]
fn a_broken_config_still_records_the_question_and_exits_2() {
    let dir = home("unused");
    std::fs::write(dir.path().join("config.yaml"), "nonsense: [\n").unwrap();
    let out = ask(dir.path())
        .args([
            "--work-item",
            "github:octo/repo#15",
            "--question",
            "Per repo?",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let events = events(dir.path());
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["level"], "warning");
    assert_eq!(events[0]["comment_posted"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_question_file_can_be_stdin_and_the_url_is_printed() {
    let sim = SimGithub::start().await.unwrap();
    sim.add_issue("octo/repo", IssueSpec::new("Retries").number(15))
        .unwrap();
    sim.require_token(Some(TOKEN));
    let dir = home(&sim.base_url());
    let mut cmd = ask(dir.path());
    cmd.args(["--work-item", "github:octo/repo#15", "--question-file", "-"])
        .write_stdin("Per repo\nor global?\n");
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let url = String::from_utf8(out.stdout).unwrap();
    let posted = sim.comments_on("octo/repo", 15);
    assert_eq!(posted.len(), 1);
    assert!(
        posted[0].body.starts_with("Per repo\nor global?\n\n"),
        "{}",
        posted[0].body
    );
    assert!(
        url.trim()
            .ends_with(&format!("#issuecomment-{}", posted[0].id)),
        "{url}"
    );
    let events = events(dir.path());
    assert_eq!(events[0]["comment_url"], url.trim());
    assert_eq!(events[0]["question"], "Per repo\nor global?");
}
