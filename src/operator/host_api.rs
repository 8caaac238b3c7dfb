//! The routes only another host's socket serves ([`OperatorApi::host_router`],
//! forwarded over its SSH connection), besides `ask` and `comment`:
//!
//! - the harness's hook reports, `POST /api/v1/sessions/hook`
//!   `{"ref", "harness", "payload"}`, recorded as `the-loop hook` records one here;
//! - ship requests, `POST /api/v1/sessions/propose` `{"ref", "title", "body", "draft"?}`
//!   ([`ship::propose_from_host`], the worktree read there);
//! - a session's usage as the-loop there keeps it, `POST /api/v1/sessions/usage`
//!   `{"ref", "usage"}` (`session::usage::take_from_host`).
//!
//! Each only for a session open on that host: a peer's pid cannot tell its pane across
//! a forward, so the host is the boundary.

use super::api::{
    ASK_PATH, COMMENT_PATH, FromHost, HOOK_PATH, OperatorApi, PROPOSE_PATH, USAGE_PATH, ask_route,
    comment_route, error, internal, read_json,
};
use crate::events::Source;
use crate::session::hooks::{Reporter, report};
use crate::session::ship;
use crate::work_item::WorkItemRef;
use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::json;
use std::sync::Arc;

impl OperatorApi {
    /// The routes an agent on `host` may use (`ask`, `comment`, and those below), for
    /// that host's socket; any other (`reply`: the operator's) is refused `not-served`.
    /// Everything there is taken as coming from some process on `host`.
    pub fn host_router(self: Arc<Self>, host: &str) -> Router {
        Router::new()
            .route(ASK_PATH, post(ask_route))
            .route(COMMENT_PATH, post(comment_route))
            .route(HOOK_PATH, post(hook_route))
            .route(PROPOSE_PATH, post(propose_route))
            .route(USAGE_PATH, post(usage_route))
            .fallback(not_served_to_host)
            .layer(axum::Extension(FromHost(host.to_string())))
            .with_state(self)
    }

    /// A request's body from `host`, and the work item it names when that item has an
    /// open session there; else the refusal to answer.
    async fn host_request<T: DeserializeOwned + NamesItem>(
        &self,
        host: &FromHost,
        headers: &HeaderMap,
        body: Body,
        expected: &str,
    ) -> Result<(T, WorkItemRef), Box<Response>> {
        let parsed: T = read_json(headers, body, expected).await.map_err(Box::new)?;
        let item: WorkItemRef =
            parsed
                .work_item()
                .trim()
                .parse()
                .map_err(|e: crate::work_item::RefError| {
                    Box::new(error(StatusCode::BAD_REQUEST, "bad-ref", &e.to_string()))
                })?;
        self.on_host(&item, host)?;
        Ok((parsed, item))
    }

    /// `Err(refusal)` unless `item` has an open session on `host`.
    pub(super) fn on_host(&self, item: &WorkItemRef, host: &FromHost) -> Result<(), Box<Response>> {
        let record = self.sessions.registry().get(item).ok().flatten();
        match record {
            Some(r) if r.status.is_open() && r.host.as_deref() == Some(host.0.as_str()) => Ok(()),
            _ => Err(Box::new(error(
                StatusCode::FORBIDDEN,
                "other-host",
                &format!(
                    "{item} has no open session on host `{}`: an agent there acts only for its host's sessions",
                    host.0
                ),
            ))),
        }
    }
}

/// A body that names the session's work item (`"ref"`).
trait NamesItem {
    fn work_item(&self) -> &str;
}

