//! The Critics pane (running rounds with a spinner and elapsed time, finished ones with
//! ok/failed, duration and cost; under the selected round, its findings as
//! `path:line message`, SPEC §21.3) and the output popup, where a finished round's whole
//! output is read — under its attribution, as review material, never as instructions
//! (SPEC §9.5).

use crate::critic::Finding;
use crate::tui::app::{App, Focus};
use crate::tui::backend::{CriticRunState, CriticRunView, RunId};
use crate::tui::keymap::{Command, Group};
use crate::tui::layout::centered;
use crate::tui::text::{
    clean_block, clean_line, clock, cost, fit, fit_right, short_ref, tiny_ref, truncate_ref, width,
    wrap,
};
use crate::tui::view::{
    framed, full_width, pane_block, render_empty, row_style, scrolled_popup, window_start,
};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

pub const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

fn elapsed(app: &App, run: &CriticRunView) -> f64 {
    match &run.state {
        CriticRunState::Running => (app.now - run.started_at).as_seconds_f64(),
        CriticRunState::Finished(r) => r.duration_secs,
    }
}

fn row<'a>(app: &App, run: &CriticRunView, name_w: usize, item_w: usize, w: usize) -> Line<'a> {
    let t = &app.theme;
    let (glyph, glyph_style) = match &run.state {
        CriticRunState::Running => (SPINNER[app.spinner % SPINNER.len()], t.spinner),
        CriticRunState::Finished(r) if r.ok => ("✓", t.ok),
        CriticRunState::Finished(_) => ("✗", t.error),
    };
    let item = run
        .work_item
        .as_ref()
        .map(|i| tiny_ref(i, app.single_repo()))
        .unwrap_or_default();
    let item = fit(&truncate_ref(&item, item_w), item_w);
    let tail = match &run.state {
        CriticRunState::Running => String::new(),
        CriticRunState::Finished(r) if !r.ok => "failed".into(),
        CriticRunState::Finished(r) => r.cost_usd.map(cost).unwrap_or_default(),
    };
    let posted = if run.posted.is_some() { " ↗" } else { "" };
    // glyph, name, ref, clock, tail: whatever does not fit is cut from the right.
    let mut spans = vec![
        Span::styled(glyph, glyph_style),
        Span::raw(" "),
        Span::styled(fit(&clean_line(&run.critic), name_w), t.text),
        Span::raw(" "),
    ];
    let rest_w = w.saturating_sub(2 + name_w + 1);
    let clock_text = fit_right(&clock(elapsed(app, run)), 6);
    let tail_style = if tail == "failed" { t.error } else { t.cost };
    let body = [
        (item, t.accent),
        (clock_text, t.time),
        (format!(" {tail}{posted}"), tail_style),
    ];
    let mut used = 0;
    for (text, style) in body {
        let room = rest_w.saturating_sub(used);
        if room == 0 {
            break;
        }
        let shown = crate::tui::text::truncate(&text, room).into_owned();
        used += width(&shown);
        spans.push(Span::styled(shown, style));
    }
    Line::from(spans)
}

/// A row of the pane: a run, or one finding of the selected run, listed under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    pub run: usize,
    pub finding: Option<usize>,
}

/// The pane's rows, in order: every run, and the selected run's findings under it.
pub fn rows(app: &App) -> Vec<Row> {
    let mut rows = Vec::with_capacity(app.runs.len());
    for (run, view) in app.runs.iter().enumerate() {
        rows.push(Row { run, finding: None });
        if run == app.run_index {
            let findings = view.result().map_or(0, |r| r.findings.len());
            rows.extend((0..findings).map(|f| Row {
                run,
                finding: Some(f),
            }));
        }
    }
    rows
}

/// Where the selection is among `rows`.
pub fn selected_row(app: &App, rows: &[Row]) -> usize {
    rows.iter()
        .position(|r| r.run == app.run_index && r.finding == app.finding_index)
        .unwrap_or(0)
}

/// `  ● path:line message`: the glyph coloured by severity, the text inert.
fn finding_row<'a>(app: &App, finding: &Finding, w: usize) -> Line<'a> {
    let t = &app.theme;
    let place = clean_line(&finding.place()).into_owned();
    let message = clean_line(&finding.message).into_owned();
    let spans = vec![
        Span::raw("  "),
        Span::styled("●", t.severity(finding.severity)),
        Span::raw(" "),
        Span::styled(place, t.accent),
        Span::styled(format!(" {message}"), t.text),
    ];
    Line::from(crate::tui::view::clip_spans(spans, w))
}

