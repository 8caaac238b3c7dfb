//! A local fake of the Anthropic Messages API that the real Claude Code talks to in
//! tests (SPEC §17.6): axum on `127.0.0.1:0`, `HEAD /` answered 200, and
//! `POST /v1/messages` answered as SSE (`stream: true`) or one JSON message.
//!
//! - A request with `tools` is the agent loop: it takes the next scripted [`Turn`]
//!   ("answer text X", "call Bash with command Y", "be slow for N s, then …"); with
//!   nothing scripted it answers `Done.`.
//! - A request without `tools` is a helper (the session title, structured output): it
//!   gets a small JSON text and never consumes a turn.
//!
//! Every request is recorded, so a test can check what reached the model: the user's
//! text of the last `role: user` message (`<system-reminder>` blocks skipped) and the
//! `tool_result` blocks that carry a tool's output back.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// One answer of the agent loop.
#[derive(Debug, Clone)]
pub enum Turn {
    /// Text, then `end_turn`.
    Text(String),
    /// A `Bash` tool call, then `tool_use`.
    Bash {
        command: String,
        description: String,
    },
    /// Any tool call.
    Tool { name: String, input: Value },
    /// Starts the message at once, waits, then streams the rest of the turn.
    Slow(Duration, Box<Turn>),
}

impl Turn {
    pub fn text(text: &str) -> Self {
        Self::Text(text.into())
    }

    pub fn bash(command: &str) -> Self {
        Self::Bash {
            command: command.into(),
            description: "Run a command for the test".into(),
        }
    }

    pub fn slow(after: Duration, then: Turn) -> Self {
        Self::Slow(after, Box::new(then))
    }
}

/// One request as it arrived.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    /// Path and query.
    pub uri: String,
    pub body: Value,
    pub at: Instant,
}

impl Recorded {
    /// A `POST /v1/messages` of the agent loop (it offers tools).
    pub fn is_agent_loop(&self) -> bool {
        self.is_messages()
            && self.body["tools"]
                .as_array()
                .is_some_and(|tools| !tools.is_empty())
    }

    pub fn is_messages(&self) -> bool {
        self.method == "POST" && self.uri.starts_with("/v1/messages")
    }

    /// The user's own text in the last `role: user` message.
    pub fn last_user_text(&self) -> Option<String> {
        last_user_text(&self.body)
    }

    /// The text of every message after the model's last answer, whatever its role:
    /// what this request brought the model. Claude Code sends a message submitted while
    /// a tool runs as a `system` message ("The user sent a new message while you were
    /// working: …") rather than a user turn, and now and then appends a `system`
    /// reminder after the user's message.
    pub fn fresh_text(&self) -> Option<String> {
        let messages = self.body["messages"].as_array()?;
        let fresh = messages
            .iter()
            .rposition(|m| m["role"] == "assistant")
            .map_or(0, |i| i + 1);
        let texts: Vec<String> = messages[fresh..]
            .iter()
            .filter_map(|message| match &message["content"] {
                Value::String(s) => Some(s.clone()),
                Value::Array(blocks) => Some(
                    blocks
                        .iter()
                        .filter_map(|b| b["text"].as_str())
                        .collect::<Vec<_>>()
                        .join("\n"),
                ),
                _ => None,
            })
            .collect();
        (!texts.is_empty()).then(|| texts.join("\n"))
    }

    /// `(tool_use_id, output)` of every `tool_result` block in the last user message.
    pub fn tool_results(&self) -> Vec<(String, String)> {
        tool_results(&self.body)
    }
}

#[derive(Default)]
struct ModelState {
    turns: VecDeque<Turn>,
    requests: Vec<Recorded>,
    next_id: u64,
    /// Report a different usage on every response ([`usage_of`]) instead of the same.
    varied_usage: bool,
    /// The model every response names, instead of the one the request asked for.
    answering_model: Option<String>,
    /// What each response reported: its id, whether it answered the agent loop, and
    /// the final usage.
    sent: Vec<Sent>,
    /// While set, every agent-loop request is answered with this error (issue 43).
    failing: Option<ApiError>,
}

