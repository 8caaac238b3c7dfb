//! The terminal guard: the only code that touches raw mode and the alternate screen.
//! [`Restorer::restore`] is the one way back to a normal terminal — raw mode off,
//! bracketed paste and mouse reporting off, main screen, cursor shown — and it runs on
//! every exit path: normal return, error, a panic (via the hook installed by
//! [`TerminalGuard`]), a signal, and around `tmux attach` (suspend/resume). Mouse
//! reporting (`tui.mouse`) is turned on by every enter and off by every restore, so it
//! is off while attached and after any exit. The writer
//! and raw-mode switch are injected so tests can check exactly what was restored.

use super::action::Notification;
use super::run::Console;
use crossterm::cursor::{Hide, Show};
use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, Event as TermEvent,
    EventStream,
};
use crossterm::execute;
use crossterm::terminal::{EnterAlternateScreen, LeaveAlternateScreen};
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use std::io::{self, Write};
use std::panic::PanicHookInfo;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Switching the terminal's raw mode (process-wide in crossterm, hence a trait).
pub trait RawMode: Send + Sync {
    fn enable(&self) -> io::Result<()>;
    fn disable(&self) -> io::Result<()>;
}

/// The real switch.
pub struct CrosstermRawMode;

impl RawMode for CrosstermRawMode {
    fn enable(&self) -> io::Result<()> {
        crossterm::terminal::enable_raw_mode()
    }
    fn disable(&self) -> io::Result<()> {
        crossterm::terminal::disable_raw_mode()
    }
}

struct Inner {
    out: Mutex<Box<dyn Write + Send>>,
    raw: Box<dyn RawMode>,
    /// `tui.mouse`: report clicks and the wheel while entered.
    mouse: AtomicBool,
    entered: AtomicBool,
    restores: AtomicUsize,
}

/// Enters and restores the terminal. Clones share one state, so the panic hook, the
/// event loop and the guard agree on whether the terminal is currently taken over.
#[derive(Clone)]
pub struct Restorer {
    inner: Arc<Inner>,
}

impl Restorer {
    pub fn new(out: Box<dyn Write + Send>, raw: Box<dyn RawMode>) -> Self {
        Self {
            inner: Arc::new(Inner {
                out: Mutex::new(out),
                raw,
                mouse: AtomicBool::new(false),
                entered: AtomicBool::new(false),
                restores: AtomicUsize::new(0),
            }),
        }
    }

    /// The process's terminal.
    pub fn stdout() -> Self {
        Self::new(Box::new(io::stdout()), Box::new(CrosstermRawMode))
    }

    /// Turns mouse reporting on with every [`enter`](Self::enter) (it is always off
    /// after a restore: while attached, and on every exit path).
    pub fn with_mouse(self, on: bool) -> Self {
        self.inner.mouse.store(on, Ordering::SeqCst);
        self
    }

    fn with_out<T>(
        &self,
        f: impl FnOnce(&mut Box<dyn Write + Send>) -> io::Result<T>,
    ) -> io::Result<T> {
        // A panic while the writer was held must not stop the restore.
        let mut out = self.inner.out.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut out)
    }

    /// Raw mode, alternate screen, bracketed paste on, cursor hidden; mouse reporting
    /// on when asked for.
    pub fn enter(&self) -> io::Result<()> {
        self.inner.raw.enable()?;
        self.inner.entered.store(true, Ordering::SeqCst);
        let mouse = self.inner.mouse.load(Ordering::SeqCst);
        self.with_out(|out| {
            execute!(out, EnterAlternateScreen, EnableBracketedPaste, Hide)?;
            if mouse {
                execute!(out, EnableMouseClicks)?;
            }
            out.flush()
        })
    }

    /// Back to a normal terminal. Safe to call any number of times and from a panic:
    /// only the first call after [`enter`](Self::enter) does anything, and every step is
    /// attempted even if an earlier one failed.
    pub fn restore(&self) -> io::Result<()> {
        if !self.inner.entered.swap(false, Ordering::SeqCst) {
            return Ok(());
        }
        self.inner.restores.fetch_add(1, Ordering::SeqCst);
        let raw = self.inner.raw.disable();
        let screen = self.with_out(|out| {
            execute!(
                out,
                DisableBracketedPaste,
                DisableMouseCapture,
                LeaveAlternateScreen,
                Show
            )?;
            out.flush()
        });
        raw.and(screen)
    }

    pub fn is_entered(&self) -> bool {
        self.inner.entered.load(Ordering::SeqCst)
    }

    /// How many times the terminal was actually restored.
    pub fn restores(&self) -> usize {
        self.inner.restores.load(Ordering::SeqCst)
    }

    /// Writes straight to the terminal (the bell).
    pub fn write_raw(&self, bytes: &[u8]) -> io::Result<()> {
        self.with_out(|out| {
            out.write_all(bytes)?;
            out.flush()
        })
    }
}

/// Mouse reporting of presses, releases and the wheel in the SGR encoding (modes 1000
/// and 1006). Not crossterm's `EnableMouseCapture`: that also asks for every pointer
/// motion (1003), which would wake the loop on each move for nothing. The restore's
/// `DisableMouseCapture` turns all of these modes off.
struct EnableMouseClicks;

