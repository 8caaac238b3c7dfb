//! The mouse (SPEC §21.1): what is under the pointer, and what a click or the wheel does
//! there. Where things are comes from the same functions the renderer draws with — the
//! layout, each pane's visible window, the footer's placed hints — so a click lands on
//! what the operator sees. What a click does goes through the paths keys take: a footer
//! hint presses its key; a double click runs the pane's reply or open command.
//!
//! - The wheel moves the list under the pointer by one row (the Events pane by three),
//!   focused or not; while a popup is open (help, diff, critic output, picker) it
//!   scrolls the popup wherever the pointer is, as keys do.
//! - A left press focuses the pane under it and selects the row under it; on a footer
//!   hint it runs the hint; in the critic picker it selects the critic.
//! - A second press on the same row within [`DOUBLE_CLICK`] is a double click: on a
//!   Sessions or Questions row it opens the reply box, on a Critics row the run's output,
//!   in the picker it runs the critic.
//! - Everything else (releases, drags, other buttons, a press outside every target, or
//!   any mouse input while `tui.mouse` is off) does nothing and draws nothing.

use super::action::Effect;
use super::app::{App, Focus, Mode};
use super::commands;
use super::keymap::{Command, Hint};
use super::panes::{critics, footer, picker, questions, sessions};
use crossterm::event::{KeyEvent, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};
use ratatui::widgets::Block;
use std::time::{Duration, Instant};

/// Two presses on the same row this close together are a double click: about what
/// desktops default to (400–500 ms), short enough that two deliberate single clicks
/// rarely merge.
pub const DOUBLE_CLICK: Duration = Duration::from_millis(400);

/// Lines a wheel notch scrolls a popup's text or the Events pane.
const WHEEL_LINES: usize = 3;

/// What a screen cell shows, for the mouse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A footer hint: a click presses its key.
    Hint(Hint),
    /// A pane of the grid, and the row of its list under the pointer, if any.
    Pane { pane: Focus, row: Option<usize> },
    /// A critic listed in the picker.
    Critic(usize),
    /// Nothing a click acts on: the status bar, the reply box, a popup's text, a gap.
    Nothing,
}

/// The last press, to tell a double click.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Click {
    at: Instant,
    cell: (u16, u16),
    target: Target,
}

/// What is drawn at column `x`, row `y` (0-based) of the screen, as the last frame
/// showed it. Never panics: a position off the screen is [`Target::Nothing`].
pub fn target_at(app: &App, x: u16, y: u16) -> Target {
    let at = Position::new(x, y);
    if !app.area.contains(at) {
        return Target::Nothing;
    }
    let layout = app.layout();
    if layout.footer.contains(at) {
        let hint = footer::hint_at(app, layout.footer.width as usize, x - layout.footer.x);
        return hint.map_or(Target::Nothing, Target::Hint);
    }
    match &app.mode {
        Mode::Picker { index, .. } => {
            return picker::critic_at(app, app.area, *index, x, y)
                .map_or(Target::Nothing, Target::Critic);
        }
        // A popup covers the panes.
        Mode::Help { .. }
        | Mode::Output { .. }
        | Mode::Diff { .. }
        | Mode::Comment(_)
        | Mode::Confirm(_) => {
            return Target::Nothing;
        }
        Mode::Normal | Mode::Reply(_) | Mode::Filter { .. } => {}
    }
    for pane in Focus::ORDER {
        let Some(rect) = layout.rect(pane).filter(|r| r.contains(at)) else {
            continue;
        };
        let row = row_at(app, pane, Block::bordered().inner(rect), at);
        return Target::Pane { pane, row };
    }
    Target::Nothing
}

/// The list row of `pane` at `at`, from the pane's own drawing window.
fn row_at(app: &App, pane: Focus, inner: Rect, at: Position) -> Option<usize> {
    if !inner.contains(at) {
        return None; // the frame
    }
    let dy = at.y - inner.y;
    match pane {
        Focus::Sessions => sessions::row_at(app, inner, dy),
        Focus::Questions => questions::item_at(app, inner, dy),
        Focus::Critics => critics::row_at(app, inner, dy),
        // The preview and the event feed have no selection.
        Focus::Pane | Focus::Events => None,
    }
}

pub(super) fn on_mouse(app: &mut App, event: MouseEvent, at: Instant, fx: &mut Vec<Effect>) {
    if !app.mouse {
        return;
    }
    match event.kind {
        MouseEventKind::ScrollDown => wheel(app, event, true, fx),
        MouseEventKind::ScrollUp => wheel(app, event, false, fx),
        MouseEventKind::Down(MouseButton::Left) => click(app, event, at, fx),
        _ => {}
    }
}

