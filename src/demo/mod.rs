//! `the-loop demo` (SPEC §12): the real screen against a simulated GitHub and a demo
//! agent — no token, no network, no config.
//!
//! The demo process is an orchestrator. It makes a private world ([`env::World`]: a temp
//! state root, a config, a private tmux socket name), starts the simulated GitHub
//! in-process on loopback with the [`scenario`] repository, starts the demo agent's
//! session for the watched issue (`the-loop sessions start`), and runs the screen as a
//! child process — `the-loop tui`, its own executable — with the world's environment,
//! on the operator's terminal. While the screen runs, the scenario plays its events.
//! However the screen ends (quit, a crash) and whatever stops the demo (SIGINT, SIGTERM,
//! SIGHUP), everything it started is taken down: the screen, the tmux server with the
//! agents in it, the simulator, the temp state.
//!
//! - [`preflight`]: tmux is there (or how to install it); a killed demo's leftovers swept.
//! - [`env`]: the world and the environment of its children; [`config`] its config;
//!   [`checkout`] the repository the agent works in; [`tmux_server`] the takedown.
//! - [`scenario`]: the scripted repository and its timeline; [`critic`]: the demo critic.

pub mod checkout;
pub mod config;
pub mod critic;
pub mod env;
pub mod preflight;
pub mod scenario;
mod terminal;
pub mod tmux_server;

use env::{Cleanup, World};
use preflight::TmuxProblem;
use scenario::Pace;
use std::io::{self, IsTerminal};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use terminal::SavedTerminal;
use tokio::signal::unix::{Signal, SignalKind, signal};

/// What to show while the demo runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    /// `the-loop tui` on this terminal.
    Tui,
    /// `the-loop run`: the same world without a screen (scripts, a look under the hood).
    Headless,
}

impl Screen {
    pub fn args(self) -> &'static [&'static str] {
        match self {
            Screen::Tui => &["tui"],
            Screen::Headless => &["run"],
        }
    }

    fn command(self) -> String {
        format!("the-loop {}", self.args().join(" "))
    }
}

/// How to run the demo.
#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// The executable every child runs (normally `std::env::current_exe()`).
    pub exe: PathBuf,
    pub pace: Pace,
    pub screen: Screen,
    /// Keep the temp state after the demo (its path is reported).
    pub keep_state: bool,
    /// Where the temp state root goes (normally `std::env::temp_dir()`).
    pub temp_dir: PathBuf,
}

/// Why the demo could not run, or how it ended badly. Whatever it had started is
/// already cleaned up when this is returned.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error(transparent)]
    Tmux(#[from] TmuxProblem),
    #[error(
        "the demo's screen needs a terminal on standard input and output; run `the-loop demo` in one, or `the-loop demo --headless` to run it without a screen"
    )]
    NoTerminal,
    #[error("cannot set up the demo's private state under {}: {error}", .dir.display())]
    State { dir: PathBuf, error: io::Error },
    #[error("cannot start the simulated GitHub on loopback: {0}")]
    Sim(io::Error),
    #[error("cannot script the simulated GitHub: {0}")]
    Script(#[from] crate::github::sim::SimError),
    #[error("cannot start the demo agent's session: {0}")]
    Session(String),
    #[error("cannot start the screen (`{command}`): {error}")]
    Spawn { command: String, error: io::Error },
    #[error("the screen (`{command}`) {status}; the demo has cleaned up after it")]
    ScreenFailed { command: String, status: String },
}

/// How a demo that ran ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The screen exited normally (the operator quit).
    Quit,
    /// The demo was stopped by this signal.
    Signal(&'static str),
}

impl DemoError {
    /// 2 for how the demo was invoked (no terminal), 1 otherwise (SPEC §1).
    pub fn exit_code(&self) -> u8 {
        match self {
            DemoError::NoTerminal => 2,
            _ => 1,
        }
    }
}