pub fn render(app: &App, frame: &mut Frame, area: Rect, single: bool) {
    let running = app.runs.iter().filter(|r| r.is_running()).count();
    let count = match (app.runs.len(), running) {
        (0, _) => None,
        (n, 0) => Some(n.to_string()),
        (n, r) => Some(format!("{r} running · {n}")),
    };
    let block = pane_block(
        app,
        Focus::Critics,
        vec![Span::raw("Critics")],
        count,
        single,
    );
    let Some(inner) = framed(frame, block, area) else {
        return;
    };
    if app.runs.is_empty() {
        let text = if app.loading {
            "Loading…".to_string()
        } else if app.critics.is_empty() {
            "No critics configured (critics: in the config).".to_string()
        } else {
            let key = app
                .keymap
                .key_label(Group::Sessions, Command::Critic)
                .unwrap_or_else(|| "the critic key".into());
            format!("No runs yet. Select a session and press {key} to run a critic.")
        };
        render_empty(app, frame, inner, &text);
        return;
    }
    let w = inner.width as usize;
    let name_w = app
        .runs
        .iter()
        .map(|r| width(&r.critic))
        .max()
        .unwrap_or(0)
        .min(16)
        .min(w / 3);
    let item_w = app
        .runs
        .iter()
        .filter_map(|r| r.work_item.as_ref())
        .map(|i| width(&tiny_ref(i, app.single_repo())))
        .max()
        .unwrap_or(0)
        .min(w / 4);
    let height = inner.height as usize;
    let rows = rows(app);
    let selected = selected_row(app, &rows);
    let start = window_start(selected, rows.len(), height);
    let lines: Vec<Line> = rows
        .iter()
        .enumerate()
        .skip(start)
        .take(height)
        .filter_map(|(i, r)| {
            let run = app.runs.get(r.run)?;
            let line = match r.finding {
                None => row(app, run, name_w, item_w, w),
                Some(f) => finding_row(app, run.result()?.findings.get(f)?, w),
            };
            let style = row_style(app, Focus::Critics, i == selected);
            Some(full_width(line, inner.width, style))
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

/// The row listed on line `dy` of the pane's inside, as the last frame showed it: an
/// index into [`rows`] (a run, or one of the selected run's findings).
pub fn row_at(app: &App, inner: Rect, dy: u16) -> Option<usize> {
    let rows = rows(app);
    let start = window_start(selected_row(app, &rows), rows.len(), inner.height as usize);
    (dy < inner.height)
        .then(|| start + dy as usize)
        .filter(|i| *i < rows.len())
}

/// As wide as the screen allows for reading, as tall as the output needs.
fn output_rect(app: &App, run: &CriticRunView, area: Rect) -> Rect {
    let w = (area.width.saturating_mul(9) / 10)
        .max(area.width.min(40))
        .min(110);
    let lines = output_lines(app, run, w.saturating_sub(2) as usize).len();
    let wanted = u16::try_from(lines).unwrap_or(u16::MAX).saturating_add(2);
    let max_h = (area.height.saturating_mul(85) / 100).max(area.height.min(10));
    centered(area, w, wanted.clamp(area.height.min(8), max_h))
}

/// The popup's text at `width` columns: a header, a framing line, the output.
fn output_lines(app: &App, run: &CriticRunView, width: usize) -> Vec<Line<'static>> {
    let t = &app.theme;
    let mut lines = Vec::new();
    let Some(result) = run.result() else {
        return vec![Line::from(Span::styled("Still running…", t.dim))];
    };
    let mut head = vec![
        Span::styled(clean_line(&result.attribution).into_owned(), t.accent),
        Span::styled(" · ", t.dim),
    ];
    if result.ok {
        head.push(Span::styled("✓ reviewed", t.ok));
    } else {
        head.push(Span::styled("✗ failed", t.error));
    }
    head.push(Span::styled(
        format!(
            " · {} · exit {}",
            clock(result.duration_secs),
            result.exit_code
        ),
        t.dim,
    ));
    if let Some(c) = result.cost_usd {
        head.push(Span::styled(format!(" · {}", cost(c)), t.cost));
    }
    lines.push(Line::from(head));
    if let Some(e) = &result.error {
        for l in wrap(&format!("error: {}", clean_line(e)), width) {
            lines.push(Line::from(Span::styled(l, t.error)));
        }
    }
    if let Some(url) = &run.posted {
        lines.push(Line::from(Span::styled(
            format!("posted: {}", clean_line(url)),
            t.dim,
        )));
    }
    let frame_text = " Review material from a critic: read it, don't obey it ";
    let side = width.saturating_sub(crate::tui::text::width(frame_text)) / 2;
    lines.push(Line::from(Span::styled(
        format!("{}{frame_text}{}", "─".repeat(side), "─".repeat(side)),
        t.section,
    )));
    let body = clean_block(&result.output);
    if body.trim().is_empty() {
        lines.push(Line::from(Span::styled("(no output)", t.dim)));
    } else {
        for l in body.split('\n').flat_map(|l| wrap_keep_indent(l, width)) {
            lines.push(Line::from(Span::styled(l, t.text)));
        }
    }
    lines
}

/// Wraps a line of output, keeping its leading indentation (code, lists).
fn wrap_keep_indent(line: &str, w: usize) -> Vec<String> {
    let indent: String = line.chars().take_while(|c| *c == ' ').collect();
    let body = &line[indent.len()..];
    if width(line) <= w {
        return vec![line.to_string()];
    }
    if indent.len() >= w / 2 {
        return wrap(line, w.max(1));
    }
    wrap(body, w - indent.len())
        .into_iter()
        .map(|l| format!("{indent}{l}"))
        .collect()
}

/// Lines of the open output at the current size (for scrolling limits).
pub fn output_line_count(app: &App) -> usize {
    let crate::tui::app::Mode::Output { run, .. } = &app.mode else {
        return 0;
    };
    let Some(run) = app.runs.iter().find(|r| &r.id == run) else {
        return 0;
    };
    let rect = output_rect(app, run, app.area);
    output_lines(app, run, rect.width.saturating_sub(2) as usize).len()
}

pub fn render_output(app: &App, frame: &mut Frame, area: Rect, run_id: &RunId, scroll: u16) {
    let Some(run) = app.runs.iter().find(|r| &r.id == run_id) else {
        return;
    };
    let rect = output_rect(app, run, area);
    let title = match &run.work_item {
        Some(item) => format!(" {} · {} ", clean_line(&run.critic), short_ref(item)),
        None => format!(" {} ", clean_line(&run.critic)),
    };
    let lines = output_lines(app, run, rect.width.saturating_sub(2) as usize);
    let title = Line::from(title);
    scrolled_popup(
        app,
        frame,
        rect,
        title,
        Group::Output,
        lines,
        scroll as usize,
    );
}
