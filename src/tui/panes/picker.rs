//! The critic picker: the configured critics for the selected work item; ones that
//! cannot run are listed dimmed with the reason, so a misconfiguration is visible right
//! where the operator reaches for it.

use crate::tui::app::App;
use crate::tui::keymap::Group;
use crate::tui::layout::centered;
use crate::tui::text::{clean_line, fit, short_ref, truncate, width};
use crate::tui::view::{full_width, popup_frame, window_start};
use crate::work_item::WorkItemRef;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

pub fn render(app: &App, frame: &mut Frame, area: Rect, work_item: &WorkItemRef, index: usize) {
    let t = &app.theme;
    let name_w = app
        .critics
        .iter()
        .map(|c| width(&c.name))
        .max()
        .unwrap_or(0)
        .min(24);
    let rect = rect(app, area);
    let title = Line::from(format!(" Run a critic on {} ", short_ref(work_item)));
    let hints: Vec<Span> = crate::tui::view::hint_spans(app, Group::Picker, t.popup);
    let block = popup_frame(app, frame, rect, title).title_bottom(Line::from(hints));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    if inner.height == 0 || inner.width == 0 {
        return;
    }
    let w = inner.width as usize;
    let mut lines = vec![Line::from(Span::styled(
        truncate(
            "Reviews the session's working-tree diff, in the background.",
            w,
        )
        .into_owned(),
        t.dim,
    ))];
    let (start, height) = window(app, inner, index);
    for (i, c) in app.critics.iter().enumerate().skip(start).take(height) {
        let selected = i == index;
        let marker = if selected { "▸ " } else { "  " };
        let detail = match &c.problem {
            Some(p) => format!("cannot run: {}", clean_line(p)),
            None => {
                let harness = c.harness.as_deref().unwrap_or("command");
                let model = c.model.as_deref().unwrap_or("default");
                format!("{harness}/{model}")
            }
        };
        let name_style = if c.problem.is_some() { t.dim } else { t.text };
        let detail_style = if c.problem.is_some() { t.warn } else { t.dim };
        let detail_w = w.saturating_sub(2 + name_w + 2);
        let line = Line::from(vec![
            Span::styled(marker, t.accent),
            Span::styled(fit(&clean_line(&c.name), name_w), name_style),
            Span::raw("  "),
            Span::styled(truncate(&detail, detail_w).into_owned(), detail_style),
        ]);
        let style = if selected { t.selected } else { t.popup };
        lines.push(full_width(line, inner.width, style));
    }
    frame.render_widget(Paragraph::new(lines).style(t.popup), inner);
}

fn rect(app: &App, area: Rect) -> Rect {
    let rows = u16::try_from(app.critics.len()).unwrap_or(u16::MAX);
    centered(area, 64, rows.saturating_add(4))
}

/// The first critic listed and how many rows list critics (under the one-line note).
fn window(app: &App, inner: Rect, index: usize) -> (usize, usize) {
    let height = (inner.height as usize).saturating_sub(1);
    (window_start(index, app.critics.len(), height), height)
}

/// The critic listed at (`x`, `y`) of the screen, as the last frame showed it.
pub fn critic_at(app: &App, area: Rect, index: usize, x: u16, y: u16) -> Option<usize> {
    let inner = ratatui::widgets::Block::bordered().inner(rect(app, area));
    let (start, height) = window(app, inner, index);
    let inside = x >= inner.x && x < inner.right() && y > inner.y && y < inner.bottom();
    let row = usize::from(y.checked_sub(inner.y + 1)?);
    (inside && row < height)
        .then_some(start + row)
        .filter(|i| *i < app.critics.len())
}
