//! `the-loop sessions ship REF [--title T] [--body-file F] [--draft|--ready] [--yes]`
//! (SPEC §19.4): shows what would go out — branch, head, commits, diffstat, the agent's
//! request, the critic verdict — asks (unless `--yes`), then ships exactly the head it
//! showed through [`Shipper`]. Exit 0 with the pull request's URL; 1 when refused or a
//! step failed (the reason on stderr); 2 for usage errors.

use super::{CliError, CliResult, failed, usage};
use crate::config::LoadedConfig;
use crate::events::Source;
use crate::github::Client;
use crate::session::Sessions;
use crate::session::ship::{Order, Preview, ShipError, Shipper};
use crate::work_item::WorkItemRef;
use anyhow::anyhow;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Debug, clap::Args)]
pub struct ShipArgs {
    /// The work item, e.g. `github:octo/repo#15`.
    #[arg(value_name = "REF")]
    pub work_item: String,
    /// The pull request's title (default: the agent's request's, else the item's title).
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
    /// The pull request's body from a file (`-`: standard input).
    #[arg(long, value_name = "PATH|-")]
    pub body_file: Option<PathBuf>,
    /// Open the pull request as a draft (the default: `ship.draft`).
    #[arg(long, conflicts_with = "ready")]
    pub draft: bool,
    /// Open the pull request ready for review.
    #[arg(long)]
    pub ready: bool,
    /// Do not ask before pushing.
    #[arg(long, short = 'y')]
    pub yes: bool,
}

pub fn ship(
    args: ShipArgs,
    loaded: &LoadedConfig,
    sessions: Sessions,
    runtime: &tokio::runtime::Runtime,
) -> CliResult {
    let item: WorkItemRef = args.work_item.trim().parse().map_err(usage)?;
    let body = args
        .body_file
        .as_deref()
        .map(|path| super::ask_cmd::read_text(path, "--body-file"))
        .transpose()?;
    let draft = draft_choice(args.draft, args.ready);
    let github = Client::from_config(&loaded.config.github).map_err(usage)?;
    let shipper = Shipper::new(Arc::new(sessions), Arc::new(github));
    let shown = runtime
        .block_on(shipper.preview(&item))
        .map_err(|refusal| refused(&refusal.to_string(), refusal.is_usage()))?;
    eprintln!("{}", describe(&shown));
    if !args.yes {
        confirm(&shown)?;
    }
    let order = Order {
        work_item: item,
        seen_head: shown.head.clone(),
        title: args.title,
        body,
        draft,
        source: Source::Cli,
        actor: crate::session::ask::local_user(),
    };
    match runtime.block_on(shipper.ship(&order)) {
        Ok(shipped) => {
            eprintln!("the-loop: {}", shipped.note());
            if let Some(error) = &shipped.note_error {
                eprintln!("the-loop: the session did not get the note: {error}");
            }
            println!("{}", shipped.pull.url);
            Ok(())
        }
        Err(ShipError::Refused(refusal)) => Err(refused(&refusal.to_string(), refusal.is_usage())),
        Err(error @ ShipError::Failed { .. }) => Err(failed(anyhow!(error))),
    }
}

/// `--draft` / `--ready` as the request's or the order's choice; neither: `ship.draft`.
pub(super) fn draft_choice(draft: bool, ready: bool) -> Option<bool> {
    match (draft, ready) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ => None,
    }
}

fn refused(reason: &str, is_usage: bool) -> CliError {
    let error = anyhow!("not shipped: {reason}");
    if is_usage {
        usage(error)
    } else {
        failed(error)
    }
}

/// What the operator is shown before confirming (the popup's content, as text).
pub fn describe(shown: &Preview) -> String {
    let mut lines = vec![format!(
        "Ship {}: {} at {} → {} ({})",
        shown.work_item,
        shown.branch,
        &shown.head[..shown.head.len().min(12)],
        shown.base,
        shown.summary()
    )];
    if let Some(request) = &shown.request {
        lines.push(format!("  requested: {}", request.title));
        if request.head != shown.head {
            lines.push(format!(
                "  (the request was made at {}; the branch moved since)",
                &request.head[..request.head.len().min(12)]
            ));
        }
    }
    lines.push(format!("  critic: {}", shown.verdict));
    if let Some(pull) = &shown.pull {
        lines.push(format!("  pull request #{}: {}", pull.number, pull.url));
    }
    if shown.dirty > 0 {
        lines.push(format!(
            "  {} uncommitted or untracked change{} (the ship will be refused)",
            shown.dirty,
            if shown.dirty == 1 { "" } else { "s" }
        ));
    }
    lines.join("\n")
}

/// Asks on the terminal; without one, refuses and points to `--yes`.
fn confirm(shown: &Preview) -> Result<(), CliError> {
    super::confirm(
        &format!("Push {} and open its pull request?", shown.branch),
        format!(
            "shipping pushes {} to the remote; pass --yes to confirm without a terminal",
            shown.branch
        ),
        "not shipped: nothing was pushed",
    )
}
