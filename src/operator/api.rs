//! The operator routes, served on the supervisor's Unix socket (never on TCP):
//!
//! - `POST /api/v1/sessions/reply` `{"ref", "text", "actor"?, "comment"?}` →
//!   [`Replier::reply`] (SPEC §8.2);
//! - `POST /api/v1/sessions/ask` `{"ref", "question", "session"?}` → [`ask::ask`] with the
//!   supervisor's GitHub client (SPEC §8.1, §14.4), so an agent needs no token;
//! - `POST /api/v1/sessions/comment` `{"ref", "body", "reply_to"?}` →
//!   [`Commenter::comment`] with the supervisor's client, registry and
//!   `sessions.commentsPerMinute` (SPEC §19.2): an agent's words on its own item.
//!
//! Another host's agents reach the supervisor through a socket of their host's own
//! ([`OperatorApi::host_router`], forwarded over its SSH connection): `ask`, `comment`
//! and the routes only a host has ([`super::host_api`]), only for sessions on that
//! host.
//!
//! Bodies are `application/json` (at most [`MAX_BODY_BYTES`], unknown fields refused).
//! Every answer is JSON: `200 {"ok": true, …}` or the error's status with `{"error":
//! "…", "reason": "…"}`. The work runs in its own task: a client that hangs up halfway
//! does not cut a paste short.

use crate::events::EventLog;
use crate::github::Client;
use crate::session::Sessions;
use crate::session::ask::{self, Ask, Asked, question_text};
use crate::session::comment::{CommentRequest, Commented, Commenter};
use crate::session::reply::{Replied, Replier, ReplyError, ReplyRequest, Report, Via};
use crate::work_item::WorkItemRef;
use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::sync::Arc;

/// The reply route.
pub const REPLY_PATH: &str = "/api/v1/sessions/reply";
/// The ask route.
pub const ASK_PATH: &str = "/api/v1/sessions/ask";
/// The comment route.
pub const COMMENT_PATH: &str = "/api/v1/sessions/comment";
/// A remote session's hook report (served only on a host's socket).
pub const HOOK_PATH: &str = "/api/v1/sessions/hook";
/// A remote session's ship request, `the-loop propose` there (only on a host's socket:
/// here the command records it itself, its pane checked by its process).
pub const PROPOSE_PATH: &str = "/api/v1/sessions/propose";
/// A remote session's usage as the-loop there keeps it (only on a host's socket).
pub const USAGE_PATH: &str = "/api/v1/sessions/usage";

/// `the-loop reply` names itself with this header (value `cli`), so its reply is
/// recorded `via: cli` whether it ran in-process or here. Audit only.
pub const CLIENT_HEADER: &str = "x-the-loop-client";

/// A body larger than this is refused (413) before it is parsed.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// A request came in on the socket of this host (`hosts[].name`).
#[derive(Debug, Clone)]
pub(super) struct FromHost(pub(super) String);

/// What the routes act with: the supervisor's own sessions, client and event log.
pub struct OperatorApi {
    replier: Replier,
    pub(super) sessions: Arc<Sessions>,
    github: Arc<Client>,
    pub(super) events: EventLog,
}

impl OperatorApi {
    pub fn new(sessions: Arc<Sessions>, github: Arc<Client>, events: EventLog) -> Self {
        Self {
            replier: Replier::new(Arc::clone(&sessions)).with_github(Arc::clone(&github)),
            sessions,
            github,
            events,
        }
    }

    /// The routes, ready for the operator socket (behind `server::guarded`).
    pub fn router(self: Arc<Self>) -> Router {
        Router::new()
            .route(REPLY_PATH, post(reply))
            .route(ASK_PATH, post(ask_route))
            .route(COMMENT_PATH, post(comment_route))
            .fallback(not_served)
            .with_state(self)
    }

