//! The supervisor process (`the-loop tui` / `the-loop run`): the one process that polls,
//! serves webhooks and dispatches. Only one runs per state root (SPEC §11.6).
//!
//! [`Supervisor::start`] wires the parts built elsewhere: the config (and its watcher),
//! the lock, the event log, the GitHub client, the sessions (`Sessions::wire`, the one
//! wiring, in `wiring`) and their dispatcher (the one `Ingest`), the poller, the
//! optional webhook listener and the operator socket (`crate::operator`). It returns a
//! [`SupervisorHandle`] — what a screen needs (status, events, the sessions) and the
//! way to stop it. `the-loop run` and `the-loop tui` both start it (a TUI that finds
//! another supervisor running becomes its viewer instead).
//!
//! Nothing is lost on shutdown: polling stops, a cycle with queued deliveries and the
//! webhook deliveries in flight get a bounded time to settle, and anything that did not
//! settle stays pending (poll ledger) or is released (webhook claims) so the next start
//! retries it.

pub mod fd_limit;
mod followed;
mod handle;
mod health;
mod held_replies;
pub mod host_health;
mod http;
mod ingest;
mod ledger_hook;
pub mod lock;
mod polling;
mod reload;
mod sockets;
mod wiring;

pub use handle::{CycleEnd, ShutdownReport, StopReason, SupervisorHandle};
pub use health::{CycleSummary, ServerState, SupervisorStatus};
pub use ledger_hook::PollLedgerHook;

use crate::config::watch::{ConfigWatch, WatchError};
use crate::config::{self, ConfigError, LoadedConfig};
use crate::events::{Event, EventLog, EventType, Level, Source};
use crate::github::{self, Client};
use crate::ingress::Ingest;
use crate::ingress::claims::{self, ClaimingIngest, Claims};
use crate::ingress::ledger::LedgerStore;
use crate::ingress::poller::Poller;
use crate::paths::StatePaths;
use crate::routing::prompt::PromptError;
use crate::session::{Dispatcher, DispatcherError, Replier, Sessions, Settings};
use health::{StatusCell, SupervisorStatus as Status, WarningSources};
use http::HttpServer;
use ingest::PollIngest;
use lock::{LockError, SupervisorLock};
use polling::PollLoop;
use reload::Targets;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// How long shutdown waits for queued deliveries before leaving them to the next start.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(15);

/// Who runs the supervisor, which decides what it starts and how its events are signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Inside `the-loop tui`.
    Tui,
    /// `the-loop run`: poll, serve and dispatch until stopped.
    Run,
    /// `the-loop run --once`: no background polling, no server, no config watch; the
    /// caller runs one cycle with [`SupervisorHandle::poll_once`].
    RunOnce,
}

impl Mode {
    /// The `mode` field of `supervisor.*` events.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Tui => "tui",
            Mode::Run => "run",
            Mode::RunOnce => "run-once",
        }
    }

    fn source(self) -> Source {
        match self {
            Mode::Tui => Source::Tui,
            Mode::Run | Mode::RunOnce => Source::Cli,
        }
    }

    fn background(self) -> bool {
        self != Mode::RunOnce
    }
}

/// What [`Supervisor::start`] needs.
pub struct SupervisorOptions {
    pub mode: Mode,
    /// The global `--config` flag.
    pub config_flag: Option<PathBuf>,
    pub paths: StatePaths,
    pub shutdown_grace: Duration,
    /// Refuse to start without `repos` (`run`); the TUI starts anyway and says so.
    pub require_repos: bool,
}

impl SupervisorOptions {
    /// Defaults for `mode`: the state root from the environment, repos required for
    /// `run`, the default grace.
    pub fn new(mode: Mode) -> Self {
        Self {
            mode,
            config_flag: None,
            paths: StatePaths::from_env(),
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            require_repos: mode != Mode::Tui,
        }
    }

    pub fn config_flag(mut self, flag: Option<PathBuf>) -> Self {
        self.config_flag = flag;
        self
    }

    pub fn paths(mut self, paths: StatePaths) -> Self {
        self.paths = paths;
        self
    }

    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }
}

