//! Webhook bodies and headers through the real receiver's handler (axum, `oneshot`):
//! whatever arrives, the answer is a status that says what was wrong, a signed object is
//! handed over whole, and nothing unsigned gets through.

use super::mutate::{FIXTURES, mutated_fixture, nasty};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use futures::future::BoxFuture;
use hmac::{Hmac, Mac};
use proptest::prelude::*;
use serde_json::Value;
use sha2::Sha256;
use std::sync::{Arc, Mutex};
use the_loop::config::{RoutingConfig, ServerConfig};
use the_loop::events::EventLog;
use the_loop::ingress::webhook::{WebhookAuth, WebhookReceiver};
use the_loop::ingress::{Disposition, InboundEvent, Ingest};
use the_loop::routing::excerpt::excerpt;
use the_loop::routing::{DeliveryDedupe, EnabledEvents, Inbound, Outcome, RouterConfig, route};
use tower::ServiceExt;

const SECRET: &str = "bad-input-webhook-secret";

#[derive(Default)]
struct Recorder(Mutex<Vec<InboundEvent>>);

impl Ingest for Recorder {
    fn ingest(&self, event: InboundEvent) -> BoxFuture<'static, Disposition> {
        self.0.lock().unwrap().push(event);
        Box::pin(async { Disposition::Delivered })
    }
}

fn sign(body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

struct Receiver {
    runtime: tokio::runtime::Runtime,
    log: EventLog,
    cfg: ServerConfig,
    _dir: tempfile::TempDir,
}

impl Receiver {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        Self {
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
            log: EventLog::open_path(dir.path().join("events.jsonl")),
            cfg: ServerConfig {
                enabled: true,
                ..ServerConfig::default()
            },
            _dir: dir,
        }
    }

    /// POSTs to the webhook route of a fresh receiver; the status and what was handed on.
    fn post(&self, headers: &[(&str, Vec<u8>)], body: Vec<u8>) -> (StatusCode, Vec<InboundEvent>) {
        let recorder = Arc::new(Recorder::default());
        let receiver = WebhookReceiver::new(
            &self.cfg,
            WebhookAuth::resolve(&self.cfg, Some(SECRET)),
            recorder.clone(),
            self.log.clone(),
        );
        let mut request = Request::builder()
            .method("POST")
            .uri(self.cfg.webhook_path.as_str());
        for (name, value) in headers {
            if let Ok(value) = axum::http::HeaderValue::from_bytes(value) {
                request = request.header(*name, value);
            }
        }
        let request = request.body(Body::from(body)).unwrap();
        let status = self
            .runtime
            .block_on(async { receiver.router().oneshot(request).await.unwrap().status() });
        let taken = recorder.0.lock().unwrap().clone();
        (status, taken)
    }
}

fn router_config() -> RouterConfig {
    let routing = RoutingConfig {
        authorized_users: vec!["alice".into()],
        ..RoutingConfig::default()
    };
    RouterConfig::new(&routing, EnabledEvents::all()).watching(["octo/repo"])
}

/// Header bytes a stranger might send: printable, control bytes, non-UTF-8, long.
fn header_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        "[A-Za-z0-9_-]{1,40}".prop_map(String::into_bytes),
        nasty().prop_map(String::into_bytes),
        prop::collection::vec(any::<u8>(), 0..64),
        Just(vec![b'x'; 4096]),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// A signed delivery of any mutated real payload: an object is accepted and handed on
    /// exactly as sent (nothing lost), anything else is a 400; the router then takes it
    /// without panicking, and a delivery's excerpt is valid JSON.
    #[test]
    fn signed_mutated_payloads_are_handed_on_whole_or_refused_clearly(
        (event, payload) in mutated_fixture(),
        delivery in "[A-Za-z0-9-]{1,40}",
    ) {
        let receiver = Receiver::new();
        let body = serde_json::to_vec(&payload).unwrap();
        let headers = [
            ("x-github-event", event.as_bytes().to_vec()),
            ("x-github-delivery", delivery.clone().into_bytes()),
            ("x-hub-signature-256", sign(&body).into_bytes()),
            ("content-type", b"application/json".to_vec()),
        ];
        let (status, taken) = receiver.post(&headers, body);
        if payload.is_object() {
            prop_assert_eq!(status, StatusCode::ACCEPTED);
            prop_assert_eq!(taken.len(), 1);
            prop_assert_eq!(&taken[0].payload, &payload);
            prop_assert_eq!(&taken[0].delivery_id, &delivery);
            let inbound: Inbound<'_> = taken[0].as_inbound();
            let outcome = route(&inbound, &router_config(), &mut DeliveryDedupe::new());
            if let Outcome::Deliver { .. } = outcome {
                let text = excerpt(event, &payload);
                prop_assert!(serde_json::from_str::<Value>(&text).is_ok(), "{}", text);
            }
        } else {
            prop_assert_eq!(status, StatusCode::BAD_REQUEST);
            prop_assert!(taken.is_empty());
        }
    }

    /// Spoiled bytes and a stranger's headers: always one of the documented statuses,
    /// and nothing is handed on unless the body is signed with the secret.
    #[test]
    fn spoiled_bytes_and_headers_never_get_through_unsigned(
        fixture in 0..FIXTURES.len(),
        cut in any::<prop::sample::Index>(),
        flip in proptest::option::of((any::<prop::sample::Index>(), any::<u8>())),
        event in header_bytes(),
        delivery in header_bytes(),
        signature in proptest::option::of(header_bytes()),
        sign_it in any::<bool>(),
    ) {
        let receiver = Receiver::new();
        let mut body = FIXTURES[fixture].1.as_bytes().to_vec();
        body.truncate(cut.index(body.len() + 1));
        if let Some((at, byte)) = flip
            && !body.is_empty()
        {
            let at = at.index(body.len());
            body[at] = byte;
        }
        let signature = if sign_it { Some(sign(&body).into_bytes()) } else { signature };
        let mut headers = vec![("x-github-event", event), ("x-github-delivery", delivery)];
        if let Some(signature) = signature.clone() {
            headers.push(("x-hub-signature-256", signature));
        }
        let signed = signature.as_deref() == Some(sign(&body).as_bytes());
        let (status, taken) = receiver.post(&headers, body);
        prop_assert!(
            [200, 202, 400, 401, 413].contains(&status.as_u16()),
            "unexpected status {}", status
        );
        if !signed {
            prop_assert_eq!(status, StatusCode::UNAUTHORIZED);
        }
        prop_assert_eq!(!taken.is_empty(), status == StatusCode::ACCEPTED);
    }
}
