//! Arbitrary payloads and event names: the excerpt always parses, fits and is fenced.

use super::check_invariants;
use proptest::prelude::*;
use serde_json::{Value, json};
use the_loop::routing::excerpt::{MAX_CHARS, excerpt};

// ---------------------------------------------------------------- properties

/// Strings rich in what can break a renderer: escapes, backticks, multi-byte characters,
/// and lengths on both sides of every cap (from a few characters to ~100,000).
fn nasty_string() -> impl Strategy<Value = String> {
    let piece = prop::sample::select(vec![
        "a",
        "`",
        "```",
        "\"",
        "\\",
        "\n",
        "\u{1}",
        "\u{1b}[201~",
        "é",
        "日本",
        "😀",
        "\u{2028}",
        " ",
        "… (truncated)",
    ]);
    let times = prop_oneof![1usize..4, 1usize..60, 1usize..400, 1usize..1_500];
    (prop::collection::vec(piece, 0..6), times)
        .prop_map(|(pieces, times)| pieces.concat().repeat(times))
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        nasty_string().prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map(field_name(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// The containers the excerpt knows, in table order.
#[rustfmt::skip]
const CONTAINERS: &[&str] = &[
    "comment", "review", "issue", "pull_request", "label", "workflow_run", "check_run",
    "check_suite",
];

/// Every field name the tables read, in any container.
#[rustfmt::skip]
const FIELDS: &[&str] = &[
    "path", "line", "body", "html_url", "state", "number", "title", "draft", "merged", "name",
    "event", "status", "conclusion", "head_branch", "details_url", "head_sha", "summary",
    "context", "description", "target_url",
];

fn field_name() -> impl Strategy<Value = String> {
    let known = [CONTAINERS, FIELDS, &["sender", "user", "login", "output"]].concat();
    prop_oneof![
        prop::sample::select(known).prop_map(str::to_string),
        "[a-z_]{1,8}",
    ]
}

/// A payload with every container the excerpt knows, each field present or not, mostly
/// strings of every length: the shape that stresses halving and dropping.
fn rich_payload() -> impl Strategy<Value = Value> {
    let value = prop_oneof![
        6 => nasty_string().prop_map(Value::from),
        1 => any::<u32>().prop_map(Value::from),
        1 => any::<bool>().prop_map(Value::from),
        1 => Just(Value::Null),
    ];
    let object = prop::collection::btree_map(prop::sample::select(FIELDS.to_vec()), value, 0..12)
        .prop_map(|fields| {
            let mut object: serde_json::Map<String, Value> = fields
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
            object.insert("user".into(), json!({"login": "alice"}));
            object.insert(
                "output".into(),
                json!({"title": "t", "summary": object.get("summary")}),
            );
            Value::Object(object)
        });
    // One object each for the containers and the sender; the last also serves as the
    // root, so `status` finds its root fields.
    prop::collection::vec(object, CONTAINERS.len() + 1).prop_map(|objects| {
        let mut root = objects[CONTAINERS.len()].clone();
        for (name, object) in CONTAINERS.iter().chain(&["sender"]).zip(objects) {
            root[*name] = object;
        }
        root
    })
}

fn event_name() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "issue_comment",
            "pull_request_review_comment",
            "pull_request_review",
            "issues",
            "pull_request",
            "pull_request_review_thread",
            "workflow_run",
            "check_run",
            "check_suite",
            "status",
        ])
        .prop_map(str::to_string),
        ".{0,12}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn any_payload_gives_a_bounded_valid_fenced_excerpt(event in event_name(), payload in any_json()) {
        check_invariants(&excerpt(&event, &payload));
    }

    #[test]
    fn container_shaped_payloads_keep_the_invariants(
        event in event_name(),
        payload in prop::collection::btree_map(
            field_name(),
            prop::collection::btree_map(field_name(), any_json(), 0..10)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            0..8,
        ),
    ) {
        let payload = Value::Object(payload.into_iter().collect());
        check_invariants(&excerpt(&event, &payload));
    }

    #[test]
    fn payloads_with_every_field_keep_the_invariants(event in event_name(), payload in rich_payload()) {
        check_invariants(&excerpt(&event, &payload));
    }

    #[test]
    fn short_comment_fields_round_trip(body in nasty_string(), login in "[A-Za-z0-9-]{1,39}") {
        prop_assume!(body.chars().count() <= 3_000);
        let payload = json!({"comment": {"body": body, "user": {"login": login}}});
        let out = excerpt("issue_comment", &payload);
        let parsed = check_invariants(&out);
        if out.chars().count() < MAX_CHARS / 2 {
            prop_assert_eq!(&parsed["comment"]["body"], &Value::from(body));
        }
        prop_assert_eq!(&parsed["comment"]["author"], &Value::from(login));
    }
}
