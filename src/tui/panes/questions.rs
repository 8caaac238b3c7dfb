//! The Questions pane: what agents wait on the operator for, oldest first, with the
//! age — permission dialogs first (`! #15 40s Bash  cargo test …`, SPEC §17.4), then
//! agents' requests to ship (`⇪ #15 2m ship the-loop/issue-15 · ↑3 +120 −8 · review: ok
//! · “title”`, SPEC §19.3), then open questions
//! (`? #18  3m  Should the retry cap be per repo or global?`) — wrapped
//! under the text column (more lines for the selected one). Rows waiting long turn to
//! warning. A dialog that deliveries are held behind (SPEC §18.3) ends its row with how
//! many (`· 2 waiting`), kept however the text is cut.

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
    let items = items(app, inner);
    let start = first_item(app, &items, inner.height as usize);
    let lines: Vec<Line> = items
        .into_iter()
        .skip(start)
        .flatten()
        .take(inner.height as usize)
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

/// Each row's lines at the width of `inner`: the selected one gets more.
fn items<'a>(app: &'a App, inner: Rect) -> Vec<Vec<Line<'a>>> {
    let t = &app.theme;
    let single_repo = app.single_repo();
    // Every row: permissions, ship requests, questions.
    let rows: Vec<Row> = app
        .permissions
        .iter()
        .map(|p| Row {
            glyph: "! ",
            item: &p.work_item,
            at: p.requested_at,
            tool: Some(p.tool.as_str()),
            text: &p.summary,
            owned: None,
            waiting: app
                .session_for(&p.work_item)
                .and_then(|s| s.held.as_ref())
                .map(|h| h.count),
        })
        .chain(app.ships.iter().map(|r| Row {
            glyph: "⇪ ",
            item: &r.work_item,
            at: r.requested_at,
            tool: None,
            text: "",
            owned: Some(crate::tui::ship::row_text(r)),
            waiting: None,
        }))
        .chain(app.questions.iter().map(|q| Row {
            glyph: "? ",
            item: &q.work_item,
            at: q.asked_at,
            tool: None,
            text: &q.question,
            owned: None,
            waiting: None,
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

    rows.iter()
        .enumerate()
        .map(|(i, q)| {
            let selected = i == app.question_index;
            let max_lines = if selected { 6 } else { 2 };
            let secs = (app.now - q.at).whole_seconds();
            let age_style = if secs >= STALE_SECS { t.warn } else { t.time };
            let text = match (q.tool, &q.owned) {
                (_, Some(text)) => text.clone(),
                (Some(tool), None) => format!("{tool}: {}", clean_line(q.text)),
                (None, None) => clean_line(q.text).into_owned(),
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
            let tail = q.waiting.map(|n| format!("· {n} waiting"));
            let tail_at = tail
                .as_deref()
                .map(|tail| end_with(&mut lines, tail, text_w, max_lines));
            let style = row_style(app, Focus::Questions, selected);
            lines
                .into_iter()
                .enumerate()
                .map(|(n, mut text)| {
                    // The count, in the warning style, ends the line it was put on.
                    let tail = match (tail_at, &tail) {
                        (Some(at), Some(tail)) if at == n => {
                            let cut = text.len().saturating_sub(tail.len());
                            Some(Span::styled(text.split_off(cut), t.warn))
                        }
                        _ => None,
                    };
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
                    let line = match tail {
                        Some(span) => Line::from([line.spans, vec![span]].concat()),
                        None => line,
                    };
                    full_width(line, inner.width, style)
                })
                .collect()
        })
        .collect()
}

/// The first item to show so the selected one is fully visible in `height` rows.
fn first_item(app: &App, items: &[Vec<Line>], height: usize) -> usize {
    if items.is_empty() {
        return 0;
    }
    let sel = app.question_index.min(items.len() - 1);
    let mut start = sel;
    let mut used = items[sel].len();
    while start > 0 && used + items[start - 1].len() <= height {
        start -= 1;
        used += items[start].len();
    }
    start
}

/// The row (permission, ship request or question) drawn on line `dy` of the pane's
/// inside, as the last frame showed it.
pub fn item_at(app: &App, inner: Rect, dy: u16) -> Option<usize> {
    if app.waiting_len() == 0 || dy >= inner.height {
        return None;
    }
    let items = items(app, inner);
    let mut top = 0;
    for (i, item) in items
        .iter()
        .enumerate()
        .skip(first_item(app, &items, inner.height as usize))
    {
        top += item.len();
        if (dy as usize) < top {
            return Some(i);
        }
    }
    None
}

/// One row of the pane: a permission request or a question.
struct Row<'a> {
    glyph: &'static str,
    item: &'a crate::work_item::WorkItemRef,
    at: time::OffsetDateTime,
    /// The tool, for a permission request (shown before its summary).
    tool: Option<&'a str>,
    text: &'a str,
    /// The text when it is made for the row (a ship request's), instead of `text`.
    owned: Option<String>,
    /// Deliveries held behind the request's dialog.
    waiting: Option<usize>,
}

/// Ends the wrapped `lines` (at most `max` of `w` columns) with ` {tail}`: on the last
/// line when it has room, else on a line of its own when one is left, else over the
/// end of the last line (cut with `…`). Returns the line it ends.
fn end_with(lines: &mut Vec<String>, tail: &str, w: usize, max: usize) -> usize {
    let need = width(tail) + 1;
    let last = lines.len().saturating_sub(1);
    let room_below = lines.len() < max;
    match lines.last_mut() {
        Some(line) if width(line) + need <= w => {
            line.push(' ');
            line.push_str(tail);
            last
        }
        Some(_) if room_below => {
            lines.push(tail.to_string());
            last + 1
        }
        Some(line) => {
            let kept = crate::tui::text::truncate(line, w.saturating_sub(need));
            *line = format!("{kept} {tail}").trim_start().to_string();
            last
        }
        None => {
            lines.push(tail.to_string());
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::end_with;

    #[test]
    fn the_waiting_count_ends_the_row_however_the_text_is_cut() {
        let lines = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // Room on the last line.
        let mut l = lines(&["Bash: cargo test"]);
        assert_eq!(end_with(&mut l, "· 2 waiting", 30, 2), 0);
        assert_eq!(l, ["Bash: cargo test · 2 waiting"]);
        // A line of its own while one is left.
        let mut l = lines(&["Bash: cargo test --workspace"]);
        assert_eq!(end_with(&mut l, "· 2 waiting", 30, 2), 1);
        assert_eq!(l, ["Bash: cargo test --workspace", "· 2 waiting"]);
        // Else over the end of the last line, cut.
        let mut l = lines(&["Bash: cargo test", "--workspace && git push…"]);
        assert_eq!(end_with(&mut l, "· 2 waiting", 24, 2), 1);
        assert_eq!(l, ["Bash: cargo test", "--workspace… · 2 waiting"]);
    }
}
