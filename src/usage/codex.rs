//! Codex's own counts (SPEC §20.1): its session log, the "rollout"
//! `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<local time>-<thread id>.jsonl`.
//!
//! Codex 0.171.0 writes one JSON object per line, `{timestamp, type, payload}`. Two
//! kinds count:
//! - `turn_context`: `payload.model` is the model of the turn's requests;
//! - `event_msg` with `payload.type` `token_count`: `payload.info.total_token_usage`
//!   is the thread's running total (`input_tokens`, of which `cached_input_tokens` and
//!   `cache_write_input_tokens`; `output_tokens`, reasoning included and also stated
//!   as `reasoning_output_tokens`), `last_token_usage` the last request's. `info` is
//!   `null` before the first response, and a total may be written twice.
//!
//! What a line counts is the growth of the total since the line before (a repeated
//! total counts nothing); a total that went down (the count restarted) counts its
//! `last_token_usage`. The session's first line (`session_meta`) names its `cwd`: a
//! rollout is read for a session only when that is the session's directory.

use super::tokens::Tokens;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use time::UtcOffset;

/// What one rollout line says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// The model of the requests that follow.
    Model(String),
    /// The thread's running total, the last request's count, and the local day.
    Counts {
        total: Tokens,
        last: Option<Tokens>,
        day: Option<String>,
    },
}

#[derive(Deserialize)]
struct Raw {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    timestamp: Option<String>,
    #[serde(default)]
    payload: Option<Payload>,
}

#[derive(Deserialize)]
struct Payload {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    info: Option<Info>,
    #[serde(default)]
    cwd: Option<PathBuf>,
}

#[derive(Deserialize)]
struct Info {
    #[serde(default)]
    total_token_usage: Option<Usage>,
    #[serde(default)]
    last_token_usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    cached_input_tokens: u64,
    #[serde(default)]
    cache_write_input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
}

impl Usage {
    /// The four kinds: cached and cache-written input are parts of `input_tokens`;
    /// codex's writes have one lifetime, counted as 5-minute writes.
    fn tokens(&self) -> Tokens {
        Tokens {
            input: self
                .input_tokens
                .saturating_sub(self.cached_input_tokens)
                .saturating_sub(self.cache_write_input_tokens),
            output: self.output_tokens,
            cache_write5m: self.cache_write_input_tokens,
            cache_write1h: 0,
            cache_read: self.cached_input_tokens,
        }
    }
}

/// What `line` says, `None` for a line that says nothing of usage.
pub fn parse(line: &[u8], offset: UtcOffset) -> Option<Line> {
    let raw: Raw = serde_json::from_slice(line).ok()?;
    let payload = raw.payload?;
    match (raw.kind.as_str(), payload.kind.as_deref()) {
        ("turn_context", _) => payload
            .model
            .filter(|m| !m.trim().is_empty())
            .map(Line::Model),
        ("event_msg", Some("token_count")) => {
            let info = payload.info?;
            let total = info.total_token_usage?.tokens();
            Some(Line::Counts {
                total,
                last: info.last_token_usage.map(|u| u.tokens()),
                day: raw
                    .timestamp
                    .as_deref()
                    .and_then(|ts| super::line::day_of(ts, offset)),
            })
        }
        _ => None,
    }
}

/// What a total counts after `before`: its growth, or the last request's count when
/// the total went down.
pub fn counted(before: &Tokens, total: &Tokens, last: Option<&Tokens>) -> Tokens {
    if total.total() < before.total() {
        last.copied().unwrap_or(*total)
    } else {
        before.growth_to(total)
    }
}

/// Codex's home in this environment: `CODEX_HOME`, else `~/.codex`.
pub fn codex_home() -> Option<PathBuf> {
    std::env::var_os("CODEX_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".codex")))
}

/// The longest thread id taken.
const MAX_THREAD_ID: usize = 64;

/// The most entries of one day's directory looked at.
const MAX_DAY_ENTRIES: usize = 10_000;

/// Whether `id` is a thread id as codex writes them (hex digits and dashes): nothing
/// else is ever made into a file name.
pub fn is_thread_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_THREAD_ID
        && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
}

