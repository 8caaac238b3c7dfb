//! A real server on port 0 with a recording `Ingest`, an in-memory `HandledIds`, and
//! helpers to sign, send (reqwest or raw bytes) and read the event log back.

use futures::future::BoxFuture;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;
use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use the_loop::config::ServerConfig;
use the_loop::events::{Event, EventLog, EventReader, EventType, Filter};
use the_loop::ingress::webhook::{WebhookAuth, WebhookReceiver};
use the_loop::ingress::{ClaimKey, Disposition, HandledIds, InboundEvent, Ingest, ItemKind};
use the_loop::server::{self, ServerHandle};
use the_loop::state_writer::Durable;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub const SECRET: &str = "webhook-test-secret-0123456789";

/// Records every event handed over, in order.
#[derive(Default)]
pub struct Recorder {
    pub events: Mutex<Vec<InboundEvent>>,
}

impl Ingest for Recorder {
    fn ingest(&self, event: InboundEvent) -> BoxFuture<'static, Disposition> {
        self.events.lock().unwrap().push(event);
        Box::pin(async { Disposition::Delivered })
    }
}

impl Recorder {
    pub fn taken(&self) -> Vec<InboundEvent> {
        self.events.lock().unwrap().clone()
    }
}

/// What the poller's ledger does, in memory.
#[derive(Default)]
pub struct MemoryHandled {
    seen: Mutex<HashSet<(String, ItemKind, u64)>>,
}

impl MemoryHandled {
    /// Records `(repo, kind, id)` as handled; false when it already was.
    pub fn mark(&self, repo: &str, kind: ItemKind, id: u64) -> bool {
        self.seen
            .lock()
            .unwrap()
            .insert((repo.to_ascii_lowercase(), kind, id))
    }
}

impl HandledIds for MemoryHandled {
    fn first_handling(&self, key: &ClaimKey, _event: &InboundEvent) -> Option<Durable> {
        self.mark(&key.repo, key.kind, key.id).then(Durable::done)
    }
}

pub struct Harness {
    pub handle: ServerHandle,
    pub recorder: Arc<Recorder>,
    pub handled: Arc<MemoryHandled>,
    pub log: EventLog,
    pub client: reqwest::Client,
    pub cfg: ServerConfig,
    _dir: tempfile::TempDir,
}

pub fn test_config() -> ServerConfig {
    ServerConfig {
        enabled: true,
        listen: "127.0.0.1:0".into(),
        ..ServerConfig::default()
    }
}

impl Harness {
    /// A server with the webhook secret set.
    pub async fn signed() -> Self {
        Self::start(test_config(), Some(SECRET)).await
    }

    pub async fn start(cfg: ServerConfig, secret: Option<&str>) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let dir = tempfile::tempdir().unwrap();
        let log = EventLog::open_path(dir.path().join("events.jsonl"));
        let recorder = Arc::new(Recorder::default());
        let handled = Arc::new(MemoryHandled::default());
        let receiver = WebhookReceiver::new(
            &cfg,
            WebhookAuth::resolve(&cfg, secret),
            recorder.clone(),
            log.clone(),
        )
        .with_handled_ids(handled.clone());
        let handle = server::start(&cfg, receiver, &log).await.unwrap();
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();
        Self {
            handle,
            recorder,
            handled,
            log,
            client,
            cfg,
            _dir: dir,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.handle.local_addr
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr())
    }

    /// A webhook POST with GitHub's headers; `signature` `None` omits the header.
    pub fn post(
        &self,
        event: &str,
        delivery: &str,
        body: &[u8],
        signature: Option<String>,
    ) -> reqwest::RequestBuilder {
        let mut req = self
            .client
            .post(self.url(&self.cfg.webhook_path))
            .header("content-type", "application/json")
            .header("x-github-event", event)
            .header("x-github-delivery", delivery)
            .body(body.to_vec());
        if let Some(sig) = signature {
            req = req.header("x-hub-signature-256", sig);
        }
        req
    }

    /// A webhook POST's status; `signature` `None` omits the header.
    pub async fn post_status(
        &self,
        event: &str,
        delivery: &str,
        body: &[u8],
        signature: Option<String>,
    ) -> u16 {
        status(self.post(event, delivery, body, signature)).await
    }

    /// A GET's status.
    pub async fn get_status(&self, path: &str) -> u16 {
        status(self.client.get(self.url(path))).await
    }

    /// A correctly signed delivery; returns the status.
    pub async fn deliver(&self, event: &str, delivery: &str, body: &[u8]) -> u16 {
        self.post_status(event, delivery, body, Some(sign(SECRET, body)))
            .await
    }

    /// Every event written so far.
    pub fn events(&self) -> Vec<Event> {
        match EventReader::open(self.log.path(), Filter::default()) {
            Ok(reader) => reader.map(|r| r.unwrap().event).collect(),
            Err(_) => Vec::new(),
        }
    }

    pub fn events_of(&self, kind: EventType) -> Vec<Event> {
        self.events()
            .into_iter()
            .filter(|e| e.event == kind)
            .collect()
    }

    /// The reasons of every `webhook.rejected` so far.
    pub fn rejections(&self) -> Vec<String> {
        self.events_of(EventType::WebhookRejected)
            .iter()
            .map(|e| e.str_field("reason").unwrap().to_string())
            .collect()
    }
}

/// Sends a request and returns its status.
pub async fn status(request: reqwest::RequestBuilder) -> u16 {
    request.send().await.unwrap().status().as_u16()
}

/// GitHub's `X-Hub-Signature-256`, computed here independently of the server.
pub fn sign(secret: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

pub fn fixture_bytes(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/webhook/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).expect(&path)
}

pub fn fixture(name: &str) -> Value {
    serde_json::from_slice(&fixture_bytes(name)).unwrap()
}

/// Sends raw bytes (to lie about lengths or chunk the body) and returns the response's
/// status code. Writes that fail because the server already answered are ignored.
pub async fn raw_status(addr: SocketAddr, head: &str, body: &[u8]) -> u16 {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body).await;
    let mut response = Vec::new();
    let mut buf = [0u8; 1024];
    // A guard against a hang, not a timing assertion.
    let read = tokio::time::timeout(Duration::from_secs(30), async {
        while !response.windows(2).any(|w| w == b"\r\n") {
            let n = stream.read(&mut buf).await.unwrap();
            assert!(n > 0, "connection closed before a status line");
            response.extend_from_slice(&buf[..n]);
        }
    });
    read.await.expect("no response within 30 s");
    let line = String::from_utf8_lossy(&response);
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// The head of a raw webhook POST; `framing` holds the length headers, one
/// `name: value\r\n` each.
pub fn raw_head(framing: &str, delivery: &str, signature: &str) -> String {
    format!(
        "POST /gh-webhook HTTP/1.1\r\nhost: x\r\n{framing}x-github-event: issues\r\nx-github-delivery: {delivery}\r\nx-hub-signature-256: {signature}\r\nconnection: close\r\n\r\n"
    )
}

/// A chunked transfer encoding of `body` in `size`-byte chunks.
pub fn chunked(body: &[u8], size: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for chunk in body.chunks(size) {
        out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        out.extend_from_slice(chunk);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}
