//! `the-loop events [--follow] [--type GLOB] [--work-item REF] [--since TS] [--level L] [--json]`.
//!
//! Reads `<state>/events.jsonl` (SPEC §10) and the rotated files still kept beside it
//! (`events.jsonl.N` … `.1`, oldest first, SPEC §15.5); `--follow` carries on across a
//! rotation. Human lines by default; `--json` prints the matching lines exactly as
//! written. A missing log is simply empty.

use super::{CliResult, Ctx, Threads, failed, usage};
use crate::events::{EventReader, Filter, Follower, Level, ReadStats, Record, rotate};
use crate::paths::StatePaths;
use anyhow::anyhow;
use serde_json::Value;
use std::io::{self, Write};
use std::path::Path;
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub struct EventsArgs {
    /// Keep printing new events as they are appended (until Ctrl-C).
    #[arg(long)]
    pub follow: bool,
    /// Only event types matching this glob, e.g. `routing.*` or `*.failed`.
    #[arg(long = "type", value_name = "GLOB")]
    pub event_type: Option<String>,
    /// Only events about this work item, e.g. `github:octo/repo#15`.
    #[arg(long, value_name = "REF")]
    pub work_item: Option<String>,
    /// Only events at or after this RFC 3339 timestamp, e.g. `2026-01-31T09:00:00Z`.
    #[arg(long, value_name = "TS")]
    pub since: Option<String>,
    /// Only events at this level or above (debug, info, warning, error).
    #[arg(long)]
    pub level: Option<String>,
    /// Print the raw JSON lines.
    #[arg(long)]
    pub json: bool,
}

/// How often `--follow` looks for new lines.
const FOLLOW_INTERVAL: Duration = Duration::from_millis(200);

pub fn run(args: EventsArgs, _ctx: &Ctx) -> CliResult {
    let filter = Filter::parse(
        args.event_type.as_deref(),
        args.work_item.as_deref(),
        args.since.as_deref(),
        args.level.as_deref(),
    )
    .map_err(usage)?;
    let path = StatePaths::from_env().events();
    let mut printer = Printer::new(args.json);
    match print_all(&path, &filter, args.follow, &mut printer) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()), // `| head`
        Err(e) => Err(failed(anyhow!(
            "cannot read the event log {}: {e}",
            path.display()
        ))),
        Ok(()) => Ok(()),
    }
}

fn print_all(path: &Path, filter: &Filter, follow: bool, printer: &mut Printer) -> io::Result<()> {
    for rotated in rotate::retained(path).iter().filter(|p| *p != path) {
        let mut reader = EventReader::open(rotated, filter.clone())?;
        for record in &mut reader {
            printer.print(&record?)?;
        }
        report_skipped(rotated, reader.stats());
    }
    let mut reader = EventReader::open(path, filter.clone())?;
    for record in &mut reader {
        printer.print(&record?)?;
    }
    report_skipped(path, reader.stats());
    if !follow {
        return Ok(());
    }
    let follower = Follower::from_offset(path, reader.position(), filter.clone());
    let runtime = crate::runtime::build(Threads::One)?;
    runtime.block_on(follow_until_interrupted(follower, printer))
}

