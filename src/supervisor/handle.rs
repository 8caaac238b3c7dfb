//! The running supervisor: what a screen reads (status, events, sessions) and the one
//! way to stop it without losing a delivery.

use super::Mode;
use super::health::{StatusCell, SupervisorStatus};
use super::http::HttpServer;
use super::lock::{LockHolder, SupervisorLock};
use super::polling::{LoopEnd, PollLoop};
use crate::config::{Config, LoadedConfig};
use crate::events::{Event, EventLog, EventType, Level};
use crate::github::Client;
use crate::ingress::ledger::LedgerStore;
use crate::ingress::poller::CycleReport;
use crate::operator::OperatorSocket;
use crate::paths::StatePaths;
use crate::session::{Dispatcher, Sessions};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Why the supervisor stops (the `reason` of `supervisor.stopped`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// The operator quit the TUI.
    Quit,
    /// SIGINT or SIGTERM.
    Signal,
    /// `run --once` finished its cycle.
    OnceDone,
    Error(String),
}

impl StopReason {
    pub fn as_str(&self) -> &'static str {
        match self {
            StopReason::Quit => "quit",
            StopReason::Signal => "signal",
            StopReason::OnceDone => "once-done",
            StopReason::Error(_) => "error",
        }
    }
}

/// What happened to the poll cycle that was running when shutdown began.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CycleEnd {
    /// None was running, or it had only read GitHub (dropped, nothing lost).
    Idle,
    /// It finished its queued deliveries within the grace period.
    Drained,
    /// The grace period ran out; what had not settled is fed again on the next start.
    CutShort,
}

impl CycleEnd {
    pub fn as_str(self) -> &'static str {
        match self {
            CycleEnd::Idle => "idle",
            CycleEnd::Drained => "drained",
            CycleEnd::CutShort => "cut-short",
        }
    }
}

/// What shutdown did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShutdownReport {
    pub cycle: CycleEnd,
    /// Webhook deliveries still unsettled at the deadline; their claims were handed to
    /// the poller, which retries them after the next start.
    pub webhook_unsettled: usize,
}

/// The parts of a started supervisor (built by `Supervisor::start`).
pub(super) struct Running {
    pub mode: Mode,
    pub paths: StatePaths,
    /// Declared before `lock`: dropped (the file removed) while the lock is still held.
    pub operator: Option<OperatorSocket>,
    /// Each host's agents' socket (`OperatorApi::host_router`).
    pub agent_sockets: Vec<OperatorSocket>,
    pub lock: SupervisorLock,
    pub events: EventLog,
    pub client: Arc<Client>,
    pub ledgers: LedgerStore,
    pub sessions: Arc<Sessions>,
    pub dispatcher: Dispatcher,
    pub status: StatusCell,
    pub config: watch::Sender<Arc<Config>>,
    pub loaded: watch::Sender<Arc<LoadedConfig>>,
    pub poll: Arc<PollLoop>,
    pub poll_task: Option<JoinHandle<LoopEnd>>,
    pub tasks: Vec<JoinHandle<()>>,
    pub http: Option<Arc<HttpServer>>,
    pub stop: watch::Sender<bool>,
    pub grace: Duration,
}

/// A running supervisor. Dropping it stops the background work without waiting
/// (prefer [`shutdown`](Self::shutdown)); the lock is released either way.
pub struct SupervisorHandle {
    running: Option<Running>,
}

impl SupervisorHandle {
    pub(super) fn new(running: Running) -> Self {
        Self {
            running: Some(running),
        }
    }

    fn r(&self) -> &Running {
        match &self.running {
            Some(r) => r,
            None => unreachable!("only shutdown takes the parts, and it consumes the handle"),
        }
    }

    pub fn mode(&self) -> Mode {
        self.r().mode
    }

    /// Who holds the lock: this process.
    pub fn holder(&self) -> &LockHolder {
        self.r().lock.holder()
    }

    pub fn paths(&self) -> &StatePaths {
        &self.r().paths
    }

    /// A snapshot for the status bar.
    pub fn status(&self) -> SupervisorStatus {
        self.r().status.get()
    }

    /// The status, waking on every change.
    pub fn watch_status(&self) -> watch::Receiver<SupervisorStatus> {
        self.r().status.subscribe()
    }

