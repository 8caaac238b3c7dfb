//! `the-loop hook claude|codex` (hidden): run by a session's harness at each state
//! change (SPEC §17.2, §17.5). Prints nothing, always exits 0, within
//! `report::BUDGET`; what goes wrong goes to the log file. The work item and state root
//! come from the session's environment (`THE_LOOP_WORK_ITEM`, `THE_LOOP_HOME`). In a
//! session on another host (`THE_LOOP_HOST`), the report is sent back to the
//! supervisor through `<THE_LOOP_HOME>/operator.sock`, forwarded over the host's SSH
//! connection, and recorded there; nothing of it is recorded on the host. What a turn
//! used is read there (`hook-usage`: the logs are files there), kept there and sent
//! back the same way.

use super::CliResult;
use crate::paths::StatePaths;
use crate::session::hooks::Reporter;
use crate::session::hooks::payload::UsageLog;
use crate::session::hooks::report::{self, BUDGET};

#[derive(Debug, clap::Args)]
pub struct HookArgs {
    /// The harness reporting: `claude` (payload on stdin) or `codex` (payload as the
    /// last argument).
    #[arg(value_enum)]
    pub harness: Reporter,
    /// The payload, when the harness passes it as an argument (codex's `notify`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub payload: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct HookUsageArgs {
    /// The harness that wrote the log.
    #[arg(long, value_enum, default_value = "claude")]
    pub harness: Reporter,
    /// The transcript Claude Code named.
    #[arg(long, value_name = "PATH", required_unless_present = "thread")]
    pub transcript: Option<std::path::PathBuf>,
    /// The thread codex named: its rollout is looked up under `CODEX_HOME`.
    #[arg(long, value_name = "ID", conflicts_with = "transcript")]
    pub thread: Option<String>,
}

/// `the-loop hook-usage`: what the turn used, read once the transcript settles.
/// Prints nothing; what goes wrong goes to the log file.
pub fn run_usage(args: HookUsageArgs) -> CliResult {
    let outcome = report::work_item_from_env().and_then(|item| {
        let paths = StatePaths::from_env();
        let log = match (args.transcript, args.thread) {
            (Some(path), _) => UsageLog::Transcript(path),
            (None, Some(id)) => UsageLog::CodexThread(id),
            (None, None) => return Ok(()),
        };
        if !on_host() {
            return report::record_usage(&paths, &item, args.harness, &log);
        }
        report::keep_usage_on_host(&paths, &item, args.harness, &log, |usage| {
            let item = &item;
            to_supervisor(
                &paths,
                |client| async move { client.usage(item, usage).await },
            )
        })
    });
    if let Err(error) = outcome {
        tracing::warn!("hook-usage: {error}");
    }
    Ok(())
}

pub fn run(args: HookArgs) -> CliResult {
    let started = std::time::Instant::now();
    let harness = args.harness;
    let on_host = on_host();
    let outcome = report::bounded(BUDGET, move || {
        let item = report::work_item_from_env()?;
        let payload = report::read_payload(&args.payload, std::io::stdin().lock())?;
        let paths = StatePaths::from_env();
        if on_host {
            send_back(&paths, &item, harness, &payload)?;
            report::usage_on_host_later(harness, &payload);
            return Ok(Vec::new());
        }
        report::record(&paths, &item, harness, &payload)
    });
    match outcome {
        Ok(outcomes) => tracing::debug!(
            harness = harness.as_str(),
            outcomes = outcomes.len(),
            micros = started.elapsed().as_micros() as u64,
            "hook recorded"
        ),
        // Never the harness's problem: its turn goes on.
        Err(error) => tracing::warn!(harness = harness.as_str(), "hook: {error}"),
    }
    Ok(())
}

/// Whether this runs in a session on another host (`THE_LOOP_HOST`).
fn on_host() -> bool {
    std::env::var_os(crate::paths::ENV_HOST).is_some_and(|h| !h.is_empty())
}

/// Sends a report of a session on another host to the supervisor.
fn send_back(
    paths: &StatePaths,
    item: &crate::work_item::WorkItemRef,
    harness: Reporter,
    payload: &[u8],
) -> Result<(), report::HookError> {
    let payload = report::for_forwarding(payload);
    to_supervisor(paths, |client| async move {
        client.hook(item, harness, &payload).await
    })
}

/// Runs `call` against the supervisor, over the socket forwarded to
/// `<THE_LOOP_HOME>/operator.sock`.
fn to_supervisor<F, Fut>(paths: &StatePaths, call: F) -> Result<(), report::HookError>
where
    F: FnOnce(crate::operator::OperatorClient) -> Fut,
    Fut: std::future::Future<Output = Result<(), crate::operator::ClientError>>,
{
    let failed = |e: String| report::HookError::Forward(e);
    let client = crate::operator::OperatorClient::at(&paths.operator_socket())
        .map_err(|e| failed(e.to_string()))?;
    let runtime = crate::runtime::build(super::Threads::One).map_err(|e| failed(e.to_string()))?;
    runtime
        .block_on(call(client))
        .map_err(|e| failed(e.to_string()))
}
