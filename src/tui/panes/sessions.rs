//! The Sessions pane: one aligned row per session or watched item —
//! `● octo/repo#15  claude  working   12s  ~3 ↑2`. Watched items without a session are
//! listed dimmed so they can be started. Columns give way on narrow panes: the worktree
//! column first, then harness, idle time, the state word (the glyph still says it). A
//! state guessed from the screen (a harness that does not report) reads `working?` /
//! `idle?`.
//!
//! A session in its own worktree (SPEC §16.4) shows its changed files (`~3`) and
//! commits ahead of its base (`↑2`); a kept worktree of an ended session reads `kept`.
//! A session whose work was shipped (SPEC §19.4) names its pull request there: `PR #7`.
//! The last line names the selected session's branch and base, and the diff key.
//!
//! What a session's model used and cost (SPEC §20.3) has a column, `1.2M $3.41`: `—`
//! when the harness reports nothing, `$?` when a model has no price, and `!` in front,
//! in the warning colour, when the session is over a budget (its deliveries wait).
//!
//! Deliveries held back from a session (SPEC §18.3) end its row in the room left
//! (`⏸ 2 held: permission dialog`, shortened to `⏸ 2 held`, `⏸ 2`); the selected one
//! gets a line saying for how long and what to do.

use crate::tui::app::{App, Focus};
use crate::tui::backend::{SessionState, SessionView};
use crate::tui::text::{age, fit, fit_right, short_ref, truncate_ref, width};
use crate::tui::view::{framed, full_width, pane_block, render_empty, row_style, window_start};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

const STATE_W: usize = 10;
/// The widest a harness name is shown (a session's permission mode follows it).
const HARNESS_MAX: usize = 10;
const IDLE_W: usize = 4;
const WORK_W: usize = 8;
/// The widest the worktree column grows, for `~3 ↑2 PR #123`.
const WORK_MAX: usize = 14;
const REF_MIN: usize = 8;
/// `!1.2M $3.41+?`.
const USAGE_W: usize = 12;
/// Room kept for the held mark when a session has one: `⏸ 12`.
const HELD_MIN: usize = 4;

pub fn state_style(app: &App, state: SessionState) -> Style {
    let t = &app.theme;
    match state {
        SessionState::Working => t.working,
        SessionState::Idle => t.idle,
        SessionState::AwaitingInput | SessionState::AwaitingPermission => t.awaiting,
        SessionState::Dead => t.dead,
        SessionState::Paused | SessionState::Unreachable => t.paused,
        SessionState::NoSession => t.no_session,
    }
}

/// Which columns fit in `w`.
struct Columns {
    reference: usize,
    harness: usize,
    state: bool,
    idle: bool,
    work: bool,
    usage: bool,
    /// The worktree column's width: its widest label, within bounds.
    work_w: usize,
    /// The held mark's width: what the other columns leave; 0 when nothing is held.
    held: usize,
}

/// `~3 ↑2`, `clean`, or nothing for a session without a worktree; then `PR #7` when
/// its work was shipped (SPEC §19.4).
fn work_label(s: &SessionView) -> Option<String> {
    let pull = s.pull_request.map(|n| format!("PR #{n}"));
    let Some(w) = s.workspace.as_ref() else {
        return pull;
    };
    let label = tree_label(w);
    Some(match pull {
        Some(pull) if label.is_empty() || label == "clean" => pull,
        Some(pull) => format!("{label} {pull}"),
        None => label,
    })
}

fn tree_label(w: &crate::tui::backend::WorkspaceView) -> String {
    let mut parts = Vec::new();
    if let Some(n) = w.changed_files.filter(|n| *n > 0) {
        parts.push(format!("~{n}"));
    }
    if let Some(n) = w.ahead.filter(|n| *n > 0) {
        parts.push(format!("↑{n}"));
    }
    if parts.is_empty() && w.changed_files.is_some() {
        "clean".into()
    } else {
        parts.join(" ")
    }
}

/// A permission mode as the harness column shows it, short.
fn mode_word(mode: crate::config::PermissionMode) -> &'static str {
    use crate::config::PermissionMode::*;
    match mode {
        Default => "default",
        AcceptEdits => "edits",
        Plan => "plan",
        Auto => "auto",
        DontAsk => "dontAsk",
        BypassPermissions => "bypass",
    }
}

