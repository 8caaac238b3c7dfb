//! The simulated GitHub's endpoints: those of SPEC §4.1 plus comment creation and
//! editing (the pull-request listing and creation are in `pulls.rs`), with GitHub's filters, sort orders and `Link` pagination. Everything around
//! the answers (token, budget, ETags, faults, log) is in `gate.rs`.

use super::state::{Issue, Repo, SimState, Threaded};
use super::{SimError, gate, lock};
use super::{pull_reviews, pulls, shapes};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{OriginalUri, Path, Query, State};
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use time::OffsetDateTime;

pub(crate) type Shared = Arc<Mutex<SimState>>;
pub(super) type Params = Query<HashMap<String, String>>;
type ItemPath = Path<(String, String, String)>;

pub(crate) fn router(shared: Shared) -> Router {
    Router::new()
        .route("/user", get(get_user))
        .route("/repos/{owner}/{repo}/issues", get(list_issues))
        .route(
            "/repos/{owner}/{repo}/issues/comments",
            get(list_repo_comments),
        )
        .route(
            "/repos/{owner}/{repo}/issues/comments/{id}",
            get(get_comment).patch(edit_comment),
        )
        .route("/repos/{owner}/{repo}/issues/{number}", get(get_issue))
        .route(
            "/repos/{owner}/{repo}/issues/{number}/comments",
            get(list_item_comments).post(create_comment),
        )
        .route(
            "/repos/{owner}/{repo}/issues/{number}/events",
            get(list_issue_events),
        )
        .route(
            "/repos/{owner}/{repo}/commits/{sha}/check-runs",
            get(list_check_runs),
        )
        .route(
            "/repos/{owner}/{repo}/pulls",
            get(pulls::list_pulls).post(pulls::create_pull),
        )
        .route(
            "/repos/{owner}/{repo}/pulls/comments",
            get(reviews::list_repo_review_comments),
        )
        .route(
            "/repos/{owner}/{repo}/pulls/comments/{id}",
            get(reviews::get_review_comment),
        )
        .route("/repos/{owner}/{repo}/pulls/{number}", get(get_pull))
        .route(
            "/repos/{owner}/{repo}/pulls/{number}/reviews",
            get(reviews::list_reviews).post(pull_reviews::create_review),
        )
        .route(
            "/repos/{owner}/{repo}/pulls/{number}/files",
            get(pull_reviews::list_files),
        )
        .route(
            "/repos/{owner}/{repo}/pulls/{number}/comments",
            get(reviews::list_pull_review_comments),
        )
        .route(
            "/repos/{owner}/{repo}/pulls/{number}/comments/{id}/replies",
            post(reviews::reply_to_review_comment),
        )
        .fallback(|| async { error(StatusCode::NOT_FOUND, "Not Found") })
        .layer(middleware::from_fn_with_state(shared.clone(), gate::gate))
        .with_state(shared)
}

pub(crate) fn error(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(shapes::error(message))).into_response()
}

/// A failed lookup inside a handler (small, unlike a `Response`).
pub(super) struct ApiError(pub(super) StatusCode, pub(super) String);

impl ApiError {
    pub(super) fn not_found() -> Self {
        Self(StatusCode::NOT_FOUND, "Not Found".into())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        error(self.0, &self.1)
    }
}

fn sim_error(e: SimError) -> ApiError {
    ApiError(StatusCode::NOT_FOUND, e.to_string())
}

pub(super) fn json(status: StatusCode, value: Value) -> Response {
    (status, axum::Json(value)).into_response()
}

// ---- parameters and pagination -----------------------------------------------------

fn number_param(params: &HashMap<String, String>, name: &str) -> Option<usize> {
    params.get(name).and_then(|v| v.parse().ok())
}

/// `since` as GitHub reads it: items updated at or after it.
fn since_param(params: &HashMap<String, String>) -> Result<Option<OffsetDateTime>, ApiError> {
    match params.get("since") {
        None => Ok(None),
        Some(v) => crate::time::parse_ts(v).map(Some).ok_or_else(|| {
            ApiError(
                StatusCode::UNPROCESSABLE_ENTITY,
                "Invalid value for `since`: expected an ISO 8601 timestamp".into(),
            )
        }),
    }
}

pub(super) fn descending(params: &HashMap<String, String>, default_desc: bool) -> bool {
    match params.get("direction").map(String::as_str) {
        Some("asc") => false,
        Some("desc") => true,
        _ => default_desc,
    }
}