/// An error the API answers with: 429 (`retry-after`), 529, 401, a usage limit.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl ApiError {
    /// The API's rate limit, `retry-after` seconds.
    pub fn rate_limit(retry_after: u32) -> Self {
        Self {
            status: 429,
            headers: vec![("retry-after".into(), retry_after.to_string())],
            body: json!({"type": "error", "error": {"type": "rate_limit_error",
                "message": "Number of request tokens has exceeded your per-minute rate limit"}}),
        }
    }

    pub fn overloaded() -> Self {
        Self {
            status: 529,
            headers: Vec::new(),
            body: json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        }
    }

    pub fn unauthorized() -> Self {
        Self {
            status: 401,
            headers: Vec::new(),
            body: json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}),
        }
    }

    /// A subscriber's usage limit resetting at `reset` (Unix seconds), as the API
    /// says it in its headers; Claude Code (logged in, not with an API key) prints it.
    pub fn usage_limit(reset: i64) -> Self {
        Self {
            status: 429,
            headers: vec![
                (
                    "anthropic-ratelimit-unified-status".into(),
                    "rejected".into(),
                ),
                (
                    "anthropic-ratelimit-unified-reset".into(),
                    reset.to_string(),
                ),
                (
                    "anthropic-ratelimit-unified-representative-claim".into(),
                    "five_hour".into(),
                ),
            ],
            body: json!({"type": "error", "error": {"type": "rate_limit_error",
                "message": "This request would exceed your account's rate limit. Please try again later."}}),
        }
    }
}

/// The usage one response reported.
#[derive(Debug, Clone)]
pub struct Sent {
    pub id: u64,
    pub agent_loop: bool,
    pub model: String,
    /// As the API states it at the end of the stream (`message_delta` carries the
    /// final `output_tokens`).
    pub usage: Value,
}

/// A different usage for every response `id`, every kind present over a few
/// responses: a 5-minute cache write on even ids, a 1-hour write on multiples of 3.
pub fn usage_of(id: u64) -> Value {
    let w5m = if id.is_multiple_of(2) { 40 * id } else { 0 };
    let w1h = if id.is_multiple_of(3) { 70 * id } else { 0 };
    json!({
        "input_tokens": 100 + 7 * id,
        "output_tokens": 20 + 3 * id,
        "cache_creation_input_tokens": w5m + w1h,
        "cache_read_input_tokens": 500 * id,
        "cache_creation": {"ephemeral_5m_input_tokens": w5m, "ephemeral_1h_input_tokens": w1h},
    })
}

/// A server of the tests on `127.0.0.1:0`; dropping it stops the server.
pub struct Loopback {
    pub addr: std::net::SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Loopback {
    pub async fn serve(app: Router) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
        });
        Self {
            addr,
            shutdown: Some(tx),
        }
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// The running fake; dropping it stops the server.
pub struct FakeModel {
    pub url: String,
    state: Arc<Mutex<ModelState>>,
    _server: Loopback,
}

