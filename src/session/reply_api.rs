//! `POST /api/v1/sessions/reply` (SPEC §8.2) on the supervisor's loopback server: the
//! HTTP entry point to [`Replier::reply`]. The supervisor mounts [`router`] into the
//! app it hands to `server::start`, which puts the `Origin` check in front of it.
//!
//! Body: `{"ref": "github:octo/repo#15", "text": "…", "actor"?: "alice", "comment"?:
//! true}` as `application/json` — a content type a web page cannot send cross-origin
//! without a preflight, which this server never answers. Every answer is JSON: `200
//! {"ok": true, …}` or the error's status with `{"error": "…"}`.

use super::reply::{Replied, Replier, ReplyRequest, Report, Via};
use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

/// The route's path.
pub const REPLY_PATH: &str = "/api/v1/sessions/reply";

/// A reply body larger than this is refused (413) before it is parsed.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ApiRequest {
    #[serde(rename = "ref")]
    work_item: String,
    text: String,
    #[serde(default)]
    actor: Option<String>,
    #[serde(default)]
    comment: Option<bool>,
}

/// The reply route, ready to merge into the supervisor's app.
pub fn router(replier: Arc<Replier>) -> Router {
    Router::new()
        .route(REPLY_PATH, post(handle))
        .with_state(replier)
}

async fn handle(State(replier): State<Arc<Replier>>, headers: HeaderMap, body: Body) -> Response {
    if !is_json(&headers) {
        return error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "send the reply as `Content-Type: application/json`",
        );
    }
    let Ok(bytes) = to_bytes(body, MAX_BODY_BYTES).await else {
        return error(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("the body is over {MAX_BODY_BYTES} bytes (or was cut off)"),
        );
    };
    let parsed: ApiRequest = match serde_json::from_slice(&bytes) {
        Ok(parsed) => parsed,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                &format!(
                    "invalid body: {e}; expected {{\"ref\": \"github:owner/repo#N\", \"text\": \"…\", \"actor\"?: \"name\", \"comment\"?: true}}"
                ),
            );
        }
    };
    let request = ReplyRequest {
        work_item: parsed.work_item,
        text: parsed.text,
        actor: parsed.actor,
        comment: parsed.comment.unwrap_or(true),
        via: Via::Api,
    };
    match replier.reply(request).await {
        Ok(replied) => (StatusCode::OK, axum::Json(success(&replied))).into_response(),
        Err(e) => error(
            StatusCode::from_u16(e.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            &e.to_string(),
        ),
    }
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

fn success(replied: &Replied) -> Value {
    let mut out = json!({
        "ok": true,
        "work_item": replied.work_item.to_string(),
        "pane": replied.pane.to_string(),
        "bytes": replied.bytes,
        "actor": replied.actor,
        "comment_posted": matches!(replied.report, Report::Posted { .. }),
    });
    match &replied.report {
        Report::Posted { url } => out["comment_url"] = Value::from(url.as_str()),
        Report::Failed { error } => out["warning"] = Value::from(error.as_str()),
        Report::Skipped => {}
    }
    out
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(json!({ "error": message }))).into_response()
}