/// One page of `items` and, when there is more than one page, a `Link` header whose
/// URLs repeat the request's query with `page` replaced.
pub(super) fn paginate<T>(
    items: Vec<T>,
    params: &HashMap<String, String>,
    uri: &Uri,
    api_base: &str,
) -> (Vec<T>, Option<String>) {
    let per_page = number_param(params, "per_page").unwrap_or(30).clamp(1, 100);
    let page = number_param(params, "page").unwrap_or(1).max(1);
    let last = items.len().div_ceil(per_page).max(1);
    let link_to = |n: usize| {
        let mut url = match reqwest::Url::parse(&format!("{api_base}{}", uri.path())) {
            Ok(u) => u,
            Err(_) => return String::new(),
        };
        let original = reqwest::Url::parse(&format!("http://sim{uri}")).ok();
        {
            let mut pairs = url.query_pairs_mut();
            let mut saw_page = false;
            for (k, v) in original.iter().flat_map(|u| u.query_pairs()) {
                if k == "page" {
                    saw_page = true;
                    pairs.append_pair("page", &n.to_string());
                } else {
                    pairs.append_pair(&k, &v);
                }
            }
            if !saw_page {
                pairs.append_pair("page", &n.to_string());
            }
        }
        url.to_string()
    };
    let mut links = Vec::new();
    if page > 1 {
        links.push(format!(
            "<{}>; rel=\"prev\"",
            link_to(page.min(last + 1) - 1)
        ));
    }
    if page < last {
        links.push(format!("<{}>; rel=\"next\"", link_to(page + 1)));
        links.push(format!("<{}>; rel=\"last\"", link_to(last)));
    }
    if page > 1 {
        links.push(format!("<{}>; rel=\"first\"", link_to(1)));
    }
    let slice = items
        .into_iter()
        .skip((page - 1) * per_page)
        .take(per_page)
        .collect();
    (slice, (!links.is_empty()).then(|| links.join(", ")))
}

pub(super) fn list_response(values: Vec<Value>, link: Option<String>) -> Response {
    let mut r = json(StatusCode::OK, Value::Array(values));
    if let Some(link) = link.and_then(|l| HeaderValue::from_str(&l).ok()) {
        r.headers_mut().insert(header::LINK, link);
    }
    r
}

pub(super) fn find_repo<'a>(
    s: &'a SimState,
    owner: &str,
    repo: &str,
) -> Result<&'a Repo, ApiError> {
    s.repo(&format!("{owner}/{repo}"))
        .ok_or_else(ApiError::not_found)
}

fn find_item<'a>(repo: &'a Repo, number: &str) -> Result<&'a Issue, ApiError> {
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| repo.issues.get(&n))
        .ok_or_else(ApiError::not_found)
}

fn comment_count(repo: &Repo, number: u64) -> usize {
    repo.comments
        .values()
        .filter(|c| c.number == number)
        .count()
}

/// Unwraps a `Result<_, Response>` inside a handler.
macro_rules! or_respond {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => return e.into_response(),
        }
    };
}

// ---- handlers ----------------------------------------------------------------------

mod reviews;

