//! The confirmation popup, asked before something that cannot be undone (stopping a
//! session).

use crate::tui::app::{App, Confirm};
use crate::tui::keymap::Group;
use crate::tui::layout::centered;
use crate::tui::text::wrap;
use crate::tui::view::popup_frame;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

pub fn render_confirm(app: &App, frame: &mut Frame, area: Rect, confirm: &Confirm) {
    let t = &app.theme;
    let w: u16 = 56;
    let inner_w = w.saturating_sub(4) as usize;
    let mut lines: Vec<Line> = wrap(&confirm.prompt, inner_w)
        .into_iter()
        .map(|l| Line::from(Span::styled(l, t.text.patch(t.popup))))
        .collect();
    lines.extend(
        wrap(&confirm.detail, inner_w)
            .into_iter()
            .map(|l| Line::from(Span::styled(l, t.dim.patch(t.popup)))),
    );
    let hints: Vec<Span> = crate::tui::view::hint_spans(app, Group::Confirm, t.popup);
    let rows = u16::try_from(lines.len()).unwrap_or(u16::MAX);
    let rect = centered(area, w, rows.saturating_add(4));
    let block = popup_frame(app, frame, rect, Line::from(" Are you sure? "))
        .title_bottom(Line::from(hints).right_aligned());
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let padded = Rect {
        x: inner.x.saturating_add(1).min(inner.right()),
        y: inner.y.saturating_add(1).min(inner.bottom()),
        width: inner.width.saturating_sub(2),
        height: inner.height.saturating_sub(1),
    };
    frame.render_widget(Paragraph::new(lines), padded);
}