/// How a demo that got as far as its private world went, and what its cleanup did.
#[derive(Debug)]
pub struct Report {
    pub outcome: Result<Ending, DemoError>,
    pub socket: String,
    pub cleanup: Cleanup,
}

/// Runs the demo to its end; see the module docs. Blocks. An `Err` means nothing was
/// started (tmux missing, no temp dir); from then on the [`Report`] says how it went.
pub fn run(options: DemoOptions) -> Result<Report, DemoError> {
    preflight::require_tmux(None)?;
    if options.screen == Screen::Tui && !(io::stdin().is_terminal() && io::stdout().is_terminal()) {
        return Err(DemoError::NoTerminal);
    }
    let state_error = |error| DemoError::State {
        dir: options.temp_dir.clone(),
        error,
    };
    let mut world =
        World::create(&options.temp_dir, &options.exe, options.pace).map_err(state_error)?;
    world.keep(options.keep_state);
    preflight::sweep_stale(&options.temp_dir, world.root());
    checkout::prepare(&world.workdir(), &world.fix_dir());
    let outcome = match crate::runtime::build(crate::runtime::Threads::Pool(None)) {
        Ok(runtime) => {
            let outcome = runtime.block_on(stage(&mut world, &options));
            // The simulator and the script stop with the runtime, before the files go.
            drop(runtime);
            outcome
        }
        Err(error) => Err(state_error(error)),
    };
    Ok(Report {
        outcome,
        socket: world.socket().to_string(),
        cleanup: world.cleanup(),
    })
}

/// Everything between the private world and its cleanup.
async fn stage(world: &mut World, options: &DemoOptions) -> Result<Ending, DemoError> {
    // Listening first: a signal during start-up must still lead to the cleanup.
    let mut signals = Signals::new().map_err(|error| DemoError::State {
        dir: world.root().to_path_buf(),
        error,
    })?;
    let sim = tokio::select! {
        started = start_world(world) => started?,
        name = signals.recv() => return Ok(Ending::Signal(name)),
    };
    let script = tokio::spawn(scenario::play(
        sim.control(),
        world.events_path(),
        options.pace,
    ));
    let ending = run_screen(world, options.screen, &mut signals).await;
    script.abort();
    drop(sim);
    ending
}

/// The simulator with the scripted repository, the config pointing at it, and the demo
/// agent's session on the watched issue.
async fn start_world(world: &mut World) -> Result<crate::github::sim::SimHandle, DemoError> {
    let sim = crate::github::sim::SimGithub::start()
        .await
        .map_err(DemoError::Sim)?;
    scenario::seed(&sim)?;
    world
        .write_config(&sim.base_url())
        .map_err(|error| DemoError::State {
            dir: world.root().to_path_buf(),
            error,
        })?;
    let (cols, rows) = agent_size(crossterm::terminal::size().ok());
    world
        .start_tmux(cols, rows)
        .map_err(|e| DemoError::Session(e.to_string()))?;
    let item = scenario::issue_ref().to_string();
    let mut cmd = world.command(["sessions", "start", item.as_str()]);
    cmd.stdin(Stdio::null());
    let output = tokio::process::Command::from(cmd)
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| DemoError::Session(e.to_string()))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(DemoError::Session(
            stderr.trim().trim_start_matches("the-loop: ").to_string(),
        ));
    }
    Ok(sim)
}

/// The agent's window: the size of the screen's preview on a terminal of `size` (as
/// the screen lays itself out), so the agent's lines neither wrap nor get cut there.
fn agent_size(size: Option<(u16, u16)>) -> (u16, u16) {
    use crate::tui::app::{App, AppSettings};
    let Some((w, h)) = size else {
        return (80, 24);
    };
    let app = App::new(AppSettings::builtin(), time::OffsetDateTime::now_utc());
    let layout = crate::tui::layout::compute(&app, ratatui::layout::Rect::new(0, 0, w, h));
    layout.pane.map_or((80, 24), |pane| {
        (
            pane.width.saturating_sub(2).clamp(40, 250),
            pane.height.saturating_sub(2).clamp(10, 80),
        )
    })
}

