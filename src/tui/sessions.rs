//! The Sessions pane: one aligned row per session or watched item —
//! `● octo/repo#15  claude  working   12s`. Watched items without a session are listed
//! dimmed so they can be started. Columns give way on narrow panes: harness first, then
//! idle time, then the state word (the glyph still says it). A state guessed from the
//! screen (a harness that does not report) reads `working?` / `idle?`.

use super::app::{App, Focus};
use super::backend::{SessionState, SessionView};
use super::text::{age, fit, fit_right, short_ref, truncate_ref, width};
use super::view::{framed, full_width, pane_block, render_empty, row_style, window_start};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

const STATE_W: usize = 10;
const IDLE_W: usize = 4;
const REF_MIN: usize = 8;

pub fn state_style(app: &App, state: SessionState) -> Style {
    let t = &app.theme;
    match state {
        SessionState::Working => t.working,
        SessionState::Idle => t.idle,
        SessionState::AwaitingInput | SessionState::AwaitingPermission => t.awaiting,
        SessionState::Dead => t.dead,
        SessionState::Paused => t.paused,
        SessionState::NoSession => t.no_session,
    }
}

/// Which columns fit in `w`.
struct Columns {
    reference: usize,
    harness: usize,
    state: bool,
    idle: bool,
}

fn columns(app: &App, w: usize) -> Columns {
    let harness = app
        .sessions
        .iter()
        .filter_map(|s| s.harness.as_deref())
        .map(width)
        .max()
        .unwrap_or(0)
        .min(10);
    let fixed = |h: usize, state: bool, idle: bool| {
        2 + (if h > 0 { h + 1 } else { 0 })
            + (if state { STATE_W + 1 } else { 0 })
            + (if idle { IDLE_W + 1 } else { 0 })
    };
    let options = [
        (harness, true, true),
        (0, true, true),
        (0, true, false),
        (0, false, false),
    ];
    let (h, state, idle) = options
        .into_iter()
        .find(|(h, s, i)| fixed(*h, *s, *i) + REF_MIN <= w)
        .unwrap_or((0, false, false));
    let longest = app
        .sessions
        .iter()
        .map(|s| width(&short_ref(&s.work_item)))
        .max()
        .unwrap_or(REF_MIN);
    Columns {
        reference: w
            .saturating_sub(fixed(h, state, idle))
            .min(longest.max(REF_MIN)),
        harness: h,
        state,
        idle,
    }
}

fn row<'a>(app: &App, s: &SessionView, cols: &Columns) -> Line<'a> {
    let t = &app.theme;
    let state = state_style(app, s.state);
    let dimmed = s.state == SessionState::NoSession;
    let text = if dimmed { t.no_session } else { t.text };
    let mut spans = vec![
        Span::styled(s.state.glyph(), state),
        Span::raw(" "),
        Span::styled(
            fit(
                &truncate_ref(&short_ref(&s.work_item), cols.reference),
                cols.reference,
            ),
            text,
        ),
    ];
    if cols.harness > 0 {
        spans.push(Span::raw(" "));
        spans.push(Span::styled(
            fit(s.harness.as_deref().unwrap_or(""), cols.harness),
            t.dim,
        ));
    }
    if cols.state {
        spans.push(Span::raw(" "));
        // A state guessed from the screen says so (SPEC §17.3).
        let label = if s.guessed {
            format!("{}?", s.state.label())
        } else {
            s.state.label().to_string()
        };
        spans.push(Span::styled(fit(&label, STATE_W), state));
    }
    if cols.idle {
        let idle = match (s.state, s.idle_secs) {
            (SessionState::Working | SessionState::Idle | SessionState::AwaitingInput, Some(n)) => {
                age(i64::try_from(n).unwrap_or(i64::MAX))
            }
            _ => String::new(),
        };
        spans.push(Span::raw(" "));
        spans.push(Span::styled(fit_right(&idle, IDLE_W), t.time));
    }
    Line::from(spans)
}

pub fn render(app: &App, frame: &mut Frame, area: Rect, single: bool) {
    let with = app
        .sessions
        .iter()
        .filter(|s| s.state.has_session())
        .count();
    let watched = app.sessions.len() - with;
    let count = match (with, watched) {
        (0, 0) => None,
        (n, 0) => Some(n.to_string()),
        (n, w) => Some(format!("{n} + {w} watched")),
    };
    let block = pane_block(
        app,
        Focus::Sessions,
        vec![Span::raw("Sessions")],
        count,
        single,
    );
    let Some(inner) = framed(frame, block, area) else {
        return;
    };
    if app.sessions.is_empty() {
        let text = if app.loading {
            "Loading…"
        } else {
            "No sessions yet. Watched issues and PRs appear here."
        };
        render_empty(app, frame, inner, text);
        return;
    }
    let cols = columns(app, inner.width as usize);
    let height = inner.height as usize;
    let start = window_start(app.session_index, app.sessions.len(), height);
    let lines: Vec<Line> = app
        .sessions
        .iter()
        .enumerate()
        .skip(start)
        .take(height)
        .map(|(i, s)| {
            let style = row_style(app, Focus::Sessions, i == app.session_index);
            full_width(row(app, s, &cols), inner.width, style)
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}
