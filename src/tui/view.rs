//! Drawing the whole screen from `&App`. Each pane lives in its own module; this one
//! places them (via [`super::layout`]) and holds what they share: the pane frame, rows
//! that highlight when selected, and the visible window of a list.

use super::app::{App, Focus, Mode};
use super::layout::{self, Arrangement};
use super::panes::{confirm, critics, diff, events, footer, help, picker, preview, questions};
use super::panes::{reply_box, sessions, status_bar};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Clear, Paragraph, Wrap};

/// Draws a frame. Never mutates the app and never panics, whatever the size.
pub fn render(app: &App, frame: &mut Frame) {
    let area = frame.area();
    if area.width == 0 || area.height == 0 {
        return;
    }
    let layout = layout::compute(app, area);
    status_bar::render(app, frame, layout.status);
    for focus in Focus::ORDER {
        if let Some(rect) = layout.rect(focus).filter(|r| r.width > 0 && r.height > 0) {
            let single = layout.arrangement == Arrangement::Single;
            match focus {
                Focus::Sessions => sessions::render(app, frame, rect, single),
                Focus::Pane => preview::render(app, frame, rect, single),
                Focus::Questions => questions::render(app, frame, rect, single),
                Focus::Events => events::render(app, frame, rect, single),
                Focus::Critics => critics::render(app, frame, rect, single),
            }
        }
    }
    if let Some(rect) = layout.reply {
        reply_box::render(app, frame, rect);
    }
    footer::render(app, frame, layout.footer);
    match &app.mode {
        Mode::Help { scroll } => help::render(app, frame, area, *scroll),
        Mode::Picker { work_item, index } => picker::render(app, frame, area, work_item, *index),
        Mode::Output { run, scroll } => critics::render_output(app, frame, area, run, *scroll),
        Mode::Diff { work_item, scroll } => diff::render(app, frame, area, work_item, *scroll),
        Mode::Comment(cbox) => diff::render_comment(app, frame, area, cbox),
        Mode::Confirm(confirm) => confirm::render_confirm(app, frame, area, confirm),
        Mode::Normal | Mode::Reply(_) | Mode::Filter { .. } => {}
    }
}

/// Whether `focus` is the pane keys go to (not while a popup or the reply box has them).
pub fn is_focused(app: &App, focus: Focus) -> bool {
    app.focus == focus && matches!(app.mode, Mode::Normal | Mode::Filter { .. })
}

/// The frame around a pane: its title, a count, and the focus highlight. In the
/// single-pane arrangement the title also says which of the five panes this is.
pub fn pane_block<'a>(
    app: &App,
    focus: Focus,
    title: Vec<Span<'a>>,
    count: Option<String>,
    single: bool,
) -> Block<'a> {
    let focused = is_focused(app, focus);
    let t = &app.theme;
    let (border, title_style) = if focused {
        (t.border_focused, t.title_focused)
    } else {
        (t.border, t.title)
    };
    let mut spans = vec![Span::styled(" ", title_style)];
    spans.extend(title.into_iter().map(|s| {
        let style = title_style.patch(s.style);
        Span::styled(s.content, style)
    }));
    spans.push(Span::styled(" ", title_style));
    if let Some(count) = count {
        spans.push(Span::styled(format!("{count} "), t.dim));
    }
    let mut block = Block::default()
        .borders(Borders::ALL)
        .border_type(BorderType::Rounded)
        .border_style(border)
        .title(Line::from(spans));
    if single && app.area.width >= 40 {
        let pos = Focus::ORDER.iter().position(|f| *f == focus).unwrap_or(0) + 1;
        let key = app
            .keymap
            .key_label(focus.group(), super::keymap::Command::FocusNext)
            .unwrap_or_else(|| "tab".into());
        block = block.title_top(
            Line::from(vec![
                Span::styled(format!(" {pos}/5 "), t.dim),
                Span::styled(key, t.key),
                Span::styled(" next ", t.dim),
            ])
            .right_aligned(),
        );
    }
    block
}

/// The style of a list row: highlighted when selected, more so in the focused pane.
pub fn row_style(app: &App, focus: Focus, selected: bool) -> Style {
    match (selected, is_focused(app, focus)) {
        (false, _) => Style::default(),
        (true, true) => app.theme.selected,
        (true, false) => app.theme.selected_unfocused,
    }
}

