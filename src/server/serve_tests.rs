//! The accept loop against real loopback sockets (short timeouts, generous waits) and a
//! failing listener on paused time.

use super::*;
use axum::routing::{get, post};
use std::sync::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const PATIENCE: Duration = Duration::from_secs(20);

fn app() -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/echo", post(|body: String| async move { body }))
}

fn limits(max_connections: usize, timeouts: Timeouts) -> Limits {
    Limits {
        timeouts,
        max_connections,
        drain: Duration::from_secs(2),
    }
}

fn long() -> Timeouts {
    Timeouts {
        header_read: Duration::from_secs(60),
        request: Duration::from_secs(60),
        idle: Duration::from_secs(60),
    }
}

async fn start(limits: Limits) -> (Serving, std::net::SocketAddr) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    (serve(listener, app(), limits), addr)
}

/// A connection that sent part of a head and nothing more.
async fn half_open(addr: std::net::SocketAddr) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    stream
}

/// Waits for the server to close `stream` (EOF or reset), ignoring anything it sent.
async fn closed(stream: &mut TcpStream) -> bool {
    let mut buf = [0u8; 512];
    let wait = tokio::time::timeout(PATIENCE, async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    });
    wait.await.is_ok()
}

/// One response read off a kept-alive connection: its status line and body.
async fn response(stream: &mut TcpStream) -> (String, String) {
    let mut data = Vec::new();
    let mut buf = [0u8; 512];
    loop {
        let text = String::from_utf8_lossy(&data).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length: usize = text
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length: ")
                        .map(|v| v.trim().parse().unwrap())
                })
                .unwrap_or(0);
            if data.len() >= end + 4 + length {
                let status = text.lines().next().unwrap().to_string();
                return (status, text[end + 4..end + 4 + length].to_string());
            }
        }
        let n = tokio::time::timeout(PATIENCE, stream.read(&mut buf))
            .await
            .expect("a response")
            .unwrap();
        assert!(n > 0, "closed before a whole response: {text:?}");
        data.extend_from_slice(&buf[..n]);
    }
}

async fn healthz(stream: &mut TcpStream) -> (String, String) {
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    response(stream).await
}