/// The harness column: `claude default`; the mode the screen shows when the operator
/// changed it, marked `!` (`claude auto!`), in the warning colour with a mode that runs
/// tool calls unasked (issue 30).
fn harness_cell(s: &SessionView) -> (String, String, bool) {
    let harness = s.harness.clone().unwrap_or_default();
    // Codex: its approval policy (issue 41), in the warning colour when it never asks.
    if let Some(policy) = s.policy {
        let word = format!(" {}", policy.approval_policy.as_str());
        return (harness, word, policy.never_asks());
    }
    // opencode: whether it asks before commands (issue 44), warned when something runs
    // unasked.
    if let Some(policy) = s.opencode {
        let word = format!(" bash {}", policy.bash.as_str());
        return (harness, word, policy.never_asks());
    }
    let Some(mode) = &s.mode else {
        return (harness, String::new(), false);
    };
    let changed = if mode.shown.is_some() { "!" } else { "" };
    let word = format!(" {}{changed}", mode_word(mode.now()));
    (
        harness,
        word,
        mode.shown.is_some() || mode.now().runs_unasked(),
    )
}

fn columns(app: &App, w: usize) -> Columns {
    let harness = app
        .sessions
        .iter()
        .map(|s| {
            let (name, mode, _) = harness_cell(s);
            width(&name).min(HARNESS_MAX) + width(&mode)
        })
        .max()
        .unwrap_or(0);
    let work = app
        .sessions
        .iter()
        .any(|s| s.workspace.is_some() || s.pull_request.is_some());
    let work_w = app
        .sessions
        .iter()
        .filter_map(work_label)
        .map(|l| width(&l))
        .max()
        .unwrap_or(0)
        .clamp(WORK_W, WORK_MAX);
    // A held mark is kept through every narrowing: it says deliveries wait.
    let held = app.sessions.iter().any(|s| s.held.is_some());
    let held_min = if held { HELD_MIN + 1 } else { 0 };
    // Shown once some session's usage is known; then an unknown one reads `—`.
    let usage = app.sessions.iter().any(|s| s.usage.is_some());
    let fixed = |(h, state, idle, work, usage): (usize, bool, bool, bool, bool)| {
        2 + held_min
            + (if h > 0 { h + 1 } else { 0 })
            + (if state { STATE_W + 1 } else { 0 })
            + (if idle { IDLE_W + 1 } else { 0 })
            + (if work { work_w + 1 } else { 0 })
            + (if usage { USAGE_W + 1 } else { 0 })
    };
    // What gives way first: the worktree counts (the selected session's are on the
    // pane's last line), the harness (the Pane title names it), the usage, the idle
    // time, the state word (the glyph says it). Whole refs are preferred to any column.
    let options = [
        (harness, true, true, work, usage),
        (0, true, true, work, usage),
        (harness, true, true, false, usage),
        (0, true, true, false, usage),
        (0, true, true, false, false),
        (0, true, false, false, false),
        (0, false, false, false, false),
    ];
    let longest = app
        .sessions
        .iter()
        .map(|s| width(&short_ref(&s.work_item)))
        .max()
        .unwrap_or(REF_MIN);
    let fits = |need: usize| options.into_iter().find(|o| fixed(*o) + need <= w);
    let chosen = fits(longest.max(REF_MIN))
        .or_else(|| fits(REF_MIN))
        .unwrap_or((0, false, false, false, false));
    let reference = w.saturating_sub(fixed(chosen)).min(longest.max(REF_MIN));
    let (h, state, idle, work, usage) = chosen;
    Columns {
        reference,
        harness: h,
        state,
        idle,
        work,
        usage,
        work_w,
        held: if held {
            (w + HELD_MIN).saturating_sub(fixed(chosen) + reference)
        } else {
            0
        },
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
        let (name, mode, warn) = harness_cell(s);
        let name_w = width(&name).min(HARNESS_MAX).min(cols.harness);
        spans.push(Span::raw(" "));
        spans.push(Span::styled(fit(&name, name_w), t.dim));
        let mode_style = if warn { t.warn } else { t.dim };
        spans.push(Span::styled(fit(&mode, cols.harness - name_w), mode_style));
    }
    if cols.state {
        // An ended session whose worktree was kept (SPEC §16.3) says so.
        let kept = !s.state.has_session() && s.workspace.as_ref().is_some_and(|w| w.kept.is_some());
        let (label, style) = if kept {
            ("kept", app.theme.warn)
        } else {
            (s.state.label(), state)
        };
        spans.push(Span::raw(" "));
        // A state guessed from the screen says so (SPEC §17.3).
        let label = if s.guessed && !kept {
            format!("{label}?")
        } else {
            label.to_string()
        };
        spans.push(Span::styled(fit(&label, STATE_W), style));
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
    if cols.usage {
        let (label, style) = match &s.usage {
            Some(u) if u.over_budget => (format!("!{}", u.label), t.warn),
            Some(u) => (u.label.clone(), t.dim),
            None if s.state.has_session() => ("—".into(), t.dim),
            None => (String::new(), t.dim),
        };
        spans.push(Span::raw(" "));
        spans.push(Span::styled(fit_right(&label, USAGE_W), style));
    }
    if cols.work {
        let label = work_label(s).unwrap_or_default();
        spans.push(Span::raw(" "));
        spans.push(Span::styled(fit(&label, cols.work_w), t.dim));
    }
    if let (true, Some(held)) = (cols.held > 0, &s.held) {
        let marks = crate::tui::held::marks(held);
        let mark = marks.iter().find(|m| width(m) <= cols.held);
        let mark = mark.unwrap_or(&marks[marks.len() - 1]);
        spans.push(Span::raw(" "));
        spans.push(Span::styled(fit(mark, cols.held), t.warn));
    }
    Line::from(spans)
}

/// The longest of `forms` (longest first) that fits `w`, else the shortest cut to it,
/// in the warning colour.
fn warn_line(app: &App, forms: &[String], w: usize) -> Line<'static> {
    fitted_line(forms, w, app.theme.warn)
}

