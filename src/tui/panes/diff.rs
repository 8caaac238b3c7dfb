//! The diff view (SPEC §16.4): a session's worktree against its base — the material a
//! critic reviews — coloured by line kind and scrollable. The text comes from the agent's
//! working tree, so every line is cleaned of control characters before it is drawn.

use crate::tui::app::App;
use crate::tui::keymap::Group;
use crate::tui::layout::centered;
use crate::tui::text::{clean_block, short_ref, width};
use crate::tui::view::scrolled_popup;
use crate::work_item::WorkItemRef;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

fn rect(area: Rect) -> Rect {
    let w = (area.width.saturating_mul(9) / 10).max(area.width.min(40));
    let h = (area.height.saturating_mul(9) / 10).max(area.height.min(8));
    centered(area, w, h)
}

/// The style of one diff line.
fn style_of(app: &App, line: &str, in_patch: bool) -> Style {
    let t = &app.theme;
    if !in_patch {
        return t.text;
    }
    if line.starts_with("diff --git") || line.starts_with("+++ ") || line.starts_with("--- ") {
        t.title_focused
    } else if line.starts_with("@@") {
        t.accent
    } else if line.starts_with('+') {
        t.ok
    } else if line.starts_with('-') {
        t.error
    } else if line.starts_with("index ")
        || line.starts_with("new file")
        || line.starts_with("deleted file")
    {
        t.dim
    } else {
        t.text
    }
}

/// The view's lines at `cols` columns (long lines are cut, not wrapped: a diff is read
/// by column).
fn lines(app: &App, cols: usize) -> Vec<Line<'static>> {
    let t = &app.theme;
    let text = match &app.diff {
        None => return vec![Line::from(Span::styled("Loading the diff…", t.dim))],
        Some(Err(e)) => {
            return vec![Line::from(Span::styled(
                format!("No diff: {}", crate::tui::text::clean_line(e)),
                t.error,
            ))];
        }
        Some(Ok(text)) => clean_block(text),
    };
    let mut in_patch = false;
    text.split('\n')
        .map(|raw| {
            if raw.starts_with("diff --git") {
                in_patch = true;
            }
            let style = style_of(app, raw, in_patch);
            let shown = if width(raw) > cols {
                crate::tui::text::truncate(raw, cols).into_owned()
            } else {
                raw.to_string()
            };
            Line::from(Span::styled(shown, style))
        })
        .collect()
}

/// How many lines the open view has (for scrolling limits).
pub fn line_count(app: &App) -> usize {
    let r = rect(app.area);
    lines(app, r.width.saturating_sub(2) as usize).len()
}

pub fn render(app: &App, frame: &mut Frame, area: Rect, item: &WorkItemRef, scroll: u16) {
    let r = rect(area);
    let body = lines(app, r.width.saturating_sub(2) as usize);
    let branch = app
        .session_for(item)
        .and_then(|s| s.workspace.as_ref())
        .map(|w| format!(" · {}", crate::tui::text::clean_line(&w.branch)))
        .unwrap_or_default();
    let title = Line::from(format!(" Diff · {}{branch} ", short_ref(item)));
    scrolled_popup(app, frame, r, title, Group::Diff, body, scroll as usize);
}
