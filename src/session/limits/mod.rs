//! A session whose turns fail on a limit (issue 43): the plan's usage limit, the API's
//! rate limit (429), overload (5xx/529), an expired login. One home for the record
//! ([`Limit`], in the session's record as `limit`), the rule that reads a failed turn
//! into it ([`observe`]), the back-off, and when deliveries may go again ([`standing`]).
//!
//! How it flows:
//! - the harness reports a failed turn (Claude Code's `StopFailure` hook: `error` and
//!   the text it showed, `last_assistant_message`), `hooks::payload` reads it into
//!   [`Failure`], and `hooks::report` records it here under the record's lock
//!   (`session.limit_hit`, once per limit);
//! - the paste path asks [`standing`]: while the limit stands every delivery is held
//!   (reason `limit`, or `login` for an expired login); the held lane looks again every
//!   500 ms, so nothing is lost and the order is kept;
//! - once it is over (the client's reset passed, or the back-off ran out), exactly one
//!   delivery goes out ([`Limit::released`]): the turn it starts tells — a turn that
//!   ends well clears the limit (`session.limit_cleared`) and the rest follow in order;
//!   a turn that fails again records the next limit, backing off further.
//!
//! Never a guessed reset: a usage limit's reset is read where the client printed it
//! ([`reset`]); without one, it backs off like a rate limit. Claude Code records no
//! `retry-after` in its hooks or transcript (2.1.197, checked against the real client),
//! so its rate limits back off exponentially with jitter, capped.

pub mod codex;
pub mod reset;

use crate::events::{Event, EventType, Level, Source};
use crate::session::hooks::state::Signal;
use crate::work_item::WorkItemRef;
use serde::{Deserialize, Serialize};
use std::time::Duration;
use time::OffsetDateTime;

/// What kind of failure stopped the session's turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LimitKind {
    /// The plan's usage limit (5-hour, weekly): waits for the reset the client printed.
    UsageLimit,
    /// The API's rate limit (429): backs off.
    RateLimit,
    /// The API overloaded or failing (529, 5xx, the connection lost): backs off.
    Overloaded,
    /// The login expired or the key was refused: waits for a turn that succeeds.
    Authentication,
}

impl LimitKind {
    /// Why a delivery (or a start) waits on it: `login` for an expired login, else
    /// `limit`.
    pub fn hold_reason(self) -> crate::session::delivery::HoldReason {
        match self {
            Self::Authentication => crate::session::delivery::HoldReason::Login,
            _ => crate::session::delivery::HoldReason::Limit,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::UsageLimit => "usage-limit",
            Self::RateLimit => "rate-limit",
            Self::Overloaded => "overloaded",
            Self::Authentication => "authentication",
        }
    }

    /// For people: `usage limit`.
    pub fn describe(self) -> &'static str {
        match self {
            Self::UsageLimit => "usage limit",
            Self::RateLimit => "rate limit",
            Self::Overloaded => "API overloaded",
            Self::Authentication => "login expired",
        }
    }
}

/// A failed turn, as a witness reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub kind: LimitKind,
    /// When the client said the limit resets.
    pub resets: Option<OffsetDateTime>,
    /// The client's words, one sanitized line.
    pub said: String,
    /// Which witness: `hook:StopFailure`, `transcript`, `rollout`.
    pub source: String,
}

/// Reads Claude Code's `StopFailure` (`error`, `last_assistant_message`) at `now`;
/// `None` for a failure that is no limit (an invalid request, a billing error).
///
/// As Claude Code 2.1.197 reports them (checked against the real client and the tests'
/// fake model): `rate_limit` with `You've hit your session limit · resets 9:56pm (UTC)`
/// (a subscriber's usage limit) or `API Error: Request rejected (429) · …` (the API's
/// rate limit); `server_error` for 529 and other 5xx; `authentication_failed` for 401.
pub fn from_claude(error: &str, message: &str, now: OffsetDateTime) -> Option<Failure> {
    let said = crate::session::hooks::state::one_line(message);
    let kind = match error {
        "rate_limit" if said.starts_with("API Error") => LimitKind::RateLimit,
        "rate_limit" => LimitKind::UsageLimit,
        "server_error" => LimitKind::Overloaded,
        "authentication_failed" => LimitKind::Authentication,
        _ => return None,
    };
    let resets = (kind == LimitKind::UsageLimit)
        .then(|| reset::claude(&said, now, crate::time::local_offset()))
        .flatten();
    Some(Failure {
        kind,
        resets,
        said,
        source: "hook:StopFailure".into(),
    })
}