async fn follow_until_interrupted(mut follower: Follower, printer: &mut Printer) -> io::Result<()> {
    let mut tick = tokio::time::interval(FOLLOW_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    let mut skipped = 0;
    loop {
        tokio::select! {
            _ = &mut interrupted => return Ok(()),
            _ = tick.tick() => {
                for record in follower.poll()? {
                    printer.print(&record)?;
                }
                if follower.stats().skipped() > skipped {
                    skipped = follower.stats().skipped();
                    report_skipped(follower.path(), follower.stats());
                }
            }
        }
    }
}

fn report_skipped(path: &Path, stats: ReadStats) {
    if stats.corrupt > 0 {
        eprintln!(
            "the-loop: skipped {} corrupt line(s) in {}",
            stats.corrupt,
            path.display()
        );
    }
    if stats.unknown > 0 {
        eprintln!(
            "the-loop: skipped {} line(s) with event types this version does not know (written by a newer the-loop?)",
            stats.unknown
        );
    }
}

/// Writes records to stdout, flushing per record so `--follow` output appears at once.
struct Printer {
    json: bool,
    last_date: Option<String>,
    out: io::Stdout,
}

impl Printer {
    fn new(json: bool) -> Self {
        Self {
            json,
            last_date: None,
            out: io::stdout(),
        }
    }

    fn print(&mut self, record: &Record) -> io::Result<()> {
        let mut out = self.out.lock();
        if self.json {
            writeln!(out, "{}", record.line)?;
        } else {
            let date = record.event.ts.get(..10).unwrap_or_default();
            if self.last_date.as_deref() != Some(date) {
                writeln!(out, "── {date} (UTC) ──")?;
                self.last_date = Some(date.to_string());
            }
            writeln!(out, "{}", human_line(record))?;
        }
        out.flush()
    }
}

/// Longest event-type name, so the work-item column lines up.
const EVENT_WIDTH: usize = 26;
const WORK_ITEM_WIDTH: usize = 24;
/// Long values (questions, errors) are cut in human output; `--json` has them whole.
const VALUE_CAP: usize = 300;

/// `HH:MM:SS.mmm glyph event work-item k=v …`.
pub fn human_line(record: &Record) -> String {
    let e = &record.event;
    let time = clock(&e.ts);
    let items: Vec<&str> = e.work_items().collect();
    let mut items = items.join(",");
    if items.is_empty() {
        items.push('-');
    }
    let mut line = format!(
        "{time} {} {:<EVENT_WIDTH$} {:<WORK_ITEM_WIDTH$}",
        glyph(e.level),
        e.event.as_str(),
        sanitize(&items),
    );
    for (key, value) in &e.fields {
        if key == "work_item" || key == "work_items" {
            continue;
        }
        line.push(' ');
        line.push_str(&sanitize(key));
        line.push('=');
        line.push_str(&show_value(value));
    }
    line.truncate(line.trim_end().len());
    line
}

fn glyph(level: Level) -> char {
    match level {
        Level::Debug => '·',
        Level::Info => '•',
        Level::Warning => '▲',
        Level::Error => '✗',
    }
}

/// `HH:MM:SS.mmm` in UTC, from a log timestamp in any RFC 3339 offset.
fn clock(ts: &str) -> String {
    let utc = crate::time::parse_ts(ts).map(crate::time::format_ts);
    let canonical = utc.as_deref().unwrap_or(ts);
    canonical.get(11..23).unwrap_or(canonical).to_string()
}

fn show_value(value: &Value) -> String {
    let text = match value {
        Value::String(s) => {
            let bare = !s.is_empty()
                && !s
                    .chars()
                    .any(|c| c.is_whitespace() || c.is_control() || c == '"');
            if bare {
                s.clone()
            } else {
                Value::String(s.clone()).to_string()
            }
        }
        other => other.to_string(),
    };
    let text = sanitize(&text);
    match text.char_indices().nth(VALUE_CAP) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// Event fields can carry text from GitHub or an agent: no control character (ESC, C1,
/// newline) reaches the terminal raw. Escaped JSON-style (every control is below U+00A0).
fn sanitize(s: &str) -> String {
    if !s.chars().any(char::is_control) {
        return s.to_string();
    }
    s.chars()
        .map(|c| {
            if c.is_control() {
                format!("\\u{:04x}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{Event, EventType, Source};

    fn record(event: Event) -> Record {
        Record {
            line: event.to_line(),
            event,
        }
    }

    #[test]
    fn human_line_shows_time_glyph_event_item_and_fields() {
        let mut e = Event::new(Source::Poll, EventType::RoutingDropped)
            .level(Level::Warning)
            .with("reason", "unauthorized-actor")
            .with("work_items", vec!["github:o/r#1", "github:o/r#2"])
            .with("actor", "mallory")
            .with("note", "two words")
            .with("count", 3);
        e.ts = "2026-01-02T03:04:05.678+01:00".into();
        assert_eq!(
            human_line(&record(e)),
            "02:04:05.678 ▲ routing.dropped            github:o/r#1,github:o/r#2 reason=unauthorized-actor actor=mallory note=\"two words\" count=3"
        );
    }

    #[test]
    fn control_characters_never_reach_the_terminal() {
        let e = Event::new(Source::Cli, EventType::SessionAwaitingInput)
            .with("work_item", "github:o/r#1")
            .with("question", "hi\u{1b}[2J\u{9b}31m\nthere");
        let line = human_line(&record(e));
        assert!(!line.chars().any(char::is_control), "{line:?}");
        assert!(
            line.contains(r#"question="hi\u001b[2J\u009b31m\nthere""#),
            "{line}"
        );
    }

    #[test]
    fn long_values_are_cut() {
        let e = Event::new(Source::Cli, EventType::SessionAwaitingInput)
            .with("question", "x".repeat(1000));
        let line = human_line(&record(e));
        assert!(line.ends_with('…') && line.len() < 400, "{}", line.len());
    }
}
