//! Polled REST items re-shaped into the webhook payloads their twins carry (SPEC §4.1),
//! so the router, the excerpt and the tests treat both ingress paths identically:
//!
//! - a conversation comment → `issue_comment` (`comment`, `issue`, `repository`,
//!   `sender`); on a PR the `issue` also carries `pull_request.head` (`ref`, `repo`) and the PR body
//!   from the pulls listing, which §5.2 needs to link the PR to the issue it closes;
//! - an inline review comment → `pull_request_review_comment` (`comment`,
//!   `pull_request`);
//! - a review → `pull_request_review` `submitted`, its state lower-cased as webhooks
//!   spell it; `PENDING` reviews are not events;
//! - a closed item with a session → `issues` / `pull_request` `closed`;
//! - an issue that entered the watched list → `issues` `labeled` (`label`, `sender` =
//!   whoever applied the label, from the item's timeline), or `opened` when the repo
//!   watches every item (SPEC §15.1);
//! - a completed check run of a watched PR → `check_run` `completed` (SPEC §15.2).
//!
//! Items and pulls are kept in the ledger trimmed of URL templates, reactions and full
//! user objects ([`trim_item`], [`trim_pull`]); comments and reviews are passed on whole.

use crate::events::Source;
use crate::github::models;
use crate::ingress::InboundEvent;
use crate::ingress::ItemKind;
use serde_json::{Map, Value, json};
use time::OffsetDateTime;

/// `poll-comment-<id>`, `poll-review-comment-<id>`, `poll-review-<id>`; an edit is a
/// new delivery of its own (as on the webhook path), `…-edited-<unix updated_at>`, so
/// the router's delivery-id dedupe does not take it for the creation.
pub fn delivery_id(kind: ItemKind, id: u64, edited_at: Option<OffsetDateTime>) -> String {
    let base = match kind {
        ItemKind::Comment => format!("poll-comment-{id}"),
        ItemKind::ReviewComment => format!("poll-review-comment-{id}"),
        ItemKind::Review => format!("poll-review-{id}"),
    };
    match edited_at {
        Some(t) => format!("{base}-edited-{}", t.unix_timestamp()),
        None => base,
    }
}

/// The close of an item: unique per closing (an item can be closed, reopened, closed).
pub fn close_delivery_id(item: &Value) -> String {
    let id = models::id(item).unwrap_or(0);
    let closed = item["closed_at"]
        .as_str()
        .and_then(crate::time::parse_ts)
        .map_or(0, |t| t.unix_timestamp());
    format!("poll-closed-{id}-{closed}")
}

const ITEM_FIELDS: &[&str] = &[
    "url",
    "html_url",
    "id",
    "node_id",
    "number",
    "title",
    "user",
    "labels",
    "state",
    "locked",
    "draft",
    "comments",
    "created_at",
    "updated_at",
    "closed_at",
    "closed_by",
    "author_association",
    "body",
    "pull_request",
];

const PULL_FIELDS: &[&str] = &[
    "url",
    "id",
    "node_id",
    "html_url",
    "number",
    "state",
    "locked",
    "title",
    "user",
    "body",
    "labels",
    "draft",
    "merged",
    "merged_at",
    "head",
    "base",
    "created_at",
    "updated_at",
    "closed_at",
    "author_association",
];

fn pick(v: &Value, fields: &[&str]) -> Map<String, Value> {
    let mut out = Map::new();
    for f in fields {
        if let Some(x) = v.get(*f) {
            out.insert((*f).to_string(), x.clone());
        }
    }
    out
}

/// A user object cut to what anything reads: `login`, `id`, `type`.
fn trim_user(user: &Value) -> Value {
    if !user.is_object() {
        return user.clone();
    }
    Value::Object(pick(user, &["login", "id", "type"]))
}

fn trim_labels(labels: &Value) -> Value {
    match labels.as_array() {
        Some(list) => list
            .iter()
            .map(|l| Value::Object(pick(l, &["id", "name"])))
            .collect(),
        None => labels.clone(),
    }
}

/// An entry of the issues listing, kept in the ledger: the fields the router, the
/// excerpt and the poller read.
pub fn trim_item(item: &Value) -> Value {
    let mut out = pick(item, ITEM_FIELDS);
    for key in ["user", "closed_by"] {
        if let Some(u) = out.get_mut(key) {
            *u = trim_user(u);
        }
    }
    if let Some(l) = out.get_mut("labels") {
        *l = trim_labels(l);
    }
    if let Some(p) = out.get_mut("pull_request") {
        *p = Value::Object(pick(p, &["url", "html_url", "merged_at"]));
    }
    Value::Object(out)
}

