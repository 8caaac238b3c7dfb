//! The payload excerpt (SPEC §6.1–6.4): what an agent is told about a GitHub event.
//!
//! The excerpt is built from a field **allow-list**, never by trimming the payload, so
//! noise (API URLs, avatars, reactions, node ids) and other people's text (the issue
//! body, the sender) cannot reach the prompt by accident. It is prompt text only: the
//! gates (§3) read the full payload and never this.
//!
//! Choices the SPEC leaves open, made here:
//! - Never cut (a cut value would point somewhere wrong): the URLs `html_url`,
//!   `details_url`, `target_url` and the anchors `path`, `head_branch`, `head_sha`. Such a
//!   value too long to fit the whole budget on its own is omitted like a wrong-typed one
//!   (cutting is not allowed, and it could only ever push every other field out).
//! - Numbers (`line`, `number`) must be integers; a float is wrong-typed and omitted.
//! - "Prose gone" means the free-text cap has been halved down to zero: prose fields
//!   still say `… (truncated)`, so the agent knows there was text to go and read.
//! - "Characters" are Unicode scalar values, of the rendered text (escapes included).
//!
//! What people never saw is removed before anything is measured (SPEC §18.4,
//! `hidden_text`): every string loses hidden characters; the bodies GitHub renders as
//! Markdown (`comment.body`, `review.body`, `check_run.output.summary`) lose HTML
//! comments and references to hidden characters first. A URL or anchor holding a hidden
//! character is omitted (cleaning it would point somewhere wrong). [`Excerpt`] counts what
//! went, for the routed event; the gates never see any of this.
//!
//! Speed matters (this runs for every delivered event): the distilled fields borrow from
//! the payload, long text is sliced at a char boundary rather than copied, sizes are
//! counted without rendering, and the string is rendered once, at its exact size.

mod json;

use crate::hidden_text::{self, Stripped};
use json::{Counter, Scalar, Sink};
use serde_json::{Map, Value};

/// The most characters (Unicode scalar values) a rendered excerpt may have.
pub const MAX_CHARS: usize = 4_000;
/// The starting cap on free text (`body`, `description`, `summary`), in characters.
pub const PROSE_CAP: usize = 3_500;
/// The cap on every other string that may be cut (`title`, `name`, logins, …).
pub const TEXT_CAP: usize = 500;
/// Appended to a string that was cut.
pub const TRUNCATED: &str = "… (truncated)";

/// An event's excerpt, and what its fields lost to SPEC §18.4.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Excerpt {
    /// Pretty JSON, at most [`MAX_CHARS`] characters.
    pub text: String,
    /// Characters (Unicode scalar values) of hidden text removed from the allow-listed
    /// fields, before any cap.
    pub hidden_removed: usize,
}

/// The excerpt of one event, as pretty JSON (2-space indent), at most [`MAX_CHARS`]
/// characters, with every backtick escaped as `\u0060`. Never fails: a payload with
/// nothing recognisable renders `{}`.
pub fn excerpt(event: &str, payload: &Value) -> String {
    excerpt_counted(event, payload).text
}

/// How many characters of hidden text the excerpt of this event removes, without
/// rendering it (for the routed event, which is written before the excerpt is built).
pub fn hidden_removed(event: &str, payload: &Value) -> usize {
    payload.as_object().map_or(0, |root| {
        let mut removed = 0;
        distil(root, plan(event), &mut removed);
        removed
    })
}

/// [`excerpt`], and how many characters of hidden text it removed.
pub fn excerpt_counted(event: &str, payload: &Value) -> Excerpt {
    let Some(root) = payload.as_object() else {
        return Excerpt {
            text: "{}".to_string(),
            hidden_removed: 0,
        };
    };
    let mut hidden_removed = 0;
    let members = distil(root, plan(event), &mut hidden_removed);
    Excerpt {
        text: fit(members),
        hidden_removed,
    }
}

/// Renders within [`MAX_CHARS`]: halving the prose cap, then dropping fields from the end.
fn fit(mut members: Vec<Member<'_>>) -> String {
    let mut prose_cap = PROSE_CAP;
    loop {
        let size = measure(&members, prose_cap);
        if size.chars <= MAX_CHARS {
            return render(&members, prose_cap, size);
        }
        if prose_cap == 0 {
            break;
        }
        prose_cap /= 2;
    }
    // Prose is gone and it still does not fit: drop fields from the end.
    while drop_last(&mut members) {
        let size = measure(&members, prose_cap);
        if size.chars <= MAX_CHARS {
            return render(&members, prose_cap, size);
        }
    }
    "{}".to_string()
}

