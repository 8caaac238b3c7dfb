//! Timestamps in the formats the event log and state files use.

use std::sync::OnceLock;
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{OffsetDateTime, UtcOffset};

static LOCAL_OFFSET: OnceLock<UtcOffset> = OnceLock::new();

/// Reads the local UTC offset once, for [`local_offset`]. The `time` crate refuses to
/// read it once the process has a second thread (a log writer, a tokio runtime), so
/// `main` calls this first thing.
pub fn init_local_offset() {
    let _ =
        LOCAL_OFFSET.get_or_init(|| UtcOffset::current_local_offset().unwrap_or(UtcOffset::UTC));
}

/// The offset [`init_local_offset`] read; UTC when it was not called or could not read it.
pub fn local_offset() -> UtcOffset {
    LOCAL_OFFSET.get().copied().unwrap_or(UtcOffset::UTC)
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` (SPEC §10).
pub fn format_ts(t: OffsetDateTime) -> String {
    let t = t.to_offset(UtcOffset::UTC);
    let fmt =
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    t.format(&fmt)
        .unwrap_or_else(|_| t.unix_timestamp().to_string())
}

/// The current time as an event-log timestamp.
pub fn now_ts() -> String {
    format_ts(OffsetDateTime::now_utc())
}

/// A filename-safe timestamp, `YYYYMMDDTHHMMSSmmmZ`.
pub fn compact_now() -> String {
    let t = OffsetDateTime::now_utc();
    let fmt = format_description!("[year][month][day]T[hour][minute][second][subsecond digits:3]Z");
    t.format(&fmt)
        .unwrap_or_else(|_| t.unix_timestamp().to_string())
}

/// The current time in Unix milliseconds (0 before 1970: a broken clock limits nothing).
pub fn unix_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Parses an RFC 3339 timestamp (GitHub's `updated_at`, the log's `ts`, `--since`).
pub fn parse_ts(s: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(s, &Rfc3339).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_milliseconds_in_utc() {
        let t = parse_ts("2026-11-30T01:02:03.456789+01:00").unwrap();
        assert_eq!(format_ts(t), "2026-11-30T00:02:03.456Z");
        assert!(parse_ts(&now_ts()).is_some());
    }
}