/// An entry of the open-pulls listing, kept in the ledger. Open pulls are not merged,
/// and webhook payloads say so (`merged: false`).
pub fn trim_pull(pull: &Value) -> Value {
    let mut out = pick(pull, PULL_FIELDS);
    if let Some(u) = out.get_mut("user") {
        *u = trim_user(u);
    }
    if let Some(l) = out.get_mut("labels") {
        *l = trim_labels(l);
    }
    for side in ["head", "base"] {
        if let Some(s) = out.get_mut(side) {
            let mut kept = pick(s, &["label", "ref", "sha"]);
            // Whose branch it is: a fork's branch names no issue here (SPEC §14.3).
            if s["repo"].is_object() {
                kept.insert(
                    "repo".into(),
                    Value::Object(pick(&s["repo"], &["id", "name", "full_name"])),
                );
            }
            *s = Value::Object(kept);
        }
    }
    if !out.contains_key("merged") {
        out.insert("merged".into(), Value::Bool(models::is_merged(pull)));
    }
    Value::Object(out)
}

/// `repository` as webhooks carry it, as far as the poller knows it: the name, and the
/// web URL (its host tells the router which GitHub the item lives on).
pub fn repository(repo: &str, item: &Value) -> Value {
    let (owner, name) = repo.split_once('/').unwrap_or((repo, ""));
    let html_url = models::html_url(item)
        .and_then(|u| {
            let cut = u.find("/issues/").or_else(|| u.find("/pull/"))?;
            Some(u[..cut].to_string())
        })
        .unwrap_or_else(|| format!("https://github.com/{repo}"));
    json!({
        "name": name,
        "full_name": repo,
        "owner": {"login": owner},
        "html_url": html_url,
    })
}

/// The PR as a `pull_request` block: the pulls-listing entry, else what the issue
/// listing knows of it (no head branch then).
fn pull_request_block(item: &Value, pull: Option<&Value>) -> Value {
    if let Some(p) = pull {
        return p.clone();
    }
    let mut out = pick(
        item,
        &[
            "url",
            "id",
            "html_url",
            "number",
            "state",
            "title",
            "user",
            "body",
            "labels",
            "draft",
            "created_at",
            "updated_at",
            "closed_at",
        ],
    );
    if let Some(api) = item["pull_request"]["url"].as_str() {
        out.insert("url".into(), Value::String(api.to_string()));
    }
    out.insert("merged".into(), Value::Bool(models::is_merged(item)));
    out.insert(
        "merged_at".into(),
        item["pull_request"]["merged_at"].clone(),
    );
    Value::Object(out)
}

/// The watched item as an `issue` block; for a PR with the head branch and body the
/// pulls listing has (GitHub's own `issue_comment` payload lacks the branch).
fn issue_block(item: &Value, pull: Option<&Value>) -> Value {
    let mut issue = item.clone();
    if let (Some(p), Some(obj)) = (pull, issue.as_object_mut()) {
        if let Some(body) = p.get("body") {
            obj.insert("body".into(), body.clone());
        }
        if let Some(head) = p["head"]["ref"].as_str()
            && let Some(block) = obj.get_mut("pull_request").and_then(Value::as_object_mut)
        {
            let repo = &p["head"]["repo"];
            block.insert("head".into(), json!({ "ref": head, "repo": repo }));
        }
    }
    issue
}

fn event(gh_event: &str, action: &str, delivery_id: String, payload: Value) -> InboundEvent {
    InboundEvent {
        source: Source::Poll,
        gh_event: gh_event.to_string(),
        action: action.to_string(),
        delivery_id,
        payload,
    }
}

fn action(edited_at: Option<OffsetDateTime>) -> &'static str {
    if edited_at.is_some() {
        "edited"
    } else {
        "created"
    }
}

/// A comment on a watched item: a conversation comment as `issue_comment` (with the
/// item as `issue`), an inline review comment as `pull_request_review_comment` (with the
/// PR as `pull_request`). `edited_at`: the comment's new `updated_at` when it is an edit
/// of a comment already resolved.
pub fn comment(
    kind: ItemKind,
    repo: &str,
    item: &Value,
    pull: Option<&Value>,
    comment: &Value,
    edited_at: Option<OffsetDateTime>,
) -> InboundEvent {
    let id = models::id(comment).unwrap_or(0);
    let action = action(edited_at);
    let (gh_event, container, block) = match kind {
        ItemKind::ReviewComment => (
            "pull_request_review_comment",
            "pull_request",
            pull_request_block(item, pull),
        ),
        _ => ("issue_comment", "issue", issue_block(item, pull)),
    };
    let mut payload = Map::new();
    payload.insert("action".into(), json!(action));
    payload.insert(container.into(), block);
    payload.insert("comment".into(), comment.clone());
    payload.insert("repository".into(), repository(repo, item));
    payload.insert("sender".into(), comment["user"].clone());
    event(
        gh_event,
        action,
        delivery_id(kind, id, edited_at),
        Value::Object(payload),
    )
}