impl FakeModel {
    pub async fn start() -> Self {
        let state = Arc::new(Mutex::new(ModelState::default()));
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&state));
        let server = Loopback::serve(app).await;
        Self {
            url: format!("http://{}", server.addr),
            state,
            _server: server,
        }
    }

    fn lock(&self) -> MutexGuard<'_, ModelState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues turns for the agent loop's next requests, in order.
    pub fn script(&self, turns: impl IntoIterator<Item = Turn>) {
        self.lock().turns.extend(turns);
    }

    /// From now on every response reports a different usage ([`usage_of`]).
    pub fn vary_usage(&self) {
        self.lock().varied_usage = true;
    }

    /// From now on every response names `model` as the model that answered, whichever
    /// the request asked for: a test that prices usage names its model and its price
    /// itself instead of depending on the client's default model.
    pub fn answer_as(&self, model: &str) {
        self.lock().answering_model = Some(model.to_string());
    }

    /// From now on every agent-loop request gets `error` (`None`: answered again).
    pub fn fail_with(&self, error: Option<ApiError>) {
        self.lock().failing = error;
    }

    /// The usage every response reported so far.
    pub fn sent(&self) -> Vec<Sent> {
        self.lock().sent.clone()
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.lock().requests.clone()
    }

    /// The agent loop's requests so far.
    pub fn agent_requests(&self) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(Recorded::is_agent_loop)
            .collect()
    }

    /// Waits until the agent loop has sent `n` requests.
    pub async fn wait_agent_requests(&self, n: usize, limit: Duration) -> Vec<Recorded> {
        let start = Instant::now();
        loop {
            let got = self.agent_requests();
            if got.len() >= n {
                return got;
            }
            assert!(
                start.elapsed() < limit,
                "timed out waiting for {n} agent-loop requests; got {}: {:#?}",
                got.len(),
                got.iter()
                    .map(|r| (r.last_user_text(), r.tool_results()))
                    .collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

async fn handle(
    State(state): State<Arc<Mutex<ModelState>>>,
    method: Method,
    uri: Uri,
    _headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let recorded = Recorded {
        method: method.to_string(),
        uri: uri.to_string(),
        body,
        at: Instant::now(),
    };
    if method == Method::HEAD || (method == Method::GET && uri.path() == "/") {
        record(&state, recorded);
        return StatusCode::OK.into_response();
    }
    if !recorded.is_messages() || uri.path() != "/v1/messages" {
        record(&state, recorded);
        return (StatusCode::NOT_FOUND, "not served by the fake model").into_response();
    }
    let failing = {
        let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
        let failing = st.failing.clone().filter(|_| recorded.is_agent_loop());
        if failing.is_some() {
            st.requests.push(recorded.clone());
        }
        failing
    };
    if let Some(error) = failing {
        let mut response = Response::builder().status(error.status);
        for (k, v) in &error.headers {
            response = response.header(k.as_str(), v.as_str());
        }
        return response
            .header("content-type", "application/json")
            .body(Body::from(error.body.to_string()))
            .unwrap();
    }
    let stream = recorded.body["stream"] == true;
    let (turn, id, usage, model) = {
        let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
        let model = st.answering_model.clone().unwrap_or_else(|| {
            recorded.body["model"]
                .as_str()
                .unwrap_or("claude-fake")
                .to_string()
        });
        st.next_id += 1;
        let id = st.next_id;
        let usage = if st.varied_usage {
            usage_of(id)
        } else {
            usage()
        };
        st.sent.push(Sent {
            id,
            agent_loop: recorded.is_agent_loop(),
            model: model.clone(),
            usage: usage.clone(),
        });
        let turn = if recorded.is_agent_loop() {
            st.turns.pop_front().unwrap_or_else(|| Turn::text("Done."))
        } else {
            // A helper request (session title, structured output): small JSON text.
            Turn::text(r#"{"title": "Test session", "isNewTopic": false}"#)
        };
        st.requests.push(recorded);
        (turn, id, usage, model)
    };
    if stream {
        sse(turn, id, &model, usage)
    } else {
        json_message(turn, id, &model, usage).await
    }
}

fn record(state: &Mutex<ModelState>, recorded: Recorded) {
    state
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .requests
        .push(recorded);
}

/// The delay before the turn's content, and the content blocks with the stop reason.
fn unwrap_slow(turn: Turn) -> (Duration, Turn) {
    match turn {
        Turn::Slow(after, then) => {
            let (more, then) = unwrap_slow(*then);
            (after + more, then)
        }
        other => (Duration::ZERO, other),
    }
}

fn tool_call(turn: &Turn, id: u64) -> Option<(String, String, Value)> {
    match turn {
        Turn::Bash {
            command,
            description,
        } => Some((
            format!("toolu_fake{id:04}"),
            "Bash".into(),
            json!({"command": command, "description": description}),
        )),
        Turn::Tool { name, input } => {
            Some((format!("toolu_fake{id:04}"), name.clone(), input.clone()))
        }
        _ => None,
    }
}

fn usage() -> Value {
    json!({"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
}

fn event(name: &str, data: Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

fn sse(turn: Turn, id: u64, model: &str, usage: Value) -> Response {
    let (delay, turn) = unwrap_slow(turn);
    let message_id = format!("msg_fake{id:04}");
    // As the API streams it: the start carries the input side and a first output
    // count, the delta the final output count.
    let mut start_usage = usage.clone();
    start_usage["output_tokens"] = json!(1);
    let start = event(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": message_id, "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null, "usage": start_usage
        }}),
    );
    let mut rest = Vec::new();
    let stop_reason = match tool_call(&turn, id) {
        Some((tool_id, name, input)) => {
            rest.push(event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                       "content_block": {"type": "tool_use", "id": tool_id, "name": name, "input": {}}}),
            ));
            rest.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                       "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}),
            ));
            "tool_use"
        }
        None => {
            let Turn::Text(text) = &turn else {
                unreachable!("slow turns are unwrapped")
            };
            rest.push(event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                       "content_block": {"type": "text", "text": ""}}),
            ));
            rest.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                       "delta": {"type": "text_delta", "text": text}}),
            ));
            "end_turn"
        }
    };
    rest.push(event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    ));
    rest.push(event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
               "usage": {"output_tokens": usage["output_tokens"]}}),
    ));
    rest.push(event("message_stop", json!({"type": "message_stop"})));
    let chunks = futures::stream::iter([(Duration::ZERO, start), (delay, Bytes::new())])
        .chain(futures::stream::iter(
            rest.into_iter().map(|b| (Duration::ZERO, b)),
        ))
        .then(|(wait, bytes)| async move {
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            Ok::<_, Infallible>(bytes)
        });
    Response::builder()
        .status(StatusCode::OK)
        .header("request-id", format!("req_fake{id:04}"))
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(Body::from_stream(chunks))
        .unwrap()
}

