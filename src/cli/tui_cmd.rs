//! `the-loop tui [--attach [REF|SESSION]]` (SPEC §11): the operator's screen.
//!
//! It starts the supervisor in-process; when another process holds the supervisor lock
//! it becomes a **viewer** of that one (SPEC §11.6): it follows the event log and the
//! registry, never polls, and still performs operator actions in-process exactly as the
//! CLI commands do. Either way the screen is [`tui::run`] over a [`LiveBackend`]; the
//! status bar says which role it has.
//!
//! Order matters at start: the local UTC offset is read in `main` before any thread
//! exists (the `time` crate refuses later), logging goes to a file (the screen owns the
//! terminal), and configuration errors are reported before the screen is taken. At the
//! end the terminal is restored first (by `tui::run`, on every path), then the
//! supervisor shuts down: queued deliveries get their grace period, and what does not
//! settle is retried by the next start.

use super::{CliError, CliResult, Ctx, Threads, failed, start_runtime, usage};
use crate::config::{self, LoadedConfig};
use crate::critic::{CriticRunner, Recorder};
use crate::events::{EventLog, Source};
use crate::github::Client;
use crate::paths::StatePaths;
use crate::session::ship::Shipper;
use crate::session::{Replier, Sessions};
use crate::supervisor::{
    CycleEnd, Mode, StartError, StopReason, Supervisor, SupervisorHandle, SupervisorOptions,
    host_health,
};
use crate::tui::live::{LiveBackend, LiveParts, Supervision};
use crate::tui::{self, RunOptions};
use anyhow::anyhow;
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::watch;

#[derive(Debug, clap::Args)]
pub struct TuiArgs {
    /// Open focused on a session: a ref (`github:octo/repo#15`, `octo/repo#15`) or a
    /// tmux session name; without a value, the first session.
    #[arg(long, value_name = "REF|SESSION", num_args = 0..=1, default_missing_value = "")]
    pub attach: Option<String>,
}

pub fn run(args: TuiArgs, ctx: &Ctx) -> CliResult {
    if !(std::io::stdout().is_terminal() && std::io::stdin().is_terminal()) {
        return Err(usage(anyhow!(
            "`the-loop tui` needs a terminal on standard input and output; run it in one (`the-loop run` supervises without a screen)"
        )));
    }
    // A broken config is reported on a plain terminal, before the screen is taken.
    let loaded = config::load(ctx.config_flag.as_deref()).map_err(usage)?;
    let mut options = RunOptions::new(loaded.config.tui.clone());
    options.hold_notify_secs = loaded.config.sessions.hold_notify_seconds;
    options.utc_offset = crate::time::local_offset();
    options.focus = args.attach;
    let runtime = start_runtime(Threads::Pool(Some(2)))?;
    let result = runtime.block_on(screen(ctx, loaded, options));
    // Critic rounds still running are dropped with the runtime (their groups killed).
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    result
}

async fn screen(ctx: &Ctx, loaded: LoadedConfig, options: RunOptions) -> CliResult {
    let paths = StatePaths::from_env();
    // The supervisor serves the operator socket (reply, ask) itself (SPEC §14.1).
    let supervisor = SupervisorOptions::new(Mode::Tui)
        .config_flag(ctx.config_flag.clone())
        .paths(paths.clone());
    match Supervisor::start(supervisor).await {
        Ok(handle) => supervise(ctx, handle, options).await,
        Err(StartError::Locked { pid }) => {
            tracing::info!(
                ?pid,
                "another supervisor holds the lock: opening as a viewer"
            );
            view(ctx, paths, loaded, options).await
        }
        Err(e) => Err(CliError {
            code: e.exit_code(),
            error: e.into(),
        }),
    }
}

