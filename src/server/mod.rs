//! The supervisor's network listener (SPEC §4.2, §14): `server.listen`, loopback unless
//! `server.exposed`, serving exactly two things — the webhook route and `GET /healthz`.
//! Everything else is 404, whoever asks: the operator's routes live on the Unix socket
//! (the `operator` module), never here, and [`start`] takes a [`WebhookReceiver`] rather than
//! a router so nothing else can be mounted. Every request is checked against
//! `server.allowedOrigins` before anything else, so a web page in the operator's browser
//! cannot drive it. Connections are served by the hand-built accept loop in [`serve`]
//! (timeouts, a connection cap, accept backoff).
//!
//! ```no_run
//! # async fn demo(cfg: the_loop::config::ServerConfig, receiver: the_loop::ingress::webhook::WebhookReceiver, events: the_loop::events::EventLog) -> Result<(), the_loop::server::ServerError> {
//! let handle = the_loop::server::start(&cfg, receiver, &events).await?;
//! println!("listening on {}", handle.local_addr);
//! handle.shutdown().await;
//! # Ok(()) }
//! ```

pub mod conn;
pub mod serve;
pub mod slots;

pub use conn::Timeouts;
pub use serve::{HEALTH_PATH, Limits, Listener, PeerPid, Serving, Stats, StatsSnapshot};

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::config::ServerConfig;
use crate::events::{Event, EventLog, EventType, Level, Source};
use crate::ingress::webhook::{Rejection, WebhookReceiver, WebhookStatus};

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("server.listen `{listen}` is not an IP address and port; use e.g. `127.0.0.1:8787`")]
    BadListen { listen: String },
    /// SPEC §13: loopback unless the operator opted in.
    #[error(
        "server.listen `{addr}` is not a loopback address; set `server.exposed: true` to serve the webhook beyond this machine (and keep a webhook secret set), or use `127.0.0.1:{}`",
        .addr.port()
    )]
    NotLoopback { addr: SocketAddr },
    #[error(
        "cannot listen on {addr}: {source}; another program (or another the-loop) may hold the port — change server.listen"
    )]
    Bind { addr: SocketAddr, source: io::Error },
}

/// A running server. Dropping it stops accepting; [`ServerHandle::shutdown`] also lets
/// requests in progress finish (within [`Limits::drain`]).
#[derive(Debug)]
pub struct ServerHandle {
    /// The bound address (the real port when `listen` asked for port 0).
    pub local_addr: SocketAddr,
    serving: Serving,
}

impl ServerHandle {
    /// Stops accepting, lets in-flight requests finish, and returns once the server is down.
    pub async fn shutdown(self) {
        self.serving.shutdown().await;
    }

    /// The listener's counters (open connections, refusals, timeouts).
    pub fn stats(&self) -> StatsSnapshot {
        self.serving.stats()
    }
}

/// The listener limits `cfg` asks for (SPEC §14.2).
pub fn limits(cfg: &ServerConfig) -> Limits {
    Limits::with_max_connections(cfg.max_connections)
}

/// The listen address `cfg` asks for, refused unless loopback or `exposed`.
pub fn listen_addr(cfg: &ServerConfig) -> Result<SocketAddr, ServerError> {
    let addr: SocketAddr = cfg
        .listen
        .trim()
        .parse()
        .map_err(|_| ServerError::BadListen {
            listen: cfg.listen.clone(),
        })?;
    if !addr.ip().is_loopback() && !cfg.exposed {
        return Err(ServerError::NotLoopback { addr });
    }
    Ok(addr)
}

/// Binds `server.listen` and serves the webhook route plus `/healthz`, behind the
/// origin check. Emits `server.started` (a warning when the webhook route is unsigned
/// or off) or `server.failed`. Must run inside a tokio runtime.
pub async fn start(
    cfg: &ServerConfig,
    receiver: WebhookReceiver,
    events: &EventLog,
) -> Result<ServerHandle, ServerError> {
    let webhook = receiver.status();
    let bound = match listen_addr(cfg) {
        Ok(addr) => tokio::net::TcpListener::bind(addr)
            .await
            .and_then(|l| Ok((l.local_addr()?, l)))
            .map_err(|source| ServerError::Bind { addr, source }),
        Err(e) => Err(e),
    };
    let (local_addr, listener) = match bound {
        Ok(bound) => bound,
        Err(e) => {
            let _ = events.emit(failed_event(&cfg.listen, &e.to_string()));
            return Err(e);
        }
    };

    let limits = limits(cfg);
    let stats = Arc::new(Stats::default());
    let health = Health {
        stats: Arc::clone(&stats),
        max_connections: limits.max_connections,
    };
    let app = guarded(
        receiver
            .router()
            .route(HEALTH_PATH, get(healthz).with_state(Arc::new(health)))
            .fallback(|| async { (StatusCode::NOT_FOUND, "not found\n") }),
        &cfg.allowed_origins,
        events.clone(),
    );
    let serving = serve::serve_counted(listener, app, limits, stats);

    let warning = webhook.warning(cfg);
    let _ = events.emit(
        Event::new(Source::Webhook, EventType::ServerStarted)
            .level(if warning.is_some() {
                Level::Warning
            } else {
                Level::Info
            })
            .with("listen", local_addr.to_string())
            .with("webhook_path", cfg.webhook_path.as_str())
            .with("webhook", webhook.as_str())
            .with("signed", webhook == WebhookStatus::Signed)
            .with("exposed", cfg.exposed)
            .with_opt("warning", warning),
    );
    Ok(ServerHandle {
        local_addr,
        serving,
    })
}