    /// Whether the supervisor posts on `item` for an agent: a configured repository,
    /// or an item that has a session. Anything else would let any local process make
    /// the operator's token write anywhere it can.
    fn posts_on(&self, item: &WorkItemRef) -> bool {
        let full = item.repo_full_name();
        let configured = self
            .sessions
            .settings()
            .repos
            .iter()
            .any(|r| r.name.eq_ignore_ascii_case(&full));
        configured || matches!(self.sessions.registry().get(item), Ok(Some(_)))
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplyBody {
    #[serde(rename = "ref")]
    work_item: String,
    text: String,
    #[serde(default)]
    actor: Option<String>,
    #[serde(default)]
    comment: Option<bool>,
    /// The operator confirmed delivering to a session over its budget.
    #[serde(default, rename = "overBudget")]
    over_budget: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AskBody {
    #[serde(rename = "ref")]
    work_item: String,
    question: String,
    /// The asking session's own item, when it asks on another one.
    #[serde(default)]
    session: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CommentBody {
    /// The commenting session's own item.
    #[serde(rename = "ref")]
    work_item: String,
    body: String,
    #[serde(default)]
    reply_to: Option<u64>,
}

async fn reply(State(api): State<Arc<OperatorApi>>, headers: HeaderMap, body: Body) -> Response {
    const EXPECTED: &str = r#"{"ref": "github:owner/repo#N", "text": "…", "actor"?: "name", "comment"?: true, "overBudget"?: false}"#;
    let parsed: ReplyBody = match read_json(&headers, body, EXPECTED).await {
        Ok(parsed) => parsed,
        Err(refused) => return refused,
    };
    let cli = headers
        .get(CLIENT_HEADER)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"cli"));
    let request = ReplyRequest {
        work_item: parsed.work_item,
        text: parsed.text,
        actor: parsed.actor,
        comment: parsed.comment.unwrap_or(true),
        via: if cli { Via::Cli } else { Via::Api },
        over_budget: parsed.over_budget,
    };
    let task = Arc::clone(&api);
    let done = tokio::spawn(async move { task.replier.reply(request).await }).await;
    match done {
        Ok(Ok(replied)) => (StatusCode::OK, axum::Json(replied_json(&replied))).into_response(),
        // Queued, not refused (SPEC §18.3): 202 with the id the client waits on.
        Ok(Err(ReplyError::Held { item, reason, id })) => {
            let message = ReplyError::Held {
                item: item.clone(),
                reason,
                id: id.clone(),
            }
            .to_string();
            let body = json!({
                "ok": false,
                "held": true,
                "work_item": item,
                "reason": reason.as_str(),
                "reply_id": id,
                "error": message,
            });
            (StatusCode::ACCEPTED, axum::Json(body)).into_response()
        }
        Ok(Err(e)) => error(
            StatusCode::from_u16(e.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            e.code(),
            &e.to_string(),
        ),
        Err(e) => internal(&e),
    }
}

pub(super) async fn ask_route(
    State(api): State<Arc<OperatorApi>>,
    host: Option<axum::Extension<FromHost>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    const EXPECTED: &str =
        r#"{"ref": "github:owner/repo#N", "question": "…", "session"?: "github:owner/repo#M"}"#;
    let parsed: AskBody = match read_json(&headers, body, EXPECTED).await {
        Ok(parsed) => parsed,
        Err(refused) => return refused,
    };
    let bad_ref =
        |e: crate::work_item::RefError| error(StatusCode::BAD_REQUEST, "bad-ref", &e.to_string());
    let item: WorkItemRef = match parsed.work_item.trim().parse() {
        Ok(item) => item,
        Err(e) => return bad_ref(e),
    };
    let session = match parsed.session.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(s) => match s.parse::<WorkItemRef>() {
            Ok(session) => Some(session),
            Err(e) => return bad_ref(e),
        },
    };
    // From another host: the asking session (its own item, or the one it names) is
    // one of that host's.
    if let Some(axum::Extension(host)) = &host
        && let Err(refused) = api.on_host(session.as_ref().unwrap_or(&item), host)
    {
        return *refused;
    }
    let question = match question_text(&parsed.question) {
        Ok(question) => question,
        Err(e) => return error(StatusCode::BAD_REQUEST, "bad-question", &e.to_string()),
    };
    // The peer runs as our uid (the socket checks it), so the local user is theirs too.
    let request = Ask::new(item, question, session, ask::local_user());
    let task = Arc::clone(&api);
    let done = tokio::spawn(async move {
        let github = if task.posts_on(&request.work_item) {
            Ok(task.github.as_ref())
        } else {
            Err(format!(
                "the supervisor posts questions only on configured repositories or items with a session, and {} is neither",
                request.work_item
            ))
        };
        let asked = ask::ask(github, &task.events, &request).await;
        (request, asked)
    })
    .await;
    match done {
        Ok((request, asked)) => {
            (StatusCode::OK, axum::Json(asked_json(&request, &asked))).into_response()
        }
        Err(e) => internal(&e),
    }
}

pub(super) async fn comment_route(
    State(api): State<Arc<OperatorApi>>,
    host: Option<axum::Extension<FromHost>>,
    peer: Option<axum::Extension<crate::server::PeerPid>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    const EXPECTED: &str = r#"{"ref": "github:owner/repo#N", "body": "…", "reply_to"?: 123}"#;
    let parsed: CommentBody = match read_json(&headers, body, EXPECTED).await {
        Ok(parsed) => parsed,
        Err(refused) => return refused,
    };
    let work_item: WorkItemRef = match parsed.work_item.trim().parse() {
        Ok(item) => item,
        Err(e) => return error(StatusCode::BAD_REQUEST, "bad-ref", &e.to_string()),
    };
    // An agent comments only on its own item, whatever `$THE_LOOP_WORK_ITEM` says: here
    // by its pane; from another host, by that host's sessions.
    if let Some(axum::Extension(host)) = &host {
        if let Err(refused) = api.on_host(&work_item, host) {
            return *refused;
        }
    } else if let Some(axum::Extension(crate::server::PeerPid(pid))) = peer
        && let Err(own) = crate::session::caller::check(&api.sessions, &work_item, pid).await
    {
        let e = crate::session::comment::CommentError::OtherSession {
            own: own.to_string(),
            item: work_item.to_string(),
        };
        return error(StatusCode::FORBIDDEN, e.reason(), &e.to_string());
    }
    let request = CommentRequest {
        work_item,
        body: parsed.body,
        reply_to: parsed.reply_to,
    };
    let task = Arc::clone(&api);
    let done = tokio::spawn(async move {
        let commenter = Commenter {
            registry: task.sessions.registry(),
            github: &task.github,
            events: &task.events,
            per_minute: task.sessions.settings().sessions.comments_per_minute,
        };
        commenter.comment(&request).await
    })
    .await;
    match done {
        Ok(Ok(commented)) => {
            (StatusCode::OK, axum::Json(commented_json(&commented))).into_response()
        }
        Ok(Err(e)) => error(
            StatusCode::from_u16(e.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            e.reason(),
            &e.to_string(),
        ),
        Err(e) => internal(&e),
    }
}

/// The body as `T`, or the refusal to answer with.
pub(super) async fn read_json<T: DeserializeOwned>(
    headers: &HeaderMap,
    body: Body,
    expected: &str,
) -> Result<T, Response> {
    if !is_json(headers) {
        return Err(error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "bad-request",
            "send the body as `Content-Type: application/json`",
        ));
    }
    let Ok(bytes) = to_bytes(body, MAX_BODY_BYTES).await else {
        return Err(error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "bad-request",
            &format!("the body is over {MAX_BODY_BYTES} bytes (or was cut off)"),
        ));
    };
    serde_json::from_slice(&bytes).map_err(|e| {
        error(
            StatusCode::BAD_REQUEST,
            "bad-request",
            &format!("invalid body: {e}; expected {expected}"),
        )
    })
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

fn replied_json(replied: &Replied) -> Value {
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

fn asked_json(request: &Ask, asked: &Asked) -> Value {
    let mut out = json!({
        "ok": true,
        "work_item": request.work_item.to_string(),
        "question_id": asked.question_id,
        "comment_posted": asked.comment.is_ok(),
    });
    match &asked.comment {
        Ok(comment) => out["comment_url"] = Value::from(comment.html_url.as_str()),
        Err(error) => out["error"] = Value::from(error.as_str()),
    }
    out
}

fn commented_json(commented: &Commented) -> Value {
    json!({
        "ok": true,
        "work_item": commented.work_item.to_string(),
        "url": commented.url,
        "chars": commented.chars,
        "reply_to": commented.reply_to,
    })
}

pub(super) fn internal(e: &tokio::task::JoinError) -> Response {
    error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        &format!("the request's task failed: {e}"),
    )
}

/// Any other path: refused as JSON like every refusal, so the client says what it is
/// (a the-loop of another version asking for a route this one does not have).
async fn not_served(uri: axum::http::Uri) -> Response {
    error(
        StatusCode::NOT_FOUND,
        "not-served",
        &format!(
            "the supervisor serves no `{}` (is it another version of the-loop? compare `the-loop --version` with the supervisor's)",
            uri.path()
        ),
    )
}

pub(super) fn error(status: StatusCode, reason: &str, message: &str) -> Response {
    (
        status,
        axum::Json(json!({ "error": message, "reason": reason })),
    )
        .into_response()
}