/// Why the supervisor did not start. [`StartError::exit_code`] maps it to SPEC §1.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(
        "no repos configured{}: add one under `repos:` (e.g. `- name: owner/repo`); `the-loop config init` writes a commented starter",
        .path.as_ref().map(|p| format!(" in {}", p.display())).unwrap_or_default()
    )]
    NoRepos { path: Option<PathBuf> },
    #[error("{}", locked_message(*.pid))]
    Locked {
        /// The holder's pid, as its lock file says (absent while it is being written).
        pid: Option<u32>,
    },
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error("{0}; fix sessions.promptTemplate / sessions.spawnPromptTemplate in the config")]
    Templates(PromptError),
    #[error("{0}")]
    Github(github::Error),
    #[error(transparent)]
    Dispatcher(#[from] DispatcherError),
}

fn locked_message(pid: Option<u32>) -> String {
    let who = pid.map_or_else(String::new, |pid| format!(" (pid {pid})"));
    format!("another supervisor is running{who}; use `the-loop tui` to attach as a viewer")
}

impl StartError {
    /// 2 for configuration problems, 1 otherwise (SPEC §1).
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Config(_) | Self::NoRepos { .. } | Self::Templates(_) | Self::Github(_) => 2,
            Self::Locked { .. } | Self::Lock(_) | Self::Dispatcher(_) => 1,
        }
    }
}

/// Starts supervisors; see the module docs.
pub struct Supervisor;

impl Supervisor {
    /// Loads the config, takes the lock, wires every part and starts the background
    /// work (unless [`Mode::RunOnce`]). Must run inside a tokio runtime.
    pub async fn start(options: SupervisorOptions) -> Result<SupervisorHandle, StartError> {
        let fd_limit = fd_limit::raise_nofile();
        let loaded = config::load(options.config_flag.as_deref())?;
        // Before anything reaches GitHub: the starter's `your-github-user/your-repo`.
        loaded.check_placeholders()?;
        if options.require_repos && loaded.config.repos.is_empty() {
            return Err(StartError::NoRepos {
                path: loaded.path.clone(),
            });
        }
        let paths = options.paths.clone();
        let settings = Settings::new(&loaded.config, loaded.path.clone(), &paths)
            .map_err(StartError::Templates)?;
        let client =
            Arc::new(Client::from_config(&loaded.config.github).map_err(StartError::Github)?);
        let Some(lock) = SupervisorLock::try_acquire(&paths)? else {
            let pid = lock::read_holder(&paths).map(|h| h.pid);
            return Err(StartError::Locked { pid });
        };
        let mut parts = Parts::build(&options, &loaded, settings, client, lock).await?;
        parts.fd_limit = fd_limit;
        Ok(parts.launch(options, loaded).await)
    }
}

/// The wired parts, before anything runs.
struct Parts {
    mode: Mode,
    paths: StatePaths,
    lock: SupervisorLock,
    events: EventLog,
    client: Arc<Client>,
    ledgers: LedgerStore,
    sessions: Arc<Sessions>,
    dispatcher: Dispatcher,
    anonymous: bool,
    /// The soft open-file limit after raising it.
    fd_limit: Option<u64>,
}

