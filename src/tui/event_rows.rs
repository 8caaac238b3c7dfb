//! The Events pane's model: each event turned once, on arrival, into a short row
//! (`12:01:07 ✓ delivered #15 @alice`), kept in a bounded ring so a log of any length
//! costs the same memory, and filtered by plain text.

use super::text::{clean_line, short_ref};
use crate::events::{Event, EventType, Level};
use crate::work_item::WorkItemRef;
use serde_json::Value;
use std::collections::VecDeque;
use time::UtcOffset;

/// Rows kept in memory; older ones fall off (the log file has them all).
pub const FEED_CAPACITY: usize = 2000;

/// How a row is colored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    Routed,
    Dropped,
    Delivered,
    Failed,
    Session,
    Question,
    Critic,
    /// The result of the operator's own action in this screen.
    Note,
    Other,
}

#[derive(Debug, Clone, PartialEq)]
pub struct EventRow {
    /// `HH:MM:SS` in the operator's offset.
    pub time: String,
    pub glyph: &'static str,
    pub kind: RowKind,
    pub verb: String,
    pub item: Option<WorkItemRef>,
    pub rest: String,
    /// Lowercased text the filter matches against.
    haystack: String,
}

impl EventRow {
    pub fn new(
        time: String,
        glyph: &'static str,
        kind: RowKind,
        verb: impl Into<String>,
        item: Option<WorkItemRef>,
        rest: impl Into<String>,
    ) -> Self {
        let verb = clean_line(&verb.into()).into_owned();
        let rest = clean_line(&rest.into()).into_owned();
        let haystack = format!(
            "{time} {verb} {} {rest}",
            item.as_ref().map(short_ref).unwrap_or_default()
        )
        .to_lowercase();
        Self {
            time,
            glyph,
            kind,
            verb,
            item,
            rest,
            haystack,
        }
    }

    /// Case-insensitive substring match; `needle` is already lowercase.
    pub fn matches(&self, needle: &str) -> bool {
        needle.is_empty() || self.haystack.contains(needle)
    }
}

/// The bounded list behind the Events pane.
#[derive(Debug, Clone, Default)]
pub struct Feed {
    rows: VecDeque<EventRow>,
    /// Total rows ever added (to tell "new rows arrived" without comparing them).
    added: u64,
}

