//! The Events pane: what the supervisor decided, newest at the bottom —
//! `12:01:07 ✓ delivered #15 @alice`, `12:01:09 ⊘ unauthorized-actor #15 @mallory`.
//! `/` filters by plain text as you type; scrolling back holds the view still while new
//! events arrive, and the bottom edge says how many are newer.

use crate::tui::app::{App, Focus, Mode};
use crate::tui::event_rows::{EventRow, RowKind};
use crate::tui::text::{tiny_ref, truncate, truncate_ref, width};
use crate::tui::view::{framed, pane_block, render_empty};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

pub fn kind_style(app: &App, kind: RowKind) -> Style {
    let t = &app.theme;
    match kind {
        RowKind::Routed => t.ev_routed,
        RowKind::Dropped => t.ev_dropped,
        RowKind::Delivered => t.ev_delivered,
        RowKind::Failed => t.ev_failed,
        RowKind::Session => t.ev_session,
        RowKind::Question => t.ev_question,
        RowKind::Critic => t.ev_critic,
        RowKind::Note => t.ev_note,
        RowKind::Other => t.dim,
    }
}

fn row<'a>(app: &App, r: &'a EventRow, w: usize) -> Line<'a> {
    let t = &app.theme;
    let style = kind_style(app, r.kind);
    let time = if w >= 40 {
        r.time.as_str()
    } else if w >= 24 {
        r.time.get(..5).unwrap_or(&r.time)
    } else {
        ""
    };
    let mut spans = Vec::new();
    let mut used = 0;
    let mut push = |spans: &mut Vec<Span<'a>>, text: String, style: Style| {
        let room = w.saturating_sub(used);
        if room == 0 || text.is_empty() {
            return;
        }
        let shown = truncate(&text, room).into_owned();
        used += width(&shown);
        spans.push(Span::styled(shown, style));
    };
    if !time.is_empty() {
        push(&mut spans, format!("{time} "), t.time);
    }
    push(&mut spans, format!("{} ", r.glyph), style);
    push(&mut spans, r.verb.clone(), style);
    if let Some(item) = &r.item {
        let tiny = tiny_ref(item, app.single_repo());
        push(
            &mut spans,
            format!(" {}", truncate_ref(&tiny, 24)),
            t.accent,
        );
    }
    if !r.rest.is_empty() {
        let sep = if r.rest.starts_with(':') { "" } else { " " };
        push(&mut spans, format!("{sep}{}", r.rest), t.text);
    }
    Line::from(spans)
}

pub fn render(app: &App, frame: &mut Frame, area: Rect, single: bool) {
    let t = &app.theme;
    let (filter, typing) = match &app.mode {
        Mode::Filter { draft } => (draft.as_str(), true),
        _ => (app.filter.as_str(), false),
    };
    let needle = filter.to_lowercase();
    let matching = app.feed.count_matching(&needle);
    let mut title = vec![Span::raw("Events")];
    if !filter.is_empty() || typing {
        title.push(Span::styled(format!(" /{filter}"), t.accent));
        if typing {
            title.push(Span::styled("▏", t.accent));
        }
    }
    let count = if app.feed.is_empty() {
        None
    } else if needle.is_empty() {
        Some(matching.to_string())
    } else {
        Some(format!("{matching} of {}", app.feed.len()))
    };
    let mut block = pane_block(app, Focus::Events, title, count, single);
    let rows = area.height.saturating_sub(2) as usize;
    let scroll = app.events_scroll.min(matching.saturating_sub(rows));
    if scroll > 0 {
        block = block.title_bottom(
            Line::from(Span::styled(format!(" ↓ {scroll} newer "), t.dim)).right_aligned(),
        );
    }
    let Some(inner) = framed(frame, block, area) else {
        return;
    };
    if matching == 0 {
        let text = if app.loading && app.feed.is_empty() {
            "Loading…".to_string()
        } else if app.feed.is_empty() {
            "No events yet. Routing, deliveries and refusals show up here.".to_string()
        } else {
            format!("Nothing matches /{filter}")
        };
        render_empty(app, frame, inner, &text);
        return;
    }
    let height = inner.height as usize;
    let w = inner.width as usize;
    let mut lines: Vec<Line> = app
        .feed
        .newest_first(&needle)
        .skip(scroll)
        .take(height)
        .map(|r| row(app, r, w))
        .collect();
    lines.reverse();
    frame.render_widget(Paragraph::new(lines), inner);
}
