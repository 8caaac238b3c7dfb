//! The terminal guard: restore runs on an error, from the panic hook, and exactly once;
//! suspend/resume bracket an attach. Checked through an injected writer and raw-mode
//! switch, so nothing touches the real terminal.

use super::event_loop::{Rig, settings_fixed_clock};
use crate::support::tui_app::*;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::io::{self, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use the_loop::tui::app::App;
use the_loop::tui::backend::Snapshot;
use the_loop::tui::run::{event_loop, guarded};
use the_loop::tui::terminal::{RawMode, Restorer, TerminalGuard};

/// Panic hooks are process-wide: tests that install one take turns.
static HOOK: Mutex<()> = Mutex::new(());

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Capture {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
    fn clear(&self) {
        self.0.lock().unwrap().clear();
    }
}

#[derive(Clone, Default)]
struct Raw {
    on: Arc<AtomicUsize>,
    off: Arc<AtomicUsize>,
}

impl RawMode for Raw {
    fn enable(&self) -> io::Result<()> {
        self.on.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    fn disable(&self) -> io::Result<()> {
        self.off.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

fn restorer() -> (Restorer, Capture, Raw) {
    let out = Capture::default();
    let raw = Raw::default();
    (
        Restorer::new(Box::new(out.clone()), Box::new(raw.clone())),
        out,
        raw,
    )
}

const LEAVE_ALT: &str = "\u{1b}[?1049l";
const ENTER_ALT: &str = "\u{1b}[?1049h";
const PASTE_OFF: &str = "\u{1b}[?2004l";
const PASTE_ON: &str = "\u{1b}[?2004h";
const SHOW_CURSOR: &str = "\u{1b}[?25h";
const MOUSE_OFF: &str = "\u{1b}[?1000l";

fn assert_restored(out: &str) {
    for (seq, what) in [
        (LEAVE_ALT, "leave the alternate screen"),
        (PASTE_OFF, "bracketed paste off"),
        (SHOW_CURSOR, "cursor shown"),
        (MOUSE_OFF, "mouse reporting off"),
    ] {
        assert!(out.contains(seq), "did not {what}: {out:?}");
    }
}

/// Runs a future on a fresh runtime while holding the panic-hook turn.
fn with_hook_turn<T>(paused: bool, f: impl Future<Output = T>) -> T {
    let _turn = HOOK.lock().unwrap_or_else(|e| e.into_inner());
    let mut rt = tokio::runtime::Builder::new_current_thread();
    rt.enable_all();
    if paused {
        rt.start_paused(true);
    }
    rt.build().unwrap().block_on(f)
}

#[test]
fn an_error_restores_the_terminal() {
    let (r, out, raw) = restorer();
    let result: anyhow::Result<()> = with_hook_turn(
        false,
        guarded(r.clone(), async {
            assert!(out.text().contains(ENTER_ALT) && out.text().contains(PASTE_ON));
            out.clear();
            Err(anyhow::anyhow!("boom"))
        }),
    );
    assert_eq!(result.unwrap_err().to_string(), "boom");
    assert_restored(&out.text());
    assert_eq!(
        (
            raw.on.load(Ordering::SeqCst),
            raw.off.load(Ordering::SeqCst)
        ),
        (1, 1)
    );
    assert_eq!(r.restores(), 1);
    assert!(!r.is_entered());
}

#[test]
fn a_failing_event_loop_leaves_through_the_guard() {
    let (r, out, raw) = restorer();
    let (rig, mut console) = Rig::new(Snapshot::default());
    let mut app = App::new(settings(), NOW);
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    let backend: Arc<dyn the_loop::tui::backend::Backend> = rig.backend.clone();
    rig.keys.send(Err(io::Error::other("tty gone"))).unwrap();
    let result = with_hook_turn(
        true,
        guarded(
            r.clone(),
            event_loop(
                &mut terminal,
                &mut app,
                backend,
                &mut console,
                settings_fixed_clock(),
            ),
        ),
    );
    assert!(result.is_err());
    assert_restored(&out.text());
    assert_eq!(raw.off.load(Ordering::SeqCst), 1);
}

#[test]
fn a_panic_restores_before_the_message_and_only_once() {
    let _hook = HOOK.lock().unwrap_or_else(|e| e.into_inner());
    let (r, out, raw) = restorer();
    let guard = TerminalGuard::enter(r.clone()).unwrap();
    out.clear();
    let panicked = std::panic::catch_unwind(|| panic!("render bug"));
    assert!(panicked.is_err());
    // The hook restored the terminal while the panic was being reported.
    assert_restored(&out.text());
    assert_eq!(raw.off.load(Ordering::SeqCst), 1);
    assert_eq!(r.restores(), 1);
    out.clear();
    drop(guard);
    assert_eq!(r.restores(), 1, "the guard does not restore twice");
    assert_eq!(out.text(), "");

    // The guard took its hook with it: a later panic leaves this terminal alone.
    r.enter().unwrap();
    let _ = std::panic::catch_unwind(|| panic!("unrelated"));
    assert!(r.is_entered());
    r.restore().unwrap();
}

#[test]
fn suspend_and_resume_hand_the_terminal_over_and_back() {
    let _hook = HOOK.lock().unwrap_or_else(|e| e.into_inner());
    let (r, out, raw) = restorer();
    let guard = TerminalGuard::enter(r.clone()).unwrap();
    out.clear();
    r.restore().unwrap(); // suspend
    assert_restored(&out.text());
    out.clear();
    r.enter().unwrap(); // resume
    assert!(out.text().contains(ENTER_ALT) && out.text().contains(PASTE_ON));
    drop(guard);
    assert_eq!(raw.on.load(Ordering::SeqCst), 2);
    assert_eq!(raw.off.load(Ordering::SeqCst), 2);
    assert_eq!(r.restores(), 2);
}

const MOUSE_ON: &str = "\u{1b}[?1000h\u{1b}[?1006h";
/// Reporting every pointer motion: never asked for (it would wake the loop for nothing).
const MOTION_ON: &str = "\u{1b}[?1003h";

/// `tui.mouse` (SPEC §21.1): reporting on with every enter — the start and the resume
/// after an attach — and off with every restore: the suspend before an attach, a panic,
/// the exit.
#[test]
fn mouse_reporting_is_on_only_while_the_screen_is_taken() {
    let _hook = HOOK.lock().unwrap_or_else(|e| e.into_inner());
    let (r, out, _raw) = restorer();
    let r = r.with_mouse(true);
    let guard = TerminalGuard::enter(r.clone()).unwrap();
    assert!(out.text().contains(MOUSE_ON), "{:?}", out.text());
    assert!(!out.text().contains(MOTION_ON), "{:?}", out.text());
    out.clear();
    r.restore().unwrap(); // suspend for an attach
    assert!(out.text().contains(MOUSE_OFF), "{:?}", out.text());
    assert!(!out.text().contains(MOUSE_ON));
    out.clear();
    r.enter().unwrap(); // resume
    assert!(out.text().contains(MOUSE_ON), "{:?}", out.text());
    out.clear();
    let panicked = std::panic::catch_unwind(|| panic!("render bug"));
    assert!(panicked.is_err());
    assert!(out.text().contains(MOUSE_OFF), "{:?}", out.text());
    drop(guard);
}

#[test]
fn with_tui_mouse_false_reporting_is_never_turned_on() {
    let _hook = HOOK.lock().unwrap_or_else(|e| e.into_inner());
    let (r, out, _raw) = restorer();
    let r = r.with_mouse(false);
    let guard = TerminalGuard::enter(r.clone()).unwrap();
    r.restore().unwrap();
    r.enter().unwrap();
    drop(guard);
    let text = out.text();
    assert!(!text.contains("\u{1b}[?1000h"), "{text:?}");
    assert!(!text.contains("\u{1b}[?1006h"), "{text:?}");
    assert_restored(&text);
}
