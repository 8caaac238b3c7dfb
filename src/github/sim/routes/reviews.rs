//! The simulated GitHub's pull-request review endpoints: review comments (listed,
//! read one by one, replied to in their thread) and reviews.

use super::super::shapes;
use super::super::state::Repo;
use super::super::{SimState, lock};
use super::{
    ApiError, ItemPath, Params, Shared, body_field, created, error, find_item, find_repo, json,
    list_response, paginate, sim_error, threaded_list,
};
use axum::body::Bytes;
use axum::extract::{OriginalUri, Path, Query, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;

/// Review comments, repo-wide (`number: None`) or of one PR.
fn review_comments_response(
    s: &SimState,
    r: &Repo,
    number: Option<u64>,
    params: &HashMap<String, String>,
    uri: &Uri,
) -> Response {
    threaded_list(s, &r.review_comments, number, params, uri, |c| {
        shapes::review_comment(s, r, c)
    })
}

pub(super) async fn list_repo_review_comments(
    State(shared): State<Shared>,
    Path((owner, repo)): Path<(String, String)>,
    Query(params): Params,
    OriginalUri(uri): OriginalUri,
) -> Response {
    let s = lock(&shared);
    let r = or_respond!(find_repo(&s, &owner, &repo));
    review_comments_response(&s, r, None, &params, &uri)
}

pub(super) async fn list_pull_review_comments(
    State(shared): State<Shared>,
    Path((owner, repo, number)): ItemPath,
    Query(params): Params,
    OriginalUri(uri): OriginalUri,
) -> Response {
    let s = lock(&shared);
    let r = or_respond!(find_repo(&s, &owner, &repo));
    let issue = or_respond!(find_item(r, &number));
    review_comments_response(&s, r, Some(issue.number), &params, &uri)
}

/// `GET /repos/{o}/{r}/pulls/comments/{id}`: one review comment.
pub(super) async fn get_review_comment(
    State(shared): State<Shared>,
    Path((owner, repo, id)): ItemPath,
) -> Response {
    let s = lock(&shared);
    let r = or_respond!(find_repo(&s, &owner, &repo));
    match id
        .parse::<u64>()
        .ok()
        .and_then(|id| r.review_comments.get(&id))
    {
        Some(c) => json(StatusCode::OK, shapes::review_comment(&s, r, c)),
        None => error(StatusCode::NOT_FOUND, "Not Found"),
    }
}

/// `POST /repos/{o}/{r}/pulls/{n}/comments/{id}/replies`: a reply in the thread of
/// review comment `id`, which must be on PR `n` (else 404, as GitHub answers).
pub(super) async fn reply_to_review_comment(
    State(shared): State<Shared>,
    Path((owner, repo, number, id)): Path<(String, String, String, String)>,
    body: Bytes,
) -> Response {
    let text = or_respond!(body_field(&body));
    let mut s = lock(&shared);
    let full = format!("{owner}/{repo}");
    let parse = |v: &str| v.parse::<u64>().map_err(|_| ApiError::not_found());
    let (n, to) = (or_respond!(parse(&number)), or_respond!(parse(&id)));
    let login = s.bot_login.clone();
    let id = or_respond!(
        s.reply_to_review_comment(&full, n, to, &login, &text)
            .map_err(sim_error)
    );
    let r = or_respond!(find_repo(&s, &owner, &repo));
    let Some(c) = r.review_comments.get(&id) else {
        return error(StatusCode::INTERNAL_SERVER_ERROR, "comment vanished");
    };
    created(shapes::review_comment(&s, r, c))
}

pub(super) async fn list_reviews(
    State(shared): State<Shared>,
    Path((owner, repo, number)): ItemPath,
    Query(params): Params,
    OriginalUri(uri): OriginalUri,
) -> Response {
    let s = lock(&shared);
    let r = or_respond!(find_repo(&s, &owner, &repo));
    let issue = or_respond!(find_item(r, &number));
    if issue.pull.is_none() {
        return error(StatusCode::NOT_FOUND, "Not Found");
    }
    let items: Vec<_> = r
        .reviews
        .values()
        .filter(|v| v.number == issue.number)
        .collect();
    let (page, link) = paginate(items, &params, &uri, &s.api_base);
    let values = page.into_iter().map(|v| shapes::review(&s, r, v)).collect();
    list_response(values, link)
}
