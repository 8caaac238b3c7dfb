//! The top line: who this screen is (supervisor or viewer), a limit holding deliveries
//! (issue 43), poll health, the other hosts' connections (when the config has `hosts:`),
//! rate limit, webhook server, and warnings that need the operator (an empty allowlist,
//! a config that failed to reload, a bad keymap or theme). Segments that do not fit are dropped
//! least important first; warnings are the last to go.

use crate::tui::app::App;
use crate::tui::backend::{HostState, Role, WebhookState};
use crate::tui::text::{age, truncate, width};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

#[derive(Clone)]
struct Segment {
    /// Lower is kept longer.
    priority: u8,
    spans: Vec<(String, Style)>,
}

impl Segment {
    fn width(&self) -> usize {
        self.spans.iter().map(|(s, _)| width(s)).sum()
    }
}

const SEP: &str = " · ";

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    if area.height == 0 {
        return;
    }
    let t = &app.theme;
    let mut segments = vec![Segment {
        priority: 0,
        spans: vec![(" the-loop".into(), t.brand)],
    }];
    if app.loading {
        segments.push(Segment {
            priority: 1,
            spans: vec![("starting…".into(), t.dim.patch(t.status_bar))],
        });
    } else {
        segments.push(role(app));
        if let Some(limit) = limit(app) {
            segments.push(limit);
        }
        segments.push(poll(app));
        if let Some(hosts) = hosts(app) {
            segments.push(hosts);
        }
        if let Some(rate) = rate(app) {
            segments.push(rate);
        }
        segments.push(webhook(app));
        if let Some(usage) = usage_today(app) {
            segments.push(usage);
        }
    }
    let warning = warnings(app);
    let two_lines = area.height >= 2;
    if !two_lines && let Some(w) = warning.clone() {
        segments.push(w);
    }

    let avail = area.width as usize;
    let total = |segs: &[Segment]| -> usize {
        segs.iter().map(Segment::width).sum::<usize>() + SEP.len() * segs.len().saturating_sub(1)
    };
    while total(&segments) > avail && segments.len() > 1 {
        // Drop the least important segment (the highest priority number).
        let Some(worst) = segments
            .iter()
            .enumerate()
            .filter(|(_, s)| s.priority > 1)
            .max_by_key(|(_, s)| s.priority)
            .map(|(i, _)| i)
        else {
            break;
        };
        segments.remove(worst);
    }

    let mut spans = Vec::new();
    let mut used = 0usize;
    for (i, seg) in segments.iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled(SEP, t.dim.patch(t.status_bar)));
            used += width(SEP);
        }
        for (text, style) in &seg.spans {
            let room = avail.saturating_sub(used);
            let shown = truncate(text, room).into_owned();
            used += width(&shown);
            spans.push(Span::styled(shown, *style));
        }
    }
    let mut lines = vec![Line::from(spans)];
    if two_lines && let Some(w) = warning {
        let mut spans = vec![Span::raw(" ")];
        let mut used = 1;
        for (text, style) in w.spans {
            let shown = truncate(&text, avail.saturating_sub(used)).into_owned();
            used += width(&shown);
            spans.push(Span::styled(shown, style));
        }
        lines.push(Line::from(spans));
    }
    frame.render_widget(Paragraph::new(lines).style(t.status_bar), area);
}

/// Whether anything needs the operator's attention in the status bar.
pub fn has_warnings(app: &App) -> bool {
    warnings(app).is_some()
}

fn role(app: &App) -> Segment {
    let t = &app.theme;
    let s = &app.status;
    let repos = match s.repos.as_slice() {
        [] => "no repos configured".to_string(),
        [one] => one.clone(),
        many => format!("{} repos", many.len()),
    };
    let text = match s.role {
        Role::Supervisor => format!("supervising {repos}"),
        Role::Viewer { pid: Some(pid) } => format!("viewer of pid {pid} · {repos}"),
        Role::Viewer { pid: None } => format!("viewer · {repos}"),
    };
    let style = if s.repos.is_empty() {
        t.status_bar.patch(t.warn)
    } else {
        t.status_bar
    };
    Segment {
        priority: 3,
        spans: vec![(text, style)],
    }
}

/// `⏸ limit · resets 14:00 · 3 deliveries · 1 start` while a limit holds deliveries
/// (issue 43): when it resets (or its back-off ends), in local time, and what waits on
/// it. Kept as long as the warnings.
fn limit(app: &App) -> Option<Segment> {
    let t = &app.theme;
    let limit = app.status.limit.as_ref()?;
    let mut text = if limit.login {
        "⏸ login expired".to_string()
    } else {
        "⏸ limit".to_string()
    };
    if let Some(until) = limit.until {
        let at = until.to_offset(crate::time::local_offset());
        text.push_str(&format!(" · resets {:02}:{:02}", at.hour(), at.minute()));
    }
    let waiting = [
        (limit.deliveries, "delivery", "deliveries"),
        (limit.starts, "start", "starts"),
    ];
    for (n, one, many) in waiting.into_iter().filter(|(n, ..)| *n > 0) {
        text.push_str(&format!(" · {n} {}", if n == 1 { one } else { many }));
    }
    Some(Segment {
        priority: 1,
        spans: vec![(text, t.status_bar.patch(t.warn))],
    })
}

