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

#[derive(Debug, clap::Args)]
#[command(
    long_about = "Try the-loop on a simulated GitHub: no token, no network, no config.\n\n\
A watched issue receives comments over the next half minute — from you (delivered to the \
demo agent), from a stranger trying a prompt injection (refused), from the tool itself \
(refused) — and a review on the linked pull request makes the agent ask you a question. \
Answer it inline, launch the demo critic, then quit with q. Everything the demo starts \
(a private tmux server, the simulator, a temp state directory) is removed when it ends.\n\n\
Needs tmux. Set THE_LOOP_DEMO_PACE=fast to play the script in seconds."
)]
pub struct DemoArgs {
    /// Run the supervisor without the screen (`the-loop run`) and print where to look.
    #[arg(long)]
    pub headless: bool,
    /// Keep the demo's temp state (config, event log, agent log) and print where it is.
    #[arg(long)]
    pub keep_state: bool,
}

pub fn run(args: DemoArgs) -> CliResult {
    let pace = Pace::from_env().map_err(|e| usage(anyhow!(e)))?;
    let exe = std::env::current_exe()
        .map_err(|e| failed(anyhow!("cannot find the-loop's own executable: {e}")))?;
    let screen = if args.headless {
        Screen::Headless
    } else {
        Screen::Tui
    };
    if screen == Screen::Headless {
        eprintln!(
            "the-loop demo: running headless (the supervisor without a screen); Ctrl-C stops it and cleans up"
        );
    }
    let options = DemoOptions {
        exe,
        pace,
        screen,
        keep_state: args.keep_state,
        temp_dir: std::env::temp_dir(),
    };
    let report = demo::run(options).map_err(failed)?;
    goodbye(&report);
    Ok(())
}

/// One or two lines after the screen is gone: what was cleaned up, and the next step.
fn goodbye(report: &Report) {
    let how = match report.ending {
        Ending::Quit => "demo over".to_string(),
        Ending::Signal(name) => format!("stopped by {name}"),
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
    if report.ending == Ending::Quit {
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