/// The longest of `forms` that fits `w` (else the shortest, clipped), in `style`.
fn fitted_line(forms: &[String], w: usize, style: Style) -> Line<'static> {
    let text = forms
        .iter()
        .find(|f| width(f) <= w)
        .or(forms.last())
        .cloned()
        .unwrap_or_default();
    Line::from(crate::tui::view::clip_spans(
        vec![Span::styled(text, style)],
        w,
    ))
}

/// `⏸ 2 held: permission dialog · 1m · answer it first` for the selected session,
/// shortened until it fits `w`.
fn held_detail(app: &App, s: &SessionView, w: usize) -> Option<Line<'static>> {
    let forms = crate::tui::held::details(s.held.as_ref()?, app.now);
    Some(warn_line(app, &forms, w))
}

/// The selected session's permission mode, when it is not simply the one it was
/// started in with nothing running unasked: `⏵ mode auto (started default; changed in
/// the pane)`, `⏵ mode auto: some tool calls run unasked`.
fn mode_detail(app: &App, s: &SessionView, w: usize) -> Option<Line<'static>> {
    if let Some(policy) = s.policy.filter(|p| p.never_asks()) {
        let forms = [
            format!("⏵ codex {policy}: commands run without asking you"),
            format!("⏵ codex {policy}"),
        ];
        return Some(warn_line(app, &forms, w));
    }
    if let Some(policy) = s.opencode.filter(|p| p.never_asks()) {
        let forms = [
            format!("⏵ opencode {policy}: tool calls run without asking you"),
            format!("⏵ opencode {policy}"),
        ];
        return Some(warn_line(app, &forms, w));
    }
    let mode = s.mode.as_ref()?;
    let now = mode.now();
    let forms: Vec<String> = match mode.shown {
        Some(_) => vec![
            format!(
                "⏵ permission mode {now} on screen (started {}; changed in the pane)",
                mode.started
            ),
            format!("⏵ mode {now} (started {})", mode.started),
        ],
        None if now.runs_unasked() => vec![
            format!("⏵ permission mode {now}: some tool calls run unasked"),
            format!("⏵ mode {now}: runs unasked"),
        ],
        None => return None,
    };
    Some(warn_line(app, &forms, w))
}

/// How the selected session's client release is read, when nobody recorded it:
/// `◇ Claude Code 2.1.337 · read with 2.1.332's rules · seen live: idle ✓ dialog –`.
fn client_detail(app: &App, s: &SessionView, w: usize) -> Option<Line<'static>> {
    let client = s.client.as_ref().filter(|c| !c.ends_with("· recorded"))?;
    let short = client.split(" · seen live").next().unwrap_or(client);
    let forms = [format!("◇ {client}"), format!("◇ {short}")];
    Some(fitted_line(&forms, w, app.theme.dim))
}

