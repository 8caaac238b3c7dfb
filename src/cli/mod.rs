//! The command line (SPEC §1): clap definitions and the exit-code contract.
//! One file per subcommand; each exposes `run(args, &Ctx) -> CliResult`.

pub mod ask_cmd;
mod claude_trust_cmd;
pub mod comment_cmd;
pub mod completions;
pub mod config_cmd;
pub mod critic_cmd;
pub mod demo_cmd;
pub mod events_cmd;
pub mod excerpt_cmd;
pub mod exec_env_cmd;
pub mod fake_agent;
mod hook_cmd;
pub mod hosts_cmd;
pub mod propose_cmd;
pub mod reply_cmd;
pub mod run_cmd;
pub mod sessions_cmd;
pub mod ship_cmd;
pub mod tui_cmd;
pub mod usage_cmd;

use crate::runtime;
pub(crate) use crate::runtime::Threads;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Parser)]
#[command(
    name = "the-loop",
    version,
    about = "Supervise AI coding agents in tmux, steered by GitHub comments from people you trust",
    propagate_version = true
)]
pub struct Cli {
    /// Operator config file (overrides $THE_LOOP_CONFIG and the XDG default).
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate, create or locate the operator config.
    #[command(subcommand)]
    Config(config_cmd::ConfigCommand),
    /// Print the prompt excerpt for a webhook-shaped payload.
    Excerpt(excerpt_cmd::ExcerptArgs),
    /// Read (or follow) the event log.
    Events(events_cmd::EventsArgs),
    /// What the sessions' models used and cost, by item, repo, day or model.
    Usage(usage_cmd::UsageArgs),
    /// Other hosts sessions run on over SSH: list, check what one lacks, install there.
    #[command(subcommand)]
    Hosts(hosts_cmd::HostsCommand),
    /// List, run and post critics: one-shot reviewers from the operator config.
    #[command(subcommand)]
    Critic(critic_cmd::CriticCommand),
    /// Ask the operator a question (run by an agent inside its session).
    Ask(ask_cmd::AskArgs),
    /// Ask the operator to ship this session's work (run by an agent inside its session).
    Propose(propose_cmd::ProposeArgs),
    /// Post a comment on GitHub (run by an agent inside its session, on its own item).
    Comment(comment_cmd::CommentArgs),
    /// Answer into a session: paste a reply into the agent's pane.
    Reply(reply_cmd::ReplyArgs),
    /// Run the supervisor without a screen: poll, serve webhooks, dispatch.
    Run(run_cmd::RunArgs),
    /// List, start, pause, resume, stop, attach to or reset agent sessions.
    #[command(subcommand)]
    Sessions(sessions_cmd::SessionsCommand),
    /// The operator's screen: supervise (or watch the running supervisor) and act.
    Tui(tui_cmd::TuiArgs),
    /// Print shell completions.
    Completions(completions::CompletionsArgs),
    /// A stand-in agent for tests and the demo.
    #[command(hide = true)]
    FakeAgent(fake_agent::FakeAgentArgs),
    /// Try the-loop on a simulated GitHub with a demo agent: no token, no network.
    #[command(long_about = demo_cmd::LONG_ABOUT)]
    Demo(demo_cmd::DemoArgs),
    /// The demo's built-in critic: reads review material, prints one JSON result.
    #[command(hide = true)]
    DemoCritic(demo_cmd::DemoCriticArgs),
    /// Run by a session's harness to report its state (SPEC §17): prints nothing.
    #[command(hide = true)]
    Hook(hook_cmd::HookArgs),
    /// Started by a turn-end hook, detached: reads what the turn used once the
    /// harness has written it to its log (SPEC §20.1); prints nothing.
    #[command(hide = true, name = "hook-usage")]
    HookUsage(hook_cmd::HookUsageArgs),
    /// A session's first process when it is handed passed values: runs the harness.
    #[command(hide = true, name = "exec-env")]
    ExecEnv(exec_env_cmd::ExecEnvArgs),
    /// Marks a directory trusted in Claude Code's config here (run on another host by
    /// the supervisor before Claude Code starts there); prints nothing.
    #[command(hide = true, name = "claude-trust")]
    ClaudeTrust(claude_trust_cmd::ClaudeTrustArgs),
}

/// What every command gets besides its own arguments.
#[derive(Debug, Clone, Default)]
pub struct Ctx {
    /// The global `--config` flag.
    pub config_flag: Option<PathBuf>,
}

