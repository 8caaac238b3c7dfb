//! Pull requests in the simulated GitHub: the listing with GitHub's `state`, `head`
//! and `base` filters, and creation through the API (`POST /repos/{o}/{r}/pulls`), as
//! the ship path uses them (SPEC §19.4 step 3).
//!
//! A created pull request is an item like those of `add_pull`: the next number of the
//! repository's shared issue/PR numbering, authored by the token's login
//! (`set_bot_login`), listed among the issues as a PR (so the poller sees it), open to
//! `add_review`, `push_commit` and `merge_pull`. GitHub's refusals, as 422 `Validation
//! Failed` with an `errors` entry: a missing `title`, `head` or `base`; a head of another
//! owner (forks are not simulated); an open pull request for the same head (`A pull
//! request already exists for owner:branch.`); with [`SimControl::resolve_branches`],
//! a head or base the repository does not have, or a head with no commits beyond its base.

use super::routes::{
    ApiError, Params, Shared, descending, find_repo, json, list_response, paginate,
};
use super::state::{Issue, ItemFields, PullInfo, Repo};
use super::{SimControl, lock, shapes};
use axum::body::Bytes;
use axum::extract::{OriginalUri, Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::Arc;

/// A pull request as the simulator holds it (what a test asserts on).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimPull {
    pub number: u64,
    /// The head branch (`head.ref`).
    pub head: String,
    /// The base branch (`base.ref`).
    pub base: String,
    pub head_sha: String,
    pub title: String,
    pub body: String,
    pub draft: bool,
    /// The author's login.
    pub user: String,
    pub open: bool,
}

type Resolve = dyn Fn(&str, &str) -> Option<String> + Send + Sync;

/// The branches of the simulated repositories, as a test knows them (e.g. from a real
/// git remote): `(repo, branch)` → the branch's head sha, `None` when it does not exist.
#[derive(Clone)]
pub(crate) struct Branches(Arc<Resolve>);

impl std::fmt::Debug for Branches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Branches(<resolver>)")
    }
}

impl SimControl {
    /// Every pull request of `repo`, by number (those of `add_pull` and those opened
    /// through the API alike).
    pub fn pulls(&self, repo: &str) -> Vec<SimPull> {
        let s = self.state();
        let Some(r) = s.repo(repo) else {
            return Vec::new();
        };
        r.issues
            .values()
            .filter_map(|i| {
                let p = i.pull.as_ref()?;
                Some(SimPull {
                    number: i.number,
                    head: p.head_ref.clone(),
                    base: p.base_ref.clone(),
                    head_sha: s.head_sha(repo, i.number).unwrap_or_default(),
                    title: i.title.clone(),
                    body: i.body.clone(),
                    draft: p.draft,
                    user: i.author.clone(),
                    open: i.open,
                })
            })
            .collect()
    }

    /// Tells the simulator which branches exist: `resolve(repo, branch)` gives a
    /// branch's head sha, or `None`. A pull request opened through the API then needs
    /// an existing head and base, takes its head sha from `resolve`, and is refused
    /// when head and base are the same commit. Without it any head is accepted, with a
    /// sha derived from the pull request's id.
    pub fn resolve_branches(
        &self,
        resolve: impl Fn(&str, &str) -> Option<String> + Send + Sync + 'static,
    ) {
        self.state().branches = Some(Branches(Arc::new(resolve)));
    }
}

fn validation_failed(errors: Vec<Value>) -> Response {
    let mut body = shapes::error("Validation Failed");
    body["errors"] = Value::Array(errors);
    (StatusCode::UNPROCESSABLE_ENTITY, axum::Json(body)).into_response()
}

fn field_error(field: &str, code: &str) -> Response {
    validation_failed(vec![
        json!({"resource": "PullRequest", "field": field, "code": code}),
    ])
}

fn custom_error(message: &str) -> Response {
    validation_failed(vec![
        json!({"resource": "PullRequest", "code": "custom", "message": message}),
    ])
}

/// Whether `i` is a pull request whose head matches GitHub's `head` filter
/// (`owner:branch`, or `owner` alone) and its `base` filter.
fn matches_filters(r: &Repo, i: &Issue, head: Option<&str>, base: Option<&str>) -> bool {
    let Some(p) = &i.pull else {
        return false;
    };
    let head_ok = head.is_none_or(|h| {
        let (owner, branch) = h.split_once(':').map_or((h, None), |(o, b)| (o, Some(b)));
        owner.eq_ignore_ascii_case(&r.owner) && branch.is_none_or(|b| b == p.head_ref)
    });
    head_ok && base.is_none_or(|b| b == p.base_ref)
}

