//! One line of a Claude Code transcript, read for its usage (SPEC §20.1).
//!
//! Claude Code 2.1.197 writes an `assistant` line per content block of a response, each
//! repeating the response's `message.id`, `requestId`, `message.model` and
//! `message.usage`; tool results, hook summaries and titles are lines of their own,
//! interleaved. A line whose model is `<synthetic>` (written by the client, never sent
//! to the API) counts nothing.

use super::tokens::Tokens;
use serde::Deserialize;
use time::{OffsetDateTime, UtcOffset};

/// The model Claude Code names on lines it made up itself.
pub const SYNTHETIC: &str = "<synthetic>";

/// What one line counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// `message.id` and `requestId`: lines of one response share it. `None`: the line
    /// counts as itself.
    pub key: Option<String>,
    pub model: String,
    pub tokens: Tokens,
    /// The local day of its `timestamp` (`YYYY-MM-DD`), `None` without one.
    pub day: Option<String>,
}

#[derive(Deserialize)]
struct Line {
    #[serde(default)]
    message: Option<Message>,
    #[serde(default, rename = "requestId")]
    request_id: Option<String>,
    #[serde(default)]
    timestamp: Option<String>,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: u64,
    #[serde(default)]
    cache_creation: Option<CacheCreation>,
}

#[derive(Deserialize)]
struct CacheCreation {
    #[serde(default)]
    ephemeral_5m_input_tokens: u64,
    #[serde(default)]
    ephemeral_1h_input_tokens: u64,
}

/// The usage one line reports: `None` for a line that reports none (not JSON, no
/// `message.usage`, a `<synthetic>` model).
pub fn parse(line: &[u8], offset: UtcOffset) -> Option<Entry> {
    let line: Line = serde_json::from_slice(line).ok()?;
    let message = line.message?;
    let usage = message.usage?;
    let model = message.model.unwrap_or_else(|| "unknown".into());
    if model == SYNTHETIC {
        return None;
    }
    // The breakdown by lifetime replaces the aggregate when present.
    let (cache_write5m, cache_write1h) = match usage.cache_creation {
        Some(c) => (c.ephemeral_5m_input_tokens, c.ephemeral_1h_input_tokens),
        None => (usage.cache_creation_input_tokens, 0),
    };
    let tokens = Tokens {
        input: usage.input_tokens,
        output: usage.output_tokens,
        cache_write5m,
        cache_write1h,
        cache_read: usage.cache_read_input_tokens,
    };
    let key = message
        .id
        .map(|id| format!("{id}:{}", line.request_id.unwrap_or_default()));
    let day = line.timestamp.as_deref().and_then(|ts| day_of(ts, offset));
    Some(Entry {
        key,
        model,
        tokens,
        day,
    })
}

/// `YYYY-MM-DD` of an RFC 3339 timestamp at `offset`.
pub fn day_of(ts: &str, offset: UtcOffset) -> Option<String> {
    crate::time::parse_ts(ts).map(|t| day(t, offset))
}

/// `YYYY-MM-DD` of `t` at `offset`.
pub fn day(t: OffsetDateTime, offset: UtcOffset) -> String {
    let d = t.to_offset(offset).date();
    format!("{:04}-{:02}-{:02}", d.year(), u8::from(d.month()), d.day())
}

#[cfg(test)]
#[path = "line_tests.rs"]
pub(crate) mod tests;
