//! The diff view (SPEC §16.4, §21.2, §21.3): a session's worktree against its base —
//! the material a critic reviews — coloured by line kind, with a selected line. The
//! gutter marks lines carrying a critic's finding (`▲`, coloured by severity) and lines
//! with a pending comment (`●`), then the line's number (new side; old side for a
//! deleted line). Each finding and comment is shown under its line. The text comes
//! from the agent's working tree and the critic, and was cleaned of control characters
//! when the view was built ([`crate::tui::diff_view`]).

use crate::tui::app::{App, CommentBox};
use crate::tui::diff_view::{DiffView, Row};
use crate::tui::keymap::Group;
use crate::tui::layout::centered;
use crate::tui::text::{clean_block, clean_line, short_ref, truncate};
use crate::tui::view::{framed, hint_spans, popup_frame};
use crate::work_item::WorkItemRef;
use crate::workspace::diff_model::{DiffLine, LineKind};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Clear, Paragraph};

/// Finding mark, comment mark, a 5-wide number, a space.
const GUTTER: usize = 8;

fn rect(area: Rect) -> Rect {
    let w = (area.width.saturating_mul(9) / 10).max(area.width.min(40));
    let h = (area.height.saturating_mul(9) / 10).max(area.height.min(8));
    centered(area, w, h)
}

/// Where the diff's rows are drawn in a screen of `area` (inside the frame).
pub fn body_rect(area: Rect) -> Rect {
    let r = rect(area);
    Rect {
        x: r.x.saturating_add(1),
        y: r.y.saturating_add(1),
        width: r.width.saturating_sub(2),
        height: r.height.saturating_sub(2),
    }
}

/// Rows of diff the view shows in a screen of `area`.
pub fn body_height(area: Rect) -> usize {
    rect(area).height.saturating_sub(2) as usize
}

/// The style of one diff line.
fn style_of(app: &App, line: &DiffLine) -> Style {
    let t = &app.theme;
    match line.kind {
        LineKind::Meta | LineKind::Context => t.text,
        LineKind::HunkHeader => t.accent,
        LineKind::Added => t.ok,
        LineKind::Removed => t.error,
        LineKind::NoNewline => t.dim,
        LineKind::FileHeader
            if line.text.starts_with("diff --git")
                || line.text.starts_with("+++ ")
                || line.text.starts_with("--- ") =>
        {
            t.title_focused
        }
        LineKind::FileHeader => t.dim,
    }
}

fn cut(s: &str, cols: usize) -> String {
    truncate(s, cols).into_owned()
}

fn line_row(app: &App, view: &DiffView, i: usize, cols: usize) -> Line<'static> {
    let t = &app.theme;
    let line = &view.model.lines[i];
    let finding = match view.severity_at(i) {
        Some(s) => Span::styled("▲", app.theme.severity(s)),
        None => Span::raw(" "),
    };
    let comment = if view.commented(i) {
        Span::styled("●", t.accent)
    } else {
        Span::raw(" ")
    };
    let number = match line.position() {
        Some((_, n)) => format!("{n:>5} "),
        None => " ".repeat(GUTTER - 2),
    };
    let mut style = style_of(app, line);
    if i == view.cursor {
        style = style.patch(t.selected);
    }
    let text = cut(&clean_block(&line.text), cols.saturating_sub(GUTTER));
    let pad = cols.saturating_sub(GUTTER + crate::tui::text::width(&text));
    let mut spans = vec![
        finding,
        comment,
        Span::styled(number, t.dim),
        Span::styled(text, style),
    ];
    if i == view.cursor {
        spans.push(Span::styled(" ".repeat(pad), t.selected));
    }
    Line::from(spans)
}

fn finding_row(app: &App, view: &DiffView, f: usize, cols: usize) -> Line<'static> {
    let finding = &view.findings[f];
    let style = app.theme.severity(finding.severity);
    let place = if view.finding_on_line[f] {
        String::new()
    } else {
        format!("{}:{} (not in the diff) ", finding.path, finding.line)
    };
    let text = format!(
        "▲ {}: {place}{}",
        finding.severity.as_str(),
        clean_line(&finding.message)
    );
    Line::from(vec![
        Span::raw(" ".repeat(GUTTER)),
        Span::styled(cut(&text, cols.saturating_sub(GUTTER)), style),
    ])
}