/// This process supervises; the screen shows it and the supervisor stops after it.
async fn supervise(ctx: &Ctx, handle: SupervisorHandle, options: RunOptions) -> CliResult {
    let github = Ok(Arc::clone(handle.github()));
    let sessions = Arc::clone(handle.sessions());
    let parts = LiveParts {
        paths: handle.paths().clone(),
        config_flag: ctx.config_flag.clone(),
        config: handle.watch_config(),
        replier: Replier::reporting(Arc::clone(&sessions), github.clone()),
        shipper: shipper(&sessions, &github),
        critics: critic_runner(handle.paths(), handle.events(), github),
        sessions,
        events: handle.events().clone(),
        supervision: Supervision::Supervisor {
            status: handle.watch_status(),
        },
    };
    let backend = LiveBackend::start(parts);
    let signalled = watch_signals();
    let result = tui::run(backend, options).await;
    let reason = match &result {
        Err(e) => StopReason::Error(format!("{e:#}")),
        Ok(()) if signalled.load(Ordering::Relaxed) => StopReason::Signal,
        Ok(()) => StopReason::Quit,
    };
    // The terminal is the operator's again: say why the exit may take a moment.
    eprintln!("the-loop: stopping the supervisor; letting queued deliveries finish");
    let report = handle.shutdown(reason).await;
    if report.cycle == CycleEnd::CutShort || report.webhook_unsettled > 0 {
        eprintln!(
            "the-loop: some deliveries did not finish in time; they are retried on the next start"
        );
    }
    result.map_err(failed)
}

/// Another process supervises: this screen follows it and acts in-process, as the CLI
/// commands do.
async fn view(
    ctx: &Ctx,
    paths: StatePaths,
    loaded: LoadedConfig,
    options: RunOptions,
) -> CliResult {
    let sessions = Arc::new(Sessions::open(&loaded, &paths, Source::Tui).map_err(usage)?);
    let events = sessions.events().clone();
    let github = Client::from_config(&loaded.config.github)
        .map(Arc::new)
        .map_err(|e| e.to_string());
    let (config_tx, config_rx) = watch::channel(Arc::new(loaded));
    // The supervisor's pings keep its own transports current, not this process's: the
    // viewer pings the hosts for its status bar itself.
    let (stop_pings, pings_stop) = watch::channel(false);
    tokio::spawn(host_health::keep_hosts_checked(
        sessions.hosts().clone(),
        host_health::PING_EVERY,
        pings_stop,
        None, // the supervisor logs the hosts' changes
    ));
    let backend = LiveBackend::start(LiveParts {
        replier: Replier::reporting(Arc::clone(&sessions), github.clone()),
        shipper: shipper(&sessions, &github),
        critics: critic_runner(&paths, &events, github),
        paths,
        config_flag: ctx.config_flag.clone(),
        config: config_rx,
        sessions,
        events,
        supervision: Supervision::Viewer { config: config_tx },
    });
    let result = tui::run(backend, options).await;
    let _ = stop_pings.send(true);
    result.map_err(failed)
}

/// Sessions' work shipped through `github` (SPEC §19.4), or why it cannot be.
fn shipper(
    sessions: &Arc<Sessions>,
    github: &Result<Arc<Client>, String>,
) -> Result<Shipper, String> {
    github
        .as_ref()
        .map(|client| Shipper::new(Arc::clone(sessions), Arc::clone(client)))
        .map_err(|why| format!("no GitHub client: {why}"))
}

/// Critic rounds recorded in this state directory, posted through `github`.
fn critic_runner(
    paths: &StatePaths,
    events: &EventLog,
    github: Result<Arc<Client>, String>,
) -> CriticRunner {
    CriticRunner::new(Recorder::new(paths, events.clone()), github, Source::Tui)
}

/// Set when SIGTERM or SIGHUP arrives (the screen leaves on them by itself), so the
/// supervisor's stop is recorded with the right reason.
fn watch_signals() -> Arc<AtomicBool> {
    use tokio::signal::unix::{SignalKind, signal};
    let flag = Arc::new(AtomicBool::new(false));
    let set = Arc::clone(&flag);
    if let (Ok(mut term), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) {
        tokio::spawn(async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = hup.recv() => {}
            }
            set.store(true, Ordering::Relaxed);
        });
    }
    flag
}