/// `GET /repos/{o}/{r}/pulls`: `state` (default `open`), `head`, `base`, `sort`
/// (`created` | `updated`), `direction` (default `desc`), pagination.
pub(super) async fn list_pulls(
    State(shared): State<Shared>,
    Path((owner, repo)): Path<(String, String)>,
    Query(params): Params,
    OriginalUri(uri): OriginalUri,
) -> Response {
    let s = lock(&shared);
    let r = match find_repo(&s, &owner, &repo) {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    let state = params.get("state").map_or("open", String::as_str);
    let (head, base) = (params.get("head"), params.get("base"));
    let mut items: Vec<&Issue> = r
        .issues
        .values()
        .filter(|i| matches_filters(r, i, head.map(String::as_str), base.map(String::as_str)))
        .filter(|i| match state {
            "closed" => !i.open,
            "all" => true,
            _ => i.open,
        })
        .collect();
    match params.get("sort").map(String::as_str) {
        Some("updated") => items.sort_by_key(|i| (i.updated_at, i.number)),
        _ => items.sort_by_key(|i| (i.created_at, i.number)),
    }
    if descending(&params, true) {
        items.reverse();
    }
    let (page, link) = paginate(items, &params, &uri, &s.api_base);
    let values = page
        .into_iter()
        .map(|i| shapes::pull(&s, r, i, false))
        .collect();
    list_response(values, link)
}

/// What a `POST …/pulls` asked for.
struct Requested {
    title: String,
    head: String,
    base: String,
    body: String,
    draft: bool,
}

/// Why a `POST …/pulls` body was refused before anything was looked up.
enum BadRequest {
    Json,
    Missing(&'static str),
}

impl IntoResponse for BadRequest {
    fn into_response(self) -> Response {
        match self {
            BadRequest::Json => {
                ApiError(StatusCode::BAD_REQUEST, "Problems parsing JSON".into()).into_response()
            }
            BadRequest::Missing(field) => field_error(field, "missing_field"),
        }
    }
}

fn requested(bytes: &Bytes) -> Result<Requested, BadRequest> {
    let v: Value = serde_json::from_slice(bytes).map_err(|_| BadRequest::Json)?;
    let text = |field: &'static str| {
        v.get(field)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .ok_or(BadRequest::Missing(field))
    };
    Ok(Requested {
        title: text("title")?,
        head: text("head")?,
        base: text("base")?,
        body: v
            .get("body")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        draft: v.get("draft").and_then(Value::as_bool).unwrap_or(false),
    })
}

/// `POST /repos/{o}/{r}/pulls`: 201 with the pull request (and `Location`), or 422.
pub(super) async fn create_pull(
    State(shared): State<Shared>,
    Path((owner, repo)): Path<(String, String)>,
    bytes: Bytes,
) -> Response {
    let want = match requested(&bytes) {
        Ok(w) => w,
        Err(refused) => return refused.into_response(),
    };
    let full = format!("{owner}/{repo}");
    // `head` is `branch` or `owner:branch`; only the repository's own branches.
    let head = match want.head.split_once(':') {
        None => want.head.clone(),
        Some((o, b)) if o.eq_ignore_ascii_case(&owner) && !b.is_empty() => b.to_string(),
        Some(_) => return field_error("head", "invalid"),
    };
    let branches = {
        let s = lock(&shared);
        if let Err(e) = find_repo(&s, &owner, &repo) {
            return e.into_response();
        }
        s.branches.clone()
    };
    // Outside the lock: the resolver may ask git.
    let head_sha = match &branches {
        None => String::new(),
        Some(Branches(resolve)) => {
            let Some(head_sha) = resolve(&full, &head) else {
                return field_error("head", "invalid");
            };
            let Some(base_sha) = resolve(&full, &want.base) else {
                return field_error("base", "invalid");
            };
            if head_sha == base_sha {
                return custom_error(&format!("No commits between {} and {head}", want.base));
            }
            head_sha
        }
    };

    let mut s = lock(&shared);
    let Ok(r) = find_repo(&s, &owner, &repo) else {
        return ApiError::not_found().into_response();
    };
    let label = format!("{}:{head}", r.owner);
    if r.issues
        .values()
        .any(|i| i.open && matches_filters(r, i, Some(&label), None))
    {
        return custom_error(&format!("A pull request already exists for {label}."));
    }
    let fields = ItemFields {
        title: want.title,
        body: want.body,
        labels: Vec::new(),
        author: s.bot_login.clone(),
        pull: Some(PullInfo {
            head_ref: head,
            base_ref: want.base,
            head_sha,
            draft: want.draft,
            merged_at: None,
        }),
    };
    let number = match s.create_item(&full, None, fields) {
        Ok(n) => n,
        Err(e) => return ApiError(StatusCode::NOT_FOUND, e.to_string()).into_response(),
    };
    let (Ok(r), Some(issue)) = (
        find_repo(&s, &owner, &repo),
        s.repo(&full).and_then(|r| r.issues.get(&number)),
    ) else {
        return ApiError(StatusCode::INTERNAL_SERVER_ERROR, "pull vanished".into()).into_response();
    };
    let value = shapes::pull(&s, r, issue, true);
    let mut response = json(StatusCode::CREATED, value.clone());
    if let Some(url) = value.get("url").and_then(Value::as_str)
        && let Ok(v) = HeaderValue::from_str(url)
    {
        response.headers_mut().insert(header::LOCATION, v);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::github::sim::state::SimState;

    #[test]
    fn head_filters_read_owner_and_branch() {
        let mut s = SimState::new("http://x".into());
        let pull = |head: &str, base: &str| ItemFields {
            title: "t".into(),
            body: String::new(),
            labels: Vec::new(),
            author: "a".into(),
            pull: Some(PullInfo {
                head_ref: head.into(),
                base_ref: base.into(),
                head_sha: String::new(),
                draft: false,
                merged_at: None,
            }),
        };
        let n = s
            .create_item("Octo/repo", None, pull("b/1", "main"))
            .unwrap();
        let r = s.repo("octo/repo").unwrap();
        let i = &r.issues[&n];
        assert!(matches_filters(r, i, Some("octo:b/1"), None));
        assert!(matches_filters(r, i, Some("OCTO"), Some("main")));
        assert!(!matches_filters(r, i, Some("octo:b/2"), None));
        assert!(!matches_filters(r, i, Some("other:b/1"), None));
        assert!(!matches_filters(r, i, None, Some("dev")));
    }
}