/// `⎇ the-loop/issue-15 · 3 changed · 2 ahead of origin/main · d diff` for the
/// selected session's worktree, shortened until it fits `w`.
fn detail(app: &App, s: &SessionView, w: usize) -> Option<Line<'static>> {
    let ws = s.workspace.as_ref()?;
    let t = &app.theme;
    let branch = format!("⎇ {}", crate::tui::text::clean_line(&ws.branch));
    let key = app.keymap.key_label(
        crate::tui::keymap::Group::Sessions,
        crate::tui::keymap::Command::Diff,
    );
    let forms: Vec<String> = match (&ws.kept, s.state.has_session()) {
        (Some(reason), false) => vec![format!(
            "{branch} · kept: {}",
            crate::tui::text::clean_line(reason)
        )],
        _ => {
            let (c, a) = (ws.changed_files, ws.ahead);
            let base = crate::tui::text::clean_line(&ws.base);
            // Shipped: its pull request, on every form (the row's column may not fit).
            let pull = s.pull_request.map(|n| format!("PR #{n}"));
            let long = [
                c.map(|n| format!("{n} changed")),
                a.map(|n| format!("{n} ahead of {base}")),
                pull.clone(),
            ];
            let mid = [
                c.map(|n| format!("{n} changed")),
                a.map(|n| format!("{n} ahead")),
                pull.clone(),
            ];
            let short = [c.map(|n| format!("~{n}")), a.map(|n| format!("↑{n}")), pull];
            [
                (long.as_slice(), " · "),
                (mid.as_slice(), " · "),
                (short.as_slice(), " "),
            ]
            .iter()
            .map(|(parts, sep)| {
                let parts: Vec<String> = parts.iter().flatten().cloned().collect();
                if parts.is_empty() {
                    branch.clone()
                } else {
                    format!("{branch} · {}", parts.join(sep))
                }
            })
            .collect()
        }
    };
    let hint_w = key.as_ref().map_or(0, |k| width(k) + 8);
    let with_key = forms.iter().find(|f| width(f) + hint_w <= w);
    let (text, show_key) = match with_key {
        Some(f) => (f.clone(), key.is_some()),
        None => (
            forms
                .iter()
                .find(|f| width(f) <= w)
                .cloned()
                .unwrap_or_else(|| forms.last().cloned().unwrap_or_default()),
            false,
        ),
    };
    let mut spans = vec![Span::styled(text, t.dim)];
    if let (true, Some(key)) = (show_key, key) {
        spans.push(Span::styled(" · ", t.dim));
        spans.push(Span::styled(key, t.key));
        spans.push(Span::styled(" diff", t.dim));
    }
    Some(Line::from(crate::tui::view::clip_spans(spans, w)))
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
    let details = details(app, inner);
    let (start, height) = window(app, inner, details.len());
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
    if !details.is_empty() {
        let n = details.len() as u16;
        let bottom = Rect {
            y: inner.bottom().saturating_sub(n),
            height: n,
            ..inner
        };
        frame.render_widget(Paragraph::new(details), bottom);
    }
}

/// The selected session's lines under the rows: the hold first, then the worktree,
/// each only while three rows stay in view.
fn details(app: &App, inner: Rect) -> Vec<Line<'static>> {
    let w = inner.width as usize;
    app.selected_session()
        .map(|s| {
            [
                held_detail(app, s, w),
                mode_detail(app, s, w),
                client_detail(app, s, w),
                detail(app, s, w),
            ]
        })
        .into_iter()
        .flatten()
        .flatten()
        .enumerate()
        .filter(|(i, _)| inner.height as usize >= 4 + i)
        .map(|(_, line)| line)
        .collect()
}

/// The first session listed and how many rows list sessions.
fn window(app: &App, inner: Rect, details: usize) -> (usize, usize) {
    let height = (inner.height as usize).saturating_sub(details);
    let start = window_start(app.session_index, app.sessions.len(), height);
    (start, height)
}

/// The session listed on line `dy` of the pane's inside, as the last frame showed it.
pub fn row_at(app: &App, inner: Rect, dy: u16) -> Option<usize> {
    let (start, height) = window(app, inner, details(app, inner).len());
    let dy = dy as usize;
    (dy < height)
        .then_some(start + dy)
        .filter(|i| *i < app.sessions.len())
}
