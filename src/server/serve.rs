//! The accept loop both listeners share — the webhook's TCP port and the operator's Unix
//! socket (SPEC §14.2). `axum::serve` has no header or body timeouts and no connection
//! cap, so this loop drives hyper's HTTP/1 connections itself:
//!
//! - at most [`Limits::max_connections`] connections are open; when all are taken, the
//!   one that has waited longest for a request head gives way to the newcomer, a
//!   reserved slot answers `GET /healthz` when every slot carries a request, and only
//!   then is a new connection closed at once (`slots`: a listener that stops accepting
//!   leaves the kernel's queue full);
//! - each connection runs under its [`Clock`]: 10 s for a head, 30 s for a whole
//!   request, 60 s idle between requests, then it is dropped;
//! - accept errors other than a peer giving up (`EMFILE`, `ENFILE`, `ENOBUFS`, …) back
//!   off from 50 ms to 1 s instead of spinning on a listener that stays readable;
//! - shutdown stops accepting, lets connections finish their request for
//!   [`Limits::drain`], then drops the rest.
//!
//! The app is an axum `Router` served as a hyper service; nothing here parses HTTP.

use super::conn::{Clock, Timeouts, Watched, track_request, track_response};
use super::slots::{Pool, Slot, Slots};
use axum::Router;
use axum::http::{Method, StatusCode, header};
use axum::response::IntoResponse;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

/// `server.maxConnections`' default.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;

/// The largest request head (request line and headers) served.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// The health check: the one request the reserved slot serves.
pub const HEALTH_PATH: &str = "/healthz";

/// Every deadline of a connection in the reserved slot: a health check sends its head
/// at once and is answered at once.
pub const RESERVED_DEADLINE: Duration = Duration::from_secs(1);

/// What a listener tolerates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub timeouts: Timeouts,
    /// Open connections at most (plus the reserved health-check slot); when all are
    /// open, the one that waited longest for a request gives way (`slots`).
    pub max_connections: usize,
    /// How long shutdown waits for open connections before dropping them.
    pub drain: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            timeouts: Timeouts::default(),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            drain: Duration::from_secs(5),
        }
    }
}

impl Limits {
    /// The defaults with `server.maxConnections` (at least 1).
    pub fn with_max_connections(max_connections: usize) -> Self {
        Self {
            max_connections: max_connections.max(1),
            ..Self::default()
        }
    }
}

/// Something that hands out connections: a TCP listener, the operator's Unix socket.
pub trait Listener: Send + Sync + 'static {
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;

    fn accept(&self) -> impl Future<Output = io::Result<Self::Io>> + Send;

    /// Whether to serve a connection just accepted; a refused one is closed unanswered.
    fn admit(&self, _io: &Self::Io) -> bool {
        true
    }

    /// The process at the other end, when the transport says (a Unix socket's
    /// `SO_PEERCRED`): handed to every request of the connection as [`PeerPid`].
    fn peer_pid(&self, _io: &Self::Io) -> Option<u32> {
        None
    }
}

/// The pid of the process that sent a request (a request extension), when known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerPid(pub u32);

impl Listener for tokio::net::TcpListener {
    type Io = tokio::net::TcpStream;

    async fn accept(&self) -> io::Result<Self::Io> {
        tokio::net::TcpListener::accept(self)
            .await
            .map(|(stream, _)| stream)
    }
}

/// Counters of one listener, for tests, benchmarks and the log.
#[derive(Debug, Default)]
pub struct Stats {
    open: AtomicUsize,
    served: AtomicU64,
    over_cap: AtomicU64,
    evicted: AtomicU64,
    reserved: AtomicU64,
    refused: AtomicU64,
    timed_out: AtomicU64,
    accept_errors: AtomicU64,
}

/// A copy of [`Stats`] at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    /// Connections open now.
    pub open: usize,
    /// Connections admitted and served (or being served).
    pub served: u64,
    /// Connections closed at once: every slot, the reserved one too, carried a request.
    pub over_cap: u64,
    /// Connections closed to make room for a newer one: they had waited longest for a
    /// request head (half-open, or idle between requests).
    pub evicted: u64,
    /// Connections served in the reserved slot (`GET /healthz` only).
    pub reserved: u64,
    /// Connections the listener refused (the operator socket: another user).
    pub refused: u64,
    /// Connections dropped because a phase's deadline passed.
    pub timed_out: u64,
    pub accept_errors: u64,
}

impl Stats {
    pub fn snapshot(&self) -> StatsSnapshot {
        StatsSnapshot {
            open: self.open.load(Ordering::Relaxed),
            served: self.served.load(Ordering::Relaxed),
            over_cap: self.over_cap.load(Ordering::Relaxed),
            evicted: self.evicted.load(Ordering::Relaxed),
            reserved: self.reserved.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            timed_out: self.timed_out.load(Ordering::Relaxed),
            accept_errors: self.accept_errors.load(Ordering::Relaxed),
        }
    }
}

