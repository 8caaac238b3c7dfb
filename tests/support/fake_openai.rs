//! A local fake of the OpenAI Responses API that the real Codex talks to in tests:
//! axum on `127.0.0.1:0`, `POST /v1/responses` answered as SSE (`response.created`, one
//! output item, `response.completed` with its `usage`). The item is an assistant
//! message, or — when the user's fresh message has `RUN[<command>]` — a call of
//! codex's `exec_command` tool asking to run `<command>` outside the sandbox
//! (`sandbox_permissions: "require_escalated"`), which brings up codex's approval
//! request. Every response reports a
//! different usage ([`usage_of`]), every part present, and is recorded with whether it
//! answered the agent or titled the session (codex asks for a title on the side, with
//! its own thread, and logs that thread nowhere).

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use super::fake_model::Loopback;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex, MutexGuard};

/// What codex asks when it titles a session.
const TITLE_ASK: &str = "Generate a concise, single-line task title";

/// One response: its number, whether it titled the session, its usage as reported.
#[derive(Debug, Clone)]
pub struct Answered {
    pub id: u64,
    pub title: bool,
    pub usage: Value,
}

/// A different usage for every response `id`: input with a cached part, output with
/// a reasoning part.
pub fn usage_of(id: u64) -> Value {
    let input = 1000 + 37 * id;
    let output = 40 + 11 * id;
    json!({
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": 200 * id},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": 3 * id},
        "total_tokens": input + output,
    })
}

#[derive(Default)]
struct OpenAiState {
    next_id: u64,
    answered: Vec<Answered>,
    /// The fresh user texts of every agent request (not the titles), in order.
    fresh: Vec<Vec<String>>,
    /// Every user text of the last agent request: the conversation as it stands.
    conversation: Vec<String>,
    /// When each agent request arrived, with its fresh user texts.
    arrivals: Vec<(std::time::Instant, Vec<String>)>,
    /// The first agent request asks to run this command (the boot prompt's turn).
    run_first: Option<String>,
    /// Title requests are answered only after a command call was, and `titles_after`
    /// more: codex's title notice then lands while its approval request stands.
    titles_after: Option<std::time::Duration>,
    /// Command calls answered so far.
    calls: u64,
    /// While set, every request is answered with this error (issue 43).
    failing: Option<OpenAiError>,
    /// The requests answered with an error: whether each titled the session, and its
    /// fresh user texts.
    refused: Vec<(bool, Vec<String>)>,
}

/// An error the Responses API answers with: a rate limit (429, `retry-after`), a
/// usage limit with its reset.
#[derive(Debug, Clone)]
pub struct OpenAiError {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl OpenAiError {
    /// The API's rate limit, `retry-after` seconds.
    pub fn rate_limit(retry_after: u32) -> Self {
        Self {
            status: 429,
            headers: vec![("retry-after".into(), retry_after.to_string())],
            body: json!({"error": {"type": "rate_limit_exceeded", "code": "rate_limit_exceeded",
                "message": format!("Rate limit reached for gpt-5-codex. Please try again in {retry_after}s.")}}),
        }
    }

