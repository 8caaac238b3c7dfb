//! A pull request's diff and the reviews written through the API, in the simulated
//! GitHub (SPEC §21.4): `GET /repos/{o}/{r}/pulls/{n}/files` lists the files a test
//! gave the pull request ([`SimControl::set_pull_files`], `Link`-paginated), and
//! `POST /repos/{o}/{r}/pulls/{n}/reviews` creates a submitted review with its line
//! comments, as the token's login.
//!
//! GitHub's refusals, as 422 `Unprocessable Entity` with an `errors` entry: a missing
//! or unknown `event` (only `COMMENT`, `APPROVE` and `REQUEST_CHANGES`), `COMMENT`
//! without a `body`, a comment without `path`, `line` or `body`, a `side` other than
//! `RIGHT` (the old side is not simulated), and a line outside the hunks of the file's
//! `patch` (`Line could not be resolved`): then nothing of the review is created.

use super::routes::{ApiError, Params, Shared, find_repo, json, list_response, paginate};
use super::state::SimState;
use super::{SimControl, SimError, lock, shapes};
use crate::github::DiffLines;
use axum::body::Bytes;
use axum::extract::{OriginalUri, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// One file of a pull request's diff: its path and its unified-diff `patch` (`None`
/// for a binary file or one too large, as GitHub leaves it out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullFile {
    pub filename: String,
    pub patch: Option<String>,
}

/// A review as the simulator holds it, with the line comments it was created with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimReview {
    pub id: u64,
    pub login: String,
    pub state: String,
    pub body: String,
    pub comments: Vec<SimLineComment>,
}

/// A review comment on a line (new side).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimLineComment {
    pub id: u64,
    pub path: String,
    pub line: u64,
    /// The first line of a comment on several lines.
    pub start_line: Option<u64>,
    pub body: String,
}

impl SimControl {
    /// Sets the files of pull request `number`'s diff: `(filename, patch)`.
    pub fn set_pull_files(
        &self,
        repo: &str,
        number: u64,
        files: &[(&str, Option<&str>)],
    ) -> Result<(), SimError> {
        let mut s = self.state();
        s.issue_mut(repo, number)?
            .pull
            .as_ref()
            .ok_or_else(|| SimError::NotAPull(repo.to_string(), number))?;
        let files = files
            .iter()
            .map(|(name, patch)| PullFile {
                filename: name.to_string(),
                patch: patch.map(str::to_string),
            })
            .collect();
        s.repo_mut(repo)?.pull_files.insert(number, files);
        Ok(())
    }

    /// The reviews of pull request `number`, oldest first, each with its line comments.
    pub fn reviews_on(&self, repo: &str, number: u64) -> Vec<SimReview> {
        let s = self.state();
        let Some(r) = s.repo(repo) else {
            return Vec::new();
        };
        r.reviews
            .values()
            .filter(|v| v.number == number)
            .map(|v| SimReview {
                id: v.id,
                login: v.login.clone(),
                state: v.state.clone(),
                body: v.body.clone(),
                comments: r
                    .review_comments
                    .values()
                    .filter(|c| c.review_id == Some(v.id))
                    .map(|c| SimLineComment {
                        id: c.id,
                        path: c.path.clone(),
                        line: c.line,
                        start_line: c.start_line,
                        body: c.body.clone(),
                    })
                    .collect(),
            })
            .collect()
    }
}

