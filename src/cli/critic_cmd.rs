//! `the-loop critic list | run | post` (SPEC §1, §9): a thin wrapper over
//! [`crate::critic`]. `run` prints exactly one envelope on stdout; everything else goes
//! to stderr and the log. Exit 0 ok, 1 the round (or its post) failed, 2 misconfiguration.

use super::{CliError, CliResult, Ctx, Threads, failed, start_runtime, usage};
use crate::config::{self, LoadedConfig};
use crate::critic::{self, Envelope, Listing, Prompt, Recorder, Request, RunError};
use crate::events::{EventLog, Source};
use crate::paths::StatePaths;
use crate::session::Sessions;
use crate::work_item::WorkItemRef;
use anyhow::{Context, anyhow};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, clap::Subcommand)]
pub enum CriticCommand {
    /// List the configured critics, whether each can run, and why not.
    List {
        #[arg(long, value_enum, default_value_t = ListFormat::Table)]
        format: ListFormat,
    },
    /// Run one critic once; prints one JSON envelope on stdout.
    Run(RunArgs),
    /// Post a saved envelope, marked: a review with line comments on a PR, a comment on an issue.
    Post(PostArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ListFormat {
    Table,
    Json,
}

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("prompt_source").required(true).args(["prompt", "prompt_file"])))]
pub struct RunArgs {
    /// The critic's `name` in the operator config.
    pub name: String,
    /// The review material, inline.
    #[arg(long, value_name = "TEXT")]
    pub prompt: Option<String>,
    /// The review material in a file (`-`: standard input).
    #[arg(long, value_name = "PATH")]
    pub prompt_file: Option<PathBuf>,
    /// Working directory of the critic. Default: with --work-item, where that work
    /// item's session works (its worktree; else its repo's `path`), as in the TUI; else
    /// the entry's `cwd`, else the current directory.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Record the round for this work item (saved envelope, critic.* events), e.g.
    /// `github:octo/repo#15`.
    #[arg(long, value_name = "REF")]
    pub work_item: Option<String>,
    /// A directory of specs, passed to the critic as `{specDir}`.
    #[arg(long, value_name = "DIR")]
    pub spec_dir: Option<PathBuf>,
    /// Seconds before the critic is killed (overrides `timeoutSeconds`).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// Also write the envelope to this file.
    #[arg(long, value_name = "PATH")]
    pub output_file: Option<PathBuf>,
    /// Post the round on this PR (one review, findings on its diff as line comments) or issue.
    #[arg(long, value_name = "REF")]
    pub post_to: Option<String>,
    /// With --post-to: post a failed round too.
    #[arg(long, requires = "post_to")]
    pub post_failures: bool,
}

#[derive(Debug, clap::Args)]
pub struct PostArgs {
    /// An envelope written by `critic run` (`--output-file`, or `critics/` in the state
    /// directory).
    pub envelope_file: PathBuf,
    /// The PR (a review) or issue (a comment) to post on, e.g. `github:octo/repo#15`.
    #[arg(long, value_name = "REF")]
    pub to: String,
    /// Post the envelope even though its round failed.
    #[arg(long)]
    pub post_failures: bool,
}

pub fn run(cmd: CriticCommand, ctx: &Ctx) -> CliResult {
    match cmd {
        CriticCommand::List { format } => list(format, ctx),
        CriticCommand::Run(args) => run_critic(args, ctx),
        CriticCommand::Post(args) => post_saved(args, ctx),
    }
}

fn load(ctx: &Ctx) -> Result<LoadedConfig, CliError> {
    config::load(ctx.config_flag.as_deref()).map_err(usage)
}

fn list(format: ListFormat, ctx: &Ctx) -> CliResult {
    let loaded = load(ctx)?;
    let rows = critic::listing(&critic::entries(&loaded.config));
    let text = match format {
        ListFormat::Json => {
            let mut json = serde_json::to_string_pretty(&rows).map_err(failed)?;
            json.push('\n');
            json
        }
        ListFormat::Table => table(&rows),
    };
    write_stdout(&text)
}

