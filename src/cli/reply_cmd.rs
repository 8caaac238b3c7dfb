//! `the-loop reply --work-item REF (--text TEXT | --text-file PATH|-) [--actor NAME]
//! [--no-comment]` (SPEC §8.2): the operator answers into a session through the one
//! [`Replier`] — the running supervisor's, over its operator socket (SPEC §14.1), or
//! this process's own when no supervisor answers there.
//!
//! A session that cannot take a paste now (a permission dialog, the operator's draft,
//! SPEC §18.3) gets the reply queued; the command then waits up to `--wait SECONDS`
//! (default 30) for it to go out, and otherwise leaves it queued — never pasted into a
//! dialog — for the supervisor to deliver once the hold clears.
//!
//! Exit 0 when the reply was pasted (a failed delivery report is a warning on stderr),
//! 1 when it was refused or failed (no session, paused, no live pane, tmux) or is still
//! held after `--wait`, 2 for a bad ref, empty text or a broken config.

use super::ask_cmd::read_text;
use super::{CliError, CliResult, Ctx, Threads, start_runtime, usage};
use crate::config;
use crate::events::EventLog;
use crate::events::Source;
use crate::github::Client;
use crate::operator::{ClientError, OperatorClient};
use crate::paths::StatePaths;
use crate::session::reply::{Replied, Report, reply_text};
use crate::session::{Registry, Replier, ReplyError, ReplyRequest, Sessions, Status, Via};
use crate::work_item::WorkItemRef;
use anyhow::anyhow;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("reply").required(true).args(["text", "text_file"])))]
pub struct ReplyArgs {
    /// The session's work item, e.g. `github:octo/repo#15`.
    #[arg(long, value_name = "REF")]
    pub work_item: String,
    /// The reply.
    #[arg(long, value_name = "TEXT")]
    pub text: Option<String>,
    /// Read the reply from a file (`-`: standard input).
    #[arg(long, value_name = "PATH|-")]
    pub text_file: Option<PathBuf>,
    /// Who is replying, for the record (default: the local user). Authorizes nothing.
    #[arg(long, value_name = "NAME")]
    pub actor: Option<String>,
    /// Do not post the delivery report on the work item.
    #[arg(long)]
    pub no_comment: bool,
    /// When the session is held (a permission dialog, the operator's draft), wait this
    /// long for the queued reply to go out; then exit 1, leaving it queued.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    pub wait: u64,
    /// Deliver even though the session is over its budget (`sessions.budgetUsd` or
    /// `budgets.dailyUsd`); without it such a reply is refused and nothing is queued.
    #[arg(long)]
    pub over_budget: bool,
}

pub fn run(args: ReplyArgs, ctx: &Ctx) -> CliResult {
    let text = match (&args.text, &args.text_file) {
        (Some(text), _) => text.clone(),
        (None, Some(path)) => read_text(path, "--text-file")?,
        (None, None) => return Err(usage(anyhow!("pass --text TEXT or --text-file PATH"))),
    };
    let request = ReplyRequest {
        work_item: args.work_item,
        text,
        actor: args.actor,
        comment: !args.no_comment,
        via: Via::Cli,
        over_budget: args.over_budget,
    };
    // Usage errors first, the same on both paths (and nothing is contacted for them).
    if let Err(error) = request.work_item.trim().parse::<WorkItemRef>() {
        return Err(refused(ReplyError::BadRef(error)));
    }
    if reply_text(&request.text).is_none() {
        return Err(refused(ReplyError::EmptyText));
    }
    let runtime = start_runtime(Threads::One)?;
    let paths = StatePaths::from_env();
    let wait = Duration::from_secs(args.wait);
    if let Some(supervisor) = OperatorClient::new(&paths) {
        match runtime.block_on(supervisor.reply(&request)) {
            Ok(replied) => return print(replied),
            Err(ClientError::NotListening { .. }) => {}
            // The supervisor delivers it once the hold clears: watch it go.
            Err(ClientError::Held {
                work_item,
                id,
                error,
            }) => {
                let registry = Registry::new(&paths, EventLog::open(&paths), Source::Cli);
                let waited =
                    runtime.block_on(await_release(&registry, None, &work_item, &id, wait));
                return released(waited, &work_item, &error);
            }
            // Never retried in-process: the paste may have happened.
            Err(error) => {
                return Err(CliError {
                    code: error.exit_code(),
                    error: error.into(),
                });
            }
        }
    }

    let loaded = config::load(ctx.config_flag.as_deref()).map_err(usage)?;
    let sessions = Arc::new(Sessions::open(&loaded, &paths, Source::Cli).map_err(usage)?);
    let github = Client::from_config(&loaded.config.github)
        .map(Arc::new)
        .map_err(|e| e.to_string());
    let replier = Replier::reporting(Arc::clone(&sessions), github);
    match runtime.block_on(replier.reply(request)) {
        Ok(replied) => print(replied),
        // No supervisor: this process delivers it while it waits.
        Err(error @ ReplyError::Held { .. }) => {
            let ReplyError::Held {
                ref item, ref id, ..
            } = error
            else {
                return Err(refused(error));
            };
            let item: WorkItemRef = item.parse().map_err(|e| refused(ReplyError::BadRef(e)))?;
            let waited = runtime.block_on(await_release(
                sessions.registry(),
                Some(&replier),
                &item,
                id,
                wait,
            ));
            released(waited, &item, &error.to_string())
        }
        Err(error) => Err(refused(error)),
    }
}

