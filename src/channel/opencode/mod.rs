//! opencode's HTTP server as a second client beside its TUI in the pane (measured on
//! opencode 1.18.33; docs/decisions/2026-12-07-opencode-server.md). `opencode serve
//! --port P --hostname 127.0.0.1`, with `OPENCODE_SERVER_PASSWORD` in its environment,
//! asks every request for HTTP basic auth (user `opencode`); the TUI attaches with
//! `opencode attach http://127.0.0.1:P --dir DIR --session ID`.
//!
//! ```text
//!  health ── create_session (the session's own) ── prompt_async (204: queued, the pane
//!     shows it) ── events(): Status · PermissionAsked · PermissionReplied ·
//!     AssistantUpdated · Other ── reply(permission, once | reject) (404: answered
//!     already, by the TUI or another client)
//! ```
//!
//! Never `/tui/append-prompt` or `/tui/submit-prompt`: they write into the operator's
//! draft and send it with ours.

mod events;

pub use events::{AssistantMessage, Event, EventStream, Permission, Reply, Status};

use serde_json::{Value, json};
use std::time::Duration;

/// How long a request waits for its answer (not the event stream).
const ANSWER_WITHIN: Duration = Duration::from_secs(15);

/// How long a connection may take to open: loopback answers at once or not at all.
const CONNECT_WITHIN: Duration = Duration::from_secs(3);

/// The basic-auth user opencode expects by default.
const USER: &str = "opencode";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Nothing was sent: the server is not there (refused, or no connection).
    #[error("cannot reach opencode's server at {url}: {reason}")]
    Unreachable { url: String, reason: String },
    /// Sent, and the answer was lost (timeout, connection reset): it may have acted.
    #[error("opencode's server did not answer `{what}`: {reason}")]
    NoAnswer { what: String, reason: String },
    /// The server answered with an error status.
    #[error("opencode's server refused `{what}` ({status}): {body}")]
    Refused {
        what: String,
        status: u16,
        body: String,
    },
    #[error("opencode's server answered `{what}` with something unexpected: {body}")]
    Unexpected { what: String, body: String },
}

impl Error {
    /// The server said it has no such thing (an answered permission request).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::Refused { status: 404, .. })
    }
}

/// One server: its loopback port and the session's password.
#[derive(Clone)]
pub struct Server {
    base: String,
    password: String,
    http: reqwest::Client,
}

impl std::fmt::Debug for Server {
    /// The password is never shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("base", &self.base).finish()
    }
}

impl Server {
    /// The server on `127.0.0.1:port`, asked with `password`. Loopback only, no proxy.
    pub fn new(port: u16, password: &str) -> Result<Self, Error> {
        let base = url(port);
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(CONNECT_WITHIN)
            .build()
            .map_err(|e| Error::Unreachable {
                url: base.clone(),
                reason: e.to_string(),
            })?;
        Ok(Self {
            base,
            password: password.to_string(),
            http,
        })
    }

