//! `the-loop run [--once]` (SPEC §1): the supervisor without a screen.
//!
//! Runs until SIGINT or SIGTERM, then shuts down without losing a queued delivery (a
//! second signal stops waiting). `--once` runs one poll cycle, waits for its
//! deliveries, prints the cycle's counts as one JSON line on stdout and exits: 0 when
//! the cycle went through, 1 when GitHub could not be read or a delivery failed (it is
//! retried on the next run), 2 for configuration errors.

use super::{CliError, CliResult, Ctx, Threads, failed, usage};
use crate::ingress::poller::CycleReport;
use crate::supervisor::{
    CycleEnd, Mode, ServerState, StartError, StopReason, Supervisor, SupervisorHandle,
    SupervisorOptions,
};
use anyhow::anyhow;
use serde_json::json;
use tokio::signal::unix::{SignalKind, signal};

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Run one poll cycle, wait for its deliveries, and exit.
    #[arg(long)]
    pub once: bool,
}

pub fn run(args: RunArgs, ctx: &Ctx) -> CliResult {
    let runtime = crate::runtime::build(Threads::Pool(None)).map_err(failed)?;
    let mode = if args.once { Mode::RunOnce } else { Mode::Run };
    let options = SupervisorOptions::new(mode).config_flag(ctx.config_flag.clone());
    runtime.block_on(async move {
        let handle = Supervisor::start(options).await.map_err(start_error)?;
        if args.once {
            once(handle).await
        } else {
            until_signal(handle).await
        }
    })
}

fn start_error(e: StartError) -> CliError {
    CliError {
        code: e.exit_code(),
        error: e.into(),
    }
}

async fn once(handle: SupervisorHandle) -> CliResult {
    let config = handle.config();
    if !config.config.polling.enabled {
        handle.shutdown(StopReason::OnceDone).await;
        return Err(usage(anyhow!(
            "polling is disabled (polling.enabled: false in the config), so `run --once` has nothing to do; enable it or use `the-loop run` for webhooks"
        )));
    }
    let mut errors = handle.subscribe();
    let report = handle.poll_once().await;
    println!("{}", summary(&report));
    let mut first_error = None;
    while let Ok(event) = errors.try_recv() {
        if event.event == crate::events::EventType::PollError && first_error.is_none() {
            first_error = event.str_field("error").map(str::to_string);
        }
    }
    handle.shutdown(StopReason::OnceDone).await;
    if report.errors > 0 {
        return Err(failed(anyhow!(
            "the poll cycle failed: {} error(s){}; see `the-loop events --type 'poll.*'`",
            report.errors,
            first_error
                .map(|e| format!(", first: {e}"))
                .unwrap_or_default()
        )));
    }
    if report.failed > 0 {
        return Err(failed(anyhow!(
            "{} delivery(ies) failed and will be retried on the next run; see `the-loop events --type 'dispatch.*'`",
            report.failed
        )));
    }
    Ok(())
}

/// The cycle's counts, as `poll.cycle` has them, plus failures and give-ups.
fn summary(report: &CycleReport) -> serde_json::Value {
    json!({
        "repos": report.repos,
        "items": report.items,
        "requests": report.requests,
        "not_modified": report.not_modified,
        "delivered": report.delivered,
        "dropped": report.dropped,
        "failed": report.failed,
        "given_up": report.given_up,
        "errors": report.errors,
        "rate_remaining": report.rate_remaining,
        "duration_ms": report.duration.as_millis() as u64,
    })
}

async fn until_signal(handle: SupervisorHandle) -> CliResult {
    let mut term = signal(SignalKind::terminate()).map_err(failed)?;
    let mut int = signal(SignalKind::interrupt()).map_err(failed)?;
    announce(&handle);
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    eprintln!("the-loop: stopping; letting queued deliveries finish (signal again to stop now)");
    let report = tokio::select! {
        report = handle.shutdown(StopReason::Signal) => report,
        _ = term.recv() => return Err(stopped_early()),
        _ = int.recv() => return Err(stopped_early()),
    };
    if report.cycle == CycleEnd::CutShort || report.webhook_unsettled > 0 {
        eprintln!(
            "the-loop: some deliveries did not finish in time; they are retried on the next start"
        );
    }
    Ok(())
}

fn stopped_early() -> CliError {
    failed(anyhow!(
        "stopped without waiting for queued deliveries; they are retried on the next start"
    ))
}

/// One line on stderr: what is supervised, and the standing warnings.
fn announce(handle: &SupervisorHandle) {
    let status = handle.status();
    let server = match &status.server {
        ServerState::Off => "webhook server off".to_string(),
        ServerState::Listening { addr, webhook, .. } => {
            format!("listening on {addr} (webhook {})", webhook.as_str())
        }
        ServerState::Failed { error } => format!("webhook server failed: {error}"),
    };
    let polling = if status.polling_enabled {
        format!("polling every {}s", status.poll_interval.as_secs())
    } else {
        "polling off".to_string()
    };
    eprintln!(
        "the-loop: supervising {} (pid {}, {polling}, {server}); Ctrl-C to stop",
        status.repos.join(", "),
        handle.holder().pid
    );
    for warning in &status.warnings {
        eprintln!("the-loop: warning: {warning}");
    }
}
