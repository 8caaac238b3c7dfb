//! One connection's clock (SPEC §14.2): which deadline applies to a connection right
//! now, kept by the connection task that drives hyper and drops the connection when the
//! deadline passes.
//!
//! ```text
//!  accept ─► Head ──head parsed──► Body ──request body read (or dropped)──► Busy
//!             ▲  10 s from its       30 s from the head's       the handler runs:
//!             │  first byte          first byte                 no deadline of ours
//!             │                                                      │
//!             └──first byte── Idle (keep-alive, 60 s) ◄──response handed to hyper─┘
//! ```
//!
//! hyper's own `header_read_timeout` restarts as soon as a kept-alive connection goes
//! idle, so it cannot tell "idle for 50 s" from "10 s into a header"; the phases above
//! can, because the reader notices the first byte of the next request. hyper's timer is
//! still set, to the idle timeout, as a backstop (`serve.rs`).

use axum::body::Body;
use axum::body::Bytes;
use http_body::{Frame, SizeHint};
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio::time::Instant;

/// The three timeouts of SPEC §14.2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// From a request's first byte to the end of its head.
    pub header_read: Duration,
    /// From a request's first byte to the end of its body.
    pub request: Duration,
    /// A kept-alive connection waiting for its next request.
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            header_read: Duration::from_secs(10),
            request: Duration::from_secs(30),
            idle: Duration::from_secs(60),
        }
    }
}

/// Where a connection is in its request cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for the rest of a request's head; `since` its first byte (or the accept).
    Head { since: Instant },
    /// The head is parsed, the body is still arriving.
    Body { since: Instant },
    /// The request is read; the handler runs (it bounds itself).
    Busy,
    /// Kept alive between requests.
    Idle { since: Instant },
}

impl Phase {
    /// The `phase` a timed-out connection is reported with.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Head { .. } => "head",
            Phase::Body { .. } => "body",
            Phase::Busy => "busy",
            Phase::Idle { .. } => "idle",
        }
    }
}

/// Shared by a connection's reader, its request and response bodies, its task, and the
/// listener's slot table (which may evict it).
#[derive(Debug)]
pub struct Clock {
    timeouts: Timeouts,
    phase: Mutex<Phase>,
    changed: Notify,
    evicted: AtomicBool,
}

impl Clock {
    /// A connection just accepted: its first head is due `header_read` from now.
    pub fn new(timeouts: Timeouts) -> Arc<Self> {
        Arc::new(Self {
            timeouts,
            phase: Mutex::new(Phase::Head {
                since: Instant::now(),
            }),
            changed: Notify::new(),
            evicted: AtomicBool::new(false),
        })
    }

    /// While no request is in flight — waiting for a head (half-open) or idle between
    /// requests — the order in which connections give way to a newcomer: half-open
    /// before idle, then the one that has waited longest. `None` once a head is parsed:
    /// a request in flight is never cut off to make room.
    pub fn waiting(&self) -> Option<(u8, Instant)> {
        match self.phase() {
            Phase::Head { since } => Some((0, since)),
            Phase::Idle { since } => Some((1, since)),
            Phase::Body { .. } | Phase::Busy => None,
        }
    }

    /// Closes the connection to make room (its task drops it at once).
    pub fn evict(&self) {
        self.evicted.store(true, Ordering::Relaxed);
        self.changed.notify_one();
    }

    pub fn is_evicted(&self) -> bool {
        self.evicted.load(Ordering::Relaxed)
    }