/// How a field is read from its source and shown.
#[derive(Clone, Copy)]
enum Kind {
    /// Free text: capped at the (shrinking) prose cap.
    Prose,
    /// Free text GitHub renders as Markdown: [`Kind::Prose`] that loses HTML comments too.
    Markdown,
    /// A short string: capped at [`TEXT_CAP`].
    Text,
    /// A URL or anchor: shown whole or not at all.
    Whole,
    Int,
    Bool,
    /// `{"login": …}` shown as the login alone (`author`, `actor`).
    Login,
    /// A nested object distilled by its own table.
    Object(&'static [Field]),
}

/// One allow-listed field: where it comes from, the key it is shown under, how.
struct Field {
    key: &'static str,
    source: &'static str,
    kind: Kind,
}

const fn f(key: &'static str, kind: Kind) -> Field {
    Field {
        key,
        source: key,
        kind,
    }
}

use Kind::{Bool, Int, Markdown, Object, Prose, Text, Whole};

const AUTHOR: Field = Field {
    key: "author",
    source: "user",
    kind: Kind::Login,
};
const ACTOR: Field = Field {
    key: "actor",
    source: "sender",
    kind: Kind::Login,
};

// SPEC §6.2, in emission order.
const COMMENT: Field = f(
    "comment",
    Object(&[
        f("path", Whole),
        f("line", Int),
        f("body", Markdown),
        f("html_url", Whole),
        AUTHOR,
    ]),
);
const REVIEW: Field = f(
    "review",
    Object(&[
        f("state", Text),
        f("body", Markdown),
        f("html_url", Whole),
        AUTHOR,
    ]),
);
const ISSUE: Field = f(
    "issue",
    Object(&[
        f("number", Int),
        f("title", Text),
        f("state", Text),
        f("html_url", Whole),
    ]),
);
const PULL_REQUEST: Field = f(
    "pull_request",
    Object(&[
        f("number", Int),
        f("title", Text),
        f("state", Text),
        f("draft", Bool),
        f("merged", Bool),
        f("html_url", Whole),
    ]),
);
const LABEL: Field = f("label", Object(&[f("name", Text)]));
const WORKFLOW_RUN: Field = f(
    "workflow_run",
    Object(&[
        f("name", Text),
        f("event", Text),
        f("status", Text),
        f("conclusion", Text),
        f("head_branch", Whole),
        f("html_url", Whole),
    ]),
);
const CHECK_RUN: Field = f(
    "check_run",
    Object(&[
        f("name", Text),
        f("status", Text),
        f("conclusion", Text),
        f(
            "output",
            Object(&[f("title", Text), f("summary", Markdown)]),
        ),
        f("html_url", Whole),
        f("details_url", Whole),
    ]),
);
const CHECK_SUITE: Field = f(
    "check_suite",
    Object(&[
        f("status", Text),
        f("conclusion", Text),
        f("head_branch", Whole),
        f("head_sha", Whole),
    ]),
);

/// An unknown event distils every known container, in table order.
const EVERY_CONTAINER: &[Field] = &[
    COMMENT,
    REVIEW,
    ISSUE,
    PULL_REQUEST,
    LABEL,
    WORKFLOW_RUN,
    CHECK_RUN,
    CHECK_SUITE,
];

/// A `status` event has no container: its fields sit at the root.
const STATUS: &[Field] = &[
    f("state", Text),
    f("context", Text),
    f("description", Prose),
    f("target_url", Whole),
];

/// The top-level fields an event's excerpt is made of.
fn plan(event: &str) -> &'static [Field] {
    match event {
        "issue_comment" | "pull_request_review_comment" => &[COMMENT],
        "pull_request_review" => &[REVIEW],
        "issues" => &[ACTOR, ISSUE, LABEL],
        "pull_request" => &[ACTOR, PULL_REQUEST, LABEL],
        "pull_request_review_thread" => &[ACTOR, PULL_REQUEST],
        "workflow_run" => &[WORKFLOW_RUN],
        "check_run" => &[CHECK_RUN],
        "check_suite" => &[CHECK_SUITE],
        "status" => STATUS,
        _ => EVERY_CONTAINER,
    }
}

/// One member of a rendered object: a key and a value borrowed from the payload.
type Member<'a> = (&'static str, Node<'a>);