/// A listener being served. Dropping it stops accepting; [`Serving::shutdown`] also
/// waits (at most [`Limits::drain`]) for open connections.
#[derive(Debug)]
pub struct Serving {
    stop: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
    stats: Arc<Stats>,
}

impl Serving {
    pub fn stats(&self) -> StatsSnapshot {
        self.stats.snapshot()
    }

    pub async fn shutdown(mut self) {
        self.stop.send_replace(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.stop.send_replace(true);
    }
}

impl StatsSnapshot {
    /// Connections the listener let go of for want of room: evicted or closed at once.
    pub fn shed(&self) -> u64 {
        self.evicted + self.over_cap
    }
}

/// Serves `app` on `listener` under `limits`. Must run inside a tokio runtime.
pub fn serve<L: Listener>(listener: L, app: Router, limits: Limits) -> Serving {
    serve_counted(listener, app, limits, Arc::default())
}

/// [`serve`], counting into `stats` (which the app may report, as `/healthz` does).
pub fn serve_counted<L: Listener>(
    listener: L,
    app: Router,
    limits: Limits,
    stats: Arc<Stats>,
) -> Serving {
    let (stop, stopped) = watch::channel(false);
    let task = tokio::spawn(accept_loop(
        listener,
        app,
        limits,
        Arc::clone(&stats),
        stopped,
    ));
    Serving {
        stop,
        task: Some(task),
        stats,
    }
}

async fn accept_loop<L: Listener>(
    listener: L,
    app: Router,
    limits: Limits,
    stats: Arc<Stats>,
    mut stop: watch::Receiver<bool>,
) {
    let slots = Slots::new(limits.max_connections, super::slots::RESERVED);
    let mut builder = http1::Builder::new();
    // hyper's header timer restarts the moment a connection idles, so it can only
    // stand in for the longest phase; the connection's clock keeps the real ones.
    let t = limits.timeouts;
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(t.idle.max(t.header_read))
        // A head larger than 64 KiB is refused (431), and a connection's read buffer
        // stays within 128 KiB (hyper's default is ~400 KiB): a full listener holds
        // tens of MiB at most.
        .max_header_size(MAX_HEAD_BYTES)
        .max_buf_size(2 * MAX_HEAD_BYTES);
    let mut connections = JoinSet::new();
    let mut backoff = AcceptBackoff::default();
    let mut warn_cap = Throttle::every(Duration::from_secs(10));
    let mut warn_evict = Throttle::every(Duration::from_secs(10));
    let mut warn_errors = Throttle::every(Duration::from_secs(10));
    loop {
        while connections.try_join_next().is_some() {}
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stopped(&mut stop) => break,
        };
        let io = match accepted {
            Ok(io) => {
                backoff.succeeded();
                io
            }
            Err(error) => {
                stats.accept_errors.fetch_add(1, Ordering::Relaxed);
                if let Some(wait) = backoff.failed(&error) {
                    if let Some(more) = warn_errors.ready() {
                        tracing::warn!(%error, retry_in_ms = wait.as_millis() as u64, also = more, "cannot accept connections; backing off");
                    }
                    tokio::select! {
                        () = tokio::time::sleep(wait) => {}
                        () = stopped(&mut stop) => break,
                    }
                }
                continue;
            }
        };
        if !listener.admit(&io) {
            stats.refused.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let t_reserved = reserved_timeouts(t);
        let admitted = slots.admit(|pool| match pool {
            Pool::Main => Clock::new(t),
            Pool::Reserved => Clock::new(t_reserved),
        });
        let Some((admitted, clock)) = admitted else {
            stats.over_cap.fetch_add(1, Ordering::Relaxed);
            if let Some(more) = warn_cap.ready() {
                tracing::warn!(
                    max_connections = limits.max_connections,
                    also = more,
                    "every connection slot, the reserved one too, carries a request; closing new connections"
                );
            }
            continue;
        };
        if admitted.evicted {
            stats.evicted.fetch_add(1, Ordering::Relaxed);
            if let Some(more) = warn_evict.ready() {
                tracing::warn!(
                    max_connections = limits.max_connections,
                    also = more,
                    "connection limit reached; closing the connections that waited longest for a request"
                );
            }
        }
        let mut conn_builder = builder.clone();
        if admitted.slot.pool() == Pool::Reserved {
            stats.reserved.fetch_add(1, Ordering::Relaxed);
            conn_builder
                .keep_alive(false)
                .header_read_timeout(RESERVED_DEADLINE);
        }
        stats.served.fetch_add(1, Ordering::Relaxed);
        let open = Open::new(admitted.slot, Arc::clone(&stats));
        let peer = listener.peer_pid(&io).map(PeerPid);
        connections.spawn(connection(
            io,
            peer,
            app.clone(),
            conn_builder,
            clock,
            open,
            stop.clone(),
        ));
    }
    drop(listener);
    let drained = tokio::time::timeout(limits.drain, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::debug!(
            left = connections.len(),
            "connections still open at shutdown; dropped"
        );
    }
    connections.shutdown().await;
}

/// The deadlines of a connection in the reserved slot: [`RESERVED_DEADLINE`] at most.
fn reserved_timeouts(t: Timeouts) -> Timeouts {
    Timeouts {
        header_read: t.header_read.min(RESERVED_DEADLINE),
        request: t.request.min(RESERVED_DEADLINE),
        idle: t.idle.min(RESERVED_DEADLINE),
    }
}

/// One open connection's slot; counted while it lives, however it ends.
struct Open {
    slot: Slot,
    stats: Arc<Stats>,
}

impl Open {
    fn new(slot: Slot, stats: Arc<Stats>) -> Self {
        stats.open.fetch_add(1, Ordering::Relaxed);
        Self { slot, stats }
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.stats.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Drives one connection until it ends, its clock runs out, it is evicted, or shutdown
/// has let its request finish. In the reserved slot it serves one `GET /healthz`; any
/// other request there gets 503.
async fn connection<Io>(
    io: Io,
    peer: Option<PeerPid>,
    app: Router,
    builder: http1::Builder,
    clock: Arc<Clock>,
    open: Open,
    mut stop: watch::Receiver<bool>,
) where
    Io: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let io = TokioIo::new(Watched::new(io, Arc::clone(&clock)));
    let service_clock = Arc::clone(&clock);
    let health_only = open.slot.pool() == Pool::Reserved;
    let service = hyper::service::service_fn(move |request| {
        let mut app = app.clone();
        let clock = Arc::clone(&service_clock);
        async move {
            let mut request = track_request(request, &clock);
            if health_only && !is_health_check(&request) {
                drop(request);
                return Ok(track_response(busy(), &clock));
            }
            if let Some(peer) = peer {
                request.extensions_mut().insert(peer);
            }
            let response = tower_service::Service::call(&mut app, request).await?;
            Ok::<_, std::convert::Infallible>(track_response(response, &clock))
        }
    });
    let conn = builder.serve_connection(io, service);
    tokio::pin!(conn);
    let mut stopping = false;
    loop {
        if clock.is_evicted() {
            tracing::debug!("connection evicted to make room; closed");
            break;
        }
        if !stopping && *stop.borrow() {
            stopping = true;
            conn.as_mut().graceful_shutdown();
        }
        let deadline = clock.deadline();
        tokio::select! {
            served = conn.as_mut() => {
                if let Err(error) = served {
                    tracing::debug!(%error, "connection ended with an error");
                }
                break;
            }
            () = until(deadline) => {
                if clock.deadline().is_some_and(|d| d <= Instant::now()) {
                    open.stats.timed_out.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(phase = clock.phase().as_str(), "connection timed out; closed");
                    break;
                }
            }
            () = clock.changed() => {}
            changed = stop.changed(), if !stopping => {
                if changed.is_err() {
                    stopping = true;
                    conn.as_mut().graceful_shutdown();
                }
            }
        }
    }
    drop(open);
}

fn is_health_check(request: &axum::extract::Request) -> bool {
    request.method() == Method::GET && request.uri().path() == HEALTH_PATH
}

/// What the reserved slot answers anything but a health check.
fn busy() -> axum::response::Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::RETRY_AFTER, "1"), (header::CONNECTION, "close")],
        "every connection slot is busy; only GET /healthz is answered now, retry shortly\n",
    )
        .into_response()
}