/// What became of a held reply the command waited for.
enum Waited {
    /// It went out after this long.
    Delivered(Duration),
    /// It left the queue undelivered: the session ended.
    Ended,
    StillHeld,
}

/// Waits up to `wait` for the held reply `id` to leave `item`'s queue, delivering it
/// with `replier` (when this process has one) as soon as the session takes it.
async fn await_release(
    registry: &Registry,
    replier: Option<&Replier>,
    item: &WorkItemRef,
    id: &str,
    wait: Duration,
) -> Waited {
    let started = tokio::time::Instant::now();
    loop {
        if let Some(replier) = replier {
            replier.release_held(item).await;
        }
        match registry.get(item) {
            Ok(Some(record)) if record.hold.replies.iter().any(|r| r.id == id) => {}
            Ok(Some(record)) if record.status == Status::Active => {
                return Waited::Delivered(started.elapsed());
            }
            Ok(_) => return Waited::Ended,
            Err(error) => tracing::debug!(%item, "the held reply could not be looked at: {error}"),
        }
        if started.elapsed() >= wait {
            return Waited::StillHeld;
        }
        tokio::time::sleep(HOLD_LOOK).await;
    }
}

/// How often a waiting `reply` looks at its held reply (SPEC §18.3: 500 ms).
const HOLD_LOOK: Duration = Duration::from_millis(500);

fn released(waited: Waited, item: &WorkItemRef, held: &str) -> CliResult {
    match waited {
        Waited::Delivered(after) => {
            println!(
                "replied to {item} after {:.1}s held (see `the-loop events --type session.reply_sent` for its delivery report)",
                after.as_secs_f64()
            );
            Ok(())
        }
        Waited::Ended => Err(CliError {
            code: 1,
            error: anyhow!(
                "the session for {item} ended while the reply was held; it was not delivered"
            ),
        }),
        Waited::StillHeld => Err(CliError {
            code: 1,
            error: anyhow!(
                "{held}. It stays queued: the running supervisor delivers it once that clears (or the next one to start)"
            ),
        }),
    }
}

fn refused(error: ReplyError) -> CliError {
    CliError {
        code: error.exit_code(),
        error: error.into(),
    }
}

fn print(replied: Replied) -> CliResult {
    println!(
        "replied to {} (pane {}, {} bytes)",
        replied.work_item, replied.pane, replied.bytes
    );
    match replied.report {
        Report::Posted { url } => println!("delivery report: {url}"),
        Report::Skipped => {}
        Report::Failed { error } => {
            tracing::warn!(work_item = %replied.work_item, "{error}");
            eprintln!("the-loop: warning: the reply was delivered, but {error}");
        }
    }
    Ok(())
}
