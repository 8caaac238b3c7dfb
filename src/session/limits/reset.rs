//! The reset a client printed, read back into a time — never guessed: Claude Code's
//! ([`claude`]) and codex's ([`codex`]).
//!
//! Claude Code (2.1.197) ends a turn on a usage limit with `You've hit your session
//! limit · resets 9:56pm (UTC)`: the reset to the minute (seconds cut; `10pm` on the
//! hour), in the client's own time zone, named in parentheses; a reset more than a day
//! away carries its date, `resets Dec 9, 5pm (Europe/Paris)`, and its year when that is
//! not this one, `resets Jan 2, 2028, 5:30pm (UTC)`.
//!
//! The zone: `UTC` (or `GMT`) is read as such; any other is the client's local zone,
//! and the hook that reads it runs in the client's own environment, so the hook's
//! local offset is the client's.

use time::{Date, Month, OffsetDateTime, PrimitiveDateTime, Time, UtcOffset};

/// The reset in `said` (the client's words, at `now`, the hook's local offset `local`),
/// or `None` when it printed none that reads.
pub fn claude(said: &str, now: OffsetDateTime, local: UtcOffset) -> Option<OffsetDateTime> {
    let (_, rest) = said.rsplit_once("resets ")?;
    let (when, zone) = rest.split_once(" (")?;
    let zone = zone.split_once(')')?.0;
    let offset = match zone {
        "UTC" | "GMT" | "Etc/UTC" | "Etc/GMT" => UtcOffset::UTC,
        _ => local,
    };
    let parts: Vec<&str> = when.split(", ").collect();
    let (clock, date, year) = match parts.as_slice() {
        [clock] => (*clock, None, None),
        [date, clock] => (*clock, Some(*date), None),
        [date, year, clock] => (*clock, Some(*date), Some(year.parse::<i32>().ok()?)),
        _ => return None,
    };
    let clock = clock_time(clock)?;
    let here = now.to_offset(offset);
    let at = |date: Date| PrimitiveDateTime::new(date, clock).assume_offset(offset);
    let Some(date) = date else {
        // Printed within a day: today, unless that has passed (by more than the
        // minute the print cuts), then tomorrow.
        let today = at(here.date());
        return Some(if today + time::Duration::seconds(90) < now {
            at(here.date().next_day()?)
        } else {
            today
        });
    };
    let (month, day) = date.split_once(' ')?;
    let month = month_named(month)?;
    let day: u8 = day.parse().ok()?;
    let reset = at(Date::from_calendar_date(year.unwrap_or(here.year()), month, day).ok()?);
    match year {
        // No year: this year's, or next year's when that date has passed.
        None if reset + time::Duration::days(1) < now => {
            Some(at(
                Date::from_calendar_date(here.year() + 1, month, day).ok()?
            ))
        }
        _ => Some(reset),
    }
}

/// The reset in codex's words (0.171.0, a usage limit's error): `… or try again at
/// 3:04 PM.` on the day of `now` in codex's local time, `… try again at Nov 30th, 2026
/// 12:53 AM.` on another; codex prints it in its local time, the machine's (`local`).
pub fn codex(said: &str, now: OffsetDateTime, local: UtcOffset) -> Option<OffsetDateTime> {
    let (_, rest) = said.rsplit_once("try again at ")?;
    let when = rest.trim_end().trim_end_matches('.');
    let at = |date: Date, clock: Time| PrimitiveDateTime::new(date, clock).assume_offset(local);
    let Some((date, clock)) = when.split_once(", ") else {
        return Some(at(now.to_offset(local).date(), clock_time(when)?));
    };
    // `Nov 30th`, then `2026 12:53 AM`.
    let (month, day) = date.split_once(' ')?;
    let day: u8 = day.trim_end_matches(char::is_alphabetic).parse().ok()?;
    let (year, clock) = clock.split_once(' ')?;
    let date = Date::from_calendar_date(year.parse().ok()?, month_named(month)?, day).ok()?;
    Some(at(date, clock_time(clock)?))
}