async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Resolves once `stop` is true or its sender is gone.
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|stop| *stop).await;
}

/// How long to wait after an accept error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceptBackoff {
    next: Duration,
}

impl AcceptBackoff {
    pub const FIRST: Duration = Duration::from_millis(50);
    pub const MAX: Duration = Duration::from_secs(1);

    /// `None`: the peer gave up before the accept (retry at once); otherwise how long
    /// to wait, doubling from [`Self::FIRST`] up to [`Self::MAX`].
    pub fn failed(&mut self, error: &io::Error) -> Option<Duration> {
        if is_peer_error(error) {
            return None;
        }
        let wait = self.next;
        self.next = (self.next * 2).min(Self::MAX);
        Some(wait)
    }

    pub fn succeeded(&mut self) {
        self.next = Self::FIRST;
    }
}

impl Default for AcceptBackoff {
    fn default() -> Self {
        Self { next: Self::FIRST }
    }
}

/// Errors about the one connection being accepted, not the listener or the process.
fn is_peer_error(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
    )
}

/// Lets a repeated warning through at most once per period, counting the rest.
struct Throttle {
    every: Duration,
    last: Option<Instant>,
    skipped: u64,
}

impl Throttle {
    fn every(every: Duration) -> Self {
        Self {
            every,
            last: None,
            skipped: 0,
        }
    }

    /// `Some(how many were skipped since the last one)` when this one may be logged.
    fn ready(&mut self) -> Option<u64> {
        let now = Instant::now();
        if self.last.is_some_and(|last| now < last + self.every) {
            self.skipped += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.skipped))
    }
}

#[cfg(test)]
#[path = "serve_tests.rs"]
mod tests;