async fn json_message(turn: Turn, id: u64, model: &str, usage: Value) -> Response {
    let (delay, turn) = unwrap_slow(turn);
    tokio::time::sleep(delay).await;
    let (content, stop_reason) = match tool_call(&turn, id) {
        Some((tool_id, name, input)) => (
            json!([{"type": "tool_use", "id": tool_id, "name": name, "input": input}]),
            "tool_use",
        ),
        None => {
            let Turn::Text(text) = &turn else {
                unreachable!("slow turns are unwrapped")
            };
            (json!([{"type": "text", "text": text}]), "end_turn")
        }
    };
    axum::Json(json!({
        "id": format!("msg_fake{id:04}"), "type": "message", "role": "assistant",
        "model": model, "content": content, "stop_reason": stop_reason,
        "stop_sequence": null, "usage": usage
    }))
    .into_response()
}

use futures::StreamExt;

/// The user's own text in the last `role: user` message of a Messages request:
/// its text blocks (or string content), without `<system-reminder>` blocks.
pub fn last_user_text(body: &Value) -> Option<String> {
    let message = body["messages"]
        .as_array()?
        .iter()
        .rev()
        .find(|m| m["role"] == "user")?;
    let texts: Vec<String> = match &message["content"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .filter(|t| !t.trim_start().starts_with("<system-reminder>"))
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    (!texts.is_empty()).then(|| texts.join("\n"))
}

/// `(tool_use_id, output)` of every `tool_result` block in the last user message.
pub fn tool_results(body: &Value) -> Vec<(String, String)> {
    let Some(message) = body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
    else {
        return Vec::new();
    };
    message["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            let id = b["tool_use_id"].as_str().unwrap_or_default().to_string();
            let output = match &b["content"] {
                Value::String(s) => s.clone(),
                Value::Array(parts) => parts
                    .iter()
                    .filter_map(|p| p["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
                other => other.to_string(),
            };
            (id, output)
        })
        .collect()
}
