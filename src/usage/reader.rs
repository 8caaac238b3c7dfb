//! Reading a transcript incrementally (SPEC §20.1): from a kept byte offset, whole
//! lines only (a half-written last line waits for the next read), each response
//! counted once, bounded in memory (an over-long line is skipped and counted).
//!
//! The rules that keep a count right when the file misbehaves:
//! - Lines of one response share (`message.id`, `requestId`): the first counts, a
//!   later one adds only what it reports beyond the first (Claude Code repeats the
//!   same usage; were a later line to carry the finished count, it wins). The keys of
//!   the last [`RECENT`] responses are kept — a response's lines are written together.
//! - A file replaced under the reader (another inode) or shorter than the offset is
//!   read again from 0, and what it counted before is dropped first: the file's own
//!   tally is replaced, never added to, so nothing counts twice.
//! - Opened with `O_NOFOLLOW | O_NONBLOCK`; anything but a regular file is refused.
//! - One read stops at the length the file had when opened: a file that keeps growing
//!   is not chased.
//!
//! A file is read as what wrote it ([`Format`]): a Claude Code transcript ([`line`])
//! or a codex rollout ([`codex`]), whose running totals count by their growth.

use super::codex;
use super::line;
use super::tally::Tally;
use super::tokens::Tokens;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use time::UtcOffset;

/// The longest line read; a longer one (an image in a tool result) is skipped.
pub const MAX_LINE: usize = 4 << 20;

/// How many responses' keys are kept to count repeated lines once.
pub const RECENT: usize = 64;

const CHUNK: usize = 256 << 10;

/// What wrote a file, and so how its lines count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Format {
    /// A Claude Code transcript: each response's usage, once.
    #[default]
    Claude,
    /// A codex rollout: the thread's running totals.
    Codex,
}

impl Format {
    fn is_claude(&self) -> bool {
        *self == Self::Claude
    }
}

/// Where the reader is in one file, and what the file counted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Cursor {
    pub path: PathBuf,
    #[serde(skip_serializing_if = "Format::is_claude")]
    pub format: Format,
    pub dev: u64,
    pub ino: u64,
    /// Bytes consumed: the start of the first line not read yet.
    pub offset: u64,
    /// Inside an over-long line: what follows the offset up to a newline is skipped.
    pub skipping: bool,
    pub tally: Tally,
    /// The last responses' keys, with what was counted for each.
    pub recent: VecDeque<(String, Tokens)>,
    /// Over-long lines skipped in this file.
    pub skipped: u64,
    /// Codex: the model of the current turn, and the last running total read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Tokens::is_zero")]
    pub total: Tokens,
}

/// What one read did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadStats {
    pub bytes: u64,
    pub lines: u64,
    pub skipped: u64,
    /// The file was replaced or truncated: read again from 0.
    pub restarted: bool,
}

impl ReadStats {
    pub fn add(&mut self, other: ReadStats) {
        self.bytes += other.bytes;
        self.lines += other.lines;
        self.skipped += other.skipped;
        self.restarted |= other.restarted;
    }
}

/// Opens `path` for reading without following a symlink or blocking on a FIFO; only a
/// regular file is read.
pub fn open_regular(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", path.display()),
        ));
    }
    Ok(file)
}

impl Cursor {
    pub fn new(path: PathBuf, format: Format) -> Self {
        Self {
            path,
            format,
            ..Self::default()
        }
    }

    /// Reads what was appended since the last read. `today` dates lines without a
    /// timestamp.
    pub fn read_new(&mut self, today: &str, offset: UtcOffset) -> io::Result<ReadStats> {
        let mut file = open_regular(&self.path)?;
        let meta = file.metadata()?;
        let mut stats = ReadStats::default();
        let replaced = (self.dev, self.ino) != (meta.dev(), meta.ino()) && self.ino != 0;
        if replaced || meta.len() < self.offset {
            *self = Self::new(std::mem::take(&mut self.path), self.format);
            stats.restarted = true;
        }
        self.dev = meta.dev();
        self.ino = meta.ino();
        let end = meta.len();
        if end == self.offset {
            return Ok(stats);
        }
        file.seek(SeekFrom::Start(self.offset))?;
        let mut reader = file.take(end - self.offset);
        let mut pending: Vec<u8> = Vec::new();
        let mut chunk = vec![0u8; CHUNK];
        loop {
            let n = reader.read(&mut chunk)?;
            if n == 0 {
                break;
            }
            stats.bytes += n as u64;
            let mut rest = &chunk[..n];
            while !rest.is_empty() {
                let newline = rest.iter().position(|&b| b == b'\n');
                if self.skipping {
                    match newline {
                        Some(i) => {
                            self.offset += i as u64 + 1;
                            self.skipping = false;
                            rest = &rest[i + 1..];
                        }
                        None => {
                            self.offset += rest.len() as u64;
                            rest = &[];
                        }
                    }
                    continue;
                }
                match newline {
                    Some(i) => {
                        pending.extend_from_slice(&rest[..i]);
                        rest = &rest[i + 1..];
                        if pending.len() > MAX_LINE {
                            stats.skipped += 1;
                        } else {
                            self.count(&pending, today, offset);
                        }
                        stats.lines += 1;
                        self.offset += pending.len() as u64 + 1;
                        pending.clear();
                    }
                    None => {
                        pending.extend_from_slice(rest);
                        rest = &[];
                        if pending.len() > MAX_LINE {
                            // Too long to keep: skip to its end, here or in a later read.
                            stats.skipped += 1;
                            self.offset += pending.len() as u64;
                            self.skipping = true;
                            pending.clear();
                        }
                    }
                }
            }
        }
        // `pending` holds a half-written last line: it is read again next time.
        self.skipped += stats.skipped;
        Ok(stats)
    }

    fn count(&mut self, bytes: &[u8], today: &str, offset: UtcOffset) {
        match self.format {
            Format::Claude => self.count_response(bytes, today, offset),
            Format::Codex => self.count_total(bytes, today, offset),
        }
    }

    /// A codex rollout line: a turn's model, or a running total counted by its growth.
    fn count_total(&mut self, bytes: &[u8], today: &str, offset: UtcOffset) {
        match codex::parse(bytes, offset) {
            Some(codex::Line::Model(model)) => self.model = Some(model),
            Some(codex::Line::Counts { total, last, day }) => {
                let counted = codex::counted(&self.total, &total, last.as_ref());
                self.total = total;
                let model = self.model.as_deref().unwrap_or("unknown");
                self.tally
                    .add(day.as_deref().unwrap_or(today), model, &counted);
            }
            None => {}
        }
    }

    /// A Claude Code transcript line: a response's usage, once.
    fn count_response(&mut self, bytes: &[u8], today: &str, offset: UtcOffset) {
        let Some(entry) = line::parse(bytes, offset) else {
            return;
        };
        let day = entry.day.as_deref().unwrap_or(today);
        let Some(key) = entry.key else {
            self.tally.add(day, &entry.model, &entry.tokens);
            return;
        };
        if let Some((_, counted)) = self.recent.iter_mut().find(|(k, _)| *k == key) {
            let growth = counted.growth_to(&entry.tokens);
            *counted = counted.max(&entry.tokens);
            self.tally.add(day, &entry.model, &growth);
            return;
        }
        self.tally.add(day, &entry.model, &entry.tokens);
        self.recent.push_back((key, entry.tokens));
        while self.recent.len() > RECENT {
            self.recent.pop_front();
        }
    }
}

#[cfg(test)]
#[path = "reader_tests.rs"]
mod tests;
