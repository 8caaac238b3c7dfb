//! The webhook receiver (SPEC §4.2): `POST {webhookPath}` authenticates a GitHub delivery,
//! checks its shape and hands it to the [`Ingest`], answering 202 at once so GitHub never
//! waits for a paste.
//!
//! Order of checks, cheapest refusal first and nothing parsed before it is authenticated:
//! route on? → declared size → signature present → body read with the size cap enforced
//! while reading → HMAC (constant time) → `X-GitHub-Delivery` → `X-GitHub-Event` → JSON
//! object. The `Origin` check runs before all of these, on every route (`server`).

mod auth;

pub use auth::{WebhookAuth, WebhookSecret, WebhookStatus};

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures::StreamExt;
use serde_json::Value;

use super::claims::{self, ClaimKey};
use super::{HandledIds, InboundEvent, Ingest};
use crate::config::ServerConfig;
use crate::events::{Event, EventLog, EventType, Level, Source};

pub const SIGNATURE_HEADER: &str = "x-hub-signature-256";
pub const DELIVERY_HEADER: &str = "x-github-delivery";
pub const EVENT_HEADER: &str = "x-github-event";

/// Header values echoed into the event log are attacker-chosen until authenticated: cap
/// them so a request cannot bloat the log.
const MAX_LOGGED_HEADER_CHARS: usize = 200;

/// Why a request to the webhook route (or, for `ForbiddenOrigin`, any route) was refused:
/// the `reason` of `webhook.rejected`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    ForbiddenOrigin,
    UnsignedDisabled,
    TooLarge,
    MissingSignature,
    BadSignature,
    UnreadableBody,
    MissingDeliveryId,
    MissingEvent,
    InvalidJson,
    NotAnObject,
}

impl Rejection {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ForbiddenOrigin => "forbidden-origin",
            Self::UnsignedDisabled => "unsigned-disabled",
            Self::TooLarge => "too-large",
            Self::MissingSignature => "missing-signature",
            Self::BadSignature => "bad-signature",
            Self::UnreadableBody => "unreadable-body",
            Self::MissingDeliveryId => "missing-delivery-id",
            Self::MissingEvent => "missing-event",
            Self::InvalidJson => "invalid-json",
            Self::NotAnObject => "not-an-object",
        }
    }

    pub fn status(self) -> StatusCode {
        match self {
            Self::ForbiddenOrigin => StatusCode::FORBIDDEN,
            Self::UnsignedDisabled => StatusCode::NOT_FOUND,
            Self::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::MissingSignature | Self::BadSignature => StatusCode::UNAUTHORIZED,
            Self::UnreadableBody
            | Self::MissingDeliveryId
            | Self::MissingEvent
            | Self::InvalidJson
            | Self::NotAnObject => StatusCode::BAD_REQUEST,
        }
    }

    /// The `webhook.rejected` record; `delivery_id`/`gh_event` are added when the request
    /// carried them.
    pub fn to_event(self, headers: &HeaderMap) -> Event {
        Event::new(Source::Webhook, EventType::WebhookRejected)
            .level(Level::Warning)
            .with("reason", self.as_str())
            .with("status", self.status().as_u16())
            .with_opt("delivery_id", logged_header(headers, DELIVERY_HEADER))
            .with_opt("gh_event", logged_header(headers, EVENT_HEADER))
    }

    /// The response: the status and the reason, so GitHub's delivery log says what to fix.
    pub fn into_response(self) -> Response {
        (self.status(), format!("{}\n", self.as_str())).into_response()
    }
}

/// The webhook route and what it needs. Build one, then mount [`WebhookReceiver::router`]
/// into the app handed to `server::start`.
pub struct WebhookReceiver {
    path: String,
    max_body_bytes: usize,
    auth: WebhookAuth,
    ingest: Arc<dyn Ingest>,
    handled: Option<Arc<dyn HandledIds>>,
    events: EventLog,
}

impl WebhookReceiver {
    pub fn new(
        cfg: &ServerConfig,
        auth: WebhookAuth,
        ingest: Arc<dyn Ingest>,
        events: EventLog,
    ) -> Self {
        Self {
            path: cfg.webhook_path.clone(),
            max_body_bytes: cfg.max_body_bytes,
            auth,
            ingest,
            handled: None,
            events,
        }
    }

    /// The shared record of handled comment/review ids (the poller's ledger). Without it
    /// (polling off) only the router's delivery-id dedupe applies.
    pub fn with_handled_ids(mut self, handled: Arc<dyn HandledIds>) -> Self {
        self.handled = Some(handled);
        self
    }

