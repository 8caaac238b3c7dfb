//! The typed calls the poller, `ask`, `reply` and critics make (SPEC §4.1). Items come
//! back as `serde_json::Value` — the router and the excerpt read GitHub-shaped JSON,
//! and the poller re-shapes polled comments into webhook payloads — with accessors in
//! [`super::models`].
//!
//! The repeated listings are conditional (`Fetched`, `value: None` on 304). The one-off
//! reads (`get_issue`, `list_item_comments`) are not: their callers hold no copy of an
//! earlier answer, so "unchanged" would leave them with nothing.

use super::Error;
use super::client::{Client, Fetched};
use super::models;
use reqwest::Method;
use serde_json::{Value, json};
use time::OffsetDateTime;

/// Every listing asks for GitHub's maximum page size.
const PER_PAGE: &str = "100";

/// A comment the tool posted.
#[derive(Debug, Clone, PartialEq)]
pub struct CreatedComment {
    pub id: u64,
    pub html_url: String,
    /// The full comment as GitHub returned it.
    pub comment: Value,
}

impl Client {
    /// The open items carrying `label` (`""`: every open item). Entries with a
    /// `pull_request` key are PRs ([`models::is_pull_request`]).
    pub async fn list_watched_items(
        &self,
        repo: &str,
        label: &str,
    ) -> Result<Fetched<Vec<Value>>, Error> {
        let mut query = vec![("state", "open".to_string())];
        if !label.is_empty() {
            query.push(("labels", label.to_string()));
        }
        query.push(("per_page", PER_PAGE.into()));
        let url = self.url(&format!("{}/issues", repo_path(repo)?), &query)?;
        self.get_list(url, true).await
    }

    /// Every conversation comment in the repo updated at or after `since`, oldest first.
    pub async fn list_issue_comments_since(
        &self,
        repo: &str,
        since: OffsetDateTime,
    ) -> Result<Fetched<Vec<Value>>, Error> {
        let url = self.url(
            &format!("{}/issues/comments", repo_path(repo)?),
            &since_query(since),
        )?;
        self.get_list(url, true).await
    }

    /// Every inline review comment in the repo updated at or after `since`, oldest first.
    pub async fn list_review_comments_since(
        &self,
        repo: &str,
        since: OffsetDateTime,
    ) -> Result<Fetched<Vec<Value>>, Error> {
        let url = self.url(
            &format!("{}/pulls/comments", repo_path(repo)?),
            &since_query(since),
        )?;
        self.get_list(url, true).await
    }

    /// The reviews of one PR.
    pub async fn list_reviews(
        &self,
        repo: &str,
        number: u64,
    ) -> Result<Fetched<Vec<Value>>, Error> {
        let url = self.url(
            &format!("{}/pulls/{number}/reviews", repo_path(repo)?),
            &[("per_page", PER_PAGE.into())],
        )?;
        self.get_list(url, true).await
    }

    /// The open PRs (head branches and bodies, which the issues listing lacks).
    pub async fn list_open_pulls(&self, repo: &str) -> Result<Fetched<Vec<Value>>, Error> {
        let url = self.url(
            &format!("{}/pulls", repo_path(repo)?),
            &[("state", "open".into()), ("per_page", PER_PAGE.into())],
        )?;
        self.get_list(url, true).await
    }

    /// The timeline of one item, oldest first (who labeled it, SPEC §15.1). Not
    /// conditional: it is read once, when the item enters the watched list.
    pub async fn list_issue_events(&self, repo: &str, number: u64) -> Result<Vec<Value>, Error> {
        let url = self.url(
            &format!("{}/issues/{number}/events", repo_path(repo)?),
            &[("per_page", PER_PAGE.into())],
        )?;
        Ok(self.get_list(url, false).await?.value.unwrap_or_default())
    }