impl Parts {
    async fn build(
        options: &SupervisorOptions,
        loaded: &LoadedConfig,
        settings: Settings,
        client: Arc<Client>,
        lock: SupervisorLock,
    ) -> Result<Self, StartError> {
        let paths = options.paths.clone();
        // State written by an older version, or under a looser umask, becomes private —
        // worktrees in the state root too, so the walk is off the runtime (§15.6).
        let root = paths.root.clone();
        let tightened = tokio::task::spawn_blocking(move || crate::fsutil::tighten(&root))
            .await
            .unwrap_or_else(|e| crate::fsutil::Tightened {
                errors: vec![format!("the walk did not finish: {e}")],
                ..Default::default()
            });
        if tightened.dirs + tightened.files > 0 || !tightened.errors.is_empty() {
            tracing::warn!(
                dirs = tightened.dirs,
                files = tightened.files,
                errors = ?tightened.errors,
                "state was open to others; made private (directories 0700, files 0600 or, in a worktree, the owner's bits only)"
            );
        }
        let events = EventLog::open(&paths);
        bound_log(&events, &loaded.config);
        let oversized = events.clone();
        match tokio::task::spawn_blocking(move || oversized.rotate_if_oversized()).await {
            Ok(Ok(true)) => tracing::info!("the event log was over events.maxBytes: rotated"),
            Ok(Ok(false)) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "the oversized event log was not rotated"),
            Err(e) => tracing::warn!(error = %e, "the event log rotation did not finish"),
        }
        let ledgers = LedgerStore::new(paths.clone(), events.clone());
        let sessions = Arc::new(Sessions::wire(
            &loaded.config,
            &paths,
            Source::Dispatch,
            settings,
            events.clone(),
            Some(&ledgers),
        ));
        let dispatcher = Dispatcher::new(Arc::clone(&sessions), &loaded.config, &paths)?;
        recover(&paths, loaded, &ledgers, &dispatcher).await;
        // Resolves the token now (`gh auth token` at most once) so the warning is known.
        let anonymous = !client.has_token().await;
        if !anonymous {
            // Asked now, briefly, so the first cycle routes with it (and its request is
            // not counted in that cycle); asked again in the background if GitHub is slow.
            match tokio::time::timeout(OWN_LOGIN_WAIT, client.own_login()).await {
                Ok(Ok(login)) => dispatcher.set_own_login(login.as_deref()),
                _ => {
                    tokio::spawn(learn_own_login(Arc::clone(&client), dispatcher.clone()));
                }
            }
        }
        Ok(Self {
            mode: options.mode,
            paths,
            lock,
            events,
            client,
            ledgers,
            sessions,
            dispatcher,
            anonymous,
            fd_limit: None,
        })
    }

    async fn launch(self, options: SupervisorOptions, loaded: LoadedConfig) -> SupervisorHandle {
        let mode = self.mode;
        let config = Arc::new(loaded.config.clone());
        let (config_tx, config_rx) = watch::channel(Arc::clone(&config));
        let (loaded_tx, _) = watch::channel(Arc::new(loaded.clone()));
        let (stop_tx, stop_rx) = watch::channel(false);
        let status = StatusCell::new(Status::default());
        status.set_config(&loaded);

        let dispatcher: Arc<dyn Ingest> = Arc::new(self.dispatcher.clone());
        let poll_ingest = Arc::new(PollIngest::new(Arc::clone(&dispatcher)));
        let registry = self.sessions.registry().clone();
        let poller = Poller::new(
            Arc::clone(&self.client),
            Arc::clone(&config),
            self.paths.clone(),
            self.events.clone(),
            poll_ingest.clone(),
        )
        .with_ledgers(self.ledgers.clone())
        .with_sessions(Arc::new(move || followed::followed(&registry)));
        let poll = Arc::new(PollLoop::new(
            poller,
            poll_ingest,
            Arc::clone(&self.client),
            config_rx,
            status.clone(),
        ));

        let claims = Claims::new(self.ledgers.clone(), self.events.clone());
        let webhook = Arc::new(ClaimingIngest::new(dispatcher, Some(claims)));
        let http = mode.background().then(|| {
            Arc::new(HttpServer::new(
                webhook,
                self.ledgers.clone(),
                self.events.clone(),
                status.clone(),
            ))
        });

        let mut sources = WarningSources {
            config: loaded.warnings.clone(),
            server: None,
            operator: None,
            anonymous: self.anonymous,
            restart: None,
        };
        if let Some(http) = &http {
            sources.server = http.apply(&config).await;
        }
        // The operator's routes (SPEC §14.1), whether or not the webhook listener runs.
        let operator = if mode.background() {
            match self.operator_socket(&config) {
                Ok(socket) => Some(socket),
                Err(e) => {
                    tracing::warn!(error = %e, "no operator socket");
                    sources.operator = Some(format!(
                        "{e} (`the-loop reply` and `the-loop ask` work in-process meanwhile)"
                    ));
                    None
                }
            }
        } else {
            None
        };
        // Each host's agents reach the supervisor through a socket of their own.
        let agent_sockets = if operator.is_some() {
            self.agent_sockets(&config)
        } else {
            Vec::new()
        };
        status.set_warnings(&sources);
        let warnings = Arc::new(Mutex::new(sources));

        let server_addr = match &http {
            Some(http) => http.local_addr().await,
            None => None,
        };
        let listed = status.get().warnings;
        let _ = self.events.emit(
            Event::new(mode.source(), EventType::SupervisorStarted)
                .level(if listed.is_empty() {
                    Level::Info
                } else {
                    Level::Warning
                })
                .with("mode", mode.as_str())
                .with("repos", config.repos.len())
                .with("authorized_users", config.routing.authorized_users.len())
                .with("polling", config.polling.enabled)
                .with("poll_interval_seconds", config.polling.interval_seconds)
                .with_opt("server", server_addr.map(|a| a.to_string()))
                .with_opt(
                    "operator_socket",
                    operator.as_ref().map(|s| s.path().display().to_string()),
                )
                .with("anonymous", self.anonymous)
                .with_opt("fd_limit", self.fd_limit)
                .with_opt("warning", (!listed.is_empty()).then(|| listed.join("; "))),
        );

        let mut tasks = Vec::new();
        let mut poll_task = None;
        if mode.background() {
            let (poll, stop, grace) = (Arc::clone(&poll), stop_rx.clone(), options.shutdown_grace);
            poll_task = Some(tokio::spawn(async move { poll.run(stop, grace).await }));
            let replier =
                Replier::reporting(Arc::clone(&self.sessions), Ok(Arc::clone(&self.client)));
            tasks.push(tokio::spawn(held_replies::release(
                replier,
                self.sessions.registry().clone(),
                stop_rx.clone(),
            )));
            // opencode's servers tell their sessions' state as events (issue 44).
            tasks.push(tokio::spawn(crate::session::opencode::watch::follow_all(
                Arc::clone(&self.sessions),
                stop_rx.clone(),
            )));
            if !self.sessions.hosts().is_empty() {
                let hosts = self.sessions.hosts().clone();
                let every = host_health::PING_EVERY;
                tasks.push(tokio::spawn(host_health::keep_hosts_checked(
                    hosts,
                    every,
                    stop_rx.clone(),
                    Some((self.events.clone(), mode.source())),
                )));
            }
            match ConfigWatch::start(loaded.clone(), self.events.clone(), mode.source()) {
                Ok(watcher) => {
                    let targets = Targets {
                        dispatcher: self.dispatcher.clone(),
                        paths: self.paths.clone(),
                        config: config_tx.clone(),
                        loaded: loaded_tx.clone(),
                        started_with: Arc::clone(&config),
                        http: http.clone(),
                        status: status.clone(),
                        warnings: Arc::clone(&warnings),
                        source: mode.source(),
                    };
                    tasks.push(tokio::spawn(reload::follow(
                        targets,
                        watcher,
                        stop_rx.clone(),
                    )));
                }
                Err(WatchError::NoFile) => {
                    tracing::info!("no config file: running on defaults, nothing to watch");
                }
                Err(e) => {
                    tracing::warn!(error = %e, "config changes will not be applied live");
                    let mut w = warnings.lock().unwrap_or_else(|e| e.into_inner());
                    w.config.push(e.to_string());
                    status.set_warnings(&w);
                }
            }
        }

        SupervisorHandle::new(handle::Running {
            mode,
            paths: self.paths,
            operator,
            agent_sockets,
            lock: self.lock,
            events: self.events,
            client: self.client,
            ledgers: self.ledgers,
            sessions: self.sessions,
            dispatcher: self.dispatcher,
            status,
            config: config_tx,
            loaded: loaded_tx,
            poll,
            poll_task,
            tasks,
            http,
            stop: stop_tx,
            grace: options.shutdown_grace,
        })
    }
}

