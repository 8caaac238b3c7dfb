//! `the-loop sessions list [--json] | start REF | pause REF | resume REF | stop REF |
//! attach REF [--read-only] | reset REF | approve REF | deny REF | deliver REF` (SPEC §1,
//! §7, §17.4; `deliver`: issue 30).
//!
//! Each command works in-process on the registry and tmux, with or without a running
//! supervisor, through the same [`Sessions`] the dispatcher uses. Exit codes: 0 ok,
//! 1 the operation failed (no such session, tmux or the harness missing), 2 usage or
//! configuration (a bad ref, an unknown harness).

use super::{CliError, CliResult, Ctx, Threads, failed, usage};
use crate::config;
use crate::events::Source;
use crate::paths::StatePaths;
use crate::session::activity::{self, ActivityState, ActivityTracker, SessionActivity};
use crate::session::delivery::HeldSummary;
use crate::session::hooks::{self, Answered, Decision};
use crate::session::{
    OpenQuestions, Origin, PaneState, PromptInputs, SessionError, SessionRecord, Sessions,
    StartOutcome, Toggle,
};
use crate::tmux::{self, Socket};
use crate::work_item::WorkItemRef;
use crate::workspace::Finished;
use anyhow::anyhow;
use serde_json::{Value, json};

#[derive(Debug, clap::Subcommand)]
pub enum SessionsCommand {
    /// List sessions: ref, harness, status, state, idle time, tmux session.
    List {
        /// One JSON array on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Start a session for a work item, without any GitHub event.
    Start {
        /// The work item, e.g. `github:octo/repo#15`.
        #[arg(value_name = "REF")]
        work_item: String,
    },
    /// Hold deliveries to a session back (events are dropped, not replayed).
    Pause {
        #[arg(value_name = "REF")]
        work_item: String,
    },
    /// Deliver to a paused session again.
    Resume {
        #[arg(value_name = "REF")]
        work_item: String,
    },
    /// End a session's harness (SIGTERM, grace, SIGKILL); its tmux session stays.
    Stop {
        #[arg(value_name = "REF")]
        work_item: String,
    },
    /// Attach to a session's tmux session (switch to it when already inside tmux).
    Attach {
        #[arg(value_name = "REF")]
        work_item: String,
        /// Watch without being able to type.
        #[arg(long)]
        read_only: bool,
    },
    /// Stop a session and forget it: its record, tmux session and ledger entry. Its
    /// worktree is removed only when nothing would be lost, unless --discard-workspace.
    Reset {
        #[arg(value_name = "REF")]
        work_item: String,
        /// Also remove the session's worktree and branch, whatever they hold.
        #[arg(long)]
        discard_workspace: bool,
        /// Do not ask before discarding.
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Approve, once, the permission dialog the session's agent waits on (exit 1 when
    /// nothing is waiting).
    Approve {
        #[arg(value_name = "REF")]
        work_item: String,
    },
    /// Deny the permission dialog the session's agent waits on (exit 1 when nothing is
    /// waiting).
    Deny {
        #[arg(value_name = "REF")]
        work_item: String,
    },
    /// Deliver one delivery held because the hooks and the screen of a client release
    /// the-loop has not recorded disagree (`screen-unread`): only while its hooks report
    /// the turn ended and no permission pending. Waits for the supervisor to paste it
    /// (exit 1 when refused or not taken in time).
    Deliver {
        #[arg(value_name = "REF")]
        work_item: String,
        /// How long to wait for the supervisor to take it.
        #[arg(long, value_name = "SECONDS", default_value_t = 10)]
        wait: u64,
    },
    /// Push the session's branch and open its pull request (a draft unless --ready),
    /// after showing what goes out. Asks unless --yes.
    Ship(super::ship_cmd::ShipArgs),
}

pub fn run(cmd: SessionsCommand, ctx: &Ctx) -> CliResult {
    let loaded = config::load(ctx.config_flag.as_deref()).map_err(usage)?;
    let paths = StatePaths::from_env();
    let sessions = Sessions::open(&loaded, &paths, Source::Cli).map_err(usage)?;
    let socket = Socket::from_config(&loaded.config.sessions.tmux.socket);
    let runtime = crate::runtime::build(Threads::One).map_err(failed)?;
    let origin = Origin::cli();
    match cmd {
        SessionsCommand::List { json } => runtime.block_on(list(&sessions, json)),
        SessionsCommand::Start { work_item } => {
            let item = parse_ref(&work_item)?;
            let inputs = PromptInputs::manual(&item, "the-loop sessions start");
            match runtime
                .block_on(sessions.start(&item, &inputs, &origin))
                .map_err(session_error)?
            {
                StartOutcome::Spawned(record) => {
                    println!(
                        "started {} in tmux session {} (pane {}); attach with `the-loop sessions attach {}`",
                        record.work_item,
                        record.tmux_session,
                        record.pane_id.as_deref().unwrap_or("?"),
                        record.work_item
                    );
                    if let (Some(dir), Some(branch)) = (&record.workspace, &record.branch) {
                        println!("working in {} on branch {branch}", dir.display());
                    }
                }
                StartOutcome::AlreadyRunning(record) => {
                    println!(
                        "{} already has a running session ({}, {}); not starting another",
                        record.work_item,
                        record.tmux_session,
                        record.status.as_str()
                    );
                }
            }
            Ok(())
        }
        SessionsCommand::Pause { work_item } => {
            let item = parse_ref(&work_item)?;
            let toggle = sessions.pause(&item, &origin).map_err(session_error)?;
            say_toggled(&item, toggle, "paused");
            Ok(())
        }
        SessionsCommand::Resume { work_item } => {
            let item = parse_ref(&work_item)?;
            let toggle = sessions.resume(&item, &origin).map_err(session_error)?;
            say_toggled(&item, toggle, "resumed");
            Ok(())
        }
        SessionsCommand::Stop { work_item } => {
            let item = parse_ref(&work_item)?;
            let ended = runtime
                .block_on(sessions.stop(&item, &origin))
                .map_err(session_error)?;
            if ended.already_closed {
                println!("{} was already stopped", ended.record.work_item);
            } else {
                println!(
                    "stopped {}{}; tmux session {} kept (attach to read it, `sessions reset` to remove it)",
                    ended.record.work_item,
                    if ended.was_running {
                        ""
                    } else {
                        " (its harness had already exited)"
                    },
                    ended.record.tmux_session
                );
            }
            say_workspace(&ended.workspace);
            Ok(())
        }
        SessionsCommand::Reset {
            work_item,
            discard_workspace,
            yes,
        } => {
            let item = parse_ref(&work_item)?;
            if discard_workspace && !yes {
                confirm_discard(&sessions, &item)?;
            }
            let ended = runtime
                .block_on(sessions.reset_with(&item, &origin, discard_workspace))
                .map_err(session_error)?;
            println!("reset {}: session forgotten", ended.record.work_item);
            say_workspace(&ended.workspace);
            Ok(())
        }
        SessionsCommand::Attach {
            work_item,
            read_only,
        } => {
            let item = parse_ref(&work_item)?;
            runtime.block_on(attach(&sessions, &socket, &item, read_only))
        }
        SessionsCommand::Approve { work_item } => {
            let item = parse_ref(&work_item)?;
            runtime.block_on(answer(&sessions, &item, Decision::Approved))
        }
        SessionsCommand::Deny { work_item } => {
            let item = parse_ref(&work_item)?;
            runtime.block_on(answer(&sessions, &item, Decision::Denied))
        }
        SessionsCommand::Deliver { work_item, wait } => {
            let item = parse_ref(&work_item)?;
            // Blind into a pane whose screen is not read: the operator's decision alone,
            // never an agent's (one agent releasing another's, into its operator's draft).
            let caller = crate::session::caller::session_of(&sessions, std::process::id());
            if let Some(own) = runtime.block_on(caller) {
                return Err(failed(anyhow!(
                    "`sessions deliver` is the operator's: run it from your own shell, not from a session's pane (this one runs in {own}'s); nothing was released"
                )));
            }
            let wait = std::time::Duration::from_secs(wait);
            match runtime.block_on(sessions.deliver_by_hand(&item, wait)) {
                Ok(left) => {
                    println!("delivered one held delivery to {item}; {left} still held");
                    Ok(())
                }
                Err(error) => Err(failed(error)),
            }
        }
        SessionsCommand::Ship(args) => super::ship_cmd::ship(args, &loaded, sessions, &runtime),
    }
}

/// `approve` / `deny`: the key goes to the dialog the session shows now.
async fn answer(sessions: &Sessions, item: &WorkItemRef, decision: Decision) -> CliResult {
    let actor = Some(crate::session::ask::local_user());
    match hooks::answer(sessions, item, decision, None, actor, Source::Cli).await {
        Ok(Answered::Sent { decision, request }) => {
            println!(
                "{} {}: {} `{}`",
                decision.as_str(),
                item,
                request.tool,
                request.summary
            );
            Ok(())
        }
        Ok(Answered::Elsewhere(request)) => Err(failed(anyhow!(
            "the permission dialog for {} `{}` on {item} is no longer on screen (answered in the pane?); nothing was sent",
            request.tool,
            request.summary
        ))),
        Err(error) => Err(failed(error)),
    }
}

fn parse_ref(text: &str) -> Result<WorkItemRef, CliError> {
    text.parse::<WorkItemRef>().map_err(usage)
}

fn session_error(error: SessionError) -> CliError {
    CliError {
        code: error.exit_code(),
        error: error.into(),
    }
}

/// What ending the session did to its worktree, in one line.
fn say_workspace(finished: &Finished) {
    match finished {
        Finished::NoWorkspace => {}
        Finished::Removed {
            record,
            branch_deleted,
        } => println!(
            "removed its worktree {}{}",
            record.dir.display(),
            if *branch_deleted {
                format!(" and branch {}", record.branch)
            } else {
                String::new()
            }
        ),
        Finished::Kept { record, reason } => println!(
            "kept its worktree {} on branch {} ({reason}); `the-loop sessions reset {} --discard-workspace` removes it",
            record.dir.display(),
            record.branch,
            record.work_item
        ),
    }
}

/// Asks before `--discard-workspace` throws work away; without a terminal to ask on,
/// refuses and points to `--yes`.
fn confirm_discard(sessions: &Sessions, item: &WorkItemRef) -> Result<(), CliError> {
    let Some(record) = sessions.workspaces().record(item).map_err(failed)? else {
        return Ok(()); // no worktree: nothing to lose
    };
    let place = match &record.host {
        Some(host) => format!("{} on host `{host}`", record.dir.display()),
        None => record.dir.display().to_string(),
    };
    super::confirm(
        &format!(
            "Remove the worktree {place} and branch {}, with every uncommitted change and unpushed commit in them?",
            record.branch
        ),
        format!(
            "--discard-workspace removes {place} and branch {} whatever they hold; pass --yes to confirm without a terminal",
            record.branch
        ),
        "not discarded: nothing was changed",
    )
}

fn say_toggled(item: &WorkItemRef, toggle: Toggle, done: &str) {
    match toggle {
        Toggle::Changed => println!("{done} {item}"),
        Toggle::Unchanged => println!("{item} was already {done}"),
    }
}

async fn list(sessions: &Sessions, as_json: bool) -> CliResult {
    let registry = sessions.registry();
    // opencode tells its state as events the supervisor follows; without one running,
    // its servers are asked now (issue 44).
    let paths = StatePaths::new(&sessions.settings().home);
    let supervised = crate::supervisor::lock::read_holder(&paths).is_some_and(|holder| {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(holder.pid as i32), None).is_ok()
    });
    if !supervised {
        crate::session::opencode::watch::read_all(sessions).await;
    }
    let records = registry.list().map_err(failed)?;
    let now = activity::unix_now();
    let mut tracker = ActivityTracker::new();
    // A session with an unanswered question shows `awaiting-input`.
    let questions = OpenQuestions::load(sessions.events.path()).unwrap_or_else(|error| {
        eprintln!("the-loop: open questions unknown: cannot read the event log: {error}");
        OpenQuestions::new()
    });
    let seen = activity::observe(
        |r: &crate::session::registry::SessionRecord| sessions.tmux_of(r),
        &records,
        &mut tracker,
        |item| questions.awaiting(item),
        now,
    )
    .await;
    activity::save_snapshots(registry, &records, &seen);
    hooks::reconcile(sessions, &records, &seen, Source::Cli).await;
    if seen.iter().any(|a| a.state == ActivityState::Unknown)
        && let Err(error) = sessions.tmux().list_sessions().await
    {
        eprintln!("the-loop: session states are unknown: {error}");
    }
    if as_json {
        let prices = sessions.settings().budgets.prices.clone();
        let backoff = crate::session::limits::Backoff::from_config(&sessions.settings().sessions);
        let critics = crate::usage::critics::CriticTally::new(&crate::paths::StatePaths::new(
            &sessions.settings().home,
        ));
        let rows: Vec<Value> = records
            .iter()
            .zip(&seen)
            .map(|(r, a)| {
                let mut row = json_row(r, a);
                row["limit"] = r
                    .limit
                    .as_ref()
                    .map_or(Value::Null, |l| l.to_json(&backoff));
                row["screenRead"] = json!(sessions.client_reading(r));
                row["usage"] = usage_json(r, &prices);
                row["critics"] = json!(critics.of(&r.work_item, None).unwrap_or_else(|e| {
                    eprintln!("the-loop: critic spend of {} unknown: {e}", r.work_item);
                    None
                }));
                row
            })
            .collect();
        println!("{}", Value::Array(rows));
    } else {
        print_table(&records, &seen);
    }
    Ok(())
}

/// The session's usage priced (SPEC §20.3); `null` when nothing is known (a harness
/// that reports nothing, a transcript not named yet).
fn usage_json(record: &SessionRecord, prices: &crate::usage::Prices) -> Value {
    if !record.usage.is_known() {
        return Value::Null;
    }
    let mut out = prices.cost(&record.usage.tally()).to_json();
    out["bytesRead"] = json!(record.usage.bytes_read);
    out["lastReadBytes"] = json!(record.usage.last_read_bytes);
    out["skippedLines"] = json!(record.usage.skipped_lines);
    out
}

fn json_row(record: &SessionRecord, seen: &SessionActivity) -> Value {
    json!({
        "ref": record.work_item.to_string(),
        "url": record.url,
        "harness": record.harness,
        "status": record.status.as_str(),
        "state": seen.state.as_str(),
        "stateSource": seen.source.as_str(),
        "permission": seen.permission.as_ref().map(|p| json!({
            "tool": p.tool,
            "summary": p.summary,
            "requestedAt": p.requested_at,
        })),
        "held": record.held(),
        "harnessVersion": record.harness_version,
        "permissionMode": record.permission_mode,
        "codexPolicy": record.codex_policy,
        "channel": record.channel.as_ref().map(|c| c.name()),
        "opencodePolicy": record.opencode_policy,
        "shownPermissionMode": seen.snapshot.as_ref().and_then(|s| s.shown_mode),
        "pullRequest": record.pull_request,
        "shipRequest": record.ship_request.as_ref().map(|r| json!({
            "id": r.id,
            "title": r.title,
            "branch": r.branch,
            "head": r.head,
            "requestedAt": r.requested_at,
        })),
        "idleSeconds": seen.idle_seconds,
        "tmuxSession": record.tmux_session,
        "pane": seen.pane.as_ref().map(ToString::to_string).or_else(|| record.pane_id.clone()),
        "cwd": record.cwd.display().to_string(),
        "workspace": record.workspace.as_ref().map(|w| w.display().to_string()),
        "branch": record.branch,
        "workspaceKept": record.workspace_kept,
        "harnessSessionId": record.harness_session_id,
        "createdAt": record.created_at,
        "lastEventAt": record.last_event_at,
    })
}

fn print_table(records: &[SessionRecord], seen: &[SessionActivity]) {
    if records.is_empty() {
        println!("no sessions (start one with `the-loop sessions start REF`)");
        return;
    }
    // A BRANCH column when any session works in its own worktree (SPEC §16.4).
    let branches = records.iter().any(|r| r.branch.is_some());
    let rows: Vec<Vec<String>> = records
        .iter()
        .zip(seen)
        .map(|(r, a)| {
            let mut row = vec![
                r.work_item.to_string(),
                r.harness.clone(),
                r.status.as_str().to_string(),
                shown_state(a, r.held().as_ref()),
                a.idle_seconds.map_or_else(|| "-".to_string(), human_age),
                r.tmux_session.clone(),
            ];
            if branches {
                row.push(match (&r.branch, &r.workspace_kept) {
                    (Some(b), Some(kept)) => format!("{b} (kept: {kept})"),
                    (Some(b), None) => b.clone(),
                    (None, _) => "-".into(),
                });
            }
            row
        })
        .collect();
    let mut header: Vec<String> = ["REF", "HARNESS", "STATUS", "STATE", "IDLE", "TMUX"]
        .map(String::from)
        .to_vec();
    if branches {
        header.push("BRANCH".into());
    }
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        println!("{}", cells.join("  ").trim_end());
    }
}