/// The first row to show so `selected` stays visible in `height` rows.
pub fn window_start(selected: usize, len: usize, height: usize) -> usize {
    if height == 0 || len <= height {
        return 0;
    }
    selected.saturating_sub(height - 1).min(len - height)
}

/// A line padded with its style to the full width, so a selected row's highlight spans
/// the pane.
pub fn full_width(line: Line<'_>, width: u16, style: Style) -> Line<'_> {
    if style == Style::default() {
        return line; // nothing to paint past the text
    }
    let used = line.width();
    let mut line = line.style(style);
    if used < width as usize {
        line.spans
            .push(Span::raw(" ".repeat(width as usize - used)));
    }
    line
}

/// Spans cut to `max` columns; the cut one ends in `…`.
pub fn clip_spans(spans: Vec<Span<'_>>, max: usize) -> Vec<Span<'_>> {
    let mut out = Vec::new();
    let mut used = 0;
    for span in spans {
        let w = span.width();
        if used + w <= max {
            used += w;
            out.push(span);
            continue;
        }
        let room = max.saturating_sub(used);
        if room > 0 {
            let cut = super::text::truncate(&span.content, room).into_owned();
            out.push(Span::styled(cut, span.style));
        }
        break;
    }
    out
}

/// A popup's frame, cleared underneath.
pub fn popup_frame<'a>(app: &App, frame: &mut Frame, rect: Rect, title: Line<'a>) -> Block<'a> {
    frame.render_widget(Clear, rect);
    Block::default()
        .borders(Borders::ALL)
        .border_type(BorderType::Rounded)
        .border_style(app.theme.popup_border)
        .style(app.theme.popup)
        .title(title.style(app.theme.popup_title))
}

/// Draws a frame and returns the area inside it, or `None` when nothing fits inside.
pub fn framed(frame: &mut Frame, block: Block<'_>, area: Rect) -> Option<Rect> {
    let inner = block.inner(area);
    frame.render_widget(block, area);
    (inner.width > 0 && inner.height > 0).then_some(inner)
}

/// A dim, wrapped note in a pane with nothing to list: "No open questions…".
pub fn render_empty(app: &App, frame: &mut Frame, area: Rect, text: &str) {
    let line = Line::from(Span::styled(text.to_string(), app.theme.dim));
    frame.render_widget(Paragraph::new(line).wrap(Wrap { trim: true }), area);
}

/// A popup over long text (help, critic output): its keys on the bottom edge, the
/// position on the right, `lines` from `scroll` on.
pub fn scrolled_popup(
    app: &App,
    frame: &mut Frame,
    rect: Rect,
    title: Line<'_>,
    keys: super::keymap::Group,
    lines: Vec<Line<'_>>,
    scroll: usize,
) {
    let total = lines.len();
    let scroll = scroll.min(total.saturating_sub(1));
    let position = format!(" {}/{} ", scroll + 1, total);
    let block = popup_frame(app, frame, rect, title)
        .title_bottom(Line::from(hint_spans(app, keys, app.theme.popup)))
        .title_bottom(Line::from(Span::styled(position, app.theme.popup)).right_aligned());
    if let Some(inner) = framed(frame, block, rect) {
        let visible: Vec<Line> = lines
            .into_iter()
            .skip(scroll)
            .take(inner.height as usize)
            .collect();
        frame.render_widget(Paragraph::new(visible), inner);
    }
}

/// `key label` pairs for a popup's or box's bottom edge, from the keymap.
pub fn hint_spans(app: &App, group: super::keymap::Group, label: Style) -> Vec<Span<'static>> {
    app.keymap
        .hints(group)
        .into_iter()
        .filter(|h| h.command != super::keymap::Command::Diff || shipping(app))
        .flat_map(|h| {
            [
                Span::styled(format!(" {}", h.key), app.theme.key),
                Span::styled(format!(" {} ", h.label), label),
            ]
        })
        .collect()
}

/// The confirmation open is a ship's: its diff key applies.
pub fn shipping(app: &App) -> bool {
    matches!(&app.mode, super::app::Mode::Confirm(c) if matches!(c.request, super::action::Request::Ship { .. }))
}