/// `9:56pm`, `10pm`, `9:56 PM` (a narrow space before it too).
fn clock_time(text: &str) -> Option<Time> {
    let text = text.trim().to_ascii_lowercase();
    let text = text.replace(['\u{202f}', '\u{a0}', ' '], "");
    let (clock, pm) = if let Some(c) = text.strip_suffix("pm") {
        (c, true)
    } else {
        (text.strip_suffix("am")?, false)
    };
    let (hour, minute) = match clock.split_once(':') {
        Some((h, m)) => (h.parse::<u8>().ok()?, m.parse::<u8>().ok()?),
        None => (clock.parse::<u8>().ok()?, 0),
    };
    if !(1..=12).contains(&hour) {
        return None;
    }
    let hour = match (hour, pm) {
        (12, false) => 0,
        (12, true) => 12,
        (h, false) => h,
        (h, true) => h + 12,
    };
    Time::from_hms(hour, minute, 0).ok()
}

fn month_named(name: &str) -> Option<Month> {
    let months = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let i = months
        .iter()
        .position(|m| name.to_ascii_lowercase().starts_with(m))?;
    Month::try_from(u8::try_from(i + 1).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> OffsetDateTime {
        crate::time::parse_ts(s).unwrap()
    }

    #[test]
    fn resets_as_claude_code_prints_them() {
        let now = at("2026-12-07T20:56:21Z");
        let utc = UtcOffset::UTC;
        let plus2 = UtcOffset::from_hms(2, 0, 0).unwrap();
        let cases: &[(&str, UtcOffset, Option<&str>)] = &[
            // As the real client printed it for a reset an hour away.
            (
                "You've hit your session limit · resets 9:56pm (UTC)",
                utc,
                Some("2026-12-07T21:56:00Z"),
            ),
            // The minute it printed is this one (the seconds were cut): today.
            (
                "You've hit your session limit · resets 8:56pm (UTC)",
                utc,
                Some("2026-12-07T20:56:00Z"),
            ),
            // Earlier in the day: tomorrow.
            (
                "You've hit your weekly limit · resets 2am (UTC)",
                utc,
                Some("2026-12-08T02:00:00Z"),
            ),
            ("… · resets 12pm (UTC)", utc, Some("2026-12-08T12:00:00Z")),
            // The client's own zone is the hook's local one.
            (
                "You've hit your session limit · resets 11:30pm (Europe/Paris)",
                plus2,
                Some("2026-12-07T21:30:00Z"),
            ),
            (
                "You've hit your weekly limit · resets Dec 9, 5pm (UTC)",
                utc,
                Some("2026-12-09T17:00:00Z"),
            ),
            (
                "You're out of extra usage · resets Jan 2, 2028, 5:30pm (UTC)",
                utc,
                Some("2028-01-02T17:30:00Z"),
            ),
            (
                "resets Jan 2, 5:30 PM (UTC)",
                utc,
                Some("2027-01-02T17:30:00Z"),
            ),
            ("You've hit your session limit", utc, None),
            ("resets soon (UTC)", utc, None),
            ("resets 13pm (UTC)", utc, None),
            ("resets 9:56pm", utc, None),
        ];
        for (said, local, want) in cases {
            assert_eq!(claude(said, now, *local), want.map(at), "{said}");
        }
    }

    #[test]
    fn resets_as_codex_prints_them() {
        let now = at("2026-12-07T22:54:55Z");
        let utc = UtcOffset::UTC;
        let plus1 = UtcOffset::from_hms(1, 0, 0).unwrap();
        let cases: &[(&str, UtcOffset, Option<&str>)] = &[
            // As codex 0.171.0 printed it (the API's `resets_at`: 1796000000).
            (
                "You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at Nov 30th, 2026 12:53 AM.",
                utc,
                Some("2026-11-30T00:53:00Z"),
            ),
            (
                "… or try again at 11:40 PM.",
                utc,
                Some("2026-12-07T23:40:00Z"),
            ),
            (
                "… or try again at 11:40 PM.",
                plus1,
                Some("2026-12-07T22:40:00Z"),
            ),
            (
                "… try again at Dec 9th, 2026 5:05 PM.",
                utc,
                Some("2026-12-09T17:05:00Z"),
            ),
            (
                "… try again at Jan 1st, 2027 12:00 AM.",
                utc,
                Some("2027-01-01T00:00:00Z"),
            ),
            (
                "You’ve hit your usage limit. … or try again later.",
                utc,
                None,
            ),
            ("… try again at soon.", utc, None),
            ("… try again at Foo 9th, 2026 5:05 PM.", utc, None),
        ];
        for (said, local, want) in cases {
            assert_eq!(codex(said, now, *local), want.map(at), "{said}");
        }
    }
}