fn poll(app: &App) -> Segment {
    let t = &app.theme;
    let bar = |s: Style| t.status_bar.patch(s);
    let s = &app.status;
    let spans = if !s.polling_enabled {
        vec![("polling off".into(), bar(t.dim))]
    } else if let Some(p) = &s.last_poll {
        let ago = age((app.now - p.at).whole_seconds());
        let mut v = vec![(format!("poll {ago} ago "), t.status_bar)];
        if p.errors > 0 {
            let n = p.errors;
            v.push((
                format!("✗ {}", crate::tui::text::counted(n, "error")),
                bar(t.error),
            ));
        } else {
            v.push(("✓".into(), bar(t.ok)));
            let mut detail = format!(" {} req", p.requests);
            if p.not_modified > 0 {
                detail.push_str(&format!(" ({}×304)", p.not_modified));
            }
            v.push((detail, t.status_bar));
        }
        v
    } else {
        vec![("poll pending".into(), bar(t.dim))]
    };
    Segment { priority: 2, spans }
}

/// `build-1 ✓ 4ms  gpu ✗ unreachable`: each configured host's connection (issue 32), kept
/// as long as the poll's health while one does not answer. Nothing without hosts.
fn hosts(app: &App) -> Option<Segment> {
    let t = &app.theme;
    let bar = |s: Style| t.status_bar.patch(s);
    let hosts = &app.status.hosts;
    if hosts.is_empty() {
        return None;
    }
    let mut spans = Vec::new();
    for (i, host) in hosts.iter().enumerate() {
        if i > 0 {
            spans.push(("  ".into(), t.status_bar));
        }
        let name = crate::tui::text::clean_line(&host.name);
        spans.push((format!("{name} "), t.status_bar));
        match &host.state {
            HostState::Up { .. } => {
                let ms = host.state.rtt_ms().unwrap_or_default();
                spans.push(("✓".into(), bar(t.ok)));
                spans.push((format!(" {ms}ms"), t.status_bar));
            }
            HostState::Unreachable { .. } => spans.push(("✗ unreachable".into(), bar(t.error))),
            HostState::Unknown => spans.push(("? unknown".into(), bar(t.dim))),
        }
    }
    let away = hosts
        .iter()
        .any(|h| matches!(h.state, HostState::Unreachable { .. }));
    Some(Segment {
        priority: if away { 2 } else { 3 },
        spans,
    })
}

fn rate(app: &App) -> Option<Segment> {
    let t = &app.theme;
    let r = app.status.rate.as_ref()?;
    let low = match r.limit {
        Some(limit) if limit > 0 => r.remaining * 10 < limit,
        _ => r.remaining < 100,
    };
    let text = match r.limit {
        Some(limit) => format!("rate {}/{limit}", r.remaining),
        None => format!("rate {}", r.remaining),
    };
    let style = if low {
        t.status_bar.patch(t.warn)
    } else {
        t.status_bar
    };
    Some(Segment {
        priority: 4,
        spans: vec![(text, style)],
    })
}

fn webhook(app: &App) -> Segment {
    let t = &app.theme;
    let bar = |s: Style| t.status_bar.patch(s);
    let spans = match &app.status.webhook {
        WebhookState::Off => vec![("webhook off".into(), bar(t.dim))],
        WebhookState::Listening { listen, signed } => {
            let mut v = vec![(format!("webhook {listen}"), t.status_bar)];
            if !signed {
                v.push((" ⚠ unsigned".into(), bar(t.warn)));
            }
            v
        }
        WebhookState::Failed(_) => vec![("webhook ✗ failed".into(), bar(t.error))],
    };
    Segment { priority: 5, spans }
}

/// `today 1.2M $3.41`: what the watched sessions' models used today (SPEC §20.3);
/// `$?` when a model has no price; in the warning colour when a session is over budget.
/// Nothing while no session's usage is known.
fn usage_today(app: &App) -> Option<Segment> {
    let t = &app.theme;
    let known: Vec<_> = app
        .sessions
        .iter()
        .filter_map(|s| s.usage.as_ref())
        .collect();
    if known.is_empty() {
        return None;
    }
    let tokens: u64 = known.iter().map(|u| u.today_tokens).sum();
    let usd: Option<f64> = known.iter().map(|u| u.today_usd).sum();
    let cost = usd.map_or_else(|| "$?".to_string(), |c| format!("${c:.2}"));
    let over = known.iter().any(|u| u.over_budget);
    let text = format!("today {} {cost}", crate::usage::tokens::short(tokens));
    let style = if over { t.warn } else { t.dim };
    Some(Segment {
        priority: 4,
        spans: vec![(text, t.status_bar.patch(style))],
    })
}

/// Every standing warning in one segment, most serious first.
fn warnings(app: &App) -> Option<Segment> {
    let t = &app.theme;
    let s = &app.status;
    let mut items: Vec<(String, Style)> = Vec::new();
    if let Some(e) = &s.reload_error {
        items.push((format!("✗ config reload failed: {e}"), t.error));
    }
    if s.allowlist_empty && !app.loading {
        items.push((
            "⚠ authorizedUsers is empty: no one can steer agents".into(),
            t.warn,
        ));
    }
    match &s.webhook {
        WebhookState::Failed(e) => items.push((format!("✗ webhook server: {e}"), t.error)),
        WebhookState::Listening { signed: false, .. } => items.push((
            "⚠ the webhook accepts unsigned requests (server.allowUnsigned)".into(),
            t.warn,
        )),
        _ => {}
    }
    for w in s.config_warnings.iter().chain(&app.warnings) {
        items.push((format!("⚠ {w}"), t.warn));
    }
    if items.is_empty() {
        return None;
    }
    let mut spans = Vec::new();
    for (i, (text, style)) in items.into_iter().enumerate() {
        if i > 0 {
            spans.push(("  ".into(), t.status_bar));
        }
        spans.push((
            crate::tui::text::clean_line(&text).into_owned(),
            t.status_bar.patch(style),
        ));
    }
    Some(Segment { priority: 1, spans })
}