/// What a previous supervisor left unsettled — it died, or its shutdown ran out of
/// time — is made deliverable again before anything is fed: the webhook claims still in
/// flight are handed to the poller (SPEC §15.4), and the delivery ids of events pending
/// in the poll ledger are taken out of the router's dedupe (they were routed, never
/// settled; without this the re-feed would be dropped as a duplicate).
async fn recover(
    paths: &StatePaths,
    loaded: &LoadedConfig,
    ledgers: &LedgerStore,
    dispatcher: &Dispatcher,
) {
    let repos: Vec<String> = loaded.config.repos.iter().map(|r| r.name.clone()).collect();
    let claims =
        claims::recover_legacy(paths, ledgers).await + claims::recover(ledgers, &repos).await;
    let mut pending = 0;
    for repo in &loaded.config.repos {
        let ids = ledgers.read(&repo.name, |l| {
            l.pending
                .iter()
                .map(|p| p.delivery_id.clone())
                .collect::<Vec<_>>()
        });
        pending += ids.len();
        for id in ids {
            dispatcher.release_delivery(&id);
        }
    }
    if claims + pending > 0 {
        tracing::info!(
            claims,
            pending,
            "retrying what the previous supervisor left unsettled"
        );
    }
    // A held lane was the previous supervisor's: its events are pending in the ledger
    // and hold again (or go out) when fed. Held replies and a held paste stay.
    let registry = dispatcher.sessions().registry().clone();
    let cleared = tokio::task::spawn_blocking(move || {
        let records = registry.list()?;
        for record in records.iter().filter(|r| r.hold.events.is_some()) {
            registry.update(&record.work_item, |r| r.hold.events = None)?;
        }
        Ok::<_, crate::session::RegistryError>(())
    })
    .await;
    if !matches!(cleared, Ok(Ok(()))) {
        tracing::warn!("the previous supervisor's held lanes were not cleared from the sessions");
    }
}