    /// The check runs of one commit (SPEC §15.2), conditionally.
    pub async fn list_check_runs(
        &self,
        repo: &str,
        sha: &str,
    ) -> Result<Fetched<Vec<Value>>, Error> {
        if sha.is_empty() || !sha.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(Error::InvalidRequest(format!(
                "invalid commit `{sha}`: expected a hex sha"
            )));
        }
        let url = self.url(
            &format!("{}/commits/{sha}/check-runs", repo_path(repo)?),
            &[("per_page", PER_PAGE.into())],
        )?;
        self.get_list_in(url, true, Some("check_runs")).await
    }

    /// One issue or PR (as an issue: `state`, and `pull_request.merged_at` for PRs).
    pub async fn get_issue(&self, repo: &str, number: u64) -> Result<Value, Error> {
        let url = self.url(&format!("{}/issues/{number}", repo_path(repo)?), &[])?;
        self.get_value(&url).await
    }

    /// The whole conversation of one item, oldest first.
    pub async fn list_item_comments(&self, repo: &str, number: u64) -> Result<Vec<Value>, Error> {
        let url = self.url(
            &format!("{}/issues/{number}/comments", repo_path(repo)?),
            &[("per_page", PER_PAGE.into())],
        )?;
        let fetched = self.get_list(url, false).await?;
        Ok(fetched.value.unwrap_or_default())
    }

    /// Posts a comment the tool composed. It is **always** stamped with
    /// [`crate::guard::mark_self_authored`] here (idempotent; it removes any marker the
    /// text already carries), so no caller can forget or misplace the marker and no
    /// comment the tool writes is ever fed back to it.
    pub async fn post_comment(
        &self,
        repo: &str,
        number: u64,
        body: &str,
    ) -> Result<CreatedComment, Error> {
        self.post_comment_as(repo, number, body, crate::guard::ATTRIBUTION)
            .await
    }

    /// [`Self::post_comment`] with another attribution line above the marker (an agent's
    /// words, `the-loop comment`: [`crate::guard::attribution_for`]); stamped here all
    /// the same, with [`crate::guard::stamp_self_authored`].
    pub async fn post_comment_as(
        &self,
        repo: &str,
        number: u64,
        body: &str,
        attribution: &str,
    ) -> Result<CreatedComment, Error> {
        let url = self.url(
            &format!("{}/issues/{number}/comments", repo_path(repo)?),
            &[],
        )?;
        let payload = json!({ "body": crate::guard::stamp_self_authored(body, attribution) });
        let comment = self.write_value(Method::POST, &url, &payload).await?;
        created(comment, &url)
    }

    /// One review comment (an inline comment on a pull request's diff) by id:
    /// `pull_request_url` names its pull request, `in_reply_to_id` (when present) the
    /// first comment of its thread.
    pub async fn get_review_comment(&self, repo: &str, id: u64) -> Result<Value, Error> {
        let url = self.url(&format!("{}/pulls/comments/{id}", repo_path(repo)?), &[])?;
        self.get_value(&url).await
    }

    /// Replies in the review-comment thread of comment `id` on pull request `number`,
    /// stamped here like [`Self::post_comment_as`]. GitHub takes the id of the thread's
    /// first comment, not of a reply in it.
    pub async fn reply_to_review_comment(
        &self,
        repo: &str,
        number: u64,
        id: u64,
        body: &str,
        attribution: &str,
    ) -> Result<CreatedComment, Error> {
        let url = self.url(
            &format!("{}/pulls/{number}/comments/{id}/replies", repo_path(repo)?),
            &[],
        )?;
        let payload = json!({ "body": crate::guard::stamp_self_authored(body, attribution) });
        let comment = self.write_value(Method::POST, &url, &payload).await?;
        created(comment, &url)
    }
}

/// The comment GitHub answered a `POST` with; its `id` and `html_url` are required.
fn created(comment: Value, url: &reqwest::Url) -> Result<CreatedComment, Error> {
    let what = || format!("POST {}", url.path());
    let id = models::id(&comment).ok_or_else(|| Error::Decode {
        what: what(),
        message: "the created comment has no `id`".into(),
    })?;
    let html_url = models::html_url(&comment)
        .ok_or_else(|| Error::Decode {
            what: what(),
            message: "the created comment has no `html_url`".into(),
        })?
        .to_string();
    Ok(CreatedComment {
        id,
        html_url,
        comment,
    })
}