/// `GET /repos/{o}/{r}/pulls/{n}/files`.
pub(super) async fn list_files(
    State(shared): State<Shared>,
    Path((owner, repo, number)): Path<(String, String, String)>,
    Query(params): Params,
    OriginalUri(uri): OriginalUri,
) -> Response {
    let s = lock(&shared);
    let r = match find_repo(&s, &owner, &repo) {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    let Some(number) = number
        .parse::<u64>()
        .ok()
        .filter(|n| r.issues.get(n).is_some_and(|i| i.pull.is_some()))
    else {
        return ApiError::not_found().into_response();
    };
    let files: Vec<&PullFile> = r.pull_files.get(&number).into_iter().flatten().collect();
    let (page, link) = paginate(files, &params, &uri, &s.api_base);
    let values = page.into_iter().map(file_shape).collect();
    list_response(values, link)
}

fn file_shape(file: &PullFile) -> Value {
    let changes = file.patch.as_deref().map_or(0, |p| {
        p.lines()
            .filter(|l| l.starts_with('+') || l.starts_with('-'))
            .count()
    });
    let mut value = json!({
        "sha": format!("{:040x}", file.filename.len()),
        "filename": file.filename,
        "status": "modified",
        "changes": changes,
    });
    if let Some(patch) = &file.patch {
        value["patch"] = Value::String(patch.clone());
    }
    value
}

/// A comment of the review as asked for.
struct Wanted {
    path: String,
    line: u64,
    start_line: Option<u64>,
    body: String,
}

/// `POST /repos/{o}/{r}/pulls/{n}/reviews`.
pub(super) async fn create_review(
    State(shared): State<Shared>,
    Path((owner, repo, number)): Path<(String, String, String)>,
    bytes: Bytes,
) -> Response {
    let mut s = lock(&shared);
    let full = format!("{owner}/{repo}");
    let made = requested(&bytes).and_then(|(state, body, comments)| {
        let number = number.parse::<u64>().map_err(|_| ApiError::not_found())?;
        write(&mut s, &full, number, &state, &body, &comments)
    });
    let id = match made {
        Ok(id) => id,
        Err(e) => return e.into_response(),
    };
    let r = match find_repo(&s, &owner, &repo) {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    match r.reviews.get(&id) {
        Some(v) => json(StatusCode::OK, shapes::review(&s, r, v)),
        None => {
            ApiError(StatusCode::INTERNAL_SERVER_ERROR, "review vanished".into()).into_response()
        }
    }
}

/// The review's state, body and comments, or GitHub's refusal.
fn requested(bytes: &Bytes) -> Result<(String, String, Vec<Wanted>), ApiError> {
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|_| ApiError(StatusCode::BAD_REQUEST, "Problems parsing JSON".into()))?;
    let body = value["body"].as_str().unwrap_or_default().to_string();
    let state = match value["event"].as_str() {
        Some("COMMENT") if body.is_empty() => return Err(unprocessable("Body is required")),
        Some("COMMENT") => "COMMENTED",
        Some("APPROVE") => "APPROVED",
        Some("REQUEST_CHANGES") => "CHANGES_REQUESTED",
        _ => {
            return Err(unprocessable(
                "Unknown or missing event (PENDING is not simulated)",
            ));
        }
    };
    let mut comments = Vec::new();
    for c in value["comments"].as_array().into_iter().flatten() {
        let (Some(path), Some(line), Some(text)) =
            (c["path"].as_str(), c["line"].as_u64(), c["body"].as_str())
        else {
            return Err(unprocessable("A comment needs path, line and body"));
        };
        let side = |key: &str| c.get(key).and_then(Value::as_str).unwrap_or("RIGHT");
        if side("side") != "RIGHT" || side("start_side") != "RIGHT" {
            return Err(unprocessable("Only side RIGHT is simulated"));
        }
        let start_line = c.get("start_line").and_then(Value::as_u64);
        if start_line.is_some_and(|s| s >= line) {
            return Err(unprocessable("start_line must precede line"));
        }
        comments.push(Wanted {
            path: path.to_string(),
            line,
            start_line,
            body: text.to_string(),
        });
    }
    Ok((state.to_string(), body, comments))
}

/// Checks every comment against the diff, then creates the review and its comments.
fn write(
    s: &mut SimState,
    repo: &str,
    number: u64,
    state: &str,
    body: &str,
    comments: &[Wanted],
) -> Result<u64, ApiError> {
    let not_found = |_| ApiError::not_found();
    let files = {
        let r = s.repo(repo).ok_or_else(ApiError::not_found)?;
        let issue = r.issues.get(&number).ok_or_else(ApiError::not_found)?;
        if issue.pull.is_none() {
            return Err(ApiError::not_found());
        }
        r.pull_files.get(&number).cloned().unwrap_or_default()
    };
    let mut diff = DiffLines::default();
    for file in &files {
        diff.add_patch(&file.filename, file.patch.as_deref().unwrap_or(""));
    }
    let number32 = |n: u64| u32::try_from(n).unwrap_or(0);
    for c in comments {
        let (line, start) = (number32(c.line), c.start_line.map_or(0, number32));
        let placed = match c.start_line {
            Some(_) => diff.contains_range(&c.path, start, line),
            None => diff.contains(&c.path, line),
        };
        if !placed {
            return Err(unprocessable("Line could not be resolved"));
        }
    }
    let login = s.bot_login.clone();
    let id = s
        .create_review(repo, number, &login, state, body)
        .map_err(not_found)?;
    for c in comments {
        let comment = s
            .create_review_comment(repo, number, &login, &c.path, c.line, &c.body)
            .map_err(not_found)?;
        if let Some(made) = s
            .repo_mut(repo)
            .map_err(not_found)?
            .review_comments
            .get_mut(&comment)
        {
            made.review_id = Some(id);
            made.start_line = c.start_line;
        }
    }
    Ok(id)
}

fn unprocessable(message: &str) -> ApiError {
    ApiError(
        StatusCode::UNPROCESSABLE_ENTITY,
        format!("Unprocessable Entity: {message}"),
    )
}