async fn wait_stats(serving: &Serving, what: &str, check: impl Fn(StatsSnapshot) -> bool) {
    let start = std::time::Instant::now();
    while !check(serving.stats()) {
        assert!(start.elapsed() < PATIENCE, "{what}: {:?}", serving.stats());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_full_the_longest_waiting_half_open_connection_gives_way() {
    let (serving, addr) = start(limits(2, long())).await;
    let mut first = half_open(addr).await;
    wait_stats(&serving, "one open", |s| s.open == 1).await;
    let mut second = half_open(addr).await;
    wait_stats(&serving, "two open", |s| s.open == 2).await;

    // A third: the oldest half-open one is closed for it, long before any timeout.
    let mut third = half_open(addr).await;
    assert!(closed(&mut first).await, "the oldest gave way");
    wait_stats(&serving, "one evicted", |s| s.evicted == 1 && s.open == 2).await;
    assert_eq!(serving.stats().over_cap, 0);
    assert_eq!(serving.stats().timed_out, 0);

    // A health check evicts the next oldest and is answered, with what was shed.
    let mut fresh = TcpStream::connect(addr).await.unwrap();
    let (status, body) = healthz(&mut fresh).await;
    assert_eq!(
        (status.as_str(), body.as_str()),
        ("HTTP/1.1 200 OK", "ok\n")
    );
    assert!(closed(&mut second).await, "the next oldest gave way");
    assert_eq!(serving.stats().evicted, 2);
    // The newest half-open one is still held and can finish its request.
    third.write_all(b"\r\n").await.unwrap();
    assert_eq!(response(&mut third).await.0, "HTTP/1.1 200 OK");
    serving.shutdown().await;
}

/// [`app`] plus `POST /upload`, which says when a request reaches it (its head parsed,
/// its body still to come) and then echoes the body.
fn app_with_uploads() -> (Router, tokio::sync::mpsc::UnboundedReceiver<()>) {
    let (arrived, arrivals) = tokio::sync::mpsc::unbounded_channel();
    let upload = post(move |body: axum::body::Body| {
        let _ = arrived.send(());
        async move { axum::body::to_bytes(body, 1024).await.unwrap_or_default() }
    });
    (app().route("/upload", upload), arrivals)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_every_slot_in_flight_the_reserved_slot_answers_healthz_only() {
    let (app, mut arrivals) = app_with_uploads();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = serve(listener, app, limits(1, long()));
    // A POST whose body is still arriving: a request in flight, never evicted.
    let mut held = TcpStream::connect(addr).await.unwrap();
    held.write_all(b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nx")
        .await
        .unwrap();
    tokio::time::timeout(PATIENCE, arrivals.recv())
        .await
        .expect("the upload reached its handler");

    let mut health = TcpStream::connect(addr).await.unwrap();
    let (status, body) = healthz(&mut health).await;
    assert_eq!(
        (status.as_str(), body.as_str()),
        ("HTTP/1.1 200 OK", "ok\n")
    );
    assert!(closed(&mut health).await, "one request, then closed");

    // Anything else in the reserved slot: 503, and closed.
    let mut other = TcpStream::connect(addr).await.unwrap();
    other
        .write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
        .await
        .unwrap();
    let (status, _) = response(&mut other).await;
    assert_eq!(status, "HTTP/1.1 503 Service Unavailable");

    // A slow client cannot keep it: the next newcomer displaces it, and it would run
    // out of time within a second anyway.
    let mut slow = half_open(addr).await;
    wait_stats(&serving, "the slow one holds it", |s| s.reserved == 3).await;
    let mut health = TcpStream::connect(addr).await.unwrap();
    assert_eq!(healthz(&mut health).await.0, "HTTP/1.1 200 OK");
    assert!(closed(&mut slow).await);
    let stats = serving.stats();
    assert_eq!((stats.evicted, stats.over_cap), (1, 0), "{stats:?}");

    // The request in flight was never touched: it finishes.
    held.write_all(&[b'x'; 99]).await.unwrap();
    let (status, body) = response(&mut held).await;
    assert_eq!((status.as_str(), body.len()), ("HTTP/1.1 200 OK", 100));
    serving.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_that_never_ends_is_closed_by_the_header_timeout() {
    let timeouts = Timeouts {
        header_read: Duration::from_millis(200),
        ..long()
    };
    let (serving, addr) = start(limits(8, timeouts)).await;
    let mut stream = half_open(addr).await;
    assert!(closed(&mut stream).await);
    wait_stats(&serving, "one timed out", |s| {
        s.timed_out == 1 && s.open == 0
    })
    .await;
    serving.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_never_ends_is_closed_by_the_request_timeout() {
    let timeouts = Timeouts {
        request: Duration::from_millis(300),
        ..long()
    };
    let (serving, addr) = start(limits(8, timeouts)).await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nx")
        .await
        .unwrap();
    assert!(closed(&mut stream).await);
    wait_stats(&serving, "one timed out", |s| s.timed_out == 1).await;

    // A whole request within the limit is answered.
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
        .await
        .unwrap();
    let (status, body) = response(&mut stream).await;
    assert_eq!(
        (status.as_str(), body.as_str()),
        ("HTTP/1.1 200 OK", "hello")
    );
    serving.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_outlives_the_header_timeout_until_the_idle_timeout() {
    let timeouts = Timeouts {
        header_read: Duration::from_millis(200),
        request: Duration::from_millis(400),
        idle: Duration::from_secs(60),
    };
    let (serving, addr) = start(limits(8, timeouts)).await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    assert_eq!(healthz(&mut stream).await.0, "HTTP/1.1 200 OK");
    // Idle for longer than a head may take: kept alive, and the next request is served.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(healthz(&mut stream).await.0, "HTTP/1.1 200 OK");
    // The next head starts at its first byte and gets the header timeout again.
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\n")
        .await
        .unwrap();
    assert!(closed(&mut stream).await);
    assert_eq!(serving.stats().timed_out, 1);
    serving.shutdown().await;

    let timeouts = Timeouts {
        idle: Duration::from_millis(200),
        ..long()
    };
    let (serving, addr) = start(limits(8, timeouts)).await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    assert_eq!(healthz(&mut stream).await.0, "HTTP/1.1 200 OK");
    assert!(closed(&mut stream).await, "closed once idle too long");
    wait_stats(&serving, "one timed out", |s| s.timed_out == 1).await;
    serving.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_over_64_kib_is_refused_with_431() {
    let (serving, addr) = start(limits(8, long())).await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let huge = format!(
        "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: {}\r\n\r\n",
        "a".repeat(MAX_HEAD_BYTES)
    );
    // The server may stop reading (and close) before all of it is written.
    let _ = stream.write_all(huge.as_bytes()).await;
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(PATIENCE, stream.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.starts_with("HTTP/1.1 431"),
        "{}",
        answer.lines().next().unwrap_or_default()
    );
    // A head within the limit is fine.
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let big = format!(
        "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: {}\r\n\r\n",
        "a".repeat(MAX_HEAD_BYTES / 2)
    );
    stream.write_all(big.as_bytes()).await.unwrap();
    assert_eq!(response(&mut stream).await.0, "HTTP/1.1 200 OK");
    serving.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_accepting_and_closes_what_is_held() {
    let (serving, addr) = start(limits(8, long())).await;
    let mut held = half_open(addr).await;
    wait_stats(&serving, "one open", |s| s.open == 1).await;
    serving.shutdown().await;
    assert!(closed(&mut held).await);
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "no longer listening"
    );
}

#[test]
fn accept_backoff_doubles_to_a_second_and_resets() {
    let emfile = io::Error::from_raw_os_error(24);
    let mut backoff = AcceptBackoff::default();
    let waits: Vec<u64> = (0..7)
        .map(|_| backoff.failed(&emfile).unwrap().as_millis() as u64)
        .collect();
    assert_eq!(waits, [50, 100, 200, 400, 800, 1000, 1000]);
    // A peer that gave up is retried at once and does not grow the wait.
    let aborted = io::Error::from(io::ErrorKind::ConnectionAborted);
    assert_eq!(backoff.failed(&aborted), None);
    backoff.succeeded();
    assert_eq!(backoff.failed(&emfile), Some(AcceptBackoff::FIRST));
}

/// A listener out of file descriptors: every accept fails with EMFILE.
struct Exhausted {
    calls: Arc<Mutex<Vec<Instant>>>,
}

impl Listener for Exhausted {
    type Io = TcpStream;

    async fn accept(&self) -> io::Result<TcpStream> {
        self.calls.lock().unwrap().push(Instant::now());
        Err(io::Error::from_raw_os_error(24))
    }
}

#[tokio::test(start_paused = true)]
async fn accept_errors_back_off_instead_of_spinning() {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let listener = Exhausted {
        calls: Arc::clone(&calls),
    };
    let start = Instant::now();
    let serving = serve(listener, app(), Limits::default());
    tokio::time::sleep(Duration::from_millis(3600)).await;
    serving.shutdown().await;
    let calls = calls.lock().unwrap();
    let offsets: Vec<u64> = calls
        .iter()
        .map(|t| (*t - start).as_millis() as u64)
        .collect();
    // 3.6 s of virtual time: 0, +50, +100, +200, +400, +800, +1000, +1000 ms.
    assert_eq!(offsets, [0, 50, 150, 350, 750, 1550, 2550, 3550]);
}

#[test]
fn the_limits_follow_the_spec() {
    let limits = Limits::with_max_connections(0);
    assert_eq!(limits.max_connections, 1, "a cap of 0 would serve nothing");
    let limits = Limits::default();
    assert_eq!(limits.max_connections, 256);
    assert_eq!(limits.timeouts.header_read, Duration::from_secs(10));
    assert_eq!(limits.timeouts.request, Duration::from_secs(30));
    assert_eq!(limits.timeouts.idle, Duration::from_secs(60));
}