    pub fn phase(&self) -> Phase {
        *self.phase.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// When the current phase runs out; `None` while the handler runs.
    pub fn deadline(&self) -> Option<Instant> {
        let t = &self.timeouts;
        match self.phase() {
            Phase::Head { since } => Some(since + t.header_read),
            Phase::Body { since } => Some(since + t.request),
            Phase::Busy => None,
            Phase::Idle { since } => Some(since + t.idle),
        }
    }

    /// Resolves after the next phase change (a change made before the call counts).
    pub async fn changed(&self) {
        self.changed.notified().await;
    }

    fn shift(&self, next: impl FnOnce(Phase) -> Option<Phase>) {
        let mut phase = self.phase.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(new) = next(*phase) {
            *phase = new;
            drop(phase);
            // One stored permit: the task sees the change even if it is not waiting yet.
            self.changed.notify_one();
        }
    }

    /// Bytes arrived: after idling, they start the next request's head.
    fn bytes_read(&self) {
        self.shift(|p| match p {
            Phase::Idle { .. } => Some(Phase::Head {
                since: Instant::now(),
            }),
            _ => None,
        });
    }

    /// hyper parsed a head; the whole request is due `request` from its first byte.
    pub(super) fn head_parsed(&self) {
        self.shift(|p| match p {
            Phase::Head { since } => Some(Phase::Body { since }),
            // A pipelined head read while the previous response was still going out.
            Phase::Busy | Phase::Idle { .. } => Some(Phase::Body {
                since: Instant::now(),
            }),
            Phase::Body { .. } => None,
        });
    }

    /// The request body ended, or the handler dropped it unread (hyper then closes the
    /// connection after the response rather than read the rest).
    pub(super) fn body_done(&self) {
        self.shift(|p| matches!(p, Phase::Body { .. }).then_some(Phase::Busy));
    }

    /// hyper has the whole response (or gave up on it): the connection idles.
    pub(super) fn response_done(&self) {
        self.shift(|p| match p {
            Phase::Body { .. } | Phase::Busy => Some(Phase::Idle {
                since: Instant::now(),
            }),
            _ => None,
        });
    }
}

/// The connection's stream, telling the clock when bytes arrive.
pub struct Watched<T> {
    inner: T,
    clock: Arc<Clock>,
}

impl<T> Watched<T> {
    pub fn new(inner: T, clock: Arc<Clock>) -> Self {
        Self { inner, clock }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.clock.bytes_read();
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Watched<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// Which end of the exchange a [`Tracked`] body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Request,
    Response,
}

/// A body that tells the clock when it is finished: read to the end, or dropped.
struct Tracked {
    inner: Body,
    clock: Arc<Clock>,
    end: End,
    done: bool,
}

impl Tracked {
    fn finish(&mut self) {
        if !self.done {
            self.done = true;
            match self.end {
                End::Request => self.clock.body_done(),
                End::Response => self.clock.response_done(),
            }
        }
    }
}

impl http_body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None) | Poll::Ready(Some(Err(_)))) {
            self.finish();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The request as the app sees it: its body reports to the clock.
pub fn track_request(
    request: hyper::Request<hyper::body::Incoming>,
    clock: &Arc<Clock>,
) -> axum::extract::Request {
    clock.head_parsed();
    request.map(|body| {
        Body::new(Tracked {
            inner: Body::new(body),
            clock: Arc::clone(clock),
            end: End::Request,
            done: false,
        })
    })
}

/// The response as hyper writes it: dropping its body (hyper has taken it all) starts
/// the idle phase.
pub fn track_response(
    response: axum::response::Response,
    clock: &Arc<Clock>,
) -> hyper::Response<Body> {
    let clock = Arc::clone(clock);
    response.map(|body| {
        Body::new(Tracked {
            inner: body,
            clock,
            end: End::Response,
            done: false,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timeouts() -> Timeouts {
        Timeouts {
            header_read: Duration::from_secs(10),
            request: Duration::from_secs(30),
            idle: Duration::from_secs(60),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn each_phase_has_its_own_deadline() {
        let clock = Clock::new(timeouts());
        let accepted = Instant::now();
        assert_eq!(clock.deadline(), Some(accepted + Duration::from_secs(10)));

        tokio::time::advance(Duration::from_secs(2)).await;
        clock.head_parsed();
        // The whole request counts from the head's first byte, not from the parse.
        assert_eq!(clock.phase(), Phase::Body { since: accepted });
        assert_eq!(clock.deadline(), Some(accepted + Duration::from_secs(30)));

        clock.body_done();
        assert_eq!(clock.phase(), Phase::Busy);
        assert_eq!(clock.deadline(), None);

        tokio::time::advance(Duration::from_secs(100)).await;
        clock.response_done();
        let idle = Instant::now();
        assert_eq!(clock.deadline(), Some(idle + Duration::from_secs(60)));

        // Bytes while idle start the next head; more bytes do not move it again.
        tokio::time::advance(Duration::from_secs(50)).await;
        clock.bytes_read();
        let head = Instant::now();
        assert_eq!(clock.phase(), Phase::Head { since: head });
        tokio::time::advance(Duration::from_secs(5)).await;
        clock.bytes_read();
        assert_eq!(clock.deadline(), Some(head + Duration::from_secs(10)));
    }

    #[tokio::test(start_paused = true)]
    async fn late_signals_do_not_move_the_phase_back() {
        let clock = Clock::new(timeouts());
        clock.head_parsed();
        clock.response_done();
        let idle = clock.phase();
        assert!(matches!(idle, Phase::Idle { .. }));
        // The request body dropped after the response was handed over.
        clock.body_done();
        clock.response_done();
        assert_eq!(clock.phase(), idle);
    }

    #[tokio::test(start_paused = true)]
    async fn a_change_made_before_waiting_still_wakes_the_task() {
        let clock = Clock::new(timeouts());
        clock.head_parsed();
        tokio::time::timeout(Duration::from_secs(1), clock.changed())
            .await
            .expect("the stored wake-up");
    }
}
