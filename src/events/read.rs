//! Reading the log: a [`Filter`], a streaming [`EventReader`] (constant memory however
//! long the file), and [`tail`], which reads backwards in chunks to find the last N
//! matching events without scanning the whole file.
//!
//! Every reader treats the file the same way: only newline-terminated lines count (a
//! last line without its newline is still being written and is left for later), blank
//! lines are ignored, and a line that does not parse is skipped and counted.

use super::{Event, Level, ParseError, parse_line};
use crate::work_item::{RefError, WorkItemRef};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use time::OffsetDateTime;

/// Which events a reader yields. The default matches everything.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Event-type glob, e.g. `routing.*` or `*.failed`.
    pub type_glob: Option<glob::Pattern>,
    /// Matches the `work_item` field or membership in the `work_items` array.
    pub work_item: Option<WorkItemRef>,
    /// Events at or after this instant.
    pub since: Option<OffsetDateTime>,
    /// Events at this level or above.
    pub min_level: Option<Level>,
}

/// A filter argument that does not parse; the message says what was expected.
#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    #[error(
        "invalid --type glob `{glob}`: {reason}; expected an event-type pattern such as `routing.*` or `*.failed`"
    )]
    Glob { glob: String, reason: String },
    #[error(transparent)]
    WorkItem(#[from] RefError),
    #[error(
        "invalid --since `{0}`: expected an RFC 3339 timestamp such as `2026-01-31T09:00:00Z` or `2026-01-31T10:00:00+01:00`"
    )]
    Since(String),
    #[error("invalid --level: {0}")]
    Level(#[from] super::LevelError),
}

impl Filter {
    /// Builds a filter from command-line style strings.
    pub fn parse(
        type_glob: Option<&str>,
        work_item: Option<&str>,
        since: Option<&str>,
        min_level: Option<&str>,
    ) -> Result<Self, FilterError> {
        let type_glob = type_glob
            .map(|g| {
                glob::Pattern::new(g).map_err(|e| FilterError::Glob {
                    glob: g.to_string(),
                    reason: e.msg.to_string(),
                })
            })
            .transpose()?;
        let work_item = work_item.map(str::parse).transpose()?;
        let since = since
            .map(|s| crate::time::parse_ts(s.trim()).ok_or_else(|| FilterError::Since(s.into())))
            .transpose()?;
        let min_level = min_level.map(str::parse).transpose()?;
        Ok(Self {
            type_glob,
            work_item,
            since,
            min_level,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.type_glob.is_none()
            && self.work_item.is_none()
            && self.since.is_none()
            && self.min_level.is_none()
    }

    pub fn matches(&self, event: &Event) -> bool {
        if self.min_level.is_some_and(|min| event.level < min) {
            return false;
        }
        if let Some(glob) = &self.type_glob
            && !glob.matches(event.event.as_str())
        {
            return false;
        }
        if let Some(since) = self.since {
            match crate::time::parse_ts(&event.ts) {
                Some(ts) if ts >= since => {}
                _ => return false,
            }
        }
        if let Some(wanted) = &self.work_item
            && !event.work_items().any(|r| same_item(wanted, r))
        {
            return false;
        }
        true
    }
}

/// GitHub owner and repo names are case-insensitive; a ref written by another module
/// with different casing is still the same item.
fn same_item(wanted: &WorkItemRef, candidate: &str) -> bool {
    match candidate.parse::<WorkItemRef>() {
        Ok(r) => {
            r.number == wanted.number
                && r.host.eq_ignore_ascii_case(&wanted.host)
                && r.owner.eq_ignore_ascii_case(&wanted.owner)
                && r.repo.eq_ignore_ascii_case(&wanted.repo)
        }
        Err(_) => false,
    }
}

/// A parsed event and the exact line it came from (for `--json`, which prints lines as
/// written).
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub event: Event,
    pub line: String,
}

/// What a reader saw besides the events it yielded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Complete, non-blank lines examined.
    pub lines: u64,
    /// Lines yielded (they parsed and matched the filter).
    pub matched: u64,
    /// Lines that are not events (bad JSON, a missing or invalid envelope key).
    pub corrupt: u64,
    /// Well-formed lines naming an event type this binary does not know.
    pub unknown: u64,
}

