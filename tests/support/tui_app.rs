//! Shared helpers: a fixed clock, apps built from the sample data, drawing into a
//! `TestBackend`, and a compact dump of a buffer's styles for theme snapshots.

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};
use the_loop::tui::action::{Action, Effect};
use the_loop::tui::app::{App, AppSettings};
use the_loop::tui::backend::Snapshot;
use the_loop::tui::sample;
use the_loop::tui::update::update;
use the_loop::tui::view;
use time::OffsetDateTime;
use time::macros::datetime;

pub const NOW: OffsetDateTime = datetime!(2026-01-31 12:05:00 UTC);

/// The fixed clock for the event loop.
pub fn now() -> OffsetDateTime {
    NOW
}

pub fn settings() -> AppSettings {
    AppSettings::builtin()
}

/// An app that has received `snapshot` and the sample history, sized `w`×`h`.
pub fn app_with(snapshot: Snapshot, w: u16, h: u16) -> App {
    app_from(settings(), snapshot, w, h)
}

pub fn app_from(settings: AppSettings, snapshot: Snapshot, w: u16, h: u16) -> App {
    let mut app = App::new(settings, NOW);
    send(
        &mut app,
        Action::Resize {
            width: w,
            height: h,
        },
    );
    send(&mut app, Action::History(sample::history(NOW)));
    send(&mut app, Action::Snapshot(Box::new(snapshot)));
    app
}

/// The sketch's screen with the sample pane captured.
pub fn sample_app(w: u16, h: u16) -> App {
    let mut app = app_with(sample::snapshot(NOW), w, h);
    capture(&mut app);
    app
}

pub fn capture(app: &mut App) {
    if let Some(target) = app.preview_target().map(|s| s.work_item.clone()) {
        send(
            app,
            Action::Captured {
                work_item: target,
                result: Ok(sample::capture()),
            },
        );
    }
}

pub fn send(app: &mut App, action: Action) -> Vec<Effect> {
    update(app, action)
}

pub fn draw(app: &App) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(app.area.width, app.area.height)).unwrap();
    terminal.draw(|f| view::render(app, f)).unwrap();
    terminal
}

/// The screen as text, one quoted line per row (trailing spaces visible).
pub fn screen(app: &App) -> String {
    draw(app).backend().to_string()
}

pub fn buffer(app: &App) -> Buffer {
    draw(app).backend().buffer().clone()
}

fn color(c: Option<Color>) -> String {
    match c {
        None | Some(Color::Reset) => "-".into(),
        Some(Color::Indexed(i)) => i.to_string(),
        Some(c) => format!("{c:?}").to_lowercase(),
    }
}

fn mods(m: Modifier) -> String {
    let mut out = String::new();
    for (flag, ch) in [
        (Modifier::BOLD, 'b'),
        (Modifier::DIM, 'd'),
        (Modifier::ITALIC, 'i'),
        (Modifier::UNDERLINED, 'u'),
        (Modifier::REVERSED, 'r'),
    ] {
        if m.contains(flag) {
            out.push(ch);
        }
    }
    out
}

/// Each row as runs of equal style: `x..x fg/bg/mods`. Compact enough to review, and
/// any theme change shows up as a diff.
pub fn styles(buf: &Buffer) -> String {
    let mut out = String::new();
    for y in 0..buf.area.height {
        let mut runs: Vec<(u16, u16, String)> = Vec::new();
        for x in 0..buf.area.width {
            let cell = &buf[(x, y)];
            let style = format!(
                "{}/{}/{}",
                color(Some(cell.fg)),
                color(Some(cell.bg)),
                mods(cell.modifier)
            );
            match runs.last_mut() {
                Some((_, end, s)) if *s == style => *end = x,
                _ => runs.push((x, x, style)),
            }
        }
        let line: Vec<String> = runs
            .into_iter()
            .filter(|(_, _, s)| s != "-/-/")
            .map(|(a, b, s)| format!("{a}-{b} {s}"))
            .collect();
        out.push_str(&format!("{y:2}: {}\n", line.join("  ")));
    }
    out
}

/// The style of the first cell whose symbol starts `text` on row `y`.
pub fn find(buf: &Buffer, text: &str) -> Option<(u16, u16)> {
    for y in 0..buf.area.height {
        let row: String = (0..buf.area.width)
            .map(|x| buf[(x, y)].symbol().to_string())
            .collect();
        if let Some(byte) = row.find(text) {
            let col = row[..byte].chars().count() as u16;
            return Some((col, y));
        }
    }
    None
}

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Presses keys written in the keymap notation: `j`, `enter`, `ctrl-s`.
pub fn keys(app: &mut App, specs: &[&str]) -> Vec<Effect> {
    let mut out = Vec::new();
    for spec in specs {
        let k = the_loop::tui::keys::Key::parse(spec).unwrap();
        out.extend(send(app, Action::Key(KeyEvent::new(k.code, k.mods))));
    }
    out
}

/// Types text into whatever has the keyboard, one key per character.
pub fn type_text(app: &mut App, text: &str) -> Vec<Effect> {
    let mut out = Vec::new();
    for c in text.chars() {
        let code = if c == '\n' {
            KeyCode::Enter
        } else {
            KeyCode::Char(c)
        };
        out.extend(send(
            app,
            Action::Key(KeyEvent::new(code, KeyModifiers::NONE)),
        ));
    }
    out
}

/// Asserts a snapshot stored under `tests/snapshots/`.
pub fn snap(name: &str, content: String) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("../snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!(name, content));
}