fn table(rows: &[Listing]) -> String {
    if rows.is_empty() {
        return "no critics configured: add entries under `critics:` in the operator config\n"
            .to_string();
    }
    let cells: Vec<[String; 4]> = rows
        .iter()
        .map(|r| {
            let name = r
                .name
                .clone()
                .unwrap_or_else(|| format!("critics[{}]", r.index));
            let runs = match (&r.harness, &r.program) {
                (Some(h), Some(p)) if h.as_str() != p.as_str() => format!("{h} ({p})"),
                (_, Some(p)) => p.clone(),
                _ => "-".into(),
            };
            let status = match (&r.error, r.valid, r.enabled) {
                (None, _, _) => "ready".to_string(),
                (Some(_), true, false) => "disabled".to_string(),
                (Some(e), true, true) => format!("unavailable: {e}"),
                (Some(e), false, _) => format!("invalid: {e}"),
            };
            [
                name,
                runs,
                r.model.clone().unwrap_or_else(|| "-".into()),
                status,
            ]
        })
        .collect();
    let header = ["NAME", "RUNS", "MODEL", "STATUS"].map(String::from);
    let width = |i: usize| {
        cells
            .iter()
            .chain([&header])
            .map(|c| c[i].chars().count())
            .max()
            .unwrap_or(0)
    };
    let widths = [width(0), width(1), width(2)];
    let line = |c: &[String; 4]| {
        format!(
            "{:w0$}  {:w1$}  {:w2$}  {}\n",
            c[0],
            c[1],
            c[2],
            c[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2]
        )
    };
    std::iter::once(&header).chain(&cells).map(line).collect()
}

fn run_critic(args: RunArgs, ctx: &Ctx) -> CliResult {
    let work_item = parse_ref(args.work_item.as_deref(), "--work-item")?;
    let post_to = parse_ref(args.post_to.as_deref(), "--post-to")?;
    let timeout = match args.timeout {
        Some(secs) => Some(
            Duration::try_from_secs_f64(secs)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    usage(anyhow!(
                        "--timeout must be a positive number of seconds, got {secs}"
                    ))
                })?,
        ),
        None => None,
    };
    let loaded = load(ctx)?;
    let entries = critic::entries(&loaded.config);
    let spec = critic::find(&entries, &args.name).map_err(usage)?;
    let prompt = match (args.prompt, args.prompt_file) {
        (Some(text), _) => Prompt::Text(text),
        (None, Some(path)) if path.as_os_str() == "-" => {
            let mut text = String::new();
            io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| usage(anyhow!("cannot read the prompt from standard input: {e}")))?;
            Prompt::Text(text)
        }
        (None, Some(path)) => Prompt::File(path),
        (None, None) => {
            return Err(usage(anyhow!(
                "give the prompt with --prompt or --prompt-file"
            )));
        }
    };
    let paths = StatePaths::from_env();
    let runtime = start_runtime(Threads::One)?;
    // A repo on another host has its critics run there (issue 32).
    let host = match &work_item {
        Some(item) => runtime.block_on(critic_host(&loaded.config, &paths, item))?,
        None => None,
    };
    let cwd = match (args.cwd, &work_item) {
        (Some(dir), _) => Some(dir),
        // Where the work item's session works, as a round the TUI starts (SPEC §9.3):
        // the places the critic names are found there, whatever this shell's directory.
        (None, Some(item)) => Sessions::open(&loaded, &paths, Source::Cli)
            .map_err(usage)?
            .work_place(item)
            .map_err(failed)?
            .map(|place| place.cwd),
        (None, None) => None,
    };
    let request = Request {
        prompt,
        cwd,
        work_item: work_item.clone(),
        spec_dir: args.spec_dir,
        timeout,
        child_env: loaded.config.child_env(),
        host,
    };
    let recorder = work_item
        .as_ref()
        .map(|_| Recorder::new(&paths, EventLog::open(&paths)));
    let round = runtime
        .block_on(critic::run_round_until(
            spec,
            &request,
            recorder.as_ref(),
            interrupted(),
        ))
        .map_err(|e: RunError| usage(e))?;
    let envelope = &round.envelope;
    write_stdout(&format!("{}\n", envelope.to_line()))?;

    let mut problems = Vec::new();
    if let Some(error) = &envelope.error {
        problems.push(format!("critic `{}` failed: {error}", envelope.critic));
    }
    if let Some(path) = &args.output_file
        && let Err(e) =
            crate::fsutil::atomic_write(path, format!("{}\n", envelope.to_line()).as_bytes())
    {
        problems.push(format!(
            "cannot write the envelope to {}: {e}",
            path.display()
        ));
    }
    if let Some(path) = &round.saved {
        eprintln!("the-loop: envelope saved to {}", path.display());
    }
    if let Some(error) = &round.save_error {
        problems.push(error.clone());
    }
    if let Some(to) = &post_to {
        if envelope.ok || args.post_failures {
            match runtime.block_on(post_and_log(&loaded, envelope, to, round.saved.as_deref())) {
                Ok(url) => eprintln!("the-loop: posted to {to}: {url}"),
                Err(e) => problems.push(format!("posting to {to} failed: {e:#}")),
            }
        } else {
            eprintln!(
                "the-loop: nothing posted to {to}: the round failed; pass --post-failures to post a failed round"
            );
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(failed(anyhow!(problems.join("\n"))))
    }
}

