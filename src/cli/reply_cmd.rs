//! `the-loop reply --work-item REF (--text TEXT | --text-file PATH|-) [--actor NAME]
//! [--no-comment]` (SPEC §8.2): the operator answers into a session through the one
//! [`Replier`] — the running supervisor's, over its operator socket (SPEC §14.1), or
//! this process's own when no supervisor answers there.
//!
//! Exit 0 when the reply was pasted (a failed delivery report is a warning on stderr),
//! 1 when it was refused or failed (no session, paused, no live pane, tmux), 2 for a bad
//! ref, empty text or a broken config.

use super::ask_cmd::read_text;
use super::{CliError, CliResult, Ctx, Threads, start_runtime, usage};
use crate::config;
use crate::events::Source;
use crate::github::Client;
use crate::operator::{ClientError, OperatorClient};
use crate::paths::StatePaths;
use crate::session::reply::{Replied, Report, reply_text};
use crate::session::{Replier, ReplyError, ReplyRequest, Sessions, Via};
use crate::work_item::WorkItemRef;
use anyhow::anyhow;
use std::path::PathBuf;
use std::sync::Arc;

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
    if let Some(supervisor) = OperatorClient::new(&paths) {
        match runtime.block_on(supervisor.reply(&request)) {
            Ok(replied) => return print(replied),
            Err(ClientError::NotListening { .. }) => {}
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
    let replier = Replier::reporting(sessions, github);
    let replied = runtime.block_on(replier.reply(request)).map_err(refused)?;
    print(replied)
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