/// A command's failure, carrying the exit code of SPEC §1: 1 when the operation
/// failed, 2 for usage or configuration errors.
#[derive(Debug)]
pub struct CliError {
    pub code: u8,
    pub error: anyhow::Error,
}

pub type CliResult = Result<(), CliError>;

/// The operation failed (exit 1).
pub fn failed(error: impl Into<anyhow::Error>) -> CliError {
    CliError {
        code: 1,
        error: error.into(),
    }
}

/// Usage or configuration error (exit 2).
pub fn usage(error: impl Into<anyhow::Error>) -> CliError {
    CliError {
        code: 2,
        error: error.into(),
    }
}

/// Asks `question` on the terminal and goes on only on a yes. Without a terminal to
/// ask on, a usage error saying `no_terminal` (which names `--yes`); a no is exit 1
/// saying `declined` (what was left as it was).
pub(crate) fn confirm(question: &str, no_terminal: String, declined: &str) -> CliResult {
    use std::io::{BufRead, IsTerminal, Write};
    if !std::io::stdin().is_terminal() {
        return Err(usage(anyhow::anyhow!(no_terminal)));
    }
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(failed)?;
    if matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
        Ok(())
    } else {
        Err(failed(anyhow::anyhow!("{declined}")))
    }
}

/// [`runtime::build`], a failure said as the commands say it (exit 1).
/// In a session on another host (`THE_LOOP_HOST`), an agent's request goes only through
/// the supervisor's socket forwarded there: in-process, it would be recorded in the
/// host's own state, which nobody reads. `what`: "question", "comment".
/// `answer`: what the supervisor said, when it answered with a refusal.
pub(crate) fn host_without_supervisor(
    paths: &crate::paths::StatePaths,
    what: &str,
    answer: Option<String>,
) -> Option<CliError> {
    let host = std::env::var(crate::paths::ENV_HOST)
        .ok()
        .filter(|h| !h.trim().is_empty())?;
    Some(failed(match answer {
        Some(answer) => anyhow::anyhow!("the {what} was not sent: {answer}"),
        None => anyhow::anyhow!(
            "this session runs on host `{host}`, whose agents reach the supervisor only through {}, and nothing answers there: the {what} was not sent. Is `the-loop tui` (or `run`) running on the operator's machine with this host reachable?",
            paths.operator_socket().display()
        ),
    }))
}

pub(crate) fn start_runtime(threads: Threads) -> Result<tokio::runtime::Runtime, CliError> {
    runtime::build(threads)
        .map_err(|e| failed(anyhow::anyhow!("cannot start the async runtime: {e}")))
}

impl From<anyhow::Error> for CliError {
    fn from(error: anyhow::Error) -> Self {
        failed(error)
    }
}

/// Runs a parsed command line and maps the outcome to an exit code.
pub fn run(cli: Cli) -> ExitCode {
    let ctx = Ctx {
        config_flag: cli.config,
    };
    let result = match cli.command {
        Command::Config(cmd) => config_cmd::run(cmd, &ctx),
        Command::Excerpt(args) => excerpt_cmd::run(args, &ctx),
        Command::Events(args) => events_cmd::run(args, &ctx),
        Command::Usage(args) => usage_cmd::run(args, &ctx),
        Command::Critic(cmd) => critic_cmd::run(cmd, &ctx),
        Command::Hosts(cmd) => hosts_cmd::run(cmd, &ctx),
        Command::Ask(args) => ask_cmd::run(args, &ctx),
        Command::Propose(args) => propose_cmd::run(args, &ctx),
        Command::Comment(args) => comment_cmd::run(args, &ctx),
        Command::Reply(args) => reply_cmd::run(args, &ctx),
        Command::Run(args) => run_cmd::run(args, &ctx),
        Command::Sessions(cmd) => sessions_cmd::run(cmd, &ctx),
        Command::Tui(args) => tui_cmd::run(args, &ctx),
        Command::Completions(args) => completions::run(args),
        Command::FakeAgent(args) => fake_agent::run(args),
        Command::Demo(args) => demo_cmd::run(args, &ctx),
        Command::DemoCritic(args) => demo_cmd::run_critic(args),
        Command::Hook(args) => hook_cmd::run(args),
        Command::HookUsage(args) => hook_cmd::run_usage(args),
        Command::ExecEnv(args) => exec_env_cmd::run(args),
        Command::ClaudeTrust(args) => claude_trust_cmd::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError { code, error }) => {
            tracing::error!(code, "{error:#}");
            eprintln!("the-loop: {error:#}");
            ExitCode::from(code)
        }
    }
}
