//! A local fake of the OpenAI Chat Completions API that the real opencode talks to in
//! tests (through its built-in `@ai-sdk/openai-compatible` provider): axum on
//! `127.0.0.1:0`, `POST /v1/chat/completions` answered as SSE `chat.completion.chunk`s,
//! the last one with its `usage`, then `[DONE]`. The answer is an assistant message, or
//! — when the request's fresh user text has `RUN[<command>]` — a call of opencode's
//! `bash` tool running `<command>`, which brings up its permission request (the config
//! asks for bash). Every request is recorded — the user texts that reached the model
//! with it for the first time, and when it came — so a test counts deliveries exactly; opencode's title requests (its own side
//! request, "title generator") are told apart and answered with a title.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use super::fake_model::Loopback;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// What opencode's title agent says of itself in its system prompt.
const TITLE_ASK: &str = "title generator";

/// One agent request: the user texts that reached the model with it, and when.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    /// Its number: the answer says `Answer <id>.`.
    pub id: u64,
    pub at: Instant,
    pub fresh: Vec<String>,
    /// Whether it was answered with a tool call.
    pub called: bool,
}

#[derive(Default)]
struct ChatState {
    next_id: u64,
    agent: Vec<ChatRequest>,
    titles: u64,
    /// The fresh user texts of the title requests.
    title_texts: Vec<Vec<String>>,
    /// How many copies of each user text earlier agent requests carried.
    seen: std::collections::HashMap<String, usize>,
    /// Hold every agent answer until released (a burst in flight).
    slow: Option<std::time::Duration>,
}

/// The text of one chat message's `content` (a string, or text parts).
fn texts_of(content: &Value) -> Vec<String> {
    match content {
        Value::String(s) => vec![s.clone()],
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

/// Every user text of a request's `messages`, in order (opencode's reminders, which
/// start with `<`, left out).
fn user_texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .flat_map(|m| texts_of(&m["content"]))
        .filter(|t| !t.starts_with('<'))
        .collect()
}

/// The user texts of `body` that reached the model with it for the first time: each
/// copy beyond the copies earlier requests carried (`seen`, updated). A text delivered
/// twice is two copies, so it is new twice. opencode orders an answer after the
/// messages queued while it ran, so "after the last answer" would miss those.
fn fresh_user_texts(
    body: &Value,
    seen: &mut std::collections::HashMap<String, usize>,
) -> Vec<String> {
    let mut counts: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut fresh = Vec::new();
    for text in user_texts(body) {
        let count = counts.entry(text.clone()).or_default();
        *count += 1;
        let before = seen.entry(text.clone()).or_default();
        if *count > *before {
            *before = *count;
            fresh.push(text);
        }
    }
    fresh
}

/// The running fake; dropping it stops the server.
pub struct FakeChat {
    /// The provider's `baseURL` (`…/v1`).
    pub base_url: String,
    state: Arc<Mutex<ChatState>>,
    _server: Loopback,
}

impl FakeChat {
    pub async fn start() -> Self {
        let state = Arc::new(Mutex::new(ChatState::default()));
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&state));
        let server = Loopback::serve(app).await;
        Self {
            base_url: format!("http://{}/v1", server.addr),
            state,
            _server: server,
        }
    }

    fn lock(&self) -> MutexGuard<'_, ChatState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every agent request so far (not the titles), in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.lock().agent.clone()
    }

    /// The fresh user texts of every agent request so far.
    pub fn fresh(&self) -> Vec<Vec<String>> {
        self.requests().into_iter().map(|r| r.fresh).collect()
    }

    /// The agent requests that brought a user text containing `needle`.
    pub fn requests_with(&self, needle: &str) -> Vec<ChatRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.fresh.iter().any(|t| t.contains(needle)))
            .collect()
    }

    /// Each agent answer starts after `delay` (a turn in flight for that long).
    pub fn answer_after(&self, delay: std::time::Duration) {
        self.lock().slow = Some(delay);
    }

    pub fn titles(&self) -> u64 {
        self.lock().titles
    }

    /// What the title requests asked about.
    pub fn title_texts(&self) -> Vec<Vec<String>> {
        self.lock().title_texts.clone()
    }
}

async fn handle(State(state): State<Arc<Mutex<ChatState>>>, uri: Uri, body: Bytes) -> Response {
    if uri.path() != "/v1/chat/completions" {
        return (StatusCode::NOT_FOUND, "not served by the fake").into_response();
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let title = body["messages"][0]["content"]
        .to_string()
        .contains(TITLE_ASK);
    let fresh = if title {
        Vec::new()
    } else {
        let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
        fresh_user_texts(&body, &mut st.seen)
    };
    let run = fresh.iter().find_map(|t| {
        let (_, rest) = t.split_once("RUN[")?;
        rest.split_once(']').map(|(cmd, _)| cmd.to_string())
    });
    let (id, slow) = {
        let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
        st.next_id += 1;
        if title {
            st.titles += 1;
            st.title_texts.push(user_texts(&body));
        } else {
            let id = st.next_id;
            st.agent.push(ChatRequest {
                id,
                at: Instant::now(),
                fresh,
                called: run.is_some(),
            });
        }
        (st.next_id, st.slow.filter(|_| !title))
    };
    if let Some(slow) = slow {
        tokio::time::sleep(slow).await;
    }
    let chunk = |delta: Value, finish: Value| {
        json!({"id": format!("chatcmpl-fake{id:04}"), "object": "chat.completion.chunk",
            "created": 1_765_000_000, "model": "fake-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut chunks = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    match (&run, title) {
        (Some(command), false) => {
            let arguments = json!({"command": command, "description": "the test asks for it"});
            chunks.push(chunk(
                json!({"tool_calls": [{"index": 0, "id": format!("call_fake{id:04}"),
                    "type": "function",
                    "function": {"name": "bash", "arguments": arguments.to_string()}}]}),
                Value::Null,
            ));
            chunks.push(chunk(json!({}), json!("tool_calls")));
        }
        _ => {
            let text = if title {
                "Fake title".to_string()
            } else {
                format!("Answer {id}.")
            };
            chunks.push(chunk(json!({"content": text}), Value::Null));
            chunks.push(chunk(json!({}), json!("stop")));
        }
    }
    let (input, output) = (1000 + 37 * id, 40 + 11 * id);
    chunks.push(
        json!({"id": format!("chatcmpl-fake{id:04}"), "object": "chat.completion.chunk",
        "created": 1_765_000_000, "model": "fake-model", "choices": [],
        "usage": {"prompt_tokens": input, "completion_tokens": output,
            "total_tokens": input + output}}),
    );
    let mut sse: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    sse.push_str("data: [DONE]\n\n");
    ([("content-type", "text/event-stream")], sse).into_response()
}