    /// A plan's usage limit lifting at `resets_at` (Unix seconds), said as ChatGPT's
    /// backend says it: in the body and in the window headers codex records.
    pub fn usage_limit(resets_at: i64) -> Self {
        Self {
            status: 429,
            headers: vec![
                ("x-codex-primary-used-percent".into(), "100".into()),
                ("x-codex-primary-window-minutes".into(), "300".into()),
                ("x-codex-primary-reset-at".into(), resets_at.to_string()),
            ],
            body: json!({"error": {"type": "usage_limit_reached",
                "message": "The usage limit has been reached", "plan_type": "plus",
                "resets_at": resets_at}}),
        }
    }
}

/// The texts of the user messages after the model's last output (a message or a tool
/// call) in a request's `input`: what reached the model with this request.
fn fresh_user_texts(body: &Value) -> Vec<String> {
    let input = body["input"].as_array().cloned().unwrap_or_default();
    let from = input
        .iter()
        .rposition(|i| i["role"] == "assistant" || i["type"] == "function_call")
        .map_or(0, |at| at + 1);
    input[from..]
        .iter()
        .filter(|i| i["type"] == "message" && i["role"] == "user")
        .flat_map(|i| i["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|c| c["text"].as_str().map(str::to_string))
        .filter(|t| !t.starts_with('<'))
        .collect()
}

/// The texts of every user message of `input`.
fn user_texts(input: &Value) -> Vec<String> {
    input
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "message" && i["role"] == "user")
        .flat_map(|i| i["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|c| c["text"].as_str().map(str::to_string))
        .collect()
}

/// The running fake; dropping it stops the server.
pub struct FakeOpenAi {
    /// The provider's `base_url` (`…/v1`).
    pub base_url: String,
    state: Arc<Mutex<OpenAiState>>,
    _server: Loopback,
}

impl FakeOpenAi {
    pub async fn start() -> Self {
        let state = Arc::new(Mutex::new(OpenAiState::default()));
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

    fn lock(&self) -> MutexGuard<'_, OpenAiState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every response so far.
    pub fn answered(&self) -> Vec<Answered> {
        self.lock().answered.clone()
    }

    /// The fresh user texts of every agent request so far ([`fresh_user_texts`]).
    pub fn fresh(&self) -> Vec<Vec<String>> {
        self.lock().fresh.clone()
    }

    /// The first agent request (the boot prompt's turn) asks to run `command`.
    pub fn run_first(&self, command: &str) {
        self.lock().run_first = Some(command.to_string());
    }

    /// Answers codex's title requests only once a command call was answered, `after`
    /// that (issue 41: the title's `notify` during the approval request).
    pub fn titles_after_the_call(&self, after: std::time::Duration) {
        self.lock().titles_after = Some(after);
    }

    /// When the first agent request bringing a user text containing `needle` arrived.
    pub fn arrival_of(&self, needle: &str) -> Option<std::time::Instant> {
        self.lock()
            .arrivals
            .iter()
            .find(|(_, texts)| texts.iter().any(|t| t.contains(needle)))
            .map(|(at, _)| *at)
    }

    /// The user messages of the conversation, as the last agent request carried it.
    pub fn conversation(&self) -> Vec<String> {
        self.lock().conversation.clone()
    }

    /// From now on every request gets `error` (`None`: answered again).
    pub fn fail_with(&self, error: Option<OpenAiError>) {
        self.lock().failing = error;
    }

    /// Every request so far, answered or refused (titles too).
    pub fn requests(&self) -> usize {
        let state = self.lock();
        state.answered.len() + state.refused.len()
    }

    /// The requests refused with an error so far: (titled the session, fresh texts).
    pub fn refused(&self) -> Vec<(bool, Vec<String>)> {
        self.lock().refused.clone()
    }

    /// The agent requests that brought a user text containing `needle`.
    pub fn requests_with(&self, needle: &str) -> Vec<Vec<String>> {
        self.fresh()
            .into_iter()
            .filter(|texts| texts.iter().any(|t| t.contains(needle)))
            .collect()
    }
}

async fn handle(State(state): State<Arc<Mutex<OpenAiState>>>, uri: Uri, body: Bytes) -> Response {
    if uri.path() != "/v1/responses" {
        return (StatusCode::NOT_FOUND, "not served by the fake").into_response();
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let title = body.to_string().contains(TITLE_ASK);
    let fresh = if title {
        Vec::new()
    } else {
        fresh_user_texts(&body)
    };
    let failing = {
        let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
        let failing = st.failing.clone();
        if failing.is_some() {
            st.refused.push((title, fresh.clone()));
        }
        failing
    };
    if let Some(error) = failing {
        let mut response = (
            StatusCode::from_u16(error.status).unwrap(),
            [("content-type", "application/json")],
            error.body.to_string(),
        )
            .into_response();
        for (name, value) in &error.headers {
            response.headers_mut().insert(
                axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                axum::http::HeaderValue::from_str(value).unwrap(),
            );
        }
        return response;
    }
    if title {
        hold_title(&state).await;
    }
    let run = fresh.iter().find_map(|t| {
        let (_, rest) = t.split_once("RUN[")?;
        rest.split_once(']').map(|(cmd, _)| cmd.to_string())
    });
    let run = match run {
        Some(cmd) => Some(cmd),
        None if !title => state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .run_first
            .take(),
        None => None,
    };
    let (id, usage) = {
        let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
        st.next_id += 1;
        let id = st.next_id;
        let usage = usage_of(id);
        st.answered.push(Answered {
            id,
            title,
            usage: usage.clone(),
        });
        if !title {
            st.arrivals.push((std::time::Instant::now(), fresh.clone()));
            st.fresh.push(fresh);
            st.conversation = user_texts(&body["input"]);
        }
        st.calls += u64::from(run.is_some());
        (id, usage)
    };
    let text = if title {
        "Say hello".to_string()
    } else {
        format!("Answer {id}.")
    };
    let response_id = format!("resp_fake{id:04}");
    let item = match run {
        Some(cmd) => json!({"type": "function_call", "id": format!("fc_fake{id:04}"),
            "call_id": format!("call_fake{id:04}"), "name": "exec_command",
            "arguments": json!({"cmd": cmd, "sandbox_permissions": "require_escalated",
                "justification": "the test asks for it"}).to_string()}),
        None => json!({"type": "message", "role": "assistant",
            "id": format!("msg_fake{id:04}"),
            "content": [{"type": "output_text", "text": text}]}),
    };
    let events = [
        json!({"type": "response.created", "response": {"id": response_id}}),
        json!({"type": "response.output_item.done", "item": item}),
        json!({"type": "response.completed", "response": {"id": response_id, "usage": usage}}),
    ];
    let sse: String = events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect();
    ([("content-type", "text/event-stream")], sse).into_response()
}

/// Waits, when asked to, until a command call was answered and the time given after it
/// passed (at most a minute).
async fn hold_title(state: &Mutex<OpenAiState>) {
    let lock = || state.lock().unwrap_or_else(|e| e.into_inner());
    let Some(after) = lock().titles_after else {
        return;
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while lock().calls == 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    tokio::time::sleep(after).await;
}

/// Codex's `config.toml` for a private `CODEX_HOME`: the fake at `base_url` as its
/// model provider, `project` trusted, and everything that would leave loopback off
/// (plugins sync with api.github.com; analytics, feedback, the update check).
pub fn codex_config(base_url: &str, project: &std::path::Path) -> String {
    format!(
        r#"model = "gpt-5-codex"
model_provider = "fake"
check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[features]
plugins = false

[model_providers.fake]
name = "fake"
base_url = "{base_url}"
wire_api = "responses"

[projects."{project}"]
trust_level = "trusted"
"#,
        project = project.display()
    )
}