fn wheel(app: &mut App, event: MouseEvent, down: bool, fx: &mut Vec<Effect>) {
    let command = if down { Command::Down } else { Command::Up };
    match app.mode {
        // The diff view scrolls under a selection that stays where it is.
        Mode::Diff { .. } => {
            let rows = WHEEL_LINES as isize;
            super::review::scroll_by(app, if down { rows } else { -rows });
        }
        Mode::Help { .. } | Mode::Output { .. } => {
            for _ in 0..WHEEL_LINES {
                commands::run(app, command, fx);
            }
        }
        Mode::Picker { .. } => commands::run(app, command, fx),
        Mode::Normal => match target_at(app, event.column, event.row) {
            // The preview shows the agent's newest lines; it has no scroll.
            Target::Pane { pane, .. } if pane != Focus::Pane => {
                let rows = if pane == Focus::Events {
                    WHEEL_LINES
                } else {
                    1
                } as isize;
                commands::move_in(app, pane, if down { rows } else { -rows }, fx);
                app.dirty = true;
            }
            _ => {}
        },
        // The reply box, the filter line and a confirmation have nothing to scroll.
        Mode::Reply(_) | Mode::Filter { .. } | Mode::Confirm(_) | Mode::Comment(_) => {}
    }
}

fn click(app: &mut App, event: MouseEvent, at: Instant, fx: &mut Vec<Effect>) {
    let cell = (event.column, event.row);
    // A click on a row of the diff view selects its line (SPEC §21.2).
    if matches!(app.mode, Mode::Diff { .. }) {
        let body = super::panes::diff::body_rect(app.area);
        if body.contains(Position::new(cell.0, cell.1)) {
            super::review::select_row(app, cell.1 - body.y);
            return;
        }
    }
    let target = target_at(app, cell.0, cell.1);
    // The second press of a double click may find another row under the same cell (a
    // selected question takes more lines): it is the first press's row that was meant.
    let first = app.last_click.take().filter(|last| {
        at.saturating_duration_since(last.at) <= DOUBLE_CLICK
            && (last.target == target || last.cell == cell)
    });
    match (first.map(|last| last.target), target) {
        // Hints are buttons: every press runs one.
        (_, Target::Hint(hint)) => {
            let key = KeyEvent::new(hint.on.code, hint.on.mods);
            super::update::on_key(app, key, fx);
        }
        // A double click is used up: a third press starts over.
        (Some(Target::Pane { pane, row: Some(_) }), _) if matches!(app.mode, Mode::Normal) => {
            match pane {
                Focus::Sessions | Focus::Questions => commands::run(app, Command::Reply, fx),
                Focus::Critics => commands::run(app, Command::Open, fx),
                Focus::Pane | Focus::Events => {}
            }
        }
        (Some(Target::Critic(_)), _) if matches!(app.mode, Mode::Picker { .. }) => {
            commands::run(app, Command::Select, fx);
        }
        (_, target) => {
            single(app, &target, fx);
            app.last_click = Some(Click { at, cell, target });
        }
    }
}

fn single(app: &mut App, target: &Target, fx: &mut Vec<Effect>) {
    match *target {
        Target::Critic(i) => {
            if let Mode::Picker { index, .. } = &mut app.mode {
                *index = i;
                app.dirty = true;
            }
        }
        // Panes take clicks only while they have the keyboard's attention: the reply
        // box and the filter line keep it until they are closed.
        Target::Pane { pane, row } if matches!(app.mode, Mode::Normal) => {
            if app.focus != pane {
                commands::focus(app, pane, fx);
                app.dirty = true;
            }
            if let Some(row) = row {
                select(app, pane, row, fx);
            }
        }
        Target::Hint(_) | Target::Pane { .. } | Target::Nothing => {}
    }
}

/// What the mouse does, for the help popup: (gesture, effect).
pub const HELP: [(&str, &str); 4] = [
    ("wheel", "Scroll what is under the pointer"),
    ("click", "Focus a pane, select a row, run a footer hint"),
    ("double-click", "Reply on a session or question; open a run"),
    ("shift-drag", "Select text (the terminal's own selection)"),
];

/// Selects `row` of `pane`; a click on the row already selected changes nothing.
fn select(app: &mut App, pane: Focus, row: usize, fx: &mut Vec<Effect>) {
    match pane {
        Focus::Sessions if row != app.session_index => {
            app.session_index = row;
            commands::selection_changed(app, fx);
        }
        Focus::Questions if row != app.question_index => app.question_index = row,
        Focus::Critics => match critics::rows(app).get(row) {
            Some(to) if (to.run, to.finding) != (app.run_index, app.finding_index) => {
                app.run_index = to.run;
                app.finding_index = to.finding;
            }
            _ => return,
        },
        _ => return,
    }
    app.dirty = true;
}
