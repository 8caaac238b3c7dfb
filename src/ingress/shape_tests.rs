//! Shaped polled items against their webhook twins in `tests/fixtures/`: the same key
//! fields, and — what matters — the same decision from the one router.

use super::*;
use crate::config::RoutingConfig;
use crate::routing::{DeliveryDedupe, EnabledEvents, Outcome, RouterConfig, route};
use crate::work_item::WorkItemRef;

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{name}.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect(&path)).unwrap()
}

fn rest_list(name: &str, index: usize) -> Value {
    fixture(&format!("rest/{name}"))[index].clone()
}

fn routed(gh_event: &str, action: &str, payload: &Value) -> Outcome {
    let routing = RoutingConfig {
        authorized_users: vec!["alice".into()],
        ..RoutingConfig::default()
    };
    let config = RouterConfig::new(&routing, EnabledEvents::all()).watching(["octo/repo"]);
    let inbound = crate::routing::Inbound::new(gh_event, action, "", payload);
    route(&inbound, &config, &mut DeliveryDedupe::new())
}

fn routed_event(e: &InboundEvent) -> Outcome {
    routed(&e.gh_event, &e.action, &e.payload)
}

/// The webhook PR object, as the open-pulls listing gives it (no `merged` there).
fn pull_16() -> Value {
    let mut pull = fixture("webhook/pull_request_review.submitted")["pull_request"].clone();
    pull.as_object_mut().unwrap().remove("merged");
    pull
}

fn assert_same(a: &Value, b: &Value, pointers: &[&str]) {
    for p in pointers {
        assert_eq!(a.pointer(p), b.pointer(p), "{p}");
        assert!(a.pointer(p).is_some(), "{p} missing");
    }
}

#[test]
fn a_conversation_comment_is_its_webhook_twin() {
    let item = trim_item(&rest_list("issues.list", 0));
    let c = rest_list("issues.comments.list", 0);
    let e = super::comment(ItemKind::Comment, "octo/repo", &item, None, &c, None);
    let twin = fixture("webhook/issue_comment.created");
    assert_eq!(
        (e.gh_event.as_str(), e.action.as_str()),
        ("issue_comment", "created")
    );
    assert_eq!(e.delivery_id, "poll-comment-2001");
    assert_eq!(e.source, Source::Poll);
    assert_same(
        &e.payload,
        &twin,
        &[
            "/action",
            "/comment/id",
            "/comment/user/login",
            "/issue/number",
            "/issue/title",
            "/issue/state",
            "/issue/html_url",
            "/issue/user/login",
            "/repository/full_name",
            "/repository/html_url",
            "/sender/login",
        ],
    );
    let outcome = routed_event(&e);
    assert!(matches!(outcome, Outcome::Deliver { .. }), "{outcome:?}");
    assert_eq!(outcome, routed("issue_comment", "created", &twin));
}

#[test]
fn a_pr_comment_carries_the_head_branch_and_body_so_the_pr_links_to_its_issue() {
    let item = trim_item(&rest_list("issues.list", 1));
    let c = rest_list("issues.comments.list", 1);
    let e = super::comment(
        ItemKind::Comment,
        "octo/repo",
        &item,
        Some(&trim_pull(&pull_16())),
        &c,
        None,
    );
    assert_eq!(
        e.payload.pointer("/issue/pull_request/head/ref"),
        Some(&json!("issue-15-backoff"))
    );
    assert_eq!(e.payload.pointer("/issue/body"), Some(&json!("Closes #15")));
    let expected = vec![
        WorkItemRef::new("octo", "repo", 15),
        WorkItemRef::new("octo", "repo", 16),
    ];
    match routed_event(&e) {
        Outcome::Deliver {
            work_items,
            subject,
            actor,
        } => {
            assert_eq!(subject, Some(WorkItemRef::new("octo", "repo", 16)));
            assert_eq!(work_items, expected);
            assert_eq!(actor.as_deref(), Some("alice"));
        }
        other => panic!("expected a delivery, got {other:?}"),
    }
    // Without a closing keyword the head branch alone links it.
    let mut pull = pull_16();
    pull["body"] = json!("A refactor.");
    let mut bare = item.clone();
    bare["body"] = json!("A refactor.");
    let e = super::comment(
        ItemKind::Comment,
        "octo/repo",
        &bare,
        Some(&trim_pull(&pull)),
        &c,
        None,
    );
    assert_eq!(routed_event(&e).work_items().len(), 2);
    let twin = fixture("webhook/issue_comment.created.on_pr");
    assert_eq!(
        routed_event(&e).work_items(),
        routed("issue_comment", "created", &twin).work_items()
    );
}

#[test]
fn a_review_is_its_webhook_twin_with_the_state_lower_cased() {
    let item = trim_item(&rest_list("issues.list", 1));
    let mut review = rest_list("pulls.reviews.list", 0);
    review["state"] = json!("CHANGES_REQUESTED");
    let e = super::review("octo/repo", &item, Some(&trim_pull(&pull_16())), &review).unwrap();
    let twin = fixture("webhook/pull_request_review.submitted");
    assert_eq!(
        (
            e.gh_event.as_str(),
            e.action.as_str(),
            e.delivery_id.as_str()
        ),
        ("pull_request_review", "submitted", "poll-review-80")
    );
    assert_same(
        &e.payload,
        &twin,
        &[
            "/action",
            "/review/id",
            "/review/state",
            "/review/body",
            "/review/user/login",
            "/review/html_url",
            "/pull_request/number",
            "/pull_request/state",
            "/pull_request/body",
            "/pull_request/head/ref",
            "/pull_request/merged",
            "/repository/full_name",
            "/sender/login",
        ],
    );
    assert_eq!(
        routed_event(&e),
        routed("pull_request_review", "submitted", &twin)
    );
    let pending = rest_list("pulls.reviews.list", 1);
    assert!(super::review("octo/repo", &item, None, &pending).is_none());
}