/// A submitted review on a watched PR; `None` for a `PENDING` (unsubmitted) one.
pub fn review(
    repo: &str,
    item: &Value,
    pull: Option<&Value>,
    review: &Value,
) -> Option<InboundEvent> {
    let state = models::state(review).unwrap_or("");
    if is_pending_review(review) {
        return None;
    }
    let mut review = review.clone();
    review["state"] = Value::String(state.to_ascii_lowercase());
    let id = models::id(&review).unwrap_or(0);
    let payload = json!({
        "action": "submitted",
        "review": review,
        "pull_request": pull_request_block(item, pull),
        "repository": repository(repo, item),
        "sender": review["user"],
    });
    Some(event(
        "pull_request_review",
        "submitted",
        delivery_id(ItemKind::Review, id, None),
        payload,
    ))
}

/// A review that is not submitted yet: not an event, and not resolved either (it will
/// be submitted under the same id).
pub fn is_pending_review(review: &Value) -> bool {
    models::state(review).is_some_and(|s| s.eq_ignore_ascii_case("PENDING"))
}

/// An item with a session closed (or merged): `issues` / `pull_request` `closed`. The
/// router ends the session without an actor check (a close only ends sessions).
pub fn close(repo: &str, item: &Value, pull: Option<&Value>) -> InboundEvent {
    let sender = &item["closed_by"];
    let (gh_event, payload) = if models::is_pull_request(item) {
        let mut pr = pull_request_block(item, pull);
        pr["state"] = Value::String("closed".into());
        pr["merged"] = Value::Bool(models::is_merged(item));
        (
            "pull_request",
            json!({
                "action": "closed",
                "number": item["number"],
                "pull_request": pr,
                "repository": repository(repo, item),
                "sender": sender,
            }),
        )
    } else {
        (
            "issues",
            json!({
                "action": "closed",
                "issue": item,
                "repository": repository(repo, item),
                "sender": sender,
            }),
        )
    };
    let mut payload = payload;
    if sender.is_null()
        && let Some(obj) = payload.as_object_mut()
    {
        obj.remove("sender");
    }
    event(gh_event, "closed", close_delivery_id(item), payload)
}

/// `issues` `labeled`: `labeler` applied `label` to the watched issue `item` (the
/// label event `event_id` of its timeline). The router's rules are the webhook's: the
/// labeler and the author both authorized (SPEC §15.1).
pub fn labeled(
    repo: &str,
    item: &Value,
    label: &str,
    labeler: &str,
    event_id: u64,
) -> InboundEvent {
    let payload = json!({
        "action": "labeled",
        "label": {"name": label},
        "issue": item,
        "repository": repository(repo, item),
        "sender": {"login": labeler},
    });
    event(
        "issues",
        "labeled",
        format!("poll-labeled-{event_id}"),
        payload,
    )
}

/// `issues` `opened`, for a repo that watches every open item (`label: ""`): the
/// author opened it.
pub fn opened(repo: &str, item: &Value) -> InboundEvent {
    let id = models::id(item).unwrap_or(0);
    let payload = json!({
        "action": "opened",
        "issue": item,
        "repository": repository(repo, item),
        "sender": item["user"],
    });
    event("issues", "opened", format!("poll-opened-{id}"), payload)
}

/// The check-run fields a webhook's `check_run` carries that the REST listing has too.
const CHECK_RUN_FIELDS: &[&str] = &[
    "id",
    "name",
    "head_sha",
    "status",
    "conclusion",
    "started_at",
    "completed_at",
    "html_url",
    "details_url",
    "output",
    "app",
    "pull_requests",
];

/// `poll-check-run-<id>`: one delivery per check run, whatever its conclusion (a run
/// completes once).
pub fn check_run_delivery_id(id: u64) -> String {
    format!("poll-check-run-{id}")
}

/// `check_run` `completed` for a check run of the watched PR `item`. The REST shape
/// lacks the webhook's `check_suite.head_branch` and may omit the PR in
/// `pull_requests`; both are filled in from the pulls listing, so the router links the
/// run to the PR and to the issue its branch names as it does for the webhook.
pub fn check_run(repo: &str, item: &Value, pull: Option<&Value>, run: &Value) -> InboundEvent {
    let mut out = pick(run, CHECK_RUN_FIELDS);
    let number = models::number(item);
    let head = pull.map_or(&Value::Null, |p| &p["head"]);
    out.insert(
        "check_suite".into(),
        json!({
            "id": run["check_suite"]["id"],
            "head_branch": head["ref"],
            "head_sha": run["head_sha"],
        }),
    );
    let listed = run["pull_requests"]
        .as_array()
        .is_some_and(|prs| prs.iter().any(|p| models::number(p) == number));
    if !listed && let Some(n) = number {
        let mut prs = run["pull_requests"].as_array().cloned().unwrap_or_default();
        prs.push(json!({
            "number": n,
            "head": head,
            "base": pull.map_or(&Value::Null, |p| &p["base"]),
        }));
        out.insert("pull_requests".into(), Value::Array(prs));
    }
    let id = models::id(run).unwrap_or(0);
    let payload = json!({
        "action": "completed",
        "check_run": Value::Object(out),
        "repository": repository(repo, item),
    });
    event("check_run", "completed", check_run_delivery_id(id), payload)
}

#[cfg(test)]
#[path = "shape_tests.rs"]
mod tests;