impl ReadStats {
    /// Lines skipped because they could not be read as events.
    pub fn skipped(&self) -> u64 {
        self.corrupt + self.unknown
    }
}

thread_local! {
    static PARSED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Lines this thread has parsed as events so far: a counter for tests and benches,
/// which prove that a reader leaves alone what it need not parse.
pub fn parsed_lines() -> u64 {
    PARSED.with(std::cell::Cell::get)
}

/// Parses and filters one line (without its newline); counts what it finds.
pub(super) fn examine(bytes: &[u8], filter: &Filter, stats: &mut ReadStats) -> Option<Record> {
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    stats.lines += 1;
    let Ok(line) = std::str::from_utf8(bytes) else {
        stats.corrupt += 1;
        return None;
    };
    if let Some(glob) = &filter.type_glob
        && !may_name(bytes, glob.as_str())
    {
        return None;
    }
    PARSED.with(|n| n.set(n.get() + 1));
    match parse_line(line) {
        Ok(event) if filter.matches(&event) => {
            stats.matched += 1;
            Some(Record {
                event,
                line: line.to_string(),
            })
        }
        Ok(_) => None,
        Err(ParseError::UnknownEvent(_)) => {
            stats.unknown += 1;
            None
        }
        Err(_) => {
            stats.corrupt += 1;
            None
        }
    }
}

/// Whether the raw line could name an event type `pattern` (a type glob) matches: a
/// byte check before the line is parsed, so a reader of one type skips every other line
/// cheaply. It only ever says no when no JSON string of the line can hold such a name —
/// there is no `"<literal start>` or no `<literal end>"` in it — and says yes to any
/// line with a `\u` escape, which could spell a name in other bytes.
fn may_name(line: &[u8], pattern: &str) -> bool {
    if contains(line, br"\u") {
        return true;
    }
    let p = pattern.as_bytes();
    let wild = |b: &u8| matches!(b, b'*' | b'?' | b'[');
    let Some(first) = p.iter().position(wild) else {
        // No wildcard: the whole name, quoted.
        return quoted_at(line)
            .any(|i| line[i + 1..].starts_with(p) && line.get(i + 1 + p.len()) == Some(&b'"'));
    };
    let prefix = &p[..first];
    // After the last wildcard (a class's closing `]` is hard to find; none then).
    let suffix: &[u8] = match p.iter().rposition(|b| matches!(b, b'*' | b'?')) {
        Some(last) if !p.contains(&b'[') => &p[last + 1..],
        _ => &[],
    };
    (prefix.is_empty() || quoted_at(line).any(|i| line[i + 1..].starts_with(prefix)))
        && (suffix.is_empty() || quoted_at(line).any(|i| line[..i].ends_with(suffix)))
}

/// The offsets of the line's `"`.
fn quoted_at(line: &[u8]) -> impl Iterator<Item = usize> + '_ {
    line.iter()
        .enumerate()
        .filter(|(_, b)| **b == b'"')
        .map(|(i, _)| i)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Streams the matching events of a log file from the start, one line at a time.
/// A missing file reads as empty.
#[derive(Debug)]
pub struct EventReader {
    input: Option<BufReader<File>>,
    filter: Filter,
    position: u64,
    stats: ReadStats,
    buf: Vec<u8>,
}

impl EventReader {
    pub fn open(path: &Path, filter: Filter) -> io::Result<Self> {
        let input = match File::open(path) {
            Ok(f) => Some(BufReader::with_capacity(64 * 1024, f)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        Ok(Self {
            input,
            filter,
            position: 0,
            stats: ReadStats::default(),
            buf: Vec::new(),
        })
    }

    /// The byte offset just past the last complete line read: where a [`Follower`]
    /// should continue.
    ///
    /// [`Follower`]: super::Follower
    pub fn position(&self) -> u64 {
        self.position
    }

    pub fn stats(&self) -> ReadStats {
        self.stats
    }
}

impl Iterator for EventReader {
    type Item = io::Result<Record>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let input = self.input.as_mut()?;
            self.buf.clear();
            let n = match input.read_until(b'\n', &mut self.buf) {
                Ok(n) => n,
                Err(e) => {
                    self.input = None;
                    return Some(Err(e));
                }
            };
            if n == 0 || self.buf.last() != Some(&b'\n') {
                // End of file, or a line still being written: stop before it.
                self.input = None;
                return None;
            }
            self.position += n as u64;
            let line = &self.buf[..n - 1];
            if let Some(record) = examine(line, &self.filter, &mut self.stats) {
                return Some(Ok(record));
            }
        }
    }
}

/// The last `n` matching events of a log, oldest first.
#[derive(Debug, Clone, Default)]
pub struct Tail {
    pub records: Vec<Record>,
    /// Offset just past the last complete line: where a follower continues.
    pub end: u64,
    /// Counts for the part of the file that was read (not the whole file).
    pub stats: ReadStats,
}

/// How much is read per step backwards.
const TAIL_CHUNK: u64 = 64 * 1024;

/// Loads the last `n` events matching `filter`, reading backwards from the end in
/// chunks, so the cost depends on how far back the matches are, not on the file size.
/// A missing file is empty.
pub fn tail(path: &Path, n: usize, filter: &Filter) -> io::Result<Tail> {
    tail_window(path, None, n, filter, u64::MAX)
}

/// The last `n` matching events of the log and, when the current file has fewer, of
/// the rotated files before it (SPEC §15.5), oldest first. `end` of the result is the
/// current file's.
pub fn tail_retained(log: &Path, n: usize, filter: &Filter) -> io::Result<Tail> {
    let mut out = tail(log, n, filter)?;
    let rotated: Vec<_> = super::rotate::retained(log)
        .into_iter()
        .filter(|p| p != log)
        .collect();
    for older in rotated.iter().rev() {
        if out.records.len() >= n {
            break;
        }
        let mut before = tail(older, n - out.records.len(), filter)?;
        before.records.append(&mut out.records);
        out.records = before.records;
    }
    Ok(out)
}

/// As [`tail`], ending at `end` (a line boundary; `None`: the end of the file) and
/// reading at most about `max_bytes` backwards.
pub fn tail_window(
    path: &Path,
    end: Option<u64>,
    n: usize,
    filter: &Filter,
    max_bytes: u64,
) -> io::Result<Tail> {
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Tail::default()),
        Err(e) => return Err(e),
    };
    let len = file.metadata()?.len();
    let len = end.map_or(len, |e| e.min(len));
    let end = complete_end(&mut file, len)?;
    let floor = end.saturating_sub(max_bytes);
    let mut out = Tail {
        end,
        ..Tail::default()
    };
    // `pending` holds bytes [pos, pos + pending.len()): always whole lines' tails, ending
    // with a newline, whose first line may still be missing its beginning.
    let mut pending: Vec<u8> = Vec::new();
    let mut pos = end;
    while pos > floor && out.records.len() < n {
        let start = pos.saturating_sub(TAIL_CHUNK);
        let mut chunk = vec![0; (pos - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut chunk)?;
        chunk.extend_from_slice(&pending);
        pending = chunk;
        pos = start;

        let mut line_end = pending.len(); // exclusive, just past a newline
        while line_end > 0 && out.records.len() < n {
            let body = &pending[..line_end - 1];
            let line_start = match body.iter().rposition(|&b| b == b'\n') {
                Some(i) => i + 1,
                None if pos == 0 => 0,
                None => break, // its beginning is in the previous chunk
            };
            if let Some(record) = examine(&body[line_start..], filter, &mut out.stats) {
                out.records.push(record);
            }
            line_end = line_start;
        }
        pending.truncate(line_end);
    }
    out.records.reverse();
    Ok(out)
}

/// The offset just past the last newline at or before `len`: a trailing line without
/// its newline is still being written.
pub(super) fn complete_end(file: &mut File, len: u64) -> io::Result<u64> {
    let mut pos = len;
    let mut chunk = Vec::new();
    while pos > 0 {
        let start = pos.saturating_sub(TAIL_CHUNK);
        chunk.resize((pos - start) as usize, 0);
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut chunk)?;
        if let Some(i) = chunk.iter().rposition(|&b| b == b'\n') {
            return Ok(start + i as u64 + 1);
        }
        pos = start;
    }
    Ok(0)
}

#[cfg(test)]
#[path = "read_tests.rs"]
mod tests;
