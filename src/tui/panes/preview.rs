//! The Pane preview: the selected session's tmux pane, in color. The capture is parsed
//! once when it arrives (in `update`), not on every frame; trailing blank lines are
//! dropped and the bottom is shown, where an agent's prompt and latest output are.

use super::sessions::state_style;
use crate::tui::app::{App, Focus};
use crate::tui::backend::SessionState;
use crate::tui::keymap::{Command, Group};
use crate::tui::text::{clean_line, short_ref, truncate_ref, width};
use crate::tui::view::{framed, pane_block, render_empty};
use ansi_to_tui::IntoText;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Paragraph, Wrap};

/// ANSI capture → styled text. Only SGR (colors, attributes) survives: any other control
/// character left in the text is removed so it cannot reach the real terminal.
pub fn parse_capture(raw: &str, no_color: bool) -> Text<'static> {
    let mut text = raw.as_bytes().into_text().unwrap_or_else(|_| {
        Text::from(
            raw.lines()
                .map(|l| Line::from(clean_line(l).into_owned()))
                .collect::<Vec<_>>(),
        )
    });
    for line in &mut text.lines {
        for span in &mut line.spans {
            if span.content.chars().any(char::is_control) {
                span.content = clean_line(&span.content).into_owned().into();
            }
            if no_color {
                span.style = uncolored(span.style);
            }
        }
        if no_color {
            line.style = uncolored(line.style);
        }
    }
    while text
        .lines
        .last()
        .is_some_and(|l| l.spans.iter().all(|s| s.content.trim().is_empty()))
    {
        text.lines.pop();
    }
    text
}

fn uncolored(mut style: Style) -> Style {
    style.fg = None;
    style.bg = None;
    style.underline_color = None;
    style
}

pub fn render(app: &App, frame: &mut Frame, area: Rect, single: bool) {
    let t = &app.theme;
    let selected = app.selected_session();
    let avail = area.width.saturating_sub(4) as usize;
    let title: Vec<Span> = match selected {
        Some(s) if s.state.has_session() => {
            let fixed = s.harness.as_deref().map(width).unwrap_or(0) + s.state.label().len() + 6;
            let reference =
                truncate_ref(&short_ref(&s.work_item), avail.saturating_sub(fixed).max(8))
                    .into_owned();
            let mut v = vec![
                Span::styled(reference, t.accent),
                Span::styled(" · ", t.dim),
            ];
            if let Some(h) = &s.harness {
                v.push(Span::raw(h.clone()));
                v.push(Span::styled(" · ", t.dim));
            }
            v.push(Span::styled(s.state.label(), state_style(app, s.state)));
            if let Some(title) = &s.title {
                v.push(Span::styled(format!(" — {}", clean_line(title)), t.dim));
            }
            v
        }
        _ => vec![Span::raw("Pane")],
    };
    let title = crate::tui::view::clip_spans(title, avail);
    let block = pane_block(app, Focus::Pane, title, None, single);
    let Some(inner) = framed(frame, block, area) else {
        return;
    };
    let message = |text: String, style: Style| {
        Paragraph::new(Line::from(Span::styled(text, style))).wrap(Wrap { trim: true })
    };
    let Some(session) = selected else {
        let text = if app.loading {
            "Loading…"
        } else {
            "Select a session to watch its pane here."
        };
        render_empty(app, frame, inner, text);
        return;
    };
    if session.state == SessionState::NoSession {
        let key = app
            .keymap
            .key_label(Group::Sessions, Command::Start)
            .map(|k| format!(" Press {k} to start one."))
            .unwrap_or_default();
        let text = format!("No session on {} yet.{key}", short_ref(&session.work_item));
        frame.render_widget(message(text, t.dim), inner);
        return;
    }
    let current = app.preview.work_item.as_ref() == Some(&session.work_item);
    match (&app.preview.text, &app.preview.error) {
        (_, Some(e)) if current => {
            let text = format!("Could not capture the pane: {}", clean_line(e));
            frame.render_widget(message(text, t.error), inner);
        }
        (Some(text), _) if current => {
            let skip = text.lines.len().saturating_sub(inner.height as usize);
            let visible: Vec<Line> = text.lines[skip..].to_vec();
            frame.render_widget(Paragraph::new(visible), inner);
        }
        _ => render_empty(app, frame, inner, "Capturing…"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::Color;

    #[test]
    fn keeps_colors_and_drops_other_controls() {
        let text = parse_capture("\u{1b}[31mred\u{1b}[0m plain\u{7}\n\n\n", false);
        assert_eq!(text.lines.len(), 1, "trailing blank lines dropped");
        let spans = &text.lines[0].spans;
        assert_eq!(spans[0].content, "red");
        assert_eq!(spans[0].style.fg, Some(Color::Red));
        let all: String = spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(all, "red plain");
    }

    #[test]
    fn no_color_strips_colors_but_keeps_bold() {
        let text = parse_capture("\u{1b}[1;32mok\u{1b}[0m", true);
        let span = &text.lines[0].spans[0];
        assert_eq!(span.style.fg, None);
        assert!(
            span.style
                .add_modifier
                .contains(ratatui::style::Modifier::BOLD)
        );
    }
}
