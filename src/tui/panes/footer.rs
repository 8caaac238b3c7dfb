//! The bottom line: the result of the last action (for a few seconds), then the keys
//! that matter in the focused pane or mode, read from the keymap. The hints invite the
//! next step: with a question waiting the reply key reads "answer #18", and before any
//! critic has run the critic key reads "run a critic". Approve and deny show only
//! where a permission dialog is selected; on a ship request the approve key reads
//! "ship".

use crate::tui::app::{App, Focus, MessageLevel, Mode};
use crate::tui::keymap::{Command, Hint};
use crate::tui::text::{clean_line, tiny_ref, truncate, truncate_ref, width};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

const SEP: &str = " · ";

/// The hints for the current mode and focus, with the inviting labels applied.
pub fn hints(app: &App) -> Vec<Hint> {
    let group = app.key_group();
    let mut hints = app.keymap.hints(group);
    if matches!(app.mode, Mode::Confirm(_)) && !crate::tui::view::shipping(app) {
        // The diff key of a confirmation is a ship's.
        hints.retain(|h| h.command != Command::Diff);
    }
    if !matches!(app.mode, Mode::Normal) {
        return hints;
    }
    let answering = match app.focus {
        Focus::Questions => app.selected_question().map(|q| q.work_item.clone()),
        _ => app
            .selected_session()
            .filter(|s| app.question_for(&s.work_item).is_some())
            .map(|s| s.work_item.clone()),
    };
    for h in &mut hints {
        match h.command {
            Command::Reply => {
                if let Some(item) = &answering {
                    let tiny = tiny_ref(item, app.single_repo());
                    h.label = format!("answer {}", truncate_ref(&tiny, 16));
                }
            }
            Command::Critic if app.runs.is_empty() && !app.critics.is_empty() => {
                h.label = "run a critic".into();
            }
            _ => {}
        }
    }
    // Approve and deny are offered only where a permission dialog is selected.
    let dialog = match app.focus {
        Focus::Questions => app.selected_permission().is_some(),
        _ => app
            .selected_session()
            .is_some_and(|s| app.permission_for(&s.work_item).is_some()),
    };
    // On a ship request the approve key ships it (after asking).
    let ship = app.focus == Focus::Questions && app.selected_ship().is_some();
    if ship {
        hints.retain(|h| h.command != Command::Deny);
        for h in hints.iter_mut().filter(|h| h.command == Command::Approve) {
            h.label = "ship".into();
        }
    } else if !dialog {
        hints.retain(|h| !matches!(h.command, Command::Approve | Command::Deny));
    }
    // Questions waiting elsewhere: offer the way to them first.
    let waiting = app.waiting_len();
    if waiting > 0
        && app.focus != Focus::Questions
        && answering.is_none()
        && let Some(on) = app.keymap.key_for(group, Command::FocusQuestions)
    {
        hints.insert(
            0,
            Hint {
                command: Command::FocusQuestions,
                on,
                key: on.to_string(),
                label: match (waiting, app.permissions.is_empty() && app.ships.is_empty()) {
                    (1, true) => "see the waiting question".into(),
                    (n, true) => format!("see {n} waiting questions"),
                    (1, false) => "see the waiting permission request".into(),
                    (n, false) => format!("see {n} waiting for you"),
                },
            },
        );
    }
    if app.focus == Focus::Events && !app.filter.is_empty() {
        hints.retain(|h| h.command != Command::Filter);
    } else if app.filter.is_empty() {
        hints.retain(|h| h.command != Command::ClearFilter);
    }
    hints
}

/// A hint as drawn: its columns from the footer's left edge, for a click to find it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    pub x: u16,
    pub width: u16,
    pub hint: Hint,
}

/// The footer line at `avail` columns and where each hint shown on it sits. The one
/// source for both drawing and clicking, so a click runs the hint under it.
pub fn placed(app: &App, avail: usize) -> (Line<'static>, Vec<Placed>) {
    let t = &app.theme;
    let mut spans = vec![Span::raw(" ")];
    let mut used = 1;
    let mut shown = Vec::new();
    if app.message_visible()
        && let Some(m) = &app.message
    {
        let (glyph, style) = match m.level {
            MessageLevel::Info => ("•", t.accent),
            MessageLevel::Ok => ("✓", t.ok),
            MessageLevel::Warn => ("▲", t.warn),
            MessageLevel::Error => ("✗", t.error),
        };
        let text = truncate(
            &format!("{glyph} {}", clean_line(&m.text)),
            avail.saturating_sub(used),
        )
        .into_owned();
        used += width(&text);
        spans.push(Span::styled(text, style));
        spans.push(Span::styled("  │ ", t.dim));
        used += 4;
    }
    if let Mode::Filter { .. } = app.mode {
        let text = "type to filter · ";
        if used + width(text) < avail {
            spans.push(Span::styled(text, t.hint));
            used += width(text);
        }
    }
    for h in hints(app) {
        let sep = if shown.is_empty() { 0 } else { width(SEP) };
        let need = sep + width(&h.key) + 1 + width(&h.label);
        if used + need > avail {
            continue;
        }
        if !shown.is_empty() {
            spans.push(Span::styled(SEP, t.dim));
        }
        let at = |n: usize| u16::try_from(n).unwrap_or(u16::MAX);
        shown.push(Placed {
            x: at(used + sep),
            width: at(need - sep),
            hint: h.clone(),
        });
        spans.push(Span::styled(h.key, t.key));
        spans.push(Span::styled(format!(" {}", h.label), t.hint));
        used += need;
    }
    (Line::from(spans), shown)
}

/// The hint drawn at column `x` of a footer `avail` columns wide.
pub fn hint_at(app: &App, avail: usize, x: u16) -> Option<Hint> {
    placed(app, avail)
        .1
        .into_iter()
        .find(|p| x >= p.x && x < p.x.saturating_add(p.width))
        .map(|p| p.hint)
}

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    if area.height == 0 || area.width == 0 {
        return;
    }
    let (line, _) = placed(app, area.width as usize);
    frame.render_widget(Paragraph::new(line), area);
}