impl Feed {
    pub fn push(&mut self, row: EventRow) {
        if self.rows.len() == FEED_CAPACITY {
            self.rows.pop_front();
        }
        self.rows.push_back(row);
        self.added += 1;
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn added(&self) -> u64 {
        self.added
    }

    /// Matching rows, newest first.
    pub fn newest_first<'a>(&'a self, needle: &'a str) -> impl Iterator<Item = &'a EventRow> {
        self.rows.iter().rev().filter(move |r| r.matches(needle))
    }

    pub fn count_matching(&self, needle: &str) -> usize {
        if needle.is_empty() {
            self.rows.len()
        } else {
            self.rows.iter().filter(|r| r.matches(needle)).count()
        }
    }
}

/// `1.2M tokens $3.41`, `$4.10 of $5.00 (session)`.
fn usage_text(event: &Event) -> String {
    let f = |k: &str| event.fields.get(k).and_then(Value::as_f64);
    let usd = |v: Option<f64>| v.map_or_else(|| "$?".into(), |v| format!("${v:.2}"));
    match (
        f("budget_usd"),
        event.fields.get("scope").and_then(Value::as_str),
    ) {
        (Some(b), Some(scope)) => format!("{} of ${b:.2} ({scope})", usd(f("cost_usd"))),
        _ => {
            let tokens = event
                .fields
                .get("tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            format!(
                "{} tokens {}",
                crate::usage::tokens::short(tokens),
                usd(f("cost_usd"))
            )
        }
    }
}

fn hhmmss(ts: &str, offset: UtcOffset) -> String {
    crate::time::parse_ts(ts)
        .map(|t| {
            let t = t.to_offset(offset);
            format!("{:02}:{:02}:{:02}", t.hour(), t.minute(), t.second())
        })
        .unwrap_or_else(|| "--:--:--".into())
}

fn first_item(event: &Event) -> Option<WorkItemRef> {
    event.work_items().find_map(|s| s.parse().ok())
}

/// Whether an event belongs in the pane: poll cycles live in the status bar and debug
/// events (queueing) are noise at this level.
pub fn shown(event: &Event) -> bool {
    event.event != EventType::PollCycle && event.level > Level::Debug
}

/// The row for an event.
pub fn describe(event: &Event, offset: UtcOffset) -> EventRow {
    use EventType as T;
    let time = hhmmss(&event.ts, offset);
    let item = first_item(event);
    let s = |k: &str| event.str_field(k).unwrap_or("").to_string();
    let actor = event
        .str_field("actor")
        .map(|a| format!("@{a}"))
        .unwrap_or_default();
    let err = || {
        event
            .str_field("error")
            .map(|e| format!(": {e}"))
            .unwrap_or_default()
    };
    let (glyph, kind, verb, rest): (&'static str, RowKind, String, String) = match event.event {
        T::RoutingRouted => {
            let outcome = s("outcome");
            let what = event.str_field("gh_event").unwrap_or("event");
            (
                "→",
                RowKind::Routed,
                "routed".into(),
                join(&[&hidden_removed(event), &actor, what, &arrow(&outcome)]),
            )
        }
        T::RoutingDropped => (
            "⊘",
            RowKind::Dropped,
            s("reason"),
            join(&[&actor, event.str_field("gh_event").unwrap_or("")]),
        ),
        T::DispatchSucceeded => {
            let respawned = event.fields.get("respawned") == Some(&Value::Bool(true));
            (
                "✓",
                RowKind::Delivered,
                "delivered".into(),
                join(&[&actor, if respawned { "(respawned)" } else { "" }]),
            )
        }
        T::DispatchFailed => ("✗", RowKind::Failed, "delivery failed".into(), err()),
        T::DispatchDropped => (
            "⊘",
            RowKind::Dropped,
            "not delivered".into(),
            format!("({})", s("reason")),
        ),
        T::DispatchQueued => ("·", RowKind::Other, "queued".into(), String::new()),
        T::PollCycle => ("·", RowKind::Other, "poll".into(), String::new()),
        T::PollError => (
            "▲",
            RowKind::Failed,
            "poll error".into(),
            join(&[&s("repo"), &err()]),
        ),
        T::PollCommentFailed => (
            "✗",
            RowKind::Failed,
            "gave up on a comment".into(),
            s("comment_url"),
        ),
        T::WebhookReceived => (
            "↓",
            RowKind::Other,
            "webhook".into(),
            join(&[&s("gh_event"), &s("action")]),
        ),
        T::WebhookRejected => (
            "⊘",
            RowKind::Dropped,
            "webhook rejected".into(),
            format!("({})", s("reason")),
        ),
        T::ControlStart | T::ControlStop | T::ControlPause | T::ControlResume => {
            let word = event.event.as_str().trim_start_matches("control.");
            ("◆", RowKind::Session, format!("{word} asked"), actor)
        }
        T::ControlAmbiguous => ("▲", RowKind::Dropped, "ambiguous command".into(), actor),
        T::ControlRefused => (
            "▲",
            RowKind::Dropped,
            format!("{} refused", s("keyword")),
            format!("({})", s("reason")),
        ),
        T::SessionSpawned => ("◆", RowKind::Session, "started".into(), s("harness")),
        T::SessionSpawnFailed => ("✗", RowKind::Failed, "start failed".into(), err()),
        T::SessionRespawned => {
            let resumed = event.fields.get("resumed") == Some(&Value::Bool(true));
            let how = if resumed { "resumed" } else { "fresh" };
            (
                "◆",
                RowKind::Session,
                "respawned".into(),
                format!("({how})"),
            )
        }
        T::SessionResumeFailed => ("▲", RowKind::Failed, "resume failed".into(), err()),
        T::SessionPaused => ("‖", RowKind::Session, "paused".into(), actor),
        T::SessionResumed => ("▶", RowKind::Session, "resumed".into(), actor),
        T::SessionStopped => ("■", RowKind::Session, "stopped".into(), actor),
        T::SessionClosed => ("■", RowKind::Session, "closed".into(), s("state")),
        T::SessionReset => ("◆", RowKind::Session, "reset".into(), String::new()),
        T::SessionAwaitingInput => (
            "?",
            RowKind::Question,
            "asks".into(),
            crate::tui::text::truncate(&s("question"), 120).into_owned(),
        ),
        T::SessionReplySent => ("↩", RowKind::Delivered, "reply sent".into(), String::new()),
        T::SessionReviewSent => (
            "↩",
            RowKind::Delivered,
            format!(
                "review sent ({})",
                crate::tui::text::counted(
                    event
                        .fields
                        .get("comments")
                        .and_then(Value::as_u64)
                        .unwrap_or(0),
                    "comment"
                )
            ),
            String::new(),
        ),
        T::SessionReplyFailed => (
            "✗",
            RowKind::Failed,
            "reply failed".into(),
            format!("({}){}", s("reason"), err()),
        ),
        T::SessionCommented => (
            "↗",
            RowKind::Session,
            if event.fields.get("reply_to").is_some_and(|v| !v.is_null()) {
                "replied in a review thread".into()
            } else {
                "commented".into()
            },
            s("url"),
        ),
        T::SessionQuestionDismissed => ("·", RowKind::Question, "question dismissed".into(), actor),
        T::SessionPermissionRequested => (
            "!",
            RowKind::Question,
            "asks permission".into(),
            crate::tui::text::truncate(&format!("{} {}", s("tool"), s("summary")), 120)
                .into_owned(),
        ),
        T::SessionPermissionResolved => (
            "·",
            RowKind::Question,
            format!("permission {}", s("decision")),
            join(&[&s("tool"), &actor]),
        ),
        T::SessionTurnEnded => ("·", RowKind::Session, "turn ended".into(), String::new()),
        T::SessionDeliveryHeld => {
            let reason = s("reason").parse::<crate::session::delivery::HoldReason>();
            let why = reason.map_or_else(|_| s("reason"), |r| r.describe().to_string());
            let waiting = event
                .fields
                .get("waiting")
                .and_then(Value::as_u64)
                .map(|n| format!("({n} waiting)"))
                .unwrap_or_default();
            (
                "⏸",
                RowKind::Question,
                "held".into(),
                join(&[&why, &waiting]),
            )
        }
        T::SessionDeliveryReleased => {
            let secs = event
                .fields
                .get("held_seconds")
                .and_then(Value::as_f64)
                .map(|s| format!("after {}", crate::tui::text::clock(s)))
                .unwrap_or_default();
            ("▶", RowKind::Delivered, "released".into(), secs)
        }
        T::SessionUsage => ("$", RowKind::Session, "usage".into(), usage_text(event)),
        T::SessionBudgetWarning | T::SessionOverBudget => {
            let over = event.event == T::SessionOverBudget;
            let verb = if over { "over budget" } else { "budget 80%" };
            ("$", RowKind::Question, verb.into(), usage_text(event))
        }
        T::SessionLimitHit => (
            "⏸",
            RowKind::Question,
            format!("limit: {}", s("kind")),
            s("said"),
        ),
        T::SessionLimitCleared => ("▶", RowKind::Delivered, "limit cleared".into(), s("kind")),
        T::SessionSpawnHeld => (
            "⏸",
            RowKind::Question,
            format!("start waits: {}", s("reason")),
            format!("{} under {}", s("limited"), s("kind")),
        ),
        T::CriticStarted => (
            "◇",
            RowKind::Critic,
            format!("{} started", s("critic")),
            String::new(),
        ),
        T::CriticFinished => {
            let ok = event.fields.get("ok") == Some(&Value::Bool(true));
            let secs = event
                .fields
                .get("duration_seconds")
                .and_then(Value::as_f64)
                .map(crate::tui::text::clock)
                .unwrap_or_default();
            let cost = event
                .fields
                .get("cost_usd")
                .and_then(Value::as_f64)
                .map(crate::tui::text::cost)
                .unwrap_or_default();
            (
                if ok { "✓" } else { "✗" },
                if ok { RowKind::Critic } else { RowKind::Failed },
                format!("{} {}", s("critic"), if ok { "reviewed" } else { "failed" }),
                join(&[&secs, &cost, &err()]),
            )
        }
        T::CriticPosted => (
            "↗",
            RowKind::Critic,
            format!("{} posted", s("critic")),
            String::new(),
        ),
        T::SupervisorStarted => (
            "·",
            RowKind::Other,
            "supervisor started".into(),
            s("warning"),
        ),
        T::SupervisorStopped => (
            "·",
            RowKind::Other,
            "supervisor stopped".into(),
            s("reason"),
        ),
        T::ConfigReloaded => ("·", RowKind::Other, "config reloaded".into(), String::new()),
        T::ConfigReloadFailed => ("✗", RowKind::Failed, "config reload failed".into(), err()),
        T::StateCorrupt => (
            "▲",
            RowKind::Failed,
            "corrupt state moved aside".into(),
            s("path"),
        ),
        T::ServerStarted => ("·", RowKind::Other, "webhook server".into(), s("listen")),
        T::HostStateChanged => match event.str_field("state") {
            Some("unreachable") => (
                "⌁",
                RowKind::Failed,
                format!("host {} unreachable", s("host")),
                s("reason"),
            ),
            _ => (
                "·",
                RowKind::Other,
                format!("host {} {}", s("host"), s("state")),
                event
                    .fields
                    .get("rtt_ms")
                    .and_then(Value::as_u64)
                    .map(|ms| format!("{ms} ms"))
                    .unwrap_or_default(),
            ),
        },
        T::ServerFailed => ("✗", RowKind::Failed, "webhook server failed".into(), err()),
        T::WorkspaceCreated => (
            "⎇",
            RowKind::Session,
            "worktree created".into(),
            s("branch"),
        ),
        T::WorkspaceReused => ("⎇", RowKind::Session, "worktree reused".into(), s("branch")),
        T::WorkspaceFetchFailed => (
            "▲",
            RowKind::Failed,
            "fetch failed".into(),
            join(&[&format!("(using {})", s("fallback")), &err()]),
        ),
        T::WorkspaceSetupFailed => (
            "✗",
            RowKind::Failed,
            "setup failed".into(),
            join(&[&s("command"), &err()]),
        ),
        T::WorkspaceRemoved => (
            "⎇",
            RowKind::Session,
            "worktree removed".into(),
            s("branch"),
        ),
        T::WorkspaceKept => (
            "▲",
            RowKind::Session,
            "worktree kept".into(),
            format!("({})", s("reason")),
        ),
        T::WorkspaceTrustFailed => ("▲", RowKind::Failed, "trust not marked".into(), err()),
        T::ShipRequested => (
            "⇪",
            RowKind::Question,
            "ship requested".into(),
            format!("{} “{}”", s("branch"), s("title")),
        ),
        T::ShipRefused => ("▲", RowKind::Failed, "ship refused".into(), s("message")),
        T::ShipPushed => (
            "⇪",
            RowKind::Session,
            "pushed".into(),
            format!("{} {}", s("branch"), s("sha").get(..12).unwrap_or("")),
        ),
        T::ShipPrOpened => (
            "⇪",
            RowKind::Session,
            "pull request opened".into(),
            format!(
                "#{} {}",
                event
                    .fields
                    .get("number")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
                s("url")
            ),
        ),
        T::ShipFailed => (
            "✗",
            RowKind::Failed,
            format!("ship failed ({})", s("step")),
            err(),
        ),
    };
    EventRow::new(time, glyph, kind, verb, item, rest)
}

/// SPEC §18.4: the operator learns that someone tried to hide text from people. First in
/// the row, so a narrow pane cuts the rest before it.
fn hidden_removed(event: &Event) -> String {
    match event.fields.get("hidden_removed").and_then(Value::as_u64) {
        Some(count) if count > 0 => format!("⚠ hidden text removed ({count})"),
        _ => String::new(),
    }
}

fn arrow(outcome: &str) -> String {
    if outcome.is_empty() {
        String::new()
    } else {
        format!("→ {outcome}")
    }
}

fn join(parts: &[&str]) -> String {
    let mut out = String::new();
    for p in parts.iter().filter(|p| !p.is_empty()) {
        if !out.is_empty() && !p.starts_with(':') {
            out.push(' ');
        }
        out.push_str(p);
    }
    out
}

#[cfg(test)]
#[path = "event_rows_tests.rs"]
mod tests;
