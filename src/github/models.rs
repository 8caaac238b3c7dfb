//! Light, typed reads of GitHub JSON (REST items and webhook payloads alike). Items stay
//! `serde_json::Value` so nothing is lost when they are re-shaped into webhook payloads;
//! these accessors return `None` for anything missing or of the wrong type.

use serde_json::Value;
use time::OffsetDateTime;

pub fn id(v: &Value) -> Option<u64> {
    v.get("id")?.as_u64()
}

pub fn number(v: &Value) -> Option<u64> {
    v.get("number")?.as_u64()
}

pub fn body(v: &Value) -> Option<&str> {
    v.get("body")?.as_str()
}

pub fn title(v: &Value) -> Option<&str> {
    v.get("title")?.as_str()
}

pub fn html_url(v: &Value) -> Option<&str> {
    v.get("html_url")?.as_str()
}

/// `open` / `closed` for items; `APPROVED`, `CHANGES_REQUESTED`… for reviews.
pub fn state(v: &Value) -> Option<&str> {
    v.get("state")?.as_str()
}

/// The author's login (`user.login`).
pub fn user_login(v: &Value) -> Option<&str> {
    v.get("user")?.get("login")?.as_str()
}

/// GitHub's timestamp format: RFC 3339, UTC, whole seconds (`2026-11-02T11:00:00Z`).
pub fn format_timestamp(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    let fmt = time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z");
    t.format(&fmt)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_string())
}

fn timestamp(v: &Value, field: &str) -> Option<OffsetDateTime> {
    crate::time::parse_ts(v.get(field)?.as_str()?)
}

pub fn created_at(v: &Value) -> Option<OffsetDateTime> {
    timestamp(v, "created_at")
}

pub fn updated_at(v: &Value) -> Option<OffsetDateTime> {
    timestamp(v, "updated_at")
}

/// When a review was submitted (absent while it is `PENDING`).
pub fn submitted_at(v: &Value) -> Option<OffsetDateTime> {
    timestamp(v, "submitted_at")
}

/// An entry of the issues listing is a PR iff it has a (non-null) `pull_request` key.
pub fn is_pull_request(issue: &Value) -> bool {
    issue.get("pull_request").is_some_and(|p| !p.is_null())
}

/// Whether an item (issue-shaped or PR-shaped) was merged: `merged: true` on a PR,
/// or a `merged_at` on the PR or on the issue's `pull_request` block.
pub fn is_merged(item: &Value) -> bool {
    if item.get("merged").and_then(Value::as_bool) == Some(true) {
        return true;
    }
    let merged_at = |v: &Value| v.get("merged_at").is_some_and(|m| m.is_string());
    merged_at(item) || item.get("pull_request").is_some_and(merged_at)
}

pub fn is_closed(item: &Value) -> bool {
    state(item) == Some("closed")
}

/// A PR's head branch (`head.ref`, from the pulls listing).
pub fn head_ref(pull: &Value) -> Option<&str> {
    pull.get("head")?.get("ref")?.as_str()
}

/// The names of an item's labels.
pub fn label_names(item: &Value) -> Vec<&str> {
    item.get("labels")
        .and_then(Value::as_array)
        .map(|labels| {
            labels
                .iter()
                .filter_map(|l| l.get("name").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default()
}

/// The issue or PR number a repo-wide comment belongs to: from `issue_url`
/// (conversation comments) or `pull_request_url` (review comments and reviews).
pub fn parent_number(comment: &Value) -> Option<u64> {
    ["issue_url", "pull_request_url"]
        .iter()
        .filter_map(|f| comment.get(*f).and_then(Value::as_str))
        .find_map(trailing_number)
}

fn trailing_number(url: &str) -> Option<u64> {
    url.trim_end_matches('/').rsplit('/').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_a_comment() {
        let c = json!({
            "id": 2001,
            "user": {"login": "alice"},
            "body": "hi",
            "html_url": "https://github.com/octo/repo/issues/15#issuecomment-2001",
            "issue_url": "https://api.github.com/repos/octo/repo/issues/15",
            "created_at": "2026-11-02T11:00:00Z",
            "updated_at": "2026-11-02T11:05:00Z",
        });
        assert_eq!(id(&c), Some(2001));
        assert_eq!(user_login(&c), Some("alice"));
        assert_eq!(body(&c), Some("hi"));
        assert_eq!(parent_number(&c), Some(15));
        assert_eq!(
            updated_at(&c).unwrap() - created_at(&c).unwrap(),
            time::Duration::minutes(5)
        );
    }

    #[test]
    fn wrong_types_read_as_absent() {
        let v = json!({"id": "7", "user": "alice", "updated_at": "yesterday", "labels": {}});
        assert_eq!(id(&v), None);
        assert_eq!(user_login(&v), None);
        assert_eq!(updated_at(&v), None);
        assert!(label_names(&v).is_empty());
        assert!(!is_pull_request(&json!({"pull_request": null})));
    }

    #[test]
    fn pulls_and_merges() {
        let issue =
            json!({"state": "closed", "pull_request": {"merged_at": "2026-11-03T09:00:00Z"}});
        assert!(is_pull_request(&issue) && is_merged(&issue) && is_closed(&issue));
        let pull = json!({"merged": false, "merged_at": null, "head": {"ref": "issue-15-x"}});
        assert!(!is_merged(&pull));
        assert_eq!(head_ref(&pull), Some("issue-15-x"));
        let review_comment =
            json!({"pull_request_url": "https://api.github.com/repos/o/r/pulls/16"});
        assert_eq!(parent_number(&review_comment), Some(16));
    }
}