/// What `GET /healthz` reports: the listener's load, and what it shed.
struct Health {
    stats: Arc<Stats>,
    max_connections: usize,
}

/// 200 with the listener's counters (JSON): `open` of `max_connections`, `shed` —
/// connections let go of for want of room, `evicted` (they waited longest for a
/// request) plus `over_cap` (closed at once) — and `timed_out`.
async fn healthz(State(health): State<Arc<Health>>) -> Response {
    let s = health.stats.snapshot();
    axum::Json(serde_json::json!({
        "status": "ok",
        "open": s.open,
        "max_connections": health.max_connections,
        "shed": s.shed(),
        "evicted": s.evicted,
        "over_cap": s.over_cap,
        "timed_out": s.timed_out,
        "reserved": s.reserved,
    }))
    .into_response()
}

fn failed_event(listen: &str, error: &str) -> Event {
    Event::new(Source::Webhook, EventType::ServerFailed)
        .level(Level::Error)
        .with("listen", listen)
        .with("error", error)
}

/// `routes` (with their own fallback: a layer covers only what is already added) with
/// the origin check wrapped around them. `allowed` empty: any `Origin` is refused —
/// what the operator socket uses, since no browser has business there.
pub fn guarded(routes: Router, allowed: &[String], events: EventLog) -> Router {
    let origins = Arc::new(OriginCheck {
        allowed: allowed.to_vec(),
        events,
    });
    routes.layer(middleware::from_fn_with_state(origins, check_origin))
}

struct OriginCheck {
    allowed: Vec<String>,
    events: EventLog,
}

impl OriginCheck {
    /// Origins are scheme://host[:port], compared ignoring ASCII case and a trailing `/`.
    fn allows(&self, origin: &HeaderValue) -> bool {
        let Ok(origin) = origin.to_str() else {
            return false;
        };
        let norm = |s: &str| s.trim().trim_end_matches('/').to_ascii_lowercase();
        let origin = norm(origin);
        self.allowed.iter().any(|a| norm(a) == origin)
    }
}

/// Requests without `Origin` (GitHub, curl, the CLI) pass; a browser's must be allowed.
async fn check_origin(
    State(check): State<Arc<OriginCheck>>,
    request: Request,
    next: Next,
) -> Response {
    match request.headers().get(header::ORIGIN) {
        Some(origin) if !check.allows(origin) => {
            let rejection = Rejection::ForbiddenOrigin;
            let origin: String = String::from_utf8_lossy(origin.as_bytes())
                .chars()
                .take(200)
                .collect();
            let _ = check.events.emit(
                rejection
                    .to_event(request.headers())
                    .with("path", request.uri().path())
                    .with("origin", origin),
            );
            rejection.into_response()
        }
        _ => next.run(request).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_must_be_loopback_unless_exposed() {
        let mut cfg = ServerConfig {
            listen: "0.0.0.0:8787".into(),
            ..ServerConfig::default()
        };
        let err = listen_addr(&cfg).unwrap_err();
        assert!(matches!(err, ServerError::NotLoopback { .. }));
        assert!(err.to_string().contains("server.exposed: true"), "{err}");
        cfg.exposed = true;
        assert!(listen_addr(&cfg).is_ok());
        for loopback in ["127.0.0.1:0", "[::1]:8787", "127.3.4.5:1"] {
            cfg.exposed = false;
            cfg.listen = loopback.into();
            assert!(listen_addr(&cfg).is_ok(), "{loopback}");
        }
        cfg.listen = "localhost:8787".into();
        assert!(matches!(
            listen_addr(&cfg),
            Err(ServerError::BadListen { .. })
        ));
    }

    #[test]
    fn origins_compare_without_case_or_trailing_slash() {
        let check = OriginCheck {
            allowed: vec!["http://localhost:3000/".into()],
            events: EventLog::open_path("/nonexistent/events.jsonl"),
        };
        let allows = |o: &'static str| check.allows(&HeaderValue::from_static(o));
        assert!(allows("http://LOCALHOST:3000"));
        assert!(!allows("http://localhost:3001"));
        assert!(!allows("null"));
        assert!(!allows("http://localhost:3000.evil.example"));
    }
}