/// A session's limit, in its record (`limit`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Limit {
    pub kind: LimitKind,
    /// When the client said it resets (RFC 3339), for a usage limit that said so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resets: Option<String>,
    /// Which witness reported it.
    pub source: String,
    /// The client's words.
    pub said: String,
    /// When the turn failed (RFC 3339).
    pub at: String,
    /// When this limit was hit: the first of its failed turns (RFC 3339); a retried turn
    /// failing the same way keeps it. Records of before it: `at`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// Failed turns in a row: the back-off's exponent.
    pub failures: u32,
    /// When the one delivery that tries again went out: until its turn ends, nothing
    /// else does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub released: Option<String>,
}

/// The back-off of rate limits and overload, and how late a printed reset is trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// After the first failed turn.
    pub first: Duration,
    /// The most it waits.
    pub max: Duration,
    /// Added to a reset the client printed: Claude Code prints it to the minute,
    /// cutting the seconds, so the limit may last up to a minute longer.
    pub reset_margin: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            first: Duration::from_secs(30),
            max: Duration::from_secs(15 * 60),
            reset_margin: Duration::from_secs(60),
        }
    }
}

impl Backoff {
    /// As `sessions.limitBackoffSeconds`, `limitBackoffMaxSeconds` and
    /// `limitResetMarginSeconds` say.
    pub fn from_config(sessions: &crate::config::SessionsConfig) -> Self {
        Self {
            first: Duration::from_secs(sessions.limit_backoff_seconds.max(1)),
            max: Duration::from_secs(sessions.limit_backoff_max_seconds.max(1)),
            reset_margin: Duration::from_secs(sessions.limit_reset_margin_seconds),
        }
    }
}

/// What changed on a report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A new limit (or another kind than before): `session.limit_hit`.
    Hit(Limit),
    /// The same limit again (a retried turn failed): recorded, not announced.
    Again(Limit),
    /// A turn ended well: `session.limit_cleared`.
    Cleared(Limit),
}

/// Moves `limit` on one turn's end: `Some(failure)` for a failed turn, `None` for one
/// that ended well.
pub fn observe(limit: &mut Option<Limit>, failure: Option<Failure>, now: &str) -> Option<Change> {
    let Some(failure) = failure else {
        return limit.take().map(Change::Cleared);
    };
    let previous = limit.take();
    let same = previous.as_ref().is_some_and(|p| p.kind == failure.kind);
    let since = match previous.as_ref().filter(|_| same) {
        Some(p) => p.hit_at().to_string(),
        None => now.to_string(),
    };
    let next = Limit {
        kind: failure.kind,
        resets: failure.resets.map(crate::time::format_ts),
        source: failure.source,
        said: failure.said,
        at: now.to_string(),
        since: Some(since),
        failures: previous.as_ref().map_or(0, |p| p.failures) + 1,
        released: None,
    };
    *limit = Some(next.clone());
    Some(if same {
        Change::Again(next)
    } else {
        Change::Hit(next)
    })
}

/// Whether deliveries wait on `limit` at `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Held until `until` (`None`: until a turn succeeds).
    Holds { until: Option<OffsetDateTime> },
    /// Over: one delivery may go out to try.
    Try,
    /// That one went out; the rest wait for its turn to end.
    Trying,
}

impl Limit {
    /// When deliveries may go again: the printed reset plus the margin (when that was
    /// still ahead as the turn failed), else the back-off after `at`; `None` for an expired login (a turn must succeed first).
    pub fn until(&self, backoff: &Backoff) -> Option<OffsetDateTime> {
        if self.kind == LimitKind::Authentication {
            return None;
        }
        let at = crate::time::parse_ts(&self.at)?;
        match self.resets.as_deref().and_then(crate::time::parse_ts) {
            // A reset that had passed when this turn failed (the try after it failed
            // again on the same limit) is no longer one: it backs off, never tries
            // again at once.
            Some(resets) if resets + backoff.reset_margin > at => {
                Some(resets + backoff.reset_margin)
            }
            _ => Some(at + delay(backoff, self.failures, &self.at)),
        }
    }