fn comment_row(app: &App, view: &DiffView, c: usize, cols: usize) -> Line<'static> {
    let comment = &view.pending[c];
    let mut text = clean_line(&comment.text).into_owned();
    if view.comment_line(comment).is_none() {
        text = format!(
            "(on {}:{}, which moved) {text}",
            clean_line(&comment.anchor.path),
            comment.anchor.line
        );
    }
    Line::from(vec![
        Span::raw(" ".repeat(GUTTER)),
        Span::styled(
            cut(&format!("● you: {text}"), cols.saturating_sub(GUTTER)),
            app.theme.accent,
        ),
    ])
}

/// The rows on screen from `scroll`, at most `height`, `cols` wide.
fn body(app: &App, cols: usize, scroll: usize, height: usize) -> (Vec<Line<'static>>, usize) {
    let t = &app.theme;
    let view = match &app.diff {
        None => {
            return (
                vec![Line::from(Span::styled("Loading the diff…", t.dim))],
                1,
            );
        }
        Some(Err(e)) => {
            let line = Line::from(Span::styled(format!("No diff: {}", clean_line(e)), t.error));
            return (vec![line], 1);
        }
        Some(Ok(view)) => view,
    };
    let lines = view
        .rows
        .iter()
        .skip(scroll)
        .take(height)
        .map(|row| match *row {
            Row::Line(i) => line_row(app, view, i, cols),
            Row::Finding(f) => finding_row(app, view, f, cols),
            Row::Comment(c) => comment_row(app, view, c, cols),
        })
        .collect();
    (lines, view.rows.len())
}

pub fn render(app: &App, frame: &mut Frame, area: Rect, item: &WorkItemRef, scroll: u16) {
    let r = rect(area);
    let branch = app
        .session_for(item)
        .and_then(|s| s.workspace.as_ref())
        .map(|w| format!(" · {}", clean_line(&w.branch)))
        .unwrap_or_default();
    let pending = match &app.diff {
        Some(Ok(v)) if !v.pending.is_empty() => format!(" · ● {} pending", v.pending.len()),
        _ => String::new(),
    };
    let title = Line::from(format!(" Diff · {}{branch}{pending} ", short_ref(item)));
    let height = r.height.saturating_sub(2) as usize;
    let cols = r.width.saturating_sub(2) as usize;
    let (lines, total) = body(app, cols, scroll as usize, height);
    let position = format!(" {}/{} ", (scroll as usize + 1).min(total), total);
    let block = popup_frame(app, frame, r, title)
        .title_bottom(Line::from(hint_spans(app, Group::Diff, app.theme.popup)))
        .title_bottom(Line::from(Span::styled(position, app.theme.popup)).right_aligned());
    if let Some(inner) = framed(frame, block, r) {
        frame.render_widget(Paragraph::new(lines), inner);
    }
}

/// The comment box, docked at the bottom of the diff view.
pub fn render_comment(app: &App, frame: &mut Frame, area: Rect, cbox: &CommentBox) {
    render(app, frame, area, &cbox.work_item, cbox.scroll);
    let r = rect(area);
    let h = 7.min(r.height);
    let at = Rect {
        x: r.x + 1,
        y: r.y + r.height.saturating_sub(h + 1),
        width: r.width.saturating_sub(2),
        height: h,
    };
    let t = &app.theme;
    let a = &cbox.anchor;
    let side = match a.side {
        crate::workspace::diff_model::Side::New => "",
        crate::workspace::diff_model::Side::Old => " (old side)",
    };
    let title = Line::from(vec![
        Span::styled(" Comment on ", t.title_focused),
        Span::styled(
            format!("{}:{}{side} ", clean_line(&a.path), a.line),
            t.accent.patch(t.title_focused),
        ),
    ]);
    let mut block = Block::default()
        .borders(Borders::ALL)
        .border_type(BorderType::Rounded)
        .border_style(t.border_focused)
        .title(title)
        .title_bottom(Line::from(hint_spans(app, Group::Comment, t.hint)));
    if let Some(e) = &cbox.error {
        block = block.title_bottom(
            Line::from(Span::styled(format!(" {} ", clean_line(e)), t.error)).right_aligned(),
        );
    }
    frame.render_widget(Clear, at);
    let inner = block.inner(at);
    frame.render_widget(block, at);
    if inner.width == 0 || inner.height == 0 {
        return;
    }
    let quoted = Line::from(Span::styled(
        cut(&clean_line(&a.line_text), inner.width as usize),
        t.dim,
    ));
    frame.render_widget(Paragraph::new(quoted), Rect { height: 1, ..inner });
    let text_area = Rect {
        y: inner.y + 1,
        height: inner.height.saturating_sub(1),
        ..inner
    };
    frame.render_widget(&cbox.textarea, text_area);
}
