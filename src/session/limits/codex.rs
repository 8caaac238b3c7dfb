//! Codex's witness of a failed turn (issue 43): its rollout.
//!
//! Codex 0.171.0 runs neither its `notify` program nor a hook when a turn ends in an
//! API error (checked against the real client: the TUI shows `■ <error>` and reports
//! nothing). What it does is write the turn's end into the thread's rollout, an
//! `event_msg` line whose payload is `task_complete` with an `error`:
//!
//! ```text
//! {"timestamp":"…","type":"event_msg","payload":{"type":"task_complete","turn_id":"…",
//!   "error":{"message":"…","codex_error_info":"usage_limit_exceeded"}}}
//! ```
//!
//! `codex_error_info` is codex's own classification: `usage_limit_exceeded`,
//! `rate_limit_exceeded`, `server_overloaded`, `internal_server_error`, or an object
//! naming the HTTP status of a request that failed (`{"http_connection_failed":
//! {"http_status_code": 529}}`, `{"response_too_many_failed_attempts":
//! {"http_status_code": 429}}` once its own retries are spent). Only those fields are
//! read — never the model's words, which codex writes in other lines and, JSON-escaped,
//! never as a line of their own.
//!
//! The reset of a usage limit is read where codex records it: the `token_count` line
//! of the same turn, `rate_limits.primary|secondary` with `used_percent` at 100 and
//! `resets_at` (Unix seconds, from the API's `x-codex-*-reset-at` headers); else the
//! reset its error message printed (`try again at 3:04 PM`, [`super::reset::codex`]).
//! Codex records no `retry-after`: its rate limits back off.

use super::{Failure, LimitKind};
use serde::Deserialize;
use serde_json::Value;
use std::path::Path;
use time::OffsetDateTime;

/// How much of the rollout's end is read: a turn's end is its last lines.
pub const TAIL: u64 = 512 << 10;

/// The last turn the rollout ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastTurn {
    /// When codex wrote its end.
    pub at: OffsetDateTime,
    /// What it failed on, when that is a limit; `None`: it ended well, or on another
    /// error (a bad request is no limit).
    pub failure: Option<Failure>,
}

#[derive(Deserialize)]
struct Line {
    #[serde(rename = "type")]
    kind: String,
    timestamp: Option<String>,
    #[serde(default)]
    payload: Value,
}

/// Reads the last turn's end in `tail` (the end of a rollout), at the local offset
/// `local` (codex prints a reset in its own local time, the machine's).
pub fn last_turn(tail: &[u8], local: time::UtcOffset) -> Option<LastTurn> {
    let mut limits: Option<Value> = None;
    let mut last = None;
    for raw in tail.split(|b| *b == b'\n') {
        // A line cut by the tail's start, or half written, is no JSON: skipped.
        let Ok(line) = serde_json::from_slice::<Line>(raw) else {
            continue;
        };
        if line.kind != "event_msg" {
            continue;
        }
        match line.payload["type"].as_str() {
            Some("task_started") => limits = None,
            Some("token_count") if line.payload["rate_limits"].is_object() => {
                limits = Some(line.payload["rate_limits"].clone());
            }
            Some("task_complete") => {
                let Some(at) = line.timestamp.as_deref().and_then(crate::time::parse_ts) else {
                    continue;
                };
                let failure = failure(&line.payload["error"], limits.as_ref(), at, local);
                last = Some(LastTurn { at, failure });
            }
            _ => {}
        }
    }
    last
}

/// The failure of a `task_complete`'s `error`, when it is a limit.
fn failure(
    error: &Value,
    limits: Option<&Value>,
    now: OffsetDateTime,
    local: time::UtcOffset,
) -> Option<Failure> {
    let kind = kind_of(error.get("codex_error_info")?)?;
    let said = crate::session::hooks::state::one_line(error["message"].as_str().unwrap_or(""));
    let resets = (kind == LimitKind::UsageLimit)
        .then(|| {
            limits
                .and_then(reached_reset)
                .or_else(|| super::reset::codex(&said, now, local))
        })
        .flatten();
    Some(Failure {
        kind,
        resets,
        said,
        source: "rollout".into(),
    })
}

/// Codex's classification of the error, read into a limit's kind.
fn kind_of(info: &Value) -> Option<LimitKind> {
    if let Some(name) = info.as_str() {
        return match name {
            "usage_limit_exceeded" => Some(LimitKind::UsageLimit),
            "rate_limit_exceeded" => Some(LimitKind::RateLimit),
            "server_overloaded" | "internal_server_error" => Some(LimitKind::Overloaded),
            _ => None,
        };
    }
    let (name, detail) = info.as_object()?.iter().next()?;
    let transport = [
        "http_connection_failed",
        "response_stream_connection_failed",
        "response_stream_disconnected",
        "response_too_many_failed_attempts",
    ];
    if !transport.contains(&name.as_str()) {
        return None;
    }
    match detail["http_status_code"].as_u64()? {
        429 => Some(LimitKind::RateLimit),
        401 => Some(LimitKind::Authentication),
        500..=599 => Some(LimitKind::Overloaded),
        _ => None,
    }
}

/// The latest reset of a rate-limit window codex recorded as full (`used_percent` at
/// 100): when the usage limit lifts.
fn reached_reset(limits: &Value) -> Option<OffsetDateTime> {
    ["primary", "secondary"]
        .iter()
        .filter_map(|w| limits.get(*w))
        .filter(|w| w["used_percent"].as_f64().is_some_and(|p| p >= 100.0))
        .filter_map(|w| w["resets_at"].as_i64())
        .filter_map(|at| OffsetDateTime::from_unix_timestamp(at).ok())
        .max()
}

/// The end of the rollout at `path` (at most [`TAIL`] bytes, a regular file, no
/// symlink followed).
pub fn read_tail(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = crate::usage::reader::open_regular(path)?;
    let len = file.metadata()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(TAIL)))?;
    let mut tail = Vec::new();
    file.take(TAIL).read_to_end(&mut tail)?;
    Ok(tail)
}

/// Whether `turn` is news to a session whose limit is `limit`: a failed turn codex
/// wrote after the limit on record was (a turn is read once; one that ended well is
/// told by `notify`).
pub fn is_news(turn: &LastTurn, limit: Option<&super::Limit>) -> bool {
    turn.failure.is_some()
        && limit
            .and_then(|l| crate::time::parse_ts(&l.at))
            .is_none_or(|at| turn.at > at)
}

#[cfg(test)]
#[path = "codex_tests.rs"]
mod tests;