/// The rollout of thread `id` under `home`: `sessions/<day>/rollout-*-<id>.jsonl`, a
/// regular file, looked for in the directory of the day the id was minted (a UUIDv7
/// says when, in UTC and in local time) and of today and yesterday. `None` when
/// there is none (codex keeps no log of some threads, such as the one titling a
/// session).
pub fn find_rollout(home: &Path, id: &str, now: time::OffsetDateTime) -> Option<PathBuf> {
    if !is_thread_id(id) {
        return None;
    }
    let offset = crate::time::local_offset();
    let mut days = Vec::new();
    if let Some(minted) = uuid_v7_time(id) {
        days.push(minted.to_offset(offset).date());
        days.push(minted.date());
    }
    let today = now.to_offset(offset).date();
    days.push(today);
    days.extend(today.previous_day());
    days.dedup();
    let suffix = format!("-{id}.jsonl");
    for day in days {
        let dir = home.join("sessions").join(format!(
            "{:04}/{:02}/{:02}",
            day.year(),
            u8::from(day.month()),
            day.day()
        ));
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let found = entries.flatten().take(MAX_DAY_ENTRIES).find(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with("rollout-")
                && name.ends_with(&suffix)
                && e.file_type().is_ok_and(|t| t.is_file())
        });
        if let Some(entry) = found {
            return Some(entry.path());
        }
    }
    None
}

/// When a UUIDv7 was minted (its first 48 bits, milliseconds since the epoch).
fn uuid_v7_time(id: &str) -> Option<time::OffsetDateTime> {
    let hex: String = id.chars().filter(|c| *c != '-').collect();
    if hex.len() != 32 || hex.as_bytes().get(12) != Some(&b'7') {
        return None;
    }
    let ms = i128::from(u64::from_str_radix(&hex[..12], 16).ok()?);
    time::OffsetDateTime::from_unix_timestamp_nanos(ms * 1_000_000).ok()
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RolloutError {
    #[error("{0} is not a codex rollout (`rollout-*.jsonl`)")]
    NotRollout(String),
    #[error("rollout {path} is outside codex's session log directory {dir}")]
    Outside { path: String, dir: String },
    #[error("rollout {0} does not start with its session's `session_meta` line")]
    NoMeta(String),
    #[error("rollout {path} is of a session in {cwd}, not in this session's directory")]
    OtherCwd { path: String, cwd: String },
}

/// Accepts `path` only as a `rollout-*.jsonl` regular file under `<home>/sessions`
/// (resolved: a symlink out is refused) whose `session_meta` names one of `cwds`.
pub fn accept_rollout(path: &Path, home: &Path, cwds: &[PathBuf]) -> Result<PathBuf, RolloutError> {
    let shown = || path.display().to_string();
    let named_right = path.file_name().is_some_and(|n| {
        let n = n.to_string_lossy();
        n.starts_with("rollout-") && n.ends_with(".jsonl")
    });
    if !named_right {
        return Err(RolloutError::NotRollout(shown()));
    }
    let sessions = home.join("sessions");
    let outside = || RolloutError::Outside {
        path: shown(),
        dir: sessions.display().to_string(),
    };
    let (Ok(resolved), Ok(dir)) = (path.canonicalize(), sessions.canonicalize()) else {
        return Err(outside());
    };
    if !resolved.starts_with(&dir) || resolved.file_name() != path.file_name() {
        return Err(outside());
    }
    let cwd = meta_cwd(&resolved).ok_or_else(|| RolloutError::NoMeta(shown()))?;
    let resolved_cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.clone());
    let same = |c: &PathBuf| *c == cwd || c.canonicalize().is_ok_and(|c| c == resolved_cwd);
    if !cwds.iter().any(same) {
        return Err(RolloutError::OtherCwd {
            path: shown(),
            cwd: cwd.display().to_string(),
        });
    }
    Ok(resolved)
}

/// The `cwd` of the rollout's first line, a `session_meta` (read up to
/// [`super::reader::MAX_LINE`] bytes, without following a symlink).
fn meta_cwd(path: &Path) -> Option<PathBuf> {
    use std::io::{BufRead, Read};
    let file = super::reader::open_regular(path).ok()?;
    let mut first = Vec::new();
    std::io::BufReader::new(file.take(super::reader::MAX_LINE as u64))
        .read_until(b'\n', &mut first)
        .ok()?;
    let raw: Raw = serde_json::from_slice(first.trim_ascii_end()).ok()?;
    (raw.kind == "session_meta").then_some(())?;
    raw.payload?.cwd
}

#[cfg(test)]
#[path = "codex_tests.rs"]
mod tests;
