//! `the-loop demo` (SPEC §12) and its hidden helper `the-loop demo-critic`.
//!
//! `demo` exits 0 when the operator quits (or a signal stops it cleanly), 1 when tmux is
//! missing or the demo could not run, 2 for a bad `$THE_LOOP_DEMO_PACE`. Either way,
//! everything it started has been cleaned up when it returns.

use super::{CliResult, failed, usage};
use crate::demo::env::Cleanup;
use crate::demo::scenario::Pace;
use crate::demo::{self, DemoOptions, Ending, Report, Screen};
use anyhow::anyhow;
use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

/// `the-loop demo --help`.
pub const LONG_ABOUT: &str = "Try the-loop on a simulated GitHub with a demo agent: no token, no network, no config.

A watched issue receives comments over the next half minute: from alice, the demo operator \
(delivered to the demo agent), from a stranger trying a prompt injection (refused), from the tool itself \
(refused). A review on the linked pull request is routed to the issue's session and makes \
the agent ask you a question. Answer it inline, launch the demo critic, then quit with q. \
Everything the demo starts (a private tmux server, the simulator, a temp state directory) \
is removed when it ends.

Needs tmux. THE_LOOP_DEMO_PACE=fast plays the script in seconds.";

#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Run the supervisor without the screen (`the-loop run`); print where to look.
    #[arg(long)]
    pub headless: bool,
    /// Keep the demo's temp state (config, event log, agent log) and print where it is.
    #[arg(long)]
    pub keep_state: bool,
}

pub fn run(args: DemoArgs, ctx: &super::Ctx) -> CliResult {
    if ctx.config_flag.is_some() {
        eprintln!("the-loop: the demo brings its own config; --config is ignored");
    }
    let pace = Pace::from_env().map_err(|e| usage(anyhow!(e)))?;
    let exe = std::env::current_exe()
        .map_err(|e| failed(anyhow!("cannot find the-loop's own executable: {e}")))?;
    let screen = if args.headless {
        Screen::Headless
    } else {
        Screen::Tui
    };
    let options = DemoOptions {
        exe,
        pace,
        screen,
        keep_state: args.keep_state,
        temp_dir: std::env::temp_dir(),
    };
    let report = demo::run(options).map_err(demo_error)?;
    goodbye(&report);
    report.outcome.map(|_| ()).map_err(demo_error)
}

fn demo_error(error: demo::DemoError) -> super::CliError {
    super::CliError {
        code: error.exit_code(),
        error: error.into(),
    }
}

/// One or two lines after the screen is gone: what was cleaned up, and the next step.
fn goodbye(report: &Report) {
    let how = match &report.outcome {
        Ok(Ending::Quit) => "demo over".to_string(),
        Ok(Ending::Signal(name)) => format!("stopped by {name}"),
        Err(_) => "the demo did not finish".to_string(),
    };
    let Cleanup {
        removed,
        kept,
        tmux,
        ..
    } = &report.cleanup;
    let mut gone = vec![format!("the tmux server `{}`", report.socket)];
    if tmux.killed > 0 {
        gone.push(format!("{} lingering agent process(es)", tmux.killed));
    }
    gone.push("the simulated GitHub".into());
    if *removed {
        gone.push("the temp state".into());
    }
    eprintln!("the-loop: {how}; cleaned up {}.", gone.join(", "));
    if let Some(dir) = kept {
        eprintln!(
            "the-loop: the demo's state is kept in {}: `THE_LOOP_HOME={} the-loop events` reads its event log",
            dir.display(),
            dir.display()
        );
    }
    if matches!(report.outcome, Ok(Ending::Quit)) {
        eprintln!(
            "the-loop: for real use, `the-loop config init` writes a starter config (see README.md, \"Quick start\")"
        );
    }
}

#[derive(Debug, clap::Args)]
pub struct DemoCriticArgs {
    /// The review material (`{promptFile}`); `-` reads stdin.
    pub prompt_file: PathBuf,
    /// How long to "think" before answering (default: by `$THE_LOOP_DEMO_PACE`).
    #[arg(long, value_name = "MS")]
    pub delay_ms: Option<u64>,
}

/// The demo's built-in critic: prints one JSON result (see `demo::critic`).
pub fn run_critic(args: DemoCriticArgs) -> CliResult {
    let prompt = if args.prompt_file.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| failed(anyhow!("cannot read the review material from stdin: {e}")))?;
        text
    } else {
        std::fs::read_to_string(&args.prompt_file).map_err(|e| {
            usage(anyhow!(
                "cannot read the review material {}: {e}",
                args.prompt_file.display()
            ))
        })?
    };
    let delay = match args.delay_ms {
        Some(ms) => Duration::from_millis(ms),
        None => Pace::from_env().unwrap_or_default().critic_delay(),
    };
    std::thread::sleep(delay);
    println!("{}", demo::critic::result_json(&prompt));
    Ok(())
}
