//! The Questions pane: what agents wait on the operator for, oldest first, with the
//! age — permission dialogs first (`! #15 40s Bash  cargo test …`, SPEC §17.4), then
//! open questions (`? #18  3m  Should the retry cap be per repo or global?`) — wrapped
//! under the text column (more lines for the selected one). Rows waiting long turn to
//! warning.

use crate::tui::app::{App, Focus};
use crate::tui::text::{age, clean_line, fit, fit_right, tiny_ref, truncate_ref, width, wrap};
use crate::tui::view::{framed, full_width, pane_block, render_empty, row_style};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

/// A question older than this is shown in the warning style.
const STALE_SECS: i64 = 15 * 60;
const AGE_W: usize = 3;

pub fn render(app: &App, frame: &mut Frame, area: Rect, single: bool) {
    let t = &app.theme;
    let count = (app.waiting_len() > 0).then(|| app.waiting_len().to_string());
    let block = pane_block(
        app,
        Focus::Questions,
        vec![Span::raw("Questions")],
        count,
        single,
    );
    let Some(inner) = framed(frame, block, area) else {
        return;
    };
    if app.waiting_len() == 0 {
        let text = if app.loading {
            "Loading…"
        } else {
            "No open questions. Agents ask with `the-loop ask`."
        };
        render_empty(app, frame, inner, text);
        return;
    }
    let single_repo = app.single_repo();
    // (glyph, item, asked at, tool, text) of every row, permissions first.
    let rows: Vec<Row> = app
        .permissions
        .iter()
        .map(|p| Row {
            glyph: "! ",
            item: &p.work_item,
            at: p.requested_at,
            tool: Some(p.tool.as_str()),
            text: &p.summary,
        })
        .chain(app.questions.iter().map(|q| Row {
            glyph: "? ",
            item: &q.work_item,
            at: q.asked_at,
            tool: None,
            text: &q.question,
        }))
        .collect();
    let ref_w = rows
        .iter()
        .map(|r| width(&tiny_ref(r.item, single_repo)))
        .max()
        .unwrap_or(0)
        .min(inner.width as usize / 3);
    let text_w = (inner.width as usize)
        .saturating_sub(ref_w + AGE_W + 4)
        .max(1);
    let indent = " ".repeat(ref_w + AGE_W + 4);

    let items: Vec<Vec<Line>> = rows
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let selected = i == app.question_index;
            let max_lines = if selected { 6 } else { 2 };
            let secs = (app.now - q.at).whole_seconds();
            let age_style = if secs >= STALE_SECS { t.warn } else { t.time };
            let text = match q.tool {
                Some(tool) => format!("{tool}: {}", clean_line(q.text)),
                None => clean_line(q.text).into_owned(),
            };
            let mut lines = wrap(&text, text_w);
            if lines.len() > max_lines {
                lines.truncate(max_lines);
                if let Some(last) = lines.last_mut() {
                    *last = crate::tui::text::truncate(&format!("{last} …"), text_w).into_owned();
                    if !last.ends_with('…') {
                        last.push('…');
                    }
                }
            }
            let style = row_style(app, Focus::Questions, selected);
            lines
                .into_iter()
                .enumerate()
                .map(|(n, text)| {
                    let line = if n == 0 {
                        Line::from(vec![
                            Span::styled(q.glyph, t.awaiting),
                            Span::styled(
                                fit(&truncate_ref(&tiny_ref(q.item, single_repo), ref_w), ref_w),
                                t.accent,
                            ),
                            Span::raw(" "),
                            Span::styled(fit_right(&age(secs), AGE_W), age_style),
                            Span::raw(" "),
                            Span::styled(text, t.text),
                        ])
                    } else {
                        Line::from(vec![Span::raw(indent.clone()), Span::styled(text, t.text)])
                    };
                    full_width(line, inner.width, style)
                })
                .collect()
        })
        .collect();

    // The first item to show so the selected one is fully visible.
    let height = inner.height as usize;
    let sel = app.question_index.min(items.len() - 1);
    let mut start = sel;
    let mut used = items[sel].len();
    while start > 0 && used + items[start - 1].len() <= height {
        start -= 1;
        used += items[start].len();
    }
    let lines: Vec<Line> = items
        .into_iter()
        .skip(start)
        .flatten()
        .take(height)
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

/// One row of the pane: a permission request or a question.
struct Row<'a> {
    glyph: &'static str,
    item: &'a crate::work_item::WorkItemRef,
    at: time::OffsetDateTime,
    /// The tool, for a permission request (shown before its summary).
    tool: Option<&'a str>,
    text: &'a str,
}