/// Runs the screen until it exits or a signal stops the demo (the screen is then asked
/// to stop with SIGTERM, and killed if it does not within a few seconds).
async fn run_screen(
    world: &World,
    screen: Screen,
    signals: &mut Signals,
) -> Result<Ending, DemoError> {
    let mut cmd = world.command(screen.args());
    if screen == Screen::Headless {
        // Its own process group: Ctrl-C reaches the demo alone, which stops it once.
        use std::os::unix::process::CommandExt;
        cmd.stdin(Stdio::null()).process_group(0);
        announce_headless(world);
    }
    let saved = SavedTerminal::capture();
    let mut child = tokio::process::Command::from(cmd)
        .kill_on_drop(true)
        .spawn()
        .map_err(|error| DemoError::Spawn {
            command: screen.command(),
            error,
        })?;
    let (ending, status) = tokio::select! {
        status = child.wait() => (Ending::Quit, status.ok()),
        name = signals.recv() => (Ending::Signal(name), stop(&mut child).await),
    };
    let clean = status.is_some_and(|s| s.success());
    saved.restore(clean);
    match ending {
        Ending::Quit if !clean => Err(DemoError::ScreenFailed {
            command: screen.command(),
            status: status.map_or_else(|| "could not be waited for".into(), describe),
        }),
        ending => Ok(ending),
    }
}

/// Without a screen, the ways to look inside.
fn announce_headless(world: &World) {
    let home = world.root().display();
    let exe = world.exe().display();
    eprintln!(
        "the-loop demo: running headless; Ctrl-C stops it and cleans up.\n  \
         events: THE_LOOP_HOME={home} {exe} events --follow\n  \
         agent:  tmux -L {} attach -r",
        world.socket()
    );
}

/// SIGTERM, a grace period, then SIGKILL.
async fn stop(child: &mut tokio::process::Child) -> Option<ExitStatus> {
    if let Some(pid) = child.id() {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    match tokio::time::timeout(Duration::from_secs(5), child.wait()).await {
        Ok(status) => status.ok(),
        Err(_) => {
            let _ = child.kill().await;
            child.wait().await.ok()
        }
    }
}

/// `exited with code 1`, `was killed by signal 9`.
fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with code {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        _ => format!("ended ({status})"),
    }
}

/// The signals that stop the demo.
struct Signals {
    int: Signal,
    term: Signal,
    hup: Signal,
}

impl Signals {
    fn new() -> io::Result<Self> {
        Ok(Self {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    async fn recv(&mut self) -> &'static str {
        tokio::select! {
            _ = self.int.recv() => "SIGINT",
            _ = self.term.recv() => "SIGTERM",
            _ = self.hup.recv() => "SIGHUP",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_statuses_are_described_plainly() {
        assert_eq!(describe(ExitStatus::from_raw(1 << 8)), "exited with code 1");
        assert_eq!(describe(ExitStatus::from_raw(9)), "was killed by signal 9");
    }

    #[test]
    fn the_agent_draws_at_the_preview_size() {
        // The wide layout: the preview is the top right, inside its border.
        assert_eq!(agent_size(Some((160, 48))), (102, 23));
        assert_eq!(agent_size(Some((100, 32))), (58, 14));
        // Narrow terminals stack the panes.
        let (w, h) = agent_size(Some((80, 40)));
        assert_eq!(w, 78);
        assert!((10..40).contains(&h), "{h}");
        // Too small for more than one pane (the preview is not on screen), or no
        // terminal at all: a classic 80×24.
        assert_eq!(agent_size(Some((20, 5))), (80, 24));
        assert_eq!(agent_size(None), (80, 24));
    }

    #[test]
    fn the_screen_is_the_tui_or_the_headless_supervisor() {
        assert_eq!(Screen::Tui.args(), ["tui"]);
        assert_eq!(Screen::Headless.command(), "the-loop run");
    }
}
