//! The supervisor's network listener (SPEC §4.2, §14.1): the webhook receiver and
//! `/healthz`, nothing else — the operator's routes are on the Unix socket. Started when
//! `server.enabled` and restarted when the `server` section of the config changes — a
//! listener cannot be rebound in place.

use super::health::{ServerState, StatusCell};
use crate::config::Config;
use crate::events::EventLog;
use crate::ingress::Ingest;
use crate::ingress::claims::{ClaimingIngest, Claims};
use crate::ingress::ledger::LedgerStore;
use crate::ingress::webhook::{WebhookAuth, WebhookReceiver};
use crate::server::{self, ServerHandle};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::Mutex;

pub(crate) struct HttpServer {
    running: Mutex<Option<ServerHandle>>,
    webhook: Arc<ClaimingIngest>,
    ledgers: LedgerStore,
    events: EventLog,
    status: StatusCell,
}

impl HttpServer {
    pub fn new(
        webhook: Arc<ClaimingIngest>,
        ledgers: LedgerStore,
        events: EventLog,
        status: StatusCell,
    ) -> Self {
        Self {
            running: Mutex::new(None),
            webhook,
            ledgers,
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
        match server::start(cfg, receiver, &self.events).await {
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
