//! `the-loop ask [--work-item REF] (--question TEXT | --question-file PATH|-)` (SPEC
//! §8.1): an agent asks the operator, from inside its session, with or without a
//! supervisor running. With one, the question goes through its operator socket and the
//! supervisor posts it with its own client — the agent needs no token (SPEC §14.4);
//! with none (or if the supervisor does not answer) it is asked in-process.
//!
//! Exit 2 for an empty question or a bad or missing ref (nothing is recorded: there
//! is no question to answer). Otherwise the question is always recorded as
//! `session.awaiting_input`; exit 0 when it was also posted on the work item, 1 when
//! GitHub failed, 2 when the config is broken — the agent waits either way, and the
//! operator answers in the TUI.

use super::{CliError, CliResult, Ctx, Threads, failed, start_runtime, usage};
use crate::config;
use crate::events::EventLog;
use crate::github::Client;
use crate::operator::{ClientError, OperatorClient};
use crate::paths::{self, StatePaths};
use crate::session::ask::{self, Ask, question_text};
use crate::work_item::WorkItemRef;
use anyhow::anyhow;
use std::io::Read;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("text").required(true).args(["question", "question_file"])))]
pub struct AskArgs {
    /// The work item to ask on; defaults to $THE_LOOP_WORK_ITEM (set in every session).
    #[arg(long, value_name = "REF")]
    pub work_item: Option<String>,
    /// The question.
    #[arg(long, value_name = "TEXT")]
    pub question: Option<String>,
    /// Read the question from a file (`-`: standard input).
    #[arg(long, value_name = "PATH|-")]
    pub question_file: Option<PathBuf>,
}

pub fn run(args: AskArgs, ctx: &Ctx) -> CliResult {
    let session = std::env::var(paths::ENV_WORK_ITEM)
        .ok()
        .filter(|v| !v.trim().is_empty());
    let work_item = resolve_item(args.work_item.as_deref(), session.as_deref())?;
    let raw = match (&args.question, &args.question_file) {
        (Some(text), _) => text.clone(),
        (None, Some(path)) => read_text(path, "--question-file")?,
        (None, None) => {
            return Err(usage(anyhow!(
                "pass --question TEXT or --question-file PATH"
            )));
        }
    };
    let question = question_text(&raw).map_err(usage)?;
    // The asking session's own item, when the agent asks about another one.
    let session = session.and_then(|s| s.trim().parse::<WorkItemRef>().ok());
    let request = Ask::new(work_item, question, session, ask::local_user());

    let paths = StatePaths::from_env();
    let runtime = start_runtime(Threads::One)?;
    let mut answer = None;
    if let Some(supervisor) = OperatorClient::new(&paths) {
        match runtime.block_on(supervisor.ask(&request)) {
            Ok(asked) => return finish(&request.work_item, asked.comment, false),
            Err(ClientError::NotListening { .. }) => {}
            Err(e) if e.exit_code() == 2 => return Err(usage(e)),
            // Recorded or not, the agent waits: make sure the question is on record.
            Err(e) => {
                tracing::warn!(work_item = %request.work_item, "asking through the supervisor failed ({e}); asking in-process");
                answer = Some(e.to_string());
            }
        }
    }

    if let Some(refused) = super::host_without_supervisor(&paths, "question", answer) {
        return Err(refused);
    }
    let events = EventLog::open(&paths);
    // A broken config still records the question (exit 2): the agent waits either way.
    let (client, broken_config) = match config::load(ctx.config_flag.as_deref()) {
        Ok(loaded) => (
            Client::from_config(&loaded.config.github).map_err(|e| e.to_string()),
            false,
        ),
        Err(e) => (Err(format!("the config could not be loaded: {e}")), true),
    };
    let asked = runtime.block_on(ask::ask(
        client.as_ref().map_err(Clone::clone),
        &events,
        &request,
    ));
    let comment = asked.comment.map(|c| c.html_url);
    finish(&request.work_item, comment, broken_config)
}

/// Prints the comment's URL, or says why there is none (exit 1; 2 for a broken config).
fn finish(item: &WorkItemRef, comment: Result<String, String>, broken_config: bool) -> CliResult {
    match comment {
        Ok(url) => {
            println!("{url}");
            eprintln!(
                "the-loop: asked the operator on {item}; the answer will be pasted into this session"
            );
            Ok(())
        }
        Err(error) => {
            let note = format!(
                "the question could not be posted on {item} ({error}); it is recorded, and the operator will answer in the-loop's TUI — the answer will be pasted into this session"
            );
            Err(if broken_config {
                usage(anyhow!(note))
            } else {
                failed(anyhow!(note))
            })
        }
    }
}

/// `--work-item`, else `$THE_LOOP_WORK_ITEM`; a missing or bad ref is a usage error.
fn resolve_item(flag: Option<&str>, env: Option<&str>) -> Result<WorkItemRef, CliError> {
    let text = flag.or(env).ok_or_else(|| {
        usage(anyhow!(
            "no work item: pass --work-item REF (e.g. github:octo/repo#15), or run inside a session, where {} is set",
            paths::ENV_WORK_ITEM
        ))
    })?;
    text.trim().parse::<WorkItemRef>().map_err(usage)
}

/// A text argument from a file, or standard input for `-`. Unreadable is a usage error.
pub(crate) fn read_text(path: &Path, flag: &str) -> Result<String, CliError> {
    let result = if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).map(|_| text)
    } else {
        std::fs::read_to_string(path)
    };
    result.map_err(|e| {
        usage(anyhow!(
            "cannot read {flag} {}: {e}; pass a readable UTF-8 file, or - for standard input",
            path.display()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_wins_over_the_environment() {
        let item = resolve_item(Some("github:octo/repo#2"), Some("github:octo/repo#1")).unwrap();
        assert_eq!(item.number, 2);
        let item = resolve_item(None, Some(" github:octo/repo#1 ")).unwrap();
        assert_eq!(item.number, 1);
    }

    #[test]
    fn a_missing_or_bad_ref_is_a_usage_error() {
        let missing = resolve_item(None, None).unwrap_err();
        assert_eq!(missing.code, 2);
        assert!(missing.error.to_string().contains("THE_LOOP_WORK_ITEM"));
        let bad = resolve_item(Some("octo/repo#1"), None).unwrap_err();
        assert_eq!(bad.code, 2);
        assert!(
            bad.error
                .to_string()
                .contains("expected `github:owner/repo#N`")
        );
    }
}