macro_rules! names_item {
    ($($body:ty),*) => {$(
        impl NamesItem for $body {
            fn work_item(&self) -> &str {
                &self.work_item
            }
        }
    )*};
}
names_item!(HookBody, ProposeBody, UsageBody);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HookBody {
    /// The reporting session's item.
    #[serde(rename = "ref")]
    work_item: String,
    /// `claude` or `codex`.
    harness: Reporter,
    /// The harness's payload, as it gave it to the hook.
    payload: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProposeBody {
    /// The proposing session's own item.
    #[serde(rename = "ref")]
    work_item: String,
    title: String,
    #[serde(default)]
    body: String,
    #[serde(default)]
    draft: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UsageBody {
    /// The session's item.
    #[serde(rename = "ref")]
    work_item: String,
    usage: crate::usage::SessionUsage,
}

/// A session's usage from the socket's host (`hook-usage` there, after a turn).
async fn usage_route(
    State(api): State<Arc<OperatorApi>>,
    axum::Extension(host): axum::Extension<FromHost>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    const EXPECTED: &str = r#"{"ref": "github:owner/repo#N", "usage": {…}}"#;
    let (parsed, item): (UsageBody, _) =
        match api.host_request(&host, &headers, body, EXPECTED).await {
            Ok(taken) => taken,
            Err(refused) => return *refused,
        };
    let task = Arc::clone(&api);
    let done = tokio::task::spawn_blocking(move || {
        let budgets = task.sessions.settings().budgets.clone();
        crate::session::usage::take_from_host(
            task.sessions.registry(),
            &task.events,
            &item,
            parsed.usage,
            &budgets,
        )
    })
    .await;
    match done {
        Ok(Ok(_)) => (StatusCode::OK, axum::Json(json!({"ok": true}))).into_response(),
        Ok(Err(e)) => error(StatusCode::INTERNAL_SERVER_ERROR, "state", &e.to_string()),
        Err(e) => internal(&e),
    }
}

/// A ship request from a session on the socket's host (`the-loop propose` there).
async fn propose_route(
    State(api): State<Arc<OperatorApi>>,
    axum::Extension(host): axum::Extension<FromHost>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    const EXPECTED: &str =
        r#"{"ref": "github:owner/repo#N", "title": "…", "body"?: "…", "draft"?: true}"#;
    let (parsed, item): (ProposeBody, _) =
        match api.host_request(&host, &headers, body, EXPECTED).await {
            Ok(taken) => taken,
            Err(refused) => return *refused,
        };
    let proposal = ship::Proposal {
        title: parsed.title,
        body: parsed.body,
        draft: parsed.draft,
    };
    let task = Arc::clone(&api);
    let done = tokio::spawn(async move {
        ship::propose_from_host(&task.sessions, &item, &proposal, Source::Cli).await
    })
    .await;
    match done {
        Ok(Ok((request, shown))) => {
            let proposed = ship::Proposed::new(&request, &shown);
            let body = json!({
                "ok": true,
                "request_id": proposed.id,
                "branch": proposed.branch,
                "head": proposed.head,
                "summary": proposed.summary,
            });
            (StatusCode::OK, axum::Json(body)).into_response()
        }
        Ok(Err(refusal)) => error(
            if refusal.is_usage() {
                StatusCode::BAD_REQUEST
            } else {
                StatusCode::CONFLICT
            },
            refusal.code(),
            &refusal.to_string(),
        ),
        Err(e) => internal(&e),
    }
}

/// A hook report from a session on the socket's host: recorded in this supervisor's
/// state, as `the-loop hook` records one on this machine (its usage log is left out).
async fn hook_route(
    State(api): State<Arc<OperatorApi>>,
    axum::Extension(host): axum::Extension<FromHost>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    const EXPECTED: &str =
        r#"{"ref": "github:owner/repo#N", "harness": "claude|codex", "payload": "{…}"}"#;
    let (parsed, item): (HookBody, _) =
        match api.host_request(&host, &headers, body, EXPECTED).await {
            Ok(taken) => taken,
            Err(refused) => return *refused,
        };
    let paths = crate::paths::StatePaths::new(&api.sessions.settings().home);
    let done = tokio::task::spawn_blocking(move || {
        report::record_from_host(&paths, &item, parsed.harness, parsed.payload.as_bytes())
    })
    .await;
    match done {
        Ok(Ok(outcomes)) => (
            StatusCode::OK,
            axum::Json(json!({"ok": true, "outcomes": outcomes.len()})),
        )
            .into_response(),
        Ok(Err(e)) => error(StatusCode::BAD_REQUEST, "bad-report", &e.to_string()),
        Err(e) => internal(&e),
    }
}

/// What a process on a host asked for that is not served there: the operator's routes
/// (`reply`) are this machine's only.
async fn not_served_to_host(
    axum::Extension(FromHost(host)): axum::Extension<FromHost>,
    uri: axum::http::Uri,
) -> Response {
    error(
        StatusCode::NOT_FOUND,
        "not-served",
        &format!(
            "`{}` is not served to host `{host}`: an agent there may ask, comment and propose, and its hooks report; replying to a session is the operator's, from the machine the supervisor runs on",
            uri.path()
        ),
    )
}
