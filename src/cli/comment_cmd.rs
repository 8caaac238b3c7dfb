//! `the-loop comment (--body TEXT | --body-file PATH|-) [--reply-to ID]` (SPEC §19.2):
//! an agent posts on GitHub from inside its session — on its own work item
//! (`$THE_LOOP_WORK_ITEM`) and nowhere else; there is no flag to name another. With a
//! supervisor running, the comment goes through its operator socket and the supervisor
//! posts it with its own client, so the agent needs no token (SPEC §14.4); with none
//! listening, it is posted in-process with this process's own token lookup. Either way
//! [`Commenter::comment`] does the work: sanitize, stamp, check, post, record.
//!
//! Prints the comment's URL and exits 0. Exit 2 for an empty or too long body, no or a
//! bad `$THE_LOOP_WORK_ITEM`, or a broken config; exit 1 when the comment was refused
//! (no open session, over `sessions.commentsPerMinute`, a `--reply-to` id not on one of
//! the session's own pull requests) or GitHub failed. Nothing is posted in any of those cases.

use super::ask_cmd::read_text;
use super::{CliError, CliResult, Ctx, Threads, failed, start_runtime, usage};
use crate::config;
use crate::events::{EventLog, Source};
use crate::github::Client;
use crate::operator::{ClientError, OperatorClient};
use crate::paths::{self, StatePaths};
use crate::session::Registry;
use crate::session::comment::{CommentError, CommentRequest, Commented, Commenter, body_text};
use crate::work_item::WorkItemRef;
use anyhow::anyhow;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("text").required(true).args(["body", "body_file"])))]
pub struct CommentArgs {
    /// The comment (Markdown). It is posted on this session's work item, stamped as
    /// the-loop's.
    #[arg(long, value_name = "TEXT")]
    pub body: Option<String>,
    /// Read the comment from a file (`-`: standard input).
    #[arg(long, value_name = "PATH|-")]
    pub body_file: Option<PathBuf>,
    /// Reply in the review thread of this review comment (its id) on one of the
    /// session's own pull requests (its work item, or the one its ship opened), instead
    /// of commenting on the conversation.
    #[arg(long, value_name = "ID")]
    pub reply_to: Option<u64>,
}

pub fn run(args: CommentArgs, ctx: &Ctx) -> CliResult {
    let work_item = session_item(std::env::var(paths::ENV_WORK_ITEM).ok().as_deref())?;
    let raw = match (&args.body, &args.body_file) {
        (Some(text), _) => text.clone(),
        (None, Some(path)) => read_text(path, "--body-file")?,
        (None, None) => return Err(usage(anyhow!("pass --body TEXT or --body-file PATH"))),
    };
    // Said here at once, without a round trip (the implementation checks it again).
    body_text(&raw).map_err(refused)?;
    let request = CommentRequest {
        work_item,
        body: raw,
        reply_to: args.reply_to,
    };

    let paths = StatePaths::from_env();
    let runtime = start_runtime(Threads::One)?;
    if let Some(supervisor) = OperatorClient::new(&paths) {
        match runtime.block_on(supervisor.comment(&request)) {
            Ok(commented) => return finish(&commented),
            Err(ClientError::NotListening { .. }) => {}
            // Sent: whatever became of it, posting again here could post it twice.
            Err(e) => {
                return Err(CliError {
                    code: e.exit_code(),
                    error: anyhow!(e),
                });
            }
        }
    }

    if let Some(refused) = super::host_without_supervisor(&paths, "comment", None) {
        return Err(refused);
    }
    let loaded = config::load(ctx.config_flag.as_deref()).map_err(usage)?;
    let client = Client::from_config(&loaded.config.github).map_err(failed)?;
    let sessions = crate::session::Sessions::open(&loaded, &paths, Source::Cli).map_err(usage)?;
    let own = runtime.block_on(crate::session::caller::check(
        &sessions,
        &request.work_item,
        std::process::id(),
    ));
    if let Err(own) = own {
        return Err(refused(CommentError::OtherSession {
            own: own.to_string(),
            item: request.work_item.to_string(),
        }));
    }
    let events = EventLog::open(&paths);
    let registry = Registry::new(&paths, events.clone(), Source::Cli);
    let commenter = Commenter {
        registry: &registry,
        github: &client,
        events: &events,
        per_minute: loaded.config.sessions.comments_per_minute,
    };
    let commented = runtime
        .block_on(commenter.comment(&request))
        .map_err(refused)?;
    finish(&commented)
}

/// `$THE_LOOP_WORK_ITEM`, set in every session: the only item an agent comments on.
fn session_item(env: Option<&str>) -> Result<WorkItemRef, CliError> {
    let text = env.map(str::trim).filter(|v| !v.is_empty()).ok_or_else(|| {
        usage(anyhow!(
            "no work item: `the-loop comment` runs inside a session, where {} names the session's item",
            paths::ENV_WORK_ITEM
        ))
    })?;
    text.parse::<WorkItemRef>().map_err(usage)
}

fn refused(e: CommentError) -> CliError {
    CliError {
        code: e.exit_code(),
        error: anyhow!(e),
    }
}

fn finish(commented: &Commented) -> CliResult {
    println!("{}", commented.url);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_item_is_the_sessions_own() {
        let item = session_item(Some(" github:octo/repo#15 ")).unwrap();
        assert_eq!(item, WorkItemRef::new("octo", "repo", 15));
        for missing in [None, Some(""), Some("  ")] {
            let err = session_item(missing).unwrap_err();
            assert_eq!(err.code, 2);
            assert!(err.error.to_string().contains("THE_LOOP_WORK_ITEM"));
        }
        assert_eq!(session_item(Some("octo/repo#15")).unwrap_err().code, 2);
    }

    #[test]
    fn refusals_keep_their_exit_codes() {
        assert_eq!(refused(CommentError::Empty).code, 2);
        assert_eq!(refused(CommentError::TooLong { chars: 70_000 }).code, 2);
        let none = CommentError::NoSession {
            item: WorkItemRef::new("o", "r", 1),
        };
        assert_eq!(refused(none).code, 1);
    }
}
