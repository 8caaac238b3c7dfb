//! The listener under a flood (SPEC §14.2), in process: 1,100 loopback connections that
//! send half a head and nothing more are held open against the real `server::start`
//! (default limits: 256 slots), and meanwhile `/healthz` answers at once, reports what
//! was shed, a signed delivery is accepted, and the operator socket — its own listener —
//! answers too.
//!
//! Nothing here asserts a time: the bounds below only keep a regression from hanging
//! the suite (far below the 10 s a held head may take to time out, so a server that
//! waited for a slot to free would fail). The latency figures come from
//! `cargo bench --bench healthz`.
//!
//! 1,100 connections need ~2,300 descriptors in this process (both ends of each): the
//! soft `RLIMIT_NOFILE` is raised to the hard limit, as `e2e_starve` does.

use crate::support::webhook::{Harness, fixture_bytes, sign};
use nix::sys::resource::{Resource, getrlimit, setrlimit};
use std::time::Duration;
use the_loop::server::Limits;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};

const HELD: usize = 1_100;
/// Only prevents a hang; a held head would take 10 s to free a slot.
const BOUND: Duration = Duration::from_secs(5);

/// One exchange on a fresh connection (`Connection: close`): the whole answer.
async fn exchange<S: AsyncReadExt + AsyncWriteExt + Unpin>(
    mut stream: S,
    request: &[u8],
) -> String {
    stream.write_all(request).await.unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    String::from_utf8_lossy(&answer).into_owned()
}

fn body(answer: &str) -> &str {
    answer.split_once("\r\n\r\n").map_or("", |(_, body)| body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_and_a_signed_delivery_are_answered_while_1100_half_open_connections_are_held() {
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    assert!(
        hard >= 2 * HELD as u64 + 200,
        "this test holds {HELD} connections: the hard open-file limit ({hard}) is too low"
    );
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard).unwrap();

    let h = Harness::signed().await;
    let addr = h.addr();
    let state = tempfile::tempdir().unwrap();
    let socket_path = state.path().join("operator.sock");
    let operator = the_loop::operator::OperatorSocket::bind(
        &socket_path,
        axum::Router::new().route("/ping", axum::routing::get(|| async { "pong\n" })),
        Limits::default(),
    )
    .unwrap();

    let mut held = Vec::with_capacity(HELD);
    for _ in 0..HELD {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let _ = stream
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            .await;
        held.push(stream);
    }
    // Every slot is taken by the flood, the oldest given way to the newest.
    let start = std::time::Instant::now();
    while h.handle.stats().served < HELD as u64 {
        assert!(start.elapsed() < BOUND, "{:?}", h.handle.stats());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let flooded = h.handle.stats();
    assert_eq!(flooded.open, 256, "{flooded:?}");
    assert_eq!(flooded.evicted, (HELD - 256) as u64, "{flooded:?}");

    let healthz = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let answer = tokio::time::timeout(
        BOUND,
        exchange(TcpStream::connect(addr).await.unwrap(), healthz),
    )
    .await
    .expect("/healthz answered while the flood is held");
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
    let report: serde_json::Value = serde_json::from_str(body(&answer)).unwrap();
    assert_eq!(report["status"], "ok");
    assert_eq!(report["max_connections"], 256);
    assert!(
        report["shed"].as_u64().unwrap() > (HELD - 256) as u64,
        "{report}"
    );
    assert_eq!(report["evicted"], report["shed"], "{report}");
    assert_eq!(report["over_cap"], 0, "{report}");
    assert_eq!(report["timed_out"], 0, "no slot was freed by a timeout");

    // A signed delivery, meanwhile: accepted and handed to the router.
    let payload = fixture_bytes("issue_comment.created");
    let delivery = format!(
        "POST /gh-webhook HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
         Content-Type: application/json\r\nX-GitHub-Event: issue_comment\r\n\
         X-GitHub-Delivery: flood-1\r\nX-Hub-Signature-256: {}\r\nContent-Length: {}\r\n\r\n",
        sign(crate::support::webhook::SECRET, &payload),
        payload.len()
    );
    let mut request = delivery.into_bytes();
    request.extend_from_slice(&payload);
    let answer = tokio::time::timeout(
        BOUND,
        exchange(TcpStream::connect(addr).await.unwrap(), &request),
    )
    .await
    .expect("the delivery answered while the flood is held");
    assert!(answer.starts_with("HTTP/1.1 202 "), "{answer}");
    assert_eq!(h.recorder.taken().len(), 1);

    // The operator socket is its own accept path: the flood does not reach it.
    let ping = b"GET /ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let answer = tokio::time::timeout(
        BOUND,
        exchange(UnixStream::connect(&socket_path).await.unwrap(), ping),
    )
    .await
    .expect("the operator socket answered while the flood is held");
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");

    // Still held: the newest half-open connections were not touched.
    let stats = h.handle.stats();
    assert!(stats.open >= 254, "{stats:?}");
    assert_eq!(stats.timed_out, 0, "{stats:?}");
    drop(held);
    operator.shutdown().await;
    h.handle.shutdown().await;
}
