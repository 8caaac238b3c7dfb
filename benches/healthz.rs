//! The listener under load (SPEC §14.2), printed as p50 / p99 / max:
//! - **quiet**: `GET /healthz` on a fresh loopback connection, nothing else open;
//! - **flooded**: the same while 1,100 connections that sent half a head are held —
//!   the time to the first 200 (a refused attempt is retried every 10 ms), then 200
//!   more answers, then one signed webhook delivery and its status.
//!
//! The real `server::start` (webhook route, origin check, `/healthz`) with the default
//! limits, on 127.0.0.1:0; the flood is dropped before the process ends.
//! `cargo bench --bench healthz` (a plain `main`: criterion has no percentiles). It
//! raises this process's soft open-file limit to the hard one (the flood needs ~2,300
//! descriptors: both ends of every connection).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures::future::BoxFuture;
use hmac::{Hmac, Mac};
use nix::sys::resource::{Resource, getrlimit, setrlimit};
use sha2::Sha256;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use the_loop::config::ServerConfig;
use the_loop::events::EventLog;
use the_loop::ingress::webhook::{WebhookAuth, WebhookReceiver};
use the_loop::ingress::{Disposition, InboundEvent, Ingest};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const HELD: usize = 1_100;
const SAMPLES: usize = 200;
const SECRET: &str = "bench-secret";
/// Only keeps a broken run from hanging; every figure is printed, none is asserted.
const GIVE_UP: Duration = Duration::from_secs(30);

struct Accept;

impl Ingest for Accept {
    fn ingest(&self, _event: InboundEvent) -> BoxFuture<'static, Disposition> {
        Box::pin(async { Disposition::Delivered })
    }
}

/// One request on a fresh connection (`Connection: close`): the status line, or `None`
/// when the server closed it unanswered.
async fn exchange(addr: SocketAddr, request: &[u8]) -> Option<String> {
    let mut stream = TcpStream::connect(addr).await.ok()?;
    stream.write_all(request).await.ok()?;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let text = String::from_utf8_lossy(&answer);
    text.lines()
        .next()
        .filter(|l| l.starts_with("HTTP/"))
        .map(str::to_string)
}

const HEALTHZ: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n";

/// Latency of one answered `/healthz`, retrying refusals; and how many were refused.
async fn healthz(addr: SocketAddr) -> (Duration, usize) {
    let start = Instant::now();
    let mut refused = 0;
    loop {
        assert!(start.elapsed() < GIVE_UP, "/healthz never answered");
        match exchange(addr, HEALTHZ).await {
            Some(status) if status.contains(" 200 ") => return (start.elapsed(), refused),
            _ => {
                refused += 1;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

fn signed_delivery(id: &str) -> Vec<u8> {
    let body = format!(r#"{{"zen":"bench","hook_id":1,"id":"{id}"}}"#);
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(body.as_bytes());
    let signature = hex::encode(mac.finalize().into_bytes());
    format!(
        "POST /gh-webhook HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\
         Content-Type: application/json\r\nX-GitHub-Event: ping\r\nX-GitHub-Delivery: {id}\r\n\
         X-Hub-Signature-256: sha256={signature}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn figures(mut samples: Vec<Duration>) -> String {
    samples.sort();
    let n = samples.len();
    format!(
        "p50 {} p99 {} max {} (n={n})",
        ms(samples[n / 2]),
        ms(samples[(n * 99 / 100).min(n - 1)]),
        ms(samples[n - 1])
    )
}

async fn bench() {
    let dir = tempfile::tempdir().unwrap();
    let events = EventLog::open_path(dir.path().join("events.jsonl"));
    let cfg = ServerConfig {
        enabled: true,
        listen: "127.0.0.1:0".into(),
        ..ServerConfig::default()
    };
    let receiver = WebhookReceiver::new(
        &cfg,
        WebhookAuth::resolve(&cfg, Some(SECRET)),
        Arc::new(Accept),
        events.clone(),
    );
    let handle = the_loop::server::start(&cfg, receiver, &events)
        .await
        .unwrap();
    let addr = handle.local_addr;

    let mut quiet = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        quiet.push(healthz(addr).await.0);
    }
    println!("healthz, quiet:            {}", figures(quiet));

    let flood = Instant::now();
    let mut held = Vec::with_capacity(HELD);
    for _ in 0..HELD {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let _ = stream
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            .await;
        held.push(stream);
    }
    let opened = flood.elapsed();
    let (first, refused) = healthz(addr).await;
    println!(
        "healthz, {HELD} half-open: first 200 after {} ({refused} attempts refused before it; the flood took {} to open)",
        ms(first),
        ms(opened)
    );
    let mut flooded = Vec::with_capacity(SAMPLES);
    let mut refused_more = 0;
    for _ in 0..SAMPLES {
        let (took, refused) = healthz(addr).await;
        flooded.push(took);
        refused_more += refused;
    }
    println!(
        "healthz, {HELD} half-open: {} ({refused_more} refused)",
        figures(flooded)
    );
    let start = Instant::now();
    let status = exchange(addr, &signed_delivery("bench-1")).await;
    println!(
        "signed delivery, {HELD} half-open: {:?} after {}",
        status.unwrap_or_else(|| "closed unanswered".into()),
        ms(start.elapsed())
    );
    println!("listener: {:?}", handle.stats());
    drop(held);
    handle.shutdown().await;
}

fn main() {
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard).unwrap();
    println!("open-file limit: {hard}");
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(bench());
}