enum Node<'a> {
    Leaf(Scalar<'a>),
    Object(Vec<Member<'a>>),
}

/// The allow-listed fields of `source`, in table order, without hidden text; what that
/// removed is added to `removed`. Missing, null and wrong-typed fields contribute nothing;
/// so does a nested object with nothing in it.
fn distil<'a>(
    source: &'a Map<String, Value>,
    fields: &[Field],
    removed: &mut usize,
) -> Vec<Member<'a>> {
    let mut members = Vec::with_capacity(fields.len());
    for field in fields {
        let Some(value) = source.get(field.source) else {
            continue;
        };
        let mut visible = |stripped: Stripped<'a>| {
            *removed += stripped.removed;
            stripped.text
        };
        let node = match (field.kind, value) {
            (Prose, Value::String(s)) => {
                Node::Leaf(Scalar::Prose(visible(hidden_text::strip_hidden(s))))
            }
            (Markdown, Value::String(s)) => {
                Node::Leaf(Scalar::Prose(visible(hidden_text::strip_markdown(s))))
            }
            (Text, Value::String(s)) => {
                Node::Leaf(Scalar::Text(visible(hidden_text::strip_hidden(s))))
            }
            (Whole, Value::String(s)) => {
                // Shown whole or not at all: a hidden character is counted, the value
                // left out.
                let hidden = hidden_text::strip_hidden(s).removed;
                *removed += hidden;
                if hidden > 0 || !fits_alone(s) {
                    continue;
                }
                Node::Leaf(Scalar::Whole(s))
            }
            (Int, Value::Number(n)) if n.is_i64() || n.is_u64() => Node::Leaf(Scalar::Int(n)),
            (Bool, Value::Bool(b)) => Node::Leaf(Scalar::Bool(*b)),
            (Kind::Login, Value::Object(user)) => match user.get("login") {
                Some(Value::String(login)) => {
                    Node::Leaf(Scalar::Text(visible(hidden_text::strip_hidden(login))))
                }
                _ => continue,
            },
            (Object(table), Value::Object(inner)) => {
                let children = distil(inner, table, removed);
                if children.is_empty() {
                    continue;
                }
                Node::Object(children)
            }
            _ => continue,
        };
        members.push((field.key, node));
    }
    members
}

/// Whether a never-cut value could be shown at all: it must fit the budget on its own.
fn fits_alone(s: &str) -> bool {
    let mut counter = Counter::default();
    counter.string(s);
    counter.chars < MAX_CHARS
}

/// Drops the last leaf (and any object it leaves empty). False when nothing is left.
fn drop_last(members: &mut Vec<Member<'_>>) -> bool {
    let Some((_, last)) = members.last_mut() else {
        return false;
    };
    if let Node::Object(children) = last {
        drop_last(children);
        if !children.is_empty() {
            return true;
        }
    }
    members.pop();
    true
}

fn measure(members: &[Member<'_>], prose_cap: usize) -> Counter {
    let mut counter = Counter::default();
    write_object(members, 0, prose_cap, &mut counter);
    counter
}

fn render(members: &[Member<'_>], prose_cap: usize, size: Counter) -> String {
    let mut out = String::with_capacity(size.bytes);
    write_object(members, 0, prose_cap, &mut out);
    debug_assert_eq!(out.len(), size.bytes, "measure and render disagree");
    debug_assert_eq!(
        out.chars().count(),
        size.chars,
        "measure and render disagree"
    );
    out
}

const INDENT: &str = "                ";

/// Pretty JSON, laid out exactly as `serde_json::to_string_pretty` would.
fn write_object<S: Sink>(members: &[Member<'_>], depth: usize, prose_cap: usize, out: &mut S) {
    if members.is_empty() {
        out.raw("{}");
        return;
    }
    out.raw("{");
    for (i, (key, node)) in members.iter().enumerate() {
        out.raw(if i == 0 { "\n" } else { ",\n" });
        out.raw(&INDENT[..2 * (depth + 1)]);
        out.raw("\"");
        out.raw(key);
        out.raw("\": ");
        match node {
            Node::Leaf(scalar) => scalar.write(prose_cap, out),
            Node::Object(children) => write_object(children, depth + 1, prose_cap, out),
        }
    }
    out.raw("\n");
    out.raw(&INDENT[..2 * depth]);
    out.raw("}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plan_covers_every_container_in_table_order() {
        let keys: Vec<&str> = plan("no_such_event").iter().map(|f| f.key).collect();
        assert_eq!(
            keys,
            [
                "comment",
                "review",
                "issue",
                "pull_request",
                "label",
                "workflow_run",
                "check_run",
                "check_suite"
            ]
        );
    }

    #[test]
    fn drop_last_removes_leaves_then_empty_objects() {
        let payload = json!({"sender": {"login": "a"}, "label": {"name": "x"}});
        let mut members = distil(payload.as_object().unwrap(), plan("issues"), &mut 0);
        assert_eq!(members.len(), 2);
        assert!(drop_last(&mut members));
        assert_eq!(members.len(), 1, "the emptied label object goes too");
        assert!(drop_last(&mut members));
        assert!(!drop_last(&mut members));
    }

    #[test]
    fn whole_values_longer_than_the_budget_are_omitted() {
        let long = "h".repeat(MAX_CHARS);
        let payload = json!({"comment": {"html_url": long, "body": "b"}});
        let members = distil(payload.as_object().unwrap(), plan("issue_comment"), &mut 0);
        let out = render(&members, PROSE_CAP, measure(&members, PROSE_CAP));
        assert_eq!(out, "{\n  \"comment\": {\n    \"body\": \"b\"\n  }\n}");
    }
}