fn post_saved(args: PostArgs, ctx: &Ctx) -> CliResult {
    let to =
        parse_ref(Some(&args.to), "--to")?.ok_or_else(|| usage(anyhow!("--to is required")))?;
    let text = std::fs::read_to_string(&args.envelope_file)
        .with_context(|| format!("cannot read the envelope {}", args.envelope_file.display()))
        .map_err(usage)?;
    let envelope: Envelope = serde_json::from_str(&text)
        .with_context(|| {
            format!(
                "{} is not a critic envelope (the JSON `critic run` prints)",
                args.envelope_file.display()
            )
        })
        .map_err(usage)?;
    if !envelope.ok && !args.post_failures {
        return Err(usage(anyhow!(
            "the envelope records a failed round (ok: false); pass --post-failures to post it anyway"
        )));
    }
    let loaded = load(ctx)?;
    let url = start_runtime(Threads::One)?
        .block_on(post_and_log(
            &loaded,
            &envelope,
            &to,
            Some(&args.envelope_file),
        ))
        .map_err(failed)?;
    write_stdout(&format!("{url}\n"))
}

/// Posts through the product's client and logs `critic.posted`; returns the review's or
/// the comment's URL.
async fn post_and_log(
    loaded: &LoadedConfig,
    envelope: &Envelope,
    to: &WorkItemRef,
    saved: Option<&Path>,
) -> anyhow::Result<String> {
    let client = crate::github::Client::from_config(&loaded.config.github)?;
    let paths = StatePaths::from_env();
    let recorder = Recorder::new(&paths, EventLog::open(&paths));
    let runner = critic::CriticRunner::new(recorder, Ok(std::sync::Arc::new(client)), Source::Cli);
    Ok(runner.post(envelope, to, saved).await?.html_url)
}

/// Resolves on Ctrl-C or SIGTERM: the critic runs in its own process group, so the
/// terminal's signal never reaches it and we must end it ourselves.
async fn interrupted() -> String {
    use tokio::signal::unix::{SignalKind, signal};
    let term = signal(SignalKind::terminate());
    let int = signal(SignalKind::interrupt());
    match (term, int) {
        (Ok(mut term), Ok(mut int)) => tokio::select! {
            _ = term.recv() => "SIGTERM".to_string(),
            _ = int.recv() => "interrupted".to_string(),
        },
        _ => std::future::pending().await,
    }
}

fn parse_ref(value: Option<&str>, flag: &str) -> Result<Option<WorkItemRef>, CliError> {
    value
        .map(|v| v.parse().map_err(|e| usage(anyhow!("{flag}: {e}"))))
        .transpose()
}

fn write_stdout(text: &str) -> CliResult {
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(failed(anyhow!("cannot write to standard output: {e}"))),
        Ok(()) => Ok(()),
    }
}

/// The host `item`'s repo runs on, connected; `None` for a repo here.
async fn critic_host(
    config: &crate::config::Config,
    paths: &StatePaths,
    item: &crate::work_item::WorkItemRef,
) -> Result<Option<std::sync::Arc<crate::tmux::RemoteHost>>, CliError> {
    let Some(entry) = config.host_of(&item.repo_full_name()) else {
        return Ok(None);
    };
    let hosts = crate::tmux::Hosts::from_config(config, &paths.ssh_dir());
    let host = hosts
        .get(&entry.name)
        .cloned()
        .ok_or_else(|| failed(anyhow!("host `{}` is not configured", entry.name)))?;
    host.transport.connect().await.map_err(failed)?;
    Ok(Some(host))
}
