//! Properties over arbitrary JSON: extraction and the router are total, extracted refs
//! are valid refs, and a marked comment is never delivered.

use super::*;
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::Map;
use the_loop::routing::extract::work_items;

const EVENTS: &[&str] = &[
    "issue_comment",
    "issues",
    "pull_request",
    "pull_request_review",
    "pull_request_review_comment",
    "pull_request_review_thread",
    "workflow_run",
    "check_run",
    "check_suite",
    "status",
    "push",
    "",
];

const ACTIONS: &[&str] = &[
    "created",
    "edited",
    "deleted",
    "submitted",
    "closed",
    "opened",
    "labeled",
    "completed",
    "",
];

/// Keys the router reads, so generated payloads reach deep paths, plus noise.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => select(vec![
            "repository", "full_name", "html_url", "issue", "number", "pull_request", "body",
            "head", "ref", "comment", "user", "login", "review", "sender", "action",
            "conclusion", "state", "pull_requests", "workflow_run", "check_run", "check_suite",
            "head_branch", "branches", "name", "label", "merged",
        ])
        .prop_map(String::from),
        1 => "\\PC{0,8}",
    ]
}

/// Strings that look like what the router parses, plus arbitrary text.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        select(vec![
            "octo/repo",
            "o/r",
            "a/b/c",
            "/",
            "alice",
            "ALICE",
            "mallory",
            "",
            "https://github.com/octo/repo",
            "https://ghe.example.com:8443/octo/repo",
            "http://",
            "issue-15-backoff",
            "issue/0",
            "fixes #3",
            "Closes octo/other#9, resolves GH-4",
            "fixes https://ghe.example.com/octo/repo/issues/7",
            "the-loop start",
            "the-loop stop the-loop pause",
            "created",
            "closed",
            "failure",
            "labeled",
        ])
        .prop_map(String::from),
        "\\PC{0,40}",
        any::<String>(),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        (0u64..40).prop_map(Value::from),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(5, 96, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..8)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn any_config() -> impl Strategy<Value = RouterConfig> {
    (
        prop::collection::vec(select(vec!["alice", "@Mallory", "", "carol"]), 0..3),
        any::<bool>(),
        select(vec![
            SpawnPolicy::Command,
            SpawnPolicy::Labeled,
            SpawnPolicy::Never,
        ]),
    )
        .prop_map(|(users, deliver_edits, spawn)| {
            let mut r = routing(&users);
            r.deliver_edits = deliver_edits;
            r.spawn = spawn;
            RouterConfig::new(&r, EnabledEvents::all()).watching(["octo/repo"])
        })
}

fn fixture_names() -> Vec<&'static str> {
    vec![
        "issue_comment.created",
        "issue_comment.created.on_pr",
        "issue_comment.edited",
        "pull_request_review_comment.created",
        "pull_request_review.submitted",
        "pull_request.closed.merged",
        "issues.labeled",
        "check_run.completed.failure",
        "workflow_run.completed",
        "status",
    ]
}

/// A real fixture with one subtree (at a path of generated keys) replaced by arbitrary
/// JSON: close enough to real events to reach the later gates.
fn mutated_fixture() -> impl Strategy<Value = (&'static str, Value)> {
    (
        select(fixture_names()),
        prop::collection::vec(key(), 1..4),
        json_value(),
    )
        .prop_map(|(name, path, value)| {
            let mut payload = fixture(name);
            let mut slot = &mut payload;
            for k in &path {
                if !slot.is_object() {
                    *slot = json!({});
                }
                slot = &mut slot[k.as_str()];
            }
            *slot = value;
            (name, payload)
        })
}

/// Sets `comment.body` (replacing a non-object `comment`), keeping the payload an object.
fn put_comment_body(payload: &mut Value, body: String) {
    if !payload.is_object() {
        *payload = json!({});
    }
    if !payload["comment"].is_object() {
        payload["comment"] = json!({"user": {"login": "alice"}});
    }
    payload["comment"]["body"] = json!(body);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn extraction_and_routing_never_panic(
        event in select(EVENTS),
        action in select(ACTIONS),
        payload in json_value(),
        config in any_config(),
    ) {
        for item in work_items(event, &payload) {
            let shown = item.to_string();
            prop_assert_eq!(shown.parse::<WorkItemRef>().ok(), Some(item), "{}", shown);
        }
        let outcome = route(&Inbound::new(event, action, "d", &payload), &config, &mut DeliveryDedupe::new());
        let _ = outcome.to_event(&Inbound::new(event, action, "d", &payload), Source::Poll);
    }

    #[test]
    fn fixtures_with_random_fields_never_panic(
        (name, payload) in mutated_fixture(),
        action in select(ACTIONS),
        config in any_config(),
    ) {
        let event = event_of(name);
        let _ = work_items(event, &payload);
        let _ = route(&Inbound::new(event, action, "d", &payload), &config, &mut DeliveryDedupe::new());
    }

    #[test]
    fn a_marked_comment_is_never_delivered(
        event in select(EVENTS),
        action in select(ACTIONS),
        payload in prop_oneof![json_value(), mutated_fixture().prop_map(|(_, p)| p)],
        before in "\\PC{0,60}",
        after in "\\PC{0,60}",
        config in any_config(),
    ) {
        let mut payload = payload;
        put_comment_body(&mut payload, format!("{before}{MARKER}{after}"));
        let outcome = route(&Inbound::new(event, action, "d", &payload), &config, &mut DeliveryDedupe::new());
        prop_assert!(
            !matches!(outcome, Outcome::Deliver { .. } | Outcome::Control { .. } | Outcome::Ambiguous { .. }),
            "{:?}", outcome
        );
    }

    #[test]
    fn a_marked_real_comment_is_refused_as_self_authored(
        name in select(vec![
            "issue_comment.created",
            "issue_comment.created.on_pr",
            "issue_comment.edited",
            "issue_comment.created.unauthorized",
            "pull_request_review_comment.created",
        ]),
        before in "\\PC{0,200}",
        after in "\\PC{0,200}",
        action in select(ACTIONS),
        config in any_config(),
    ) {
        let payload = with_comment(name, &format!("{before}{MARKER}{after}"));
        let inbound = Inbound::new(event_of(name), action, "d", &payload);
        let outcome = route(&inbound, &config, &mut DeliveryDedupe::new());
        prop_assert!(
            matches!(outcome, Outcome::Dropped { reason: DropReason::SelfAuthored, .. }),
            "{:?}", outcome
        );
    }

    #[test]
    fn any_pr_body_extracts_valid_refs(body in "\\PC{0,300}", prefix in select(vec![
        "fixes ", "Closes: ", "resolved\t", "fix GH-", "close #", "closes octo/", "",
    ])) {
        let payload = json!({
            "repository": {"full_name": "octo/repo", "html_url": "https://ghe.example.com/octo/repo"},
            "pull_request": {"number": 16, "body": format!("{prefix}{body}"), "head": {"ref": body}},
        });
        let items = work_items("pull_request", &payload);
        prop_assert!(items.iter().any(|i| i.number == 16));
        for item in items {
            prop_assert_eq!(item.to_string().parse::<WorkItemRef>().ok(), Some(item));
        }
    }
}
