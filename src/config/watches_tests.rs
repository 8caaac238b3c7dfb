//! [`RepoConfig::watches`]: the one "is this item watched" rule (SPEC §2 `repos[]`,
//! §4.1, §5.4).

use super::*;
use serde_json::{Value, json};

fn repo(label: &str, issues: bool, pull_requests: bool) -> RepoConfig {
    RepoConfig {
        label: label.into(),
        issues,
        pull_requests,
        ..RepoConfig::named("octo/repo")
    }
}

fn item(state: &str, pr: bool, labels: &[&str]) -> Value {
    let mut item = json!({
        "number": 7,
        "state": state,
        "labels": labels.iter().map(|l| json!({"name": l})).collect::<Vec<_>>(),
    });
    if pr {
        item["pull_request"] = json!({"url": "https://api.github.com/repos/octo/repo/pulls/7"});
    }
    item
}

#[test]
fn open_of_a_watched_kind_and_labelled() {
    let default = repo("the-loop", true, true);
    let cases: &[(&RepoConfig, Value, bool)] = &[
        (&default, item("open", false, &["the-loop"]), true),
        (&default, item("open", true, &["the-loop"]), true),
        (&default, item("open", false, &["bug", "The-Loop"]), true),
        (&default, item("open", false, &["bug"]), false),
        (&default, item("open", false, &[]), false),
        (&default, item("open", false, &["the-loop-x"]), false),
        (&default, item("closed", false, &["the-loop"]), false),
        (&default, item("closed", true, &["the-loop"]), false),
        (
            &repo("the-loop", false, true),
            item("open", false, &["the-loop"]),
            false,
        ),
        (
            &repo("the-loop", false, true),
            item("open", true, &["the-loop"]),
            true,
        ),
        (
            &repo("the-loop", true, false),
            item("open", true, &["the-loop"]),
            false,
        ),
        (
            &repo("the-loop", true, false),
            item("open", false, &["the-loop"]),
            true,
        ),
        (&repo("", true, true), item("open", false, &[]), true),
        (&repo("", true, true), item("open", true, &["x"]), true),
        (&repo("", true, true), item("closed", false, &[]), false),
        (&repo("", false, true), item("open", false, &[]), false),
        // A `pull_request: null` is an issue.
        (
            &repo("the-loop", true, false),
            json!({"state": "open", "pull_request": null, "labels": [{"name": "the-loop"}]}),
            true,
        ),
        // Missing or malformed fields never watch.
        (&default, json!({"labels": [{"name": "the-loop"}]}), false),
        (&default, json!({"state": "open"}), false),
        (
            &default,
            json!({"state": "open", "labels": "the-loop"}),
            false,
        ),
        (
            &default,
            json!({"state": "open", "labels": [{"name": 1}]}),
            false,
        ),
        (&default, Value::Null, false),
    ];
    for (i, (rc, item, expected)) in cases.iter().enumerate() {
        assert_eq!(rc.watches(item), *expected, "case {i}: {item}");
    }
}

/// The webhook's `issues` `labeled` payload: its `issue` is watched as the poller's
/// listing entry would be.
#[test]
fn a_webhook_issue_is_judged_like_a_listed_one() {
    let payload: Value = serde_json::from_str(include_str!(
        "../../tests/fixtures/webhook/issues.labeled.json"
    ))
    .unwrap();
    assert!(repo("the-loop", true, true).watches(&payload["issue"]));
    assert!(!repo("the-loop", false, true).watches(&payload["issue"]));
    let mut closed = payload["issue"].clone();
    closed["state"] = json!("closed");
    assert!(!repo("the-loop", true, true).watches(&closed));
}