impl Client {
    /// Any paginated listing, conditionally (e.g. an endpoint without a typed call).
    /// `path` is relative to the API base, e.g. `/repos/octo/repo/labels`.
    pub async fn get_paginated(
        &self,
        path: &str,
        query: &[(&str, &str)],
    ) -> Result<Fetched<Vec<Value>>, Error> {
        let url = self.url(&checked_path(path)?, &owned(query))?;
        self.get_list(url, true).await
    }

    /// The login the token belongs to (`GET /user`), asked once and then cached (a
    /// failed ask is not: the next call asks again). `None` without a token.
    pub async fn own_login(&self) -> Result<Option<String>, Error> {
        if !self.has_token().await {
            return Ok(None);
        }
        if let Some(login) = self.own_login.get() {
            return Ok(Some(login.clone()));
        }
        let user = self.get_json("/user", &[]).await?;
        let login = user["login"]
            .as_str()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .ok_or_else(|| Error::Decode {
                what: "GET /user".into(),
                message: "the answer has no `login`".into(),
            })?;
        let _ = self.own_login.set(login.to_string());
        Ok(Some(login.to_string()))
    }

    /// Any single JSON document, unconditionally.
    pub async fn get_json(&self, path: &str, query: &[(&str, &str)]) -> Result<Value, Error> {
        let url = self.url(&checked_path(path)?, &owned(query))?;
        self.get_value(&url).await
    }
}

fn owned<'a>(query: &[(&'a str, &str)]) -> Vec<(&'a str, String)> {
    query.iter().map(|(k, v)| (*k, v.to_string())).collect()
}

/// A path below the API base: starts with `/`, no query, no way out of the base.
fn checked_path(path: &str) -> Result<String, Error> {
    let ok = path.starts_with('/')
        && !path.contains(['?', '#', '\\'])
        && !path.split('/').any(|seg| seg == ".." || seg == ".");
    if ok {
        Ok(path.to_string())
    } else {
        Err(Error::InvalidRequest(format!(
            "invalid API path `{path}`: expected an absolute path below the API base, e.g. `/repos/octo/repo/labels`"
        )))
    }
}

/// `/repos/owner/name` for a validated `owner/name`.
pub fn repo_path(repo: &str) -> Result<String, Error> {
    let valid = |s: &str| {
        !s.is_empty()
            && s != "."
            && s != ".."
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    match repo.split_once('/') {
        Some((owner, name)) if valid(owner) && valid(name) => Ok(format!("/repos/{owner}/{name}")),
        _ => Err(Error::InvalidRequest(format!(
            "invalid repository `{repo}`: expected `owner/name`, e.g. `octo/repo`"
        ))),
    }
}

/// `since` is floored to whole seconds (GitHub's precision); flooring only widens the
/// window, and the poller dedupes by id.
fn since_query(since: OffsetDateTime) -> Vec<(&'static str, String)> {
    vec![
        ("since", format_since(since)),
        ("sort", "updated".into()),
        ("direction", "asc".into()),
        ("per_page", PER_PAGE.into()),
    ]
}

fn format_since(t: OffsetDateTime) -> String {
    models::format_timestamp(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_names_are_validated() {
        assert_eq!(repo_path("octo/repo").unwrap(), "/repos/octo/repo");
        assert_eq!(repo_path("a-b/c.d_e").unwrap(), "/repos/a-b/c.d_e");
        for bad in [
            "octo", "octo/", "/repo", "o/r/x", "o/..", "o/r?x=1", "o/r#1", "o w/r",
        ] {
            assert!(repo_path(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn since_is_whole_seconds_utc() {
        let t = crate::time::parse_ts("2026-11-02T12:00:05.900+01:00").unwrap();
        assert_eq!(format_since(t), "2026-11-02T11:00:05Z");
    }
}
