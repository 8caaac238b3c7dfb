//! JSON-RPC over a WebSocket over a Unix socket: one message per text frame, requests
//! numbered by the client, server messages without a `"jsonrpc"` field. A reader task
//! sorts what arrives: a response goes to the request waiting for it, anything else
//! (a server request, a notification) to [`Client::next`]. The connection closing
//! fails every waiting request and ends `next`.

use super::inbound::Inbound;
use futures::SinkExt;
use futures::stream::{SplitSink, StreamExt};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::UnixStream;
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;

/// How long a request waits for its response before it is given up.
const ANSWER_WITHIN: Duration = Duration::from_secs(30);

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot reach codex's app server at {path}: {reason}")]
    Unreachable { path: String, reason: String },
    /// Nothing listens on the socket (refused, or the socket gone): the server is not
    /// running.
    #[error("codex's app server is not running at {path}: {reason}")]
    NotListening { path: String, reason: String },
    #[error("codex's app server closed the connection")]
    Closed,
    #[error("codex's app server did not answer `{method}` within {ANSWER_WITHIN:?}")]
    NoAnswer { method: String },
    #[error("codex's app server refused `{method}` ({code}): {message}")]
    Refused {
        method: String,
        code: i64,
        message: String,
    },
}

type Waiting = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, (i64, String)>>>>>;
type Sink = SplitSink<WebSocketStream<UnixStream>, Message>;

/// One connection to an app server, initialized.
pub struct Client {
    sink: tokio::sync::Mutex<Sink>,
    waiting: Waiting,
    next_id: AtomicU64,
    inbound: mpsc::UnboundedReceiver<Inbound>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for Client {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Client {
    /// Connects to the app server listening on `socket` and initializes the connection
    /// (`initialize` with the experimental API, then `initialized`), as `client_name`.
    pub async fn connect(socket: &Path, client_name: &str) -> Result<Self, Error> {
        let unreachable = |reason: String| Error::Unreachable {
            path: socket.display().to_string(),
            reason,
        };
        let stream = UnixStream::connect(socket).await.map_err(|e| {
            use std::io::ErrorKind::{ConnectionRefused, NotFound};
            match e.kind() {
                ConnectionRefused | NotFound => Error::NotListening {
                    path: socket.display().to_string(),
                    reason: e.to_string(),
                },
                _ => unreachable(e.to_string()),
            }
        })?;
        let (ws, _) = tokio::time::timeout(
            ANSWER_WITHIN,
            tokio_tungstenite::client_async("ws://localhost/", stream),
        )
        .await
        .map_err(|_| unreachable("no WebSocket handshake".into()))?
        .map_err(|e| unreachable(e.to_string()))?;
        let (sink, mut stream) = ws.split();
        let waiting: Waiting = Arc::default();
        let (tx, inbound) = mpsc::unbounded_channel();
        let reader = {
            let waiting = Arc::clone(&waiting);
            tokio::spawn(async move {
                while let Some(Ok(message)) = stream.next().await {
                    let Message::Text(text) = message else {
                        continue;
                    };
                    let Ok(value) = serde_json::from_str::<Value>(&text) else {
                        continue;
                    };
                    sort(value, &waiting, &tx);
                }
                // Closed: every request still waiting fails (its sender dropped).
                waiting.lock().unwrap_or_else(|e| e.into_inner()).clear();
            })
        };
        let client = Self {
            sink: tokio::sync::Mutex::new(sink),
            waiting,
            next_id: AtomicU64::new(1),
            inbound,
            reader,
        };
        client
            .request(
                "initialize",
                json!({
                    "clientInfo": {"name": client_name, "title": client_name, "version": env!("CARGO_PKG_VERSION")},
                    "capabilities": {"experimentalApi": true},
                }),
            )
            .await?;
        client.send(json!({"method": "initialized"})).await?;
        Ok(client)
    }

    async fn send(&self, message: Value) -> Result<(), Error> {
        self.sink
            .lock()
            .await
            .send(Message::text(message.to_string()))
            .await
            .map_err(|_| Error::Closed)
    }

    /// Sends request `method` and waits for its result.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, Error> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, tx);
        if self.reader.is_finished() {
            return Err(Error::Closed);
        }
        self.send(json!({"id": id, "method": method, "params": params}))
            .await?;
        let answer = tokio::time::timeout(ANSWER_WITHIN, rx).await;
        self.waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
        match answer {
            Err(_) => Err(Error::NoAnswer {
                method: method.to_string(),
            }),
            Ok(Err(_)) => Err(Error::Closed),
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err((code, message)))) => Err(Error::Refused {
                method: method.to_string(),
                code,
                message,
            }),
        }
    }

    /// Answers the server's request `id` with `result`.
    pub async fn respond(&self, id: &Value, result: Value) -> Result<(), Error> {
        self.send(json!({"id": id, "result": result})).await
    }

    /// The next message the server sent unasked; `None` once the connection closed.
    pub async fn next(&mut self) -> Option<Inbound> {
        self.inbound.recv().await
    }

    /// Whether the connection is still open.
    pub fn is_open(&self) -> bool {
        !self.reader.is_finished()
    }
}

/// Sorts one server message: a response to its waiting request, a server request or a
/// notification to the inbound queue.
fn sort(value: Value, waiting: &Waiting, inbound: &mpsc::UnboundedSender<Inbound>) {
    let method = value["method"].as_str().map(str::to_string);
    let params = value.get("params").cloned().unwrap_or(Value::Null);
    match (value.get("id"), method) {
        (Some(id), Some(method)) => {
            let _ = inbound.send(Inbound::request(id.clone(), &method, params));
        }
        (None, Some(method)) => {
            let _ = inbound.send(Inbound::notification(&method, params));
        }
        (Some(id), None) => {
            let Some(id) = id.as_u64() else { return };
            let waiter = waiting
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id);
            let Some(waiter) = waiter else { return };
            let answer = match value.get("error") {
                Some(error) => Err((
                    error["code"].as_i64().unwrap_or(0),
                    error["message"].as_str().unwrap_or_default().to_string(),
                )),
                None => Ok(value.get("result").cloned().unwrap_or(Value::Null)),
            };
            let _ = waiter.send(answer);
        }
        (None, None) => {}
    }
}