#[test]
fn a_review_comment_is_its_webhook_twin() {
    let item = trim_item(&rest_list("issues.list", 1));
    let c = rest_list("pulls.comments.list", 0);
    let e = super::comment(
        ItemKind::ReviewComment,
        "octo/repo",
        &item,
        Some(&trim_pull(&pull_16())),
        &c,
        None,
    );
    let twin = fixture("webhook/pull_request_review_comment.created");
    assert_eq!(e.delivery_id, "poll-review-comment-3001");
    assert_same(
        &e.payload,
        &twin,
        &[
            "/action",
            "/comment/id",
            "/comment/path",
            "/comment/line",
            "/comment/body",
            "/comment/user/login",
            "/pull_request/number",
            "/pull_request/head/ref",
            "/pull_request/body",
            "/repository/full_name",
            "/sender/login",
        ],
    );
    assert_eq!(
        routed_event(&e),
        routed("pull_request_review_comment", "created", &twin)
    );
    // Without the pulls listing the block is built from the issue entry.
    let e = super::comment(ItemKind::ReviewComment, "octo/repo", &item, None, &c, None);
    assert_eq!(e.payload.pointer("/pull_request/number"), Some(&json!(16)));
    assert_eq!(
        e.payload.pointer("/pull_request/merged"),
        Some(&json!(false))
    );
}

#[test]
fn an_edit_is_its_own_delivery_and_not_actionable_by_default() {
    let item = trim_item(&rest_list("issues.list", 0));
    let c = rest_list("issues.comments.list", 0);
    let t = crate::time::parse_ts("2026-11-02T11:05:00Z").unwrap();
    let e = super::comment(ItemKind::Comment, "octo/repo", &item, None, &c, Some(t));
    assert_eq!(e.action, "edited");
    assert_eq!(e.payload["action"], json!("edited"));
    assert_eq!(
        e.delivery_id,
        format!("poll-comment-2001-edited-{}", t.unix_timestamp())
    );
    let twin = fixture("webhook/issue_comment.edited");
    assert_eq!(routed_event(&e), routed("issue_comment", "edited", &twin));
    assert!(routed_event(&e).is_dropped());
}

#[test]
fn closes_end_the_closed_item() {
    let issue = trim_item(&fixture("rest/issues.get.closed"));
    let e = close("octo/repo", &issue, None);
    assert_eq!(
        (e.gh_event.as_str(), e.action.as_str()),
        ("issues", "closed")
    );
    assert!(e.delivery_id.starts_with("poll-closed-1015-"));
    match routed_event(&e) {
        Outcome::Close { item, merged, .. } => {
            assert_eq!(item, WorkItemRef::new("octo", "repo", 15));
            assert!(!merged);
        }
        other => panic!("expected a close, got {other:?}"),
    }
    let mut pr = trim_item(&rest_list("issues.list", 1));
    pr["state"] = json!("closed");
    pr["closed_at"] = json!("2026-11-04T10:00:00Z");
    pr["pull_request"]["merged_at"] = json!("2026-11-04T10:00:00Z");
    let e = close("octo/repo", &pr, Some(&trim_pull(&pull_16())));
    assert_eq!(e.gh_event, "pull_request");
    let twin = fixture("webhook/pull_request.closed.merged");
    assert_eq!(
        e.payload.pointer("/pull_request/merged"),
        Some(&json!(true))
    );
    match (routed_event(&e), routed("pull_request", "closed", &twin)) {
        (
            Outcome::Close { item, merged, .. },
            Outcome::Close {
                item: twin_item,
                merged: twin_merged,
                ..
            },
        ) => assert_eq!((item, merged), (twin_item, twin_merged)),
        other => panic!("expected two closes, got {other:?}"),
    }
}

#[test]
fn trimming_keeps_what_is_read_and_drops_the_noise() {
    let raw = rest_list("issues.list", 1);
    let item = trim_item(&raw);
    for key in [
        "number",
        "title",
        "state",
        "html_url",
        "body",
        "pull_request",
        "labels",
    ] {
        assert_eq!(item.get(key).is_some(), raw.get(key).is_some(), "{key}");
    }
    assert!(item.get("reactions").is_none() && item.get("labels_url").is_none());
    assert_eq!(
        item["user"],
        json!({"login": "alice", "id": raw["user"]["id"], "type": "User"})
    );
    assert_eq!(item["labels"][0]["name"], json!("the-loop"));
    let pull = trim_pull(&pull_16());
    assert_eq!(pull["merged"], json!(false));
    assert_eq!(pull["head"]["ref"], json!("issue-15-backoff"));
    let repo_keys: Vec<&str> = pull["head"]["repo"]
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    assert!(
        repo_keys
            .iter()
            .all(|k| ["id", "name", "full_name"].contains(k)),
        "{repo_keys:?}"
    );
    let serialized = serde_json::to_string(&item).unwrap();
    assert!(serialized.len() * 2 < serde_json::to_string(&raw).unwrap().len());
}

#[test]
fn the_repository_keeps_the_items_host() {
    let item = json!({"html_url": "https://ghe.example.com/octo/repo/pull/3"});
    assert_eq!(
        repository("octo/repo", &item)["html_url"],
        json!("https://ghe.example.com/octo/repo")
    );
    assert_eq!(
        repository("octo/repo", &json!({}))["html_url"],
        json!("https://github.com/octo/repo")
    );
}