async fn list_issues(
    State(shared): State<Shared>,
    Path((owner, repo)): Path<(String, String)>,
    Query(params): Params,
    OriginalUri(uri): OriginalUri,
) -> Response {
    let s = lock(&shared);
    let r = or_respond!(find_repo(&s, &owner, &repo));
    let since = or_respond!(since_param(&params));
    let state = params.get("state").map_or("open", String::as_str);
    let wanted: Vec<String> = params
        .get("labels")
        .map(|l| {
            l.split(',')
                .map(|x| x.trim().to_ascii_lowercase())
                .filter(|x| !x.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let mut items: Vec<&Issue> = r
        .issues
        .values()
        .filter(|i| match state {
            "closed" => !i.open,
            "all" => true,
            _ => i.open,
        })
        .filter(|i| {
            wanted
                .iter()
                .all(|w| i.labels.iter().any(|l| l.eq_ignore_ascii_case(w)))
        })
        .filter(|i| since.is_none_or(|t| i.updated_at >= t))
        .collect();
    match params.get("sort").map(String::as_str) {
        Some("updated") => items.sort_by_key(|i| (i.updated_at, i.number)),
        Some("comments") => items.sort_by_key(|i| (comment_count(r, i.number), i.number)),
        _ => items.sort_by_key(|i| (i.created_at, i.number)),
    }
    if descending(&params, true) {
        items.reverse();
    }
    let (page, link) = paginate(items, &params, &uri, &s.api_base);
    let values = page
        .into_iter()
        .map(|i| shapes::issue(&s, r, i, comment_count(r, i.number)))
        .collect();
    list_response(values, link)
}

async fn get_issue(
    State(shared): State<Shared>,
    Path((owner, repo, number)): ItemPath,
) -> Response {
    let s = lock(&shared);
    let r = or_respond!(find_repo(&s, &owner, &repo));
    let issue = or_respond!(find_item(r, &number));
    json(
        StatusCode::OK,
        shapes::issue(&s, r, issue, comment_count(r, issue.number)),
    )
}

async fn get_pull(State(shared): State<Shared>, Path((owner, repo, number)): ItemPath) -> Response {
    let s = lock(&shared);
    let r = or_respond!(find_repo(&s, &owner, &repo));
    let issue = or_respond!(find_item(r, &number));
    if issue.pull.is_none() {
        return error(StatusCode::NOT_FOUND, "Not Found");
    }
    json(StatusCode::OK, shapes::pull(&s, r, issue, true))
}

/// Conversation comments, repo-wide (`number: None`) or of one item.
fn comments_response(
    s: &SimState,
    r: &Repo,
    number: Option<u64>,
    params: &HashMap<String, String>,
    uri: &Uri,
) -> Response {
    threaded_list(s, &r.comments, number, params, uri, |c| {
        shapes::comment(s, r, c)
    })
}

/// The listings of things attached to an item (conversation and review comments):
/// `since` (inclusive, on `updated_at`), `sort` (`created` | `updated`), `direction`
/// (ascending unless `sort` is given with `desc`), pagination.
fn threaded_list<T: Threaded>(
    s: &SimState,
    all: &std::collections::BTreeMap<u64, T>,
    number: Option<u64>,
    params: &HashMap<String, String>,
    uri: &Uri,
    render: impl Fn(&T) -> Value,
) -> Response {
    let since = or_respond!(since_param(params));
    let mut items: Vec<&T> = all
        .values()
        .filter(|c| number.is_none_or(|n| c.number() == n))
        .filter(|c| since.is_none_or(|t| c.updated_at() >= t))
        .collect();
    match params.get("sort").map(String::as_str) {
        Some("updated") => items.sort_by_key(|c| (c.updated_at(), c.id())),
        _ => items.sort_by_key(|c| (c.created_at(), c.id())),
    }
    if params.contains_key("sort") && descending(params, false) {
        items.reverse();
    }
    let (page, link) = paginate(items, params, uri, &s.api_base);
    list_response(page.into_iter().map(render).collect(), link)
}

async fn list_repo_comments(
    State(shared): State<Shared>,
    Path((owner, repo)): Path<(String, String)>,
    Query(params): Params,
    OriginalUri(uri): OriginalUri,
) -> Response {
    let s = lock(&shared);
    let r = or_respond!(find_repo(&s, &owner, &repo));
    comments_response(&s, r, None, &params, &uri)
}

async fn list_item_comments(
    State(shared): State<Shared>,
    Path((owner, repo, number)): ItemPath,
    Query(params): Params,
    OriginalUri(uri): OriginalUri,
) -> Response {
    let s = lock(&shared);
    let r = or_respond!(find_repo(&s, &owner, &repo));
    let issue = or_respond!(find_item(r, &number));
    comments_response(&s, r, Some(issue.number), &params, &uri)
}

/// The `body` string of a write request.
fn body_field(bytes: &Bytes) -> Result<String, ApiError> {
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|_| ApiError(StatusCode::BAD_REQUEST, "Problems parsing JSON".into()))?;
    match value.get("body").and_then(Value::as_str) {
        Some(b) if !b.is_empty() => Ok(b.to_string()),
        _ => Err(ApiError(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Validation Failed: body is missing".into(),
        )),
    }
}

/// `GET /user`: the token's own account, the login the simulator posts comments as.
async fn get_user(State(shared): State<Shared>) -> Response {
    let s = lock(&shared);
    let login = s.bot_login.clone();
    json(StatusCode::OK, shapes::user(&s, &login))
}

async fn create_comment(
    State(shared): State<Shared>,
    Path((owner, repo, number)): ItemPath,
    body: Bytes,
) -> Response {
    let text = or_respond!(body_field(&body));
    let mut s = lock(&shared);
    let full = format!("{owner}/{repo}");
    let n = or_respond!(number.parse::<u64>().map_err(|_| ApiError::not_found()));
    let login = s.bot_login.clone();
    let id = or_respond!(s.create_comment(&full, n, &login, &text).map_err(sim_error));
    let r = or_respond!(find_repo(&s, &owner, &repo));
    let Some(c) = r.comments.get(&id) else {
        return error(StatusCode::INTERNAL_SERVER_ERROR, "comment vanished");
    };
    created(shapes::comment(&s, r, c))
}

/// `201 Created` with the new resource, and its API URL as `Location`.
fn created(value: Value) -> Response {
    let location = value
        .get("url")
        .and_then(Value::as_str)
        .and_then(|url| HeaderValue::from_str(url).ok());
    let mut response = json(StatusCode::CREATED, value);
    if let Some(location) = location {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
}

async fn get_comment(State(shared): State<Shared>, Path((owner, repo, id)): ItemPath) -> Response {
    let s = lock(&shared);
    let r = or_respond!(find_repo(&s, &owner, &repo));
    match id.parse::<u64>().ok().and_then(|id| r.comments.get(&id)) {
        Some(c) => json(StatusCode::OK, shapes::comment(&s, r, c)),
        None => error(StatusCode::NOT_FOUND, "Not Found"),
    }
}

async fn edit_comment(
    State(shared): State<Shared>,
    Path((owner, repo, id)): ItemPath,
    body: Bytes,
) -> Response {
    let text = or_respond!(body_field(&body));
    let mut s = lock(&shared);
    let id = or_respond!(id.parse::<u64>().map_err(|_| ApiError::not_found()));
    or_respond!(
        s.update_comment(&format!("{owner}/{repo}"), id, &text)
            .map_err(sim_error)
    );
    let r = or_respond!(find_repo(&s, &owner, &repo));
    match r.comments.get(&id) {
        Some(c) => json(StatusCode::OK, shapes::comment(&s, r, c)),
        None => error(StatusCode::NOT_FOUND, "Not Found"),
    }
}

/// An item's timeline, oldest first.
async fn list_issue_events(
    State(shared): State<Shared>,
    Path((owner, repo, number)): ItemPath,
    Query(params): Params,
    OriginalUri(uri): OriginalUri,
) -> Response {
    let s = lock(&shared);
    let r = or_respond!(find_repo(&s, &owner, &repo));
    let issue = or_respond!(find_item(r, &number));
    let mut items: Vec<_> = r
        .issue_events
        .values()
        .filter(|e| e.number == issue.number)
        .collect();
    items.sort_by_key(|e| (e.created_at, e.id));
    let (page, link) = paginate(items, &params, &uri, &s.api_base);
    let values = page
        .into_iter()
        .map(|e| shapes::issue_event(&s, r, e))
        .collect();
    list_response(values, link)
}

/// The check runs of a commit: `{"total_count", "check_runs"}`, paginated.
async fn list_check_runs(
    State(shared): State<Shared>,
    Path((owner, repo, sha)): ItemPath,
    Query(params): Params,
    OriginalUri(uri): OriginalUri,
) -> Response {
    let s = lock(&shared);
    let r = or_respond!(find_repo(&s, &owner, &repo));
    let runs: Vec<_> = r
        .check_runs
        .values()
        .filter(|c| c.head_sha == sha)
        .collect();
    let total = runs.len();
    let (page, link) = paginate(runs, &params, &uri, &s.api_base);
    let values: Vec<Value> = page
        .into_iter()
        .map(|c| shapes::check_run(&s, r, c))
        .collect();
    let mut response = json(
        StatusCode::OK,
        serde_json::json!({"total_count": total, "check_runs": values}),
    );
    if let Some(link) = link.and_then(|l| HeaderValue::from_str(&l).ok()) {
        response.headers_mut().insert(header::LINK, link);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pagination_links_keep_the_query() {
        let params: HashMap<String, String> = [
            ("per_page".to_string(), "2".to_string()),
            ("labels".into(), "a,b".into()),
        ]
        .into_iter()
        .collect();
        let uri: Uri = "/repos/o/r/issues?labels=a%2Cb&per_page=2".parse().unwrap();
        let (page, link) = paginate((1..=5).collect(), &params, &uri, "http://127.0.0.1:1");
        assert_eq!(page, vec![1, 2]);
        let link = link.unwrap();
        assert!(
            link.contains(
                "<http://127.0.0.1:1/repos/o/r/issues?labels=a%2Cb&per_page=2&page=2>; rel=\"next\""
            ),
            "{link}"
        );
        assert!(link.contains("page=3>; rel=\"last\""), "{link}");
        let (page, link) = paginate(vec![1], &params, &uri, "http://x");
        assert_eq!((page, link), (vec![1], None));
    }
}