    pub fn status(&self) -> WebhookStatus {
        self.auth.status()
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    /// `POST {webhookPath}`. When the route is off it is still mounted, answering 404,
    /// so deliveries GitHub keeps sending show up in the log as `unsigned-disabled`.
    pub fn router(self) -> Router {
        let path = self.path.clone();
        Router::new()
            .route(&path, post(receive))
            .with_state(Arc::new(self))
    }

    fn reject(&self, rejection: Rejection, headers: &HeaderMap) -> Response {
        let _ = self.events.emit(rejection.to_event(headers));
        rejection.into_response()
    }

    /// Authenticates and checks a delivery; the payload only once the bytes are trusted.
    async fn accept(&self, headers: &HeaderMap, body: Body) -> Result<Accepted, Rejection> {
        if matches!(self.auth, WebhookAuth::Off) {
            return Err(Rejection::UnsignedDisabled);
        }
        if declared_length(headers).is_some_and(|n| n > self.max_body_bytes as u64) {
            return Err(Rejection::TooLarge);
        }
        let signature = header_str(headers, SIGNATURE_HEADER);
        if matches!(self.auth, WebhookAuth::Secret(_)) && signature.is_none() {
            return Err(Rejection::MissingSignature);
        }
        let bytes = read_capped(body, self.max_body_bytes).await?;
        if let WebhookAuth::Secret(secret) = &self.auth
            && !secret.verifies(&bytes, signature.unwrap_or(""))
        {
            return Err(Rejection::BadSignature);
        }
        let delivery_id =
            header_str(headers, DELIVERY_HEADER).ok_or(Rejection::MissingDeliveryId)?;
        let gh_event = header_str(headers, EVENT_HEADER).ok_or(Rejection::MissingEvent)?;
        let payload: Value = serde_json::from_slice(&bytes).map_err(|_| Rejection::InvalidJson)?;
        if !payload.is_object() {
            return Err(Rejection::NotAnObject);
        }
        Ok(Accepted {
            event: InboundEvent::from_webhook(gh_event, delivery_id, payload),
            bytes: bytes.len(),
        })
    }

    /// Routing is synchronous inside `ingest` (so deliveries keep their order); the
    /// settling — the paste — runs on its own task. A claim is on disk before routing.
    async fn hand_over(&self, event: InboundEvent) {
        if let Some(key) = ClaimKey::of(&event)
            && let Some(handled) = &self.handled
        {
            match handled.first_handling(&key, &event) {
                None => {
                    let _ = self.events.emit(claims::duplicate_event(&event));
                    return;
                }
                Some(claimed) => {
                    if let Err(e) = claimed.wait().await {
                        tracing::warn!(error = %e, "webhook claim not written; delivering anyway");
                    }
                }
            }
        }
        let delivery_id = event.delivery_id.clone();
        let settled = self.ingest.ingest(event);
        tokio::spawn(async move {
            let disposition = settled.await;
            tracing::debug!(delivery_id, ?disposition, "webhook delivery settled");
        });
    }
}

struct Accepted {
    event: InboundEvent,
    bytes: usize,
}

async fn receive(
    State(receiver): State<Arc<WebhookReceiver>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let Accepted { event, bytes } = match receiver.accept(&headers, body).await {
        Ok(accepted) => accepted,
        Err(rejection) => return receiver.reject(rejection, &headers),
    };
    let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_string());
    let _ = receiver.events.emit(
        Event::new(Source::Webhook, EventType::WebhookReceived)
            .with("delivery_id", event.delivery_id.as_str())
            .with("gh_event", event.gh_event.as_str())
            .with_opt("action", non_empty(&event.action))
            .with("bytes", bytes),
    );
    // GitHub's hello when a hook is created: answer it, route nothing.
    if event.gh_event == "ping" {
        return (StatusCode::OK, "pong\n").into_response();
    }
    receiver.hand_over(event).await;
    (StatusCode::ACCEPTED, "accepted\n").into_response()
}

/// Reads the body, refusing as soon as it passes `cap` bytes: the cap holds whatever
/// `Content-Length` claimed, or with none (chunked).
async fn read_capped(body: Body, cap: usize) -> Result<Vec<u8>, Rejection> {
    let mut stream = body.into_data_stream();
    let mut bytes = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|_| Rejection::UnreadableBody)?;
        if bytes.len() + chunk.len() > cap {
            return Err(Rejection::TooLarge);
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

fn declared_length(headers: &HeaderMap) -> Option<u64> {
    header_str(headers, header::CONTENT_LENGTH.as_str())?
        .parse()
        .ok()
}

/// A header as non-empty text.
fn header_str<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

fn logged_header(headers: &HeaderMap, name: &str) -> Option<String> {
    header_str(headers, name).map(|v| v.chars().take(MAX_LOGGED_HEADER_CHARS).collect())
}