    /// When this limit was hit (its first failed turn): one limit, however many turns
    /// failed on it.
    pub fn hit_at(&self) -> &str {
        self.since.as_deref().unwrap_or(&self.at)
    }

    /// The reset the client printed, if any.
    pub fn resets_at(&self) -> Option<OffsetDateTime> {
        self.resets.as_deref().and_then(crate::time::parse_ts)
    }
}

impl Limit {
    /// For people: `usage limit · resets 21:56`, `rate limit`, in the local time.
    pub fn note(&self) -> String {
        let local = crate::time::local_offset();
        match self.resets_at() {
            Some(at) => {
                let at = at.to_offset(local);
                format!(
                    "{} · resets {:02}:{:02}",
                    self.kind.describe(),
                    at.hour(),
                    at.minute()
                )
            }
            None => self.kind.describe().to_string(),
        }
    }

    /// As `sessions list --json` shows it (`limit`).
    pub fn to_json(&self, backoff: &Backoff) -> serde_json::Value {
        serde_json::json!({
            "kind": self.kind.as_str(),
            "until": self.until(backoff).map(crate::time::format_ts),
            "resets": self.resets,
            "source": self.source,
            "said": self.said,
            "failures": self.failures,
            "since": self.at,
            "trying": self.released.is_some(),
        })
    }
}

/// Whether deliveries wait on `limit` at `now`.
pub fn standing(limit: &Limit, backoff: &Backoff, now: OffsetDateTime) -> Standing {
    if limit.released.is_some() {
        return Standing::Trying;
    }
    match limit.until(backoff) {
        Some(until) if until <= now => Standing::Try,
        until => Standing::Holds { until },
    }
}

/// The back-off after `failures` failed turns: `first · 2^(failures-1)`, capped at
/// `max`, with jitter — between half and all of it, fixed by `seed` (the failure's
/// time), so every reader of the record agrees and sessions failing together spread.
pub fn delay(backoff: &Backoff, failures: u32, seed: &str) -> Duration {
    let exp = failures.saturating_sub(1).min(20);
    let full = backoff
        .first
        .saturating_mul(1u32 << exp)
        .min(backoff.max)
        .max(backoff.first.min(backoff.max));
    let hash = seed.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    // Half plus up to another half.
    let fraction = (hash % 1000) as f64 / 1000.0;
    full.div_f64(2.0) + full.div_f64(2.0).mul_f64(fraction)
}

/// The limits' part of one report: a turn that ended well clears the limit, one that
/// failed on a limit records it; anything else leaves it. Under the record's lock.
pub fn on_signal(limit: &mut Option<Limit>, signal: &Signal, now: &str) -> Option<Change> {
    match signal {
        Signal::TurnEnded => observe(limit, None, now),
        Signal::TurnFailed { error, message } => {
            let at = crate::time::parse_ts(now).unwrap_or_else(OffsetDateTime::now_utc);
            let failure = from_claude(error, message, at)?;
            observe(limit, Some(failure), now)
        }
        _ => None,
    }
}

/// What the log says of a change (`session.limit_hit`, `session.limit_cleared`); a
/// limit failing again is not said twice.
pub fn event(source: Source, item: &WorkItemRef, change: &Change) -> Option<Event> {
    match change {
        Change::Hit(limit) => {
            let level = if limit.kind == LimitKind::Authentication {
                Level::Error
            } else {
                Level::Warning
            };
            Some(
                Event::new(source, EventType::SessionLimitHit)
                    .level(level)
                    .with("work_item", item.to_string())
                    .with("kind", limit.kind.as_str())
                    .with_opt("resets", limit.resets.clone())
                    .with("witness", limit.source.as_str())
                    .with("said", limit.said.as_str())
                    .with("failures", limit.failures),
            )
        }
        Change::Again(_) => None,
        Change::Cleared(limit) => Some(
            Event::new(source, EventType::SessionLimitCleared)
                .with("work_item", item.to_string())
                .with("kind", limit.kind.as_str())
                .with("since", limit.at.as_str())
                .with("failures", limit.failures),
        ),
    }
}

#[cfg(test)]
#[path = "limits_tests.rs"]
mod tests;