    /// Every event this process emits from now on (the TUI's feed).
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.r().events.subscribe()
    }

    pub fn events(&self) -> &EventLog {
        &self.r().events
    }

    /// The config in force (reloads replace it).
    pub fn config(&self) -> Arc<LoadedConfig> {
        self.r().loaded.borrow().clone()
    }

    pub fn watch_config(&self) -> watch::Receiver<Arc<LoadedConfig>> {
        self.r().loaded.subscribe()
    }

    /// The session lifecycle, for operator actions (start, pause, stop, reset).
    pub fn sessions(&self) -> &Arc<Sessions> {
        &self.r().sessions
    }

    pub fn dispatcher(&self) -> &Dispatcher {
        &self.r().dispatcher
    }

    pub fn github(&self) -> &Arc<Client> {
        &self.r().client
    }

    /// The HTTP server's bound address, while it listens.
    pub async fn server_addr(&self) -> Option<SocketAddr> {
        match &self.r().http {
            Some(http) => http.local_addr().await,
            None => None,
        }
    }

    /// The operator socket this supervisor serves (not in `run --once`, or when it
    /// could not be bound).
    pub fn operator_socket(&self) -> Option<&Path> {
        self.r().operator.as_ref().map(OperatorSocket::path)
    }

    /// Runs one poll cycle now (after any cycle in progress) and returns when every
    /// event it fed has settled. `run --once` is this.
    pub async fn poll_once(&self) -> CycleReport {
        self.r().poll.cycle().await
    }

    /// Asks the background loop to poll now instead of after the interval.
    pub fn poll_soon(&self) {
        self.r().poll.wake();
    }

    /// Stops polling and serving, lets queued deliveries settle (at most the grace
    /// period), releases what did not settle for the next start, writes the ledgers,
    /// logs `supervisor.stopped` and releases the lock.
    pub async fn shutdown(mut self, reason: StopReason) -> ShutdownReport {
        let Some(mut r) = self.running.take() else {
            unreachable!("the parts are taken only here, and shutdown consumes the handle")
        };
        let deadline = Instant::now() + r.grace;
        r.stop.send_replace(true);

        // No new webhooks while draining; requests in progress finish (202 is quick).
        if let Some(http) = &r.http {
            http.stop().await;
        }
        // Replies and questions in progress finish; the file goes before the lock.
        if let Some(operator) = r.operator.take() {
            operator.shutdown().await;
        }
        for socket in std::mem::take(&mut r.agent_sockets) {
            socket.shutdown().await;
        }
        let cycle = match r.poll_task {
            // The loop bounds its own wait by the grace; the margin covers a cycle
            // that ignores cancellation between two awaits.
            Some(task) => {
                match tokio::time::timeout(r.grace + Duration::from_secs(5), task).await {
                    Ok(Ok(LoopEnd::Clean)) => CycleEnd::Idle,
                    Ok(Ok(LoopEnd::Drained)) => CycleEnd::Drained,
                    Ok(Ok(LoopEnd::CutShort)) | Ok(Err(_)) | Err(_) => CycleEnd::CutShort,
                }
            }
            None => CycleEnd::Idle,
        };
        let webhook_unsettled = match &r.http {
            Some(http) => {
                let in_flight = http.webhook().in_flight().clone();
                let _ = tokio::time::timeout_at(deadline, in_flight.wait_idle()).await;
                http.webhook().hand_over_unsettled().await
            }
            None => 0,
        };
        for task in r.tasks {
            task.abort();
        }
        // Every change was written as it happened; this catches a write that failed.
        for repo in &r.config.borrow().repos {
            if let Err(e) = r.ledgers.save(&repo.name).wait().await {
                tracing::warn!(repo = %repo.name, error = %e, "poll ledger not written at shutdown");
            }
        }
        // Whatever else was handed to the state writer (the router's dedupe) lands now.
        if let Err(e) = crate::state_writer::flush().wait().await {
            tracing::warn!(error = %e, "state not all written at shutdown");
        }
        // Nothing of ours runs over the hosts' connections any more.
        r.sessions.hosts().disconnect_all().await;
        let report = ShutdownReport {
            cycle,
            webhook_unsettled,
        };
        let level = match (&reason, cycle, webhook_unsettled) {
            (StopReason::Error(_), _, _) => Level::Error,
            (_, CycleEnd::CutShort, _) | (_, _, 1..) => Level::Warning,
            _ => Level::Info,
        };
        let error = match &reason {
            StopReason::Error(e) => Some(e.clone()),
            _ => None,
        };
        let _ = r.events.emit(
            Event::new(r.mode.source(), EventType::SupervisorStopped)
                .level(level)
                .with("mode", r.mode.as_str())
                .with("reason", reason.as_str())
                .with_opt("error", error)
                .with("cycle", cycle.as_str())
                .with("webhook_unsettled", webhook_unsettled),
        );
        drop(r.lock);
        report
    }
}

impl Drop for SupervisorHandle {
    fn drop(&mut self) {
        if let Some(r) = &self.running {
            r.stop.send_replace(true);
            for task in &r.tasks {
                task.abort();
            }
        }
    }
}