/// The supervisor's event log is the one that rotates (SPEC §15.5), refreshing the
/// open-questions checkpoint as it grows so that the questions survive rotation.
pub(crate) fn bound_log(events: &EventLog, config: &crate::config::Config) {
    let refresh: crate::events::Refresh =
        Arc::new(|log: &std::path::Path| crate::session::OpenQuestions::refresh(log));
    events.set_rotation(Some(config.events.rotation()), Some(refresh));
}

/// How long the start waits for `GET /user` before asking in the background instead.
const OWN_LOGIN_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Tells the router whose PRs are the token's own (SPEC §14.3), asking GitHub in the
/// background a few times; until it answers only authorized authors' PRs link items.
async fn learn_own_login(client: Arc<Client>, dispatcher: Dispatcher) {
    const ATTEMPTS: u32 = 5;
    for attempt in 1..=ATTEMPTS {
        match client.own_login().await {
            Ok(login) => {
                tracing::debug!(?login, "the token's own login");
                dispatcher.set_own_login(login.as_deref());
                return;
            }
            Err(error) if attempt < ATTEMPTS => {
                tracing::debug!(%error, attempt, "GET /user failed; asking again later");
                tokio::time::sleep(std::time::Duration::from_secs(30)).await;
            }
            Err(error) => tracing::warn!(
                %error,
                "the token's own login is unknown: PRs it opens link issues only if it is in routing.authorizedUsers"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_errors_map_to_exit_codes_and_say_what_to_do() {
        let locked = StartError::Locked { pid: Some(4242) };
        assert_eq!(locked.exit_code(), 1);
        assert_eq!(
            locked.to_string(),
            "another supervisor is running (pid 4242); use `the-loop tui` to attach as a viewer"
        );
        let no_repos = StartError::NoRepos {
            path: Some("/etc/the-loop.yaml".into()),
        };
        assert_eq!(no_repos.exit_code(), 2);
        assert!(
            no_repos
                .to_string()
                .starts_with("no repos configured in /etc/the-loop.yaml: add one under `repos:`")
        );
        assert!(
            StartError::Locked { pid: None }
                .to_string()
                .starts_with("another supervisor is running;")
        );
    }
}