/// The state column: a guess from the screen says so (`idle?`); a permission dialog
/// names its tool; deliveries held on the session say how many and why
/// (`⏸ 2 held: permission dialog`).
fn shown_state(a: &SessionActivity, held: Option<&HeldSummary>) -> String {
    let guess = a.source == activity::StateSource::Screen
        && matches!(a.state, ActivityState::Working | ActivityState::Idle);
    let state = match &a.permission {
        Some(p) => format!("{} ({})", a.state.as_str(), p.tool),
        None if guess => format!("{}?", a.state.as_str()),
        None => a.state.as_str().to_string(),
    };
    match held {
        Some(held) => format!("{state} {}", held.label()),
        None => state,
    }
}

/// `45s`, `12m`, `3h`, `2d`.
pub fn human_age(seconds: u64) -> String {
    match seconds {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

async fn attach(
    sessions: &Sessions,
    socket: &Socket,
    item: &WorkItemRef,
    read_only: bool,
) -> CliResult {
    let record = sessions
        .registry()
        .get(item)
        .map_err(failed)?
        .ok_or_else(|| session_error(SessionError::NoSession(item.to_string())))?;
    match sessions.locate(&record).await {
        PaneState::Absent => {
            return Err(failed(anyhow!(
                "the tmux session {} of {} no longer exists; start it again with `the-loop sessions start {}`",
                record.tmux_session,
                record.work_item,
                record.work_item
            )));
        }
        PaneState::Unknown(tmux::Error::NotInstalled) => {
            return Err(failed(tmux::Error::NotInstalled));
        }
        // tmux itself will say what is wrong, if anything.
        PaneState::Live(_) | PaneState::Dead(_) | PaneState::Unknown(_) => {}
    }
    // A session on another host: its tmux there, over `ssh -t`.
    if let Some(name) = record.host.as_deref() {
        let host = sessions.hosts().get(name).ok_or_else(|| {
            failed(anyhow!(
                "host `{name}` of {} is not in the config's hosts",
                record.work_item
            ))
        })?;
        let mut command = host
            .attach(&record.tmux_session, read_only)
            .map_err(failed)?;
        use std::os::unix::process::CommandExt;
        return Err(failed(anyhow!("could not run ssh: {}", command.exec())));
    }
    let tmux_env = std::env::var("TMUX").ok();
    let plan = tmux::argv::attach(socket, &record.tmux_session, read_only, tmux_env.as_deref());
    exec_tmux(&plan)
}

/// Replaces this process with tmux (returns only when that failed).
fn exec_tmux(plan: &tmux::argv::AttachCommand) -> CliResult {
    use std::os::unix::process::CommandExt;
    let mut command = std::process::Command::new("tmux");
    command.args(&plan.args);
    crate::secrets::ChildEnv::default().scrub(&mut command);
    if plan.unset_tmux {
        command.env_remove("TMUX").env_remove("TMUX_PANE");
    }
    let error = command.exec();
    if error.kind() == std::io::ErrorKind::NotFound {
        Err(failed(tmux::Error::NotInstalled))
    } else {
        Err(failed(anyhow!("could not run tmux: {error}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_are_short() {
        assert_eq!(human_age(5), "5s");
        assert_eq!(human_age(125), "2m");
        assert_eq!(human_age(7300), "2h");
        assert_eq!(human_age(200_000), "2d");
    }
}
