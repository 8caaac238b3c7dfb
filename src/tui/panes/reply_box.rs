//! The inline reply box (SPEC §11.2): docked under the panes, it shows the question being
//! answered, a multi-line editor (ratatui-textarea; pasting works), and its own keys. It
//! stays open while sending and keeps the text if the reply is refused, so nothing
//! typed is lost to a transient failure.

use crate::tui::app::{App, Mode};
use crate::tui::keymap::Group;
use crate::tui::text::{clean_line, short_ref, truncate};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Paragraph};

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let Mode::Reply(reply) = &app.mode else {
        return;
    };
    let t = &app.theme;
    let title = Line::from(vec![
        Span::styled(" Reply to ", t.title_focused),
        Span::styled(short_ref(&reply.work_item), t.accent.patch(t.title_focused)),
        Span::styled(" ", t.title_focused),
    ]);
    let hints = crate::tui::view::hint_spans(app, Group::Reply, t.hint);
    let state = if reply.sending {
        Some(Span::styled(" sending… ", t.spinner))
    } else {
        reply
            .error
            .as_ref()
            .map(|e| Span::styled(format!(" {} ", clean_line(e)), t.error))
    };
    let mut block = Block::default()
        .borders(Borders::ALL)
        .border_type(BorderType::Rounded)
        .border_style(t.border_focused)
        .title(title)
        .title_bottom(Line::from(hints));
    if let Some(state) = state {
        block = block.title_bottom(Line::from(state).right_aligned());
    }
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if inner.width == 0 || inner.height == 0 {
        return;
    }
    let mut text_area = inner;
    if let Some(q) = &reply.question
        && inner.height > 2
    {
        let q = truncate(&clean_line(q), inner.width.saturating_sub(2) as usize).into_owned();
        let line = Line::from(vec![Span::styled("? ", t.awaiting), Span::styled(q, t.dim)]);
        frame.render_widget(Paragraph::new(line), Rect { height: 1, ..inner });
        text_area.y += 1;
        text_area.height -= 1;
    }
    frame.render_widget(&reply.textarea, text_area);
}
