//! Real payloads and ways to spoil them.

use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Map, Value, json};

/// Every webhook fixture: `(X-GitHub-Event, body)`.
pub const FIXTURES: &[(&str, &str)] = &[
    (
        "check_run",
        include_str!("../../fixtures/webhook/check_run.completed.failure.json"),
    ),
    (
        "issue_comment",
        include_str!("../../fixtures/webhook/issue_comment.created.json"),
    ),
    (
        "issue_comment",
        include_str!("../../fixtures/webhook/issue_comment.created.on_pr.json"),
    ),
    (
        "issue_comment",
        include_str!("../../fixtures/webhook/issue_comment.created.self_marked.json"),
    ),
    (
        "issue_comment",
        include_str!("../../fixtures/webhook/issue_comment.created.unauthorized.json"),
    ),
    (
        "issue_comment",
        include_str!("../../fixtures/webhook/issue_comment.edited.json"),
    ),
    (
        "issues",
        include_str!("../../fixtures/webhook/issues.labeled.json"),
    ),
    (
        "pull_request",
        include_str!("../../fixtures/webhook/pull_request.closed.merged.json"),
    ),
    (
        "pull_request_review",
        include_str!("../../fixtures/webhook/pull_request_review.submitted.json"),
    ),
    (
        "pull_request_review_comment",
        include_str!("../../fixtures/webhook/pull_request_review_comment.created.json"),
    ),
    ("status", include_str!("../../fixtures/webhook/status.json")),
    (
        "workflow_run",
        include_str!("../../fixtures/webhook/workflow_run.completed.json"),
    ),
];

/// Text that breaks things: controls, C1, line separators, fences, markers, keywords.
pub fn nasty() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(vec![
            "", " ", "\u{1b}[201~", "\u{85}", "\u{9b}31m", "\u{2028}", "\u{2029}", "```",
            "`", "> the-loop stop", "the-loop start", "<!-- the-loop:agent-comment -->",
            "\r\n", "\0", "\u{7f}", "fixes #1", "Fixes evil/other#7", "issue-1-please",
            "octo/repo", "evil/other", "é😀日本", "\u{feff}", "\u{202e}", "\\u0000",
        ])
        .prop_map(String::from),
        2 => "\\PC{0,24}",
        1 => any::<String>(),
    ]
}

/// A JSON value of any shape, small. (No floats: serde_json does not round-trip every
/// one exactly, and GitHub sends none.)
pub fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        nasty().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(("\\PC{0,8}", inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// One change to a payload.
#[derive(Debug, Clone)]
pub enum Mutation {
    /// Replace the value at the `i`-th path (pre-order) with this one.
    Replace(Index, Value),
    /// Remove the `i`-th path.
    Remove(Index),
    /// Give the `i`-th object a new key.
    Insert(Index, String, Value),
}

pub fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<Index>(), any_json()).prop_map(|(i, v)| Mutation::Replace(i, v)),
        1 => any::<Index>().prop_map(Mutation::Remove),
        1 => (any::<Index>(), "[a-z_]{1,12}", any_json())
            .prop_map(|(i, k, v)| Mutation::Insert(i, k, v)),
    ]
}

/// A fixture index and the mutations to apply to it.
pub fn mutated_fixture() -> impl Strategy<Value = (&'static str, Value)> {
    (0..FIXTURES.len(), prop::collection::vec(mutation(), 0..6)).prop_map(|(i, mutations)| {
        let (event, text) = FIXTURES[i];
        let mut payload: Value = serde_json::from_str(text).unwrap();
        for m in &mutations {
            apply(&mut payload, m);
        }
        (event, payload)
    })
}

fn count(v: &Value) -> usize {
    1 + match v {
        Value::Array(a) => a.iter().map(count).sum(),
        Value::Object(o) => o.values().map(count).sum(),
        _ => 0,
    }
}

/// The `n`-th value in pre-order (0 is the root).
fn nth(v: &mut Value, n: usize) -> Option<&mut Value> {
    if n == 0 {
        return Some(v);
    }
    let mut left = n - 1;
    let children: Vec<&mut Value> = match v {
        Value::Array(a) => a.iter_mut().collect(),
        Value::Object(o) => o.values_mut().collect(),
        _ => return None,
    };
    for child in children {
        let size = count(child);
        if left < size {
            return nth(child, left);
        }
        left -= size;
    }
    None
}

pub fn apply(payload: &mut Value, m: &Mutation) {
    let total = count(payload);
    match m {
        Mutation::Replace(i, value) => {
            if let Some(slot) = nth(payload, i.index(total)) {
                *slot = value.clone();
            }
        }
        Mutation::Remove(i) => {
            // Empty the container holding it: removing by pre-order index from the
            // parent is the same spoil, written simply.
            if let Some(slot) = nth(payload, i.index(total)) {
                *slot = match slot {
                    Value::Object(_) => json!({}),
                    Value::Array(_) => json!([]),
                    _ => Value::Null,
                };
            }
        }
        Mutation::Insert(i, key, value) => {
            if let Some(Value::Object(o)) = nth(payload, i.index(total)) {
                o.insert(key.clone(), value.clone());
            }
        }
    }
}
