//! `the-loop propose --title T [--body B | --body-file F] [--draft|--ready]` (SPEC
//! §19.3): run by an agent inside its session, records a ship request for the
//! session's work item — its branch and head now, the title and body — for the operator
//! to ship from the Questions pane. No token: nothing leaves the machine until the
//! operator ships. Prints the request's id; exit 0. Exit 2 for a bad title or body or
//! no session item; 1 when the session has nothing the-loop can ship (the reason on
//! stderr). In a session on another host (`THE_LOOP_HOST`) the request goes to the
//! supervisor over the host's forwarded socket (issue 32), which reads the worktree
//! there.

use super::{CliError, CliResult, Threads, failed, usage};
use crate::config;
use crate::events::Source;
use crate::operator::client::{ClientError, OperatorClient};
use crate::paths::{self, StatePaths};
use crate::session::Sessions;
use crate::session::ship::{self, Proposal};
use crate::work_item::WorkItemRef;
use anyhow::anyhow;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("text").args(["body", "body_file"])))]
pub struct ProposeArgs {
    /// The pull request's title: one line.
    #[arg(long, value_name = "TEXT")]
    pub title: String,
    /// The pull request's body.
    #[arg(long, value_name = "TEXT")]
    pub body: Option<String>,
    /// Read the body from a file (`-`: standard input).
    #[arg(long, value_name = "PATH|-")]
    pub body_file: Option<PathBuf>,
    /// Ask for a draft pull request.
    #[arg(long, conflicts_with = "ready")]
    pub draft: bool,
    /// Ask for a pull request ready for review.
    #[arg(long)]
    pub ready: bool,
}

pub fn run(args: ProposeArgs, ctx: &super::Ctx) -> CliResult {
    let item: WorkItemRef = std::env::var(paths::ENV_WORK_ITEM)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .ok_or_else(|| {
            usage(anyhow!(
                "no work item: `the-loop propose` runs inside a session, where {} names its item",
                paths::ENV_WORK_ITEM
            ))
        })?
        .trim()
        .parse()
        .map_err(usage)?;
    let body = match (&args.body, &args.body_file) {
        (Some(text), _) => text.clone(),
        (None, Some(path)) => super::ask_cmd::read_text(path, "--body-file")?,
        (None, None) => String::new(),
    };
    let proposal = Proposal {
        title: args.title,
        body,
        draft: super::ship_cmd::draft_choice(args.draft, args.ready),
    };
    let paths = StatePaths::from_env();
    let runtime = crate::runtime::build(Threads::One).map_err(failed)?;
    // On another host the request goes to the supervisor over the forwarded socket,
    // which reads the worktree there; here it is recorded in-process.
    if std::env::var_os(paths::ENV_HOST).is_some_and(|h| !h.is_empty()) {
        let sent = match OperatorClient::new(&paths) {
            Some(supervisor) => runtime.block_on(supervisor.propose(&item, &proposal)),
            None => Err(ClientError::NotListening {
                path: paths.operator_socket(),
            }),
        };
        return match sent {
            Ok(proposed) => said(&proposed),
            Err(ClientError::NotListening { .. }) => {
                Err(super::host_without_supervisor(&paths, "request", None)
                    .unwrap_or_else(|| failed(anyhow!("no supervisor"))))
            }
            Err(e) => Err(CliError {
                code: e.exit_code(),
                error: anyhow!("not proposed: {e}"),
            }),
        };
    }
    let loaded = config::load(ctx.config_flag.as_deref()).map_err(usage)?;
    let sessions = Sessions::open(&loaded, &paths, Source::Cli).map_err(usage)?;
    match runtime.block_on(ship::propose(&sessions, &item, &proposal, Source::Cli)) {
        Ok((request, shown)) => said(&ship::Proposed::new(&request, &shown)),
        Err(refusal) if refusal.is_usage() => Err(usage(anyhow!("{refusal}"))),
        Err(refusal) => Err(failed(anyhow!("not proposed: {refusal}"))),
    }
}

/// The request's id on stdout, what it asks on stderr.
fn said(proposed: &ship::Proposed) -> CliResult {
    println!("{}", proposed.id);
    eprintln!(
        "the-loop: asked the operator to ship {} at {} ({}); the answer will be pasted into this session",
        proposed.branch,
        proposed.head.chars().take(12).collect::<String>(),
        proposed.summary
    );
    Ok(())
}
