//! The payload excerpt (SPEC §6.2–6.4) against the webhook fixtures, hand-made edge
//! cases (`excerpt/cases.rs`), arbitrary payloads (`excerpt/properties.rs`), hidden text
//! (SPEC §18.4, `excerpt/hidden.rs`), and the `the-loop excerpt` command
//! (`excerpt/cli.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cases;
mod cli;
mod hidden;
mod properties;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use the_loop::routing::excerpt::{MAX_CHARS, PROSE_CAP, TRUNCATED, excerpt};

fn fixtures() -> Vec<(String, PathBuf)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/webhook");
    let mut all: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .map(|path| {
            let name = path.file_name().unwrap().to_str().unwrap();
            let event = name.split('.').next().unwrap().to_string();
            (event, path)
        })
        .collect();
    all.sort();
    assert!(all.len() >= 12, "the webhook fixtures are missing");
    all
}

fn fixture(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/webhook")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The invariants every excerpt keeps, whatever went in.
fn check_invariants(out: &str) -> Value {
    assert!(
        out.chars().count() <= MAX_CHARS,
        "{} characters",
        out.chars().count()
    );
    assert!(!out.contains('`'), "raw backtick in {out}");
    let parsed: Value = serde_json::from_str(out).expect("the excerpt is valid JSON");
    assert!(parsed.is_object());
    parsed
}

fn chars(c: char, n: usize) -> String {
    std::iter::repeat_n(c, n).collect()
}

// ---------------------------------------------------------------- fixtures

#[test]
fn every_fixture_renders_a_small_clean_excerpt() {
    for (event, path) in fixtures() {
        let payload: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let out = excerpt(&event, &payload);
        let parsed = check_invariants(&out);
        assert_ne!(parsed, json!({}), "{}: nothing recognised", path.display());
        for noise in [
            "api.github.com",
            "avatar",
            "node_id",
            "reactions",
            "\"sender\"",
            "\"user\"",
            "\"id\"",
            "gravatar",
            "More context",
            "long body",
        ] {
            assert!(
                !out.contains(noise),
                "{}: `{noise}` leaked: {out}",
                path.display()
            );
        }
        // The layout is serde_json's pretty layout (its key order aside).
        assert!(out.starts_with("{\n  \""), "{out}");
        assert!(!out.contains('\t'));
    }
}

#[test]
fn comment_excerpt_is_body_url_and_author_only() {
    let out = excerpt("issue_comment", &fixture("issue_comment.created.json"));
    assert_eq!(
        out,
        r#"{
  "comment": {
    "body": "Please take this one: make the backoff test deterministic.",
    "html_url": "https://github.com/octo/repo/issues/15#issuecomment-2001",
    "author": "alice"
  }
}"#
    );
    // Not the issue (its body, title, number), not the sender.
    for absent in ["poll_backoff", "Flaky test", "\"issue\"", "carol", "sender"] {
        assert!(!out.contains(absent), "{absent}");
    }
}

#[test]
fn review_comment_excerpt_keeps_path_and_line_first() {
    let out = excerpt(
        "pull_request_review_comment",
        &fixture("pull_request_review_comment.created.json"),
    );
    assert_eq!(
        out,
        r#"{
  "comment": {
    "path": "src/ingress/poller.rs",
    "line": 42,
    "body": "Use a seeded RNG here.",
    "html_url": "https://github.com/octo/repo/pull/16#discussion_r3001",
    "author": "alice"
  }
}"#
    );
}

#[test]
fn issues_excerpt_puts_the_actor_first_and_omits_the_body() {
    let out = excerpt("issues", &fixture("issues.labeled.json"));
    assert_eq!(
        out,
        r#"{
  "actor": "alice",
  "issue": {
    "number": 15,
    "title": "Flaky test in CI",
    "state": "open",
    "html_url": "https://github.com/octo/repo/issues/15"
  },
  "label": {
    "name": "the-loop"
  }
}"#
    );
}

#[test]
fn pull_request_excerpt_keeps_false_flags() {
    let out = excerpt("pull_request", &fixture("pull_request.closed.merged.json"));
    assert_eq!(
        out,
        r#"{
  "actor": "alice",
  "pull_request": {
    "number": 16,
    "title": "Make backoff deterministic",
    "state": "closed",
    "draft": false,
    "merged": true,
    "html_url": "https://github.com/octo/repo/pull/16"
  }
}"#
    );
}

#[test]
fn status_excerpt_is_root_fields() {
    let out = excerpt("status", &fixture("status.json"));
    assert_eq!(
        out,
        r#"{
  "state": "failure",
  "context": "ci/legacy",
  "description": "Build failed",
  "target_url": "https://ci.example/builds/6"
}"#
    );
}

#[test]
fn check_run_output_is_title_and_capped_summary() {
    let payload = fixture("check_run.completed.failure.json");
    let summary = payload["check_run"]["output"]["summary"].as_str().unwrap();
    assert!(summary.chars().count() > PROSE_CAP);
    let parsed = check_invariants(&excerpt("check_run", &payload));
    let run = &parsed["check_run"];
    assert_eq!(
        run["output"],
        json!({
            "title": "3 tests failed",
            "summary": format!("{}{TRUNCATED}", &summary[..PROSE_CAP]),
        })
    );
    let keys: Vec<&str> = run
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys.len(), 6);
    assert_eq!(run["details_url"], "https://ci.example/4");
    assert!(run.get("pull_requests").is_none() && run.get("app").is_none());
}

#[test]
fn review_and_workflow_run_excerpts() {
    let review = check_invariants(&excerpt(
        "pull_request_review",
        &fixture("pull_request_review.submitted.json"),
    ));
    assert_eq!(
        review,
        json!({"review": {
            "state": "changes_requested",
            "body": "Two things: rename the helper, and cover the 429 path.",
            "html_url": "https://github.com/octo/repo/pull/16#pullrequestreview-80",
            "author": "alice",
        }})
    );
    let run = check_invariants(&excerpt(
        "workflow_run",
        &fixture("workflow_run.completed.json"),
    ));
    assert_eq!(
        run,
        json!({"workflow_run": {
            "name": "CI", "event": "pull_request", "status": "completed",
            "conclusion": "failure", "head_branch": "issue-15-backoff",
            "html_url": "https://github.com/octo/repo/actions/runs/30433642",
        }})
    );
}