impl crossterm::Command for EnableMouseClicks {
    fn write_ansi(&self, f: &mut impl std::fmt::Write) -> std::fmt::Result {
        f.write_str("\x1b[?1000h\x1b[?1006h")
    }

    #[cfg(windows)]
    fn execute_winapi(&self) -> io::Result<()> {
        crossterm::event::EnableMouseCapture.execute_winapi()
    }
}

type Hook = Box<dyn Fn(&PanicHookInfo<'_>) + Sync + Send + 'static>;

/// Holds the terminal for as long as it lives: entered on creation, restored on drop,
/// with a panic hook that restores before the panic message is printed (so it is
/// readable, on the main screen).
pub struct TerminalGuard {
    restorer: Restorer,
    previous_hook: Option<Arc<Hook>>,
}

impl TerminalGuard {
    pub fn enter(restorer: Restorer) -> io::Result<Self> {
        let previous: Arc<Hook> = Arc::from(std::panic::take_hook());
        let chained = Arc::clone(&previous);
        let on_panic = restorer.clone();
        std::panic::set_hook(Box::new(move |info| {
            let _ = on_panic.restore();
            chained(info);
        }));
        let guard = Self {
            restorer,
            previous_hook: Some(previous),
        };
        guard.restorer.enter()?;
        Ok(guard)
    }

    pub fn restorer(&self) -> &Restorer {
        &self.restorer
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        if let Err(e) = self.restorer.restore() {
            tracing::warn!("restoring the terminal: {e}");
        }
        if let Some(previous) = self.previous_hook.take() {
            std::panic::set_hook(Box::new(move |info| previous(info)));
        }
    }
}

/// The real console: crossterm input, the guard for suspend/resume, real processes.
pub struct CrosstermConsole {
    restorer: Restorer,
    /// How `tui.notify: desktop` notifies here (decided once).
    notify: super::notify::Via,
}

impl CrosstermConsole {
    pub fn new(restorer: Restorer) -> Self {
        Self {
            restorer,
            notify: super::notify::choose(&super::notify::Env::current(find_in_path)),
        }
    }
}

fn find_in_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|p| p.is_file())
    })
}

fn exit_error(argv: &[String], status: std::process::ExitStatus, stderr: &[u8]) -> io::Error {
    let stderr = String::from_utf8_lossy(stderr);
    let detail = stderr.trim();
    io::Error::other(format!(
        "`{}` exited with {status}{}{detail}",
        argv.join(" "),
        if detail.is_empty() { "" } else { ": " }
    ))
}

impl Console for CrosstermConsole {
    fn input(&mut self) -> BoxStream<'static, io::Result<TermEvent>> {
        EventStream::new().boxed()
    }

    fn suspend(&mut self) -> io::Result<()> {
        self.restorer.restore()
    }

    fn resume(&mut self) -> io::Result<()> {
        self.restorer.enter()
    }

    fn run_foreground(&mut self, argv: Vec<String>) -> BoxFuture<'static, io::Result<()>> {
        Box::pin(async move {
            let (program, args) = argv
                .split_first()
                .ok_or_else(|| io::Error::other("empty command"))?;
            let mut command = tokio::process::Command::new(program);
            crate::secrets::ChildEnv::default().scrub(&mut command);
            let status = command.args(args).status().await?;
            if status.success() {
                Ok(())
            } else {
                Err(exit_error(&argv, status, b""))
            }
        })
    }

    fn run_background(&mut self, argv: Vec<String>) -> BoxFuture<'static, io::Result<()>> {
        Box::pin(async move {
            let (program, args) = argv
                .split_first()
                .ok_or_else(|| io::Error::other("empty command"))?;
            let mut command = tokio::process::Command::new(program);
            crate::secrets::ChildEnv::default().scrub(&mut command);
            let out = command.args(args).stdin(Stdio::null()).output().await?;
            if out.status.success() {
                Ok(())
            } else {
                Err(exit_error(&argv, out.status, &out.stderr))
            }
        })
    }

    fn bell(&mut self) {
        if let Err(e) = self.restorer.write_raw(b"\x07") {
            tracing::debug!("bell: {e}");
        }
    }

    fn desktop(&mut self, n: &Notification) {
        use super::notify::{self, Via};
        let argv = match &self.notify {
            Via::Bell => {
                self.bell();
                return;
            }
            Via::Escape(escape) => {
                let bytes = notify::escape_bytes(*escape, &n.title, &n.body);
                if let Err(e) = self.restorer.write_raw(&bytes) {
                    tracing::debug!("notification escape: {e}");
                }
                return;
            }
            via => notify::command(via, &n.title, &n.body).unwrap_or_default(),
        };
        let Some((program, args)) = argv.split_first() else {
            return;
        };
        // argv only; the child is reaped in the background and never blocks the screen.
        let mut command = tokio::process::Command::new(program);
        crate::secrets::ChildEnv::default().scrub(&mut command);
        let child = command
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        match child {
            Ok(mut child) => {
                tokio::spawn(async move {
                    let _ = child.wait().await;
                });
            }
            Err(e) => tracing::warn!("{program}: {e}"),
        }
    }
}
