//! The supervisor's HTTP server (SPEC §4.2): the webhook receiver plus the routes other
//! parts register (the operator's reply API), started when `server.enabled` and
//! restarted when the `server` section of the config changes — a listener cannot be
//! rebound in place.

use super::status::{ServerState, StatusCell};
use crate::config::Config;
use crate::events::EventLog;
use crate::github::Client;
use crate::ingress::Ingest;
use crate::ingress::claims::{ClaimingIngest, Claims};
use crate::ingress::ledger::LedgerStore;
use crate::ingress::webhook::{WebhookAuth, WebhookReceiver};
use crate::paths::StatePaths;
use crate::server::{self, ServerHandle};
use crate::session::Sessions;
use axum::Router;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::Mutex;

/// What an extra route is built from: the supervisor's own sessions, GitHub client and
/// event log, so a route acts exactly as the supervisor would.
#[derive(Clone)]
pub struct RouteContext {
    pub sessions: Arc<Sessions>,
    pub github: Arc<Client>,
    pub events: EventLog,
    pub paths: StatePaths,
}

/// Builds one extra route (e.g. `session::reply_api::router`) once the supervisor's
/// parts exist. Its paths must not overlap the webhook path or `/healthz`.
pub type RouteFactory = Arc<dyn Fn(&RouteContext) -> Router + Send + Sync>;

pub(crate) struct HttpServer {
    running: Mutex<Option<ServerHandle>>,
    webhook: Arc<ClaimingIngest>,
    ledgers: LedgerStore,
    /// The extra routes, built once (a `Router` is cheap to clone into each restart).
    routes: Vec<Router>,
    events: EventLog,
    status: StatusCell,
}

impl HttpServer {
    pub fn new(
        webhook: Arc<ClaimingIngest>,
        ledgers: LedgerStore,
        routes: Vec<Router>,
        events: EventLog,
        status: StatusCell,
    ) -> Self {
        Self {
            running: Mutex::new(None),
            webhook,
            ledgers,
            routes,
            events,
            status,
        }
    }

    pub fn webhook(&self) -> &Arc<ClaimingIngest> {
        &self.webhook
    }

    /// Stops whatever listens and, when the config asks for a server, starts a new one.
    /// Returns the webhook route's warning (unsigned, or off for want of a secret).
    pub async fn apply(&self, config: &Config) -> Option<String> {
        let mut running = self.running.lock().await;
        if let Some(old) = running.take() {
            old.shutdown().await;
        }
        let cfg = &config.server;
        if !cfg.enabled {
            self.status.update(|s| s.server = ServerState::Off);
            return None;
        }
        let auth = WebhookAuth::from_env(cfg);
        let webhook = auth.status();
        let ingest: Arc<dyn Ingest> = self.webhook.clone();
        let receiver =
            WebhookReceiver::new(cfg, auth, ingest, self.events.clone()).with_handled_ids(
                Arc::new(Claims::new(self.ledgers.clone(), self.events.clone())),
            );
        let app = self
            .routes
            .iter()
            .fold(receiver.router(), |app, route| app.merge(route.clone()));
        match server::start(cfg, app, webhook, &self.events).await {
            Ok(handle) => {
                let addr = handle.local_addr;
                *running = Some(handle);
                self.status.update(|s| {
                    s.server = ServerState::Listening {
                        addr,
                        webhook,
                        exposed: cfg.exposed,
                    }
                });
            }
            Err(e) => {
                // `server.failed` is already logged; polling carries on.
                self.status.update(|s| {
                    s.server = ServerState::Failed {
                        error: e.to_string(),
                    }
                });
            }
        }
        webhook.warning(cfg)
    }

    pub async fn local_addr(&self) -> Option<SocketAddr> {
        self.running.lock().await.as_ref().map(|h| h.local_addr)
    }

    /// Stops accepting; requests in progress finish.
    pub async fn stop(&self) {
        if let Some(handle) = self.running.lock().await.take() {
            handle.shutdown().await;
        }
        self.status.update(|s| s.server = ServerState::Off);
    }
}