    /// The URL the TUI attaches to.
    pub fn url(&self) -> &str {
        &self.base
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.base))
            .basic_auth(USER, Some(&self.password))
    }

    /// Sends `request` (`what`, for errors) and returns the body of a 2xx answer.
    async fn send(&self, what: &str, request: reqwest::RequestBuilder) -> Result<Vec<u8>, Error> {
        let response = request
            .timeout(ANSWER_WITHIN)
            .send()
            .await
            .map_err(|e| self.failed(what, &e))?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|e| Error::NoAnswer {
                what: what.to_string(),
                reason: e.to_string(),
            })?
            .to_vec();
        if !status.is_success() {
            return Err(Error::Refused {
                what: what.to_string(),
                status: status.as_u16(),
                body: String::from_utf8_lossy(&body).chars().take(300).collect(),
            });
        }
        Ok(body)
    }

    /// A failed send: nothing sent when the connection never opened.
    fn failed(&self, what: &str, error: &reqwest::Error) -> Error {
        if error.is_connect() {
            Error::Unreachable {
                url: self.base.clone(),
                reason: error.to_string(),
            }
        } else {
            Error::NoAnswer {
                what: what.to_string(),
                reason: error.to_string(),
            }
        }
    }

    async fn json(&self, what: &str, request: reqwest::RequestBuilder) -> Result<Value, Error> {
        let body = self.send(what, request).await?;
        serde_json::from_slice(&body).map_err(|_| Error::Unexpected {
            what: what.to_string(),
            body: String::from_utf8_lossy(&body).chars().take(300).collect(),
        })
    }

    /// `GET /global/health`: the server's release, once it answers healthy.
    pub async fn health(&self) -> Result<String, Error> {
        let what = "GET /global/health";
        let value = self
            .json(what, self.request(reqwest::Method::GET, "/global/health"))
            .await?;
        if value["healthy"] != Value::Bool(true) {
            return Err(Error::Unexpected {
                what: what.into(),
                body: value.to_string(),
            });
        }
        Ok(value["version"].as_str().unwrap_or_default().to_string())
    }

    /// `POST /session {title}`: a new opencode session in the server's directory; its id.
    pub async fn create_session(&self, title: &str) -> Result<String, Error> {
        let what = "POST /session";
        let value = self
            .json(
                what,
                self.request(reqwest::Method::POST, "/session")
                    .json(&json!({"title": title})),
            )
            .await?;
        value["id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| Error::Unexpected {
                what: what.into(),
                body: value.to_string(),
            })
    }

    /// `GET /session/{id}`: whether the server has session `id` (404: it has not).
    pub async fn has_session(&self, id: &str) -> Result<bool, Error> {
        let asked = self
            .send(
                "GET /session/{id}",
                self.request(reqwest::Method::GET, &format!("/session/{id}")),
            )
            .await;
        match asked {
            Ok(_) => Ok(true),
            Err(e) if e.is_not_found() => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// `POST /session/{id}/prompt_async`: `text` as a user message of `session` (204;
    /// while a turn runs, opencode queues it for its next step).
    pub async fn prompt(&self, session: &str, text: &str) -> Result<(), Error> {
        let body = json!({"parts": [{"type": "text", "text": text}]});
        self.send(
            "POST /session/{id}/prompt_async",
            self.request(
                reqwest::Method::POST,
                &format!("/session/{session}/prompt_async"),
            )
            .json(&body),
        )
        .await
        .map(|_| ())
    }

    /// Whether one of the newest `limit` user messages of `session` is `text` (`GET
    /// /session/{id}/message?limit=N`): a prompt whose answer was lost is found there
    /// when the server took it.
    pub async fn has_user_text(
        &self,
        session: &str,
        text: &str,
        limit: u32,
    ) -> Result<bool, Error> {
        let value = self
            .json(
                "GET /session/{id}/message",
                self.request(reqwest::Method::GET, &format!("/session/{session}/message"))
                    .query(&[("limit", limit)]),
            )
            .await?;
        Ok(value.as_array().into_iter().flatten().any(|message| {
            message["info"]["role"] == "user"
                && message["parts"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|part| part["type"] == "text" && part["text"] == text)
        }))
    }

    /// `GET /session/status`: `session`'s status (a session not listed is idle).
    pub async fn status(&self, session: &str) -> Result<Status, Error> {
        let value = self
            .json(
                "GET /session/status",
                self.request(reqwest::Method::GET, "/session/status"),
            )
            .await?;
        Ok(Status::parse(&value[session]).unwrap_or(Status::Idle))
    }

    /// `GET /permission`: the pending permission requests of `session`.
    pub async fn permissions(&self, session: &str) -> Result<Vec<Permission>, Error> {
        let value = self
            .json(
                "GET /permission",
                self.request(reqwest::Method::GET, "/permission"),
            )
            .await?;
        Ok(value
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Permission::parse)
            .filter(|p| p.session == session)
            .collect())
    }

    /// `POST /permission/{id}/reply {reply}`: answers request `id` (never `always`).
    /// [`Error::is_not_found`]: it was answered already, elsewhere.
    pub async fn reply(&self, request: &str, reply: Reply) -> Result<(), Error> {
        self.send(
            "POST /permission/{id}/reply",
            self.request(
                reqwest::Method::POST,
                &format!("/permission/{request}/reply"),
            )
            .json(&json!({"reply": reply.as_str()})),
        )
        .await
        .map(|_| ())
    }

    /// `GET /event`: the server's events, as they come.
    pub async fn events(&self) -> Result<EventStream, Error> {
        let what = "GET /event";
        let response = self
            .request(reqwest::Method::GET, "/event")
            .header("accept", "text/event-stream")
            .send()
            .await
            .map_err(|e| self.failed(what, &e))?;
        if !response.status().is_success() {
            return Err(Error::Refused {
                what: what.into(),
                status: response.status().as_u16(),
                body: String::new(),
            });
        }
        Ok(EventStream::new(response))
    }
}

/// `http://127.0.0.1:PORT`.
pub fn url(port: u16) -> String {
    format!("http://127.0.0.1:{port}")
}

#[cfg(test)]
mod tests;
