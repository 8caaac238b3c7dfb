//! Tailing the log as it grows (`the-loop events --follow`, TUI viewers of another
//! supervisor). A [`Follower`] remembers a byte offset and, on each [`poll`], returns the
//! complete lines appended since. When the log was rotated (SPEC §15.5) it first
//! finishes the file it was reading — now `events.jsonl.1` — then continues from the
//! start of the new one, so nothing written around a rotation is missed. A file that was
//! truncated or replaced otherwise is read from its start instead of waiting forever at
//! an offset that no longer exists.
//!
//! Polling rather than file notifications: it costs one `open` + `fstat` per tick, works
//! on every filesystem, and cannot miss an event to a coalesced notification.
//!
//! [`poll`]: Follower::poll

use super::read::{Filter, ReadStats, Record, complete_end, examine};
use super::rotate::{self, FileId, file_id};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// At most this much is read per poll, so a follower that starts far behind catches up
/// over several polls instead of one huge allocation.
const MAX_BYTES_PER_POLL: u64 = 4 * 1024 * 1024;

#[derive(Debug)]
pub struct Follower {
    path: PathBuf,
    position: u64,
    file_id: Option<FileId>,
    filter: Filter,
    stats: ReadStats,
    restarts: u64,
    rotations: u64,
}

impl Follower {
    /// Follows from the current end of the file (only events appended from now on).
    pub fn from_end(path: impl Into<PathBuf>, filter: Filter) -> io::Result<Self> {
        let path = path.into();
        let end = match File::open(&path) {
            Ok(mut f) => {
                let len = f.metadata()?.len();
                complete_end(&mut f, len)?
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => 0,
            Err(e) => return Err(e),
        };
        Ok(Self::from_offset(path, end, filter))
    }

    /// Follows from `offset`, which must be a line boundary: 0, or the `position()` /
    /// `end` a reader or [`tail`](super::tail) returned for the same file.
    pub fn from_offset(path: impl Into<PathBuf>, offset: u64, filter: Filter) -> Self {
        let path = path.into();
        let file_id = File::open(&path).ok().and_then(|f| file_id(&f));
        Self {
            path,
            position: offset,
            file_id,
            filter,
            stats: ReadStats::default(),
            restarts: 0,
            rotations: 0,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn position(&self) -> u64 {
        self.position
    }

    /// Counts over everything this follower has read.
    pub fn stats(&self) -> ReadStats {
        self.stats
    }

    /// How many times the file was found truncated or rewritten and read from the start.
    pub fn restarts(&self) -> u64 {
        self.restarts
    }

    /// How many rotations it followed (each finished the rotated file first).
    pub fn rotations(&self) -> u64 {
        self.rotations
    }

    /// The matching events in the complete lines appended since the last poll. A last
    /// line without its newline is not returned until it is finished. A missing file
    /// yields nothing (it may be created later).
    pub fn poll(&mut self) -> io::Result<Vec<Record>> {
        let mut file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let id = file_id(&file);
        let replaced = id.is_some() && self.file_id.is_some() && id != self.file_id;
        let mut out = Vec::new();
        if replaced {
            // Rotated: the rest of the file we were reading is `events.jsonl.1` now.
            let old = rotate::rotated(&self.path, 1);
            if let Ok(mut rotated) = File::open(&old)
                && file_id(&rotated) == self.file_id
                && at_line_start(&mut rotated, self.position)?
            {
                let len = rotated.metadata()?.len();
                self.read_lines(rotated, len, u64::MAX, &mut out)?;
                self.rotations += 1;
            } else {
                self.restarts += 1;
            }
            self.position = 0;
        }
        self.file_id = id;
        let len = file.metadata()?.len();
        if !replaced && (len < self.position || !at_line_start(&mut file, self.position)?) {
            self.position = 0;
            self.restarts += 1;
        }
        if len > self.position {
            self.read_lines(file, len, MAX_BYTES_PER_POLL, &mut out)?;
        }
        Ok(out)
    }

    /// Reads the complete lines of `file` from the current position up to `len` (at
    /// most `budget` bytes), advancing the position.
    fn read_lines(
        &mut self,
        mut file: File,
        len: u64,
        budget: u64,
        out: &mut Vec<Record>,
    ) -> io::Result<()> {
        file.seek(SeekFrom::Start(self.position))?;
        let mut input = BufReader::with_capacity(64 * 1024, file.take(len - self.position));
        let mut buf = Vec::new();
        let mut consumed = 0;
        while consumed < budget {
            buf.clear();
            let n = input.read_until(b'\n', &mut buf)?;
            if n == 0 || buf.last() != Some(&b'\n') {
                break; // caught up, or a line still being written
            }
            consumed += n as u64;
            self.position += n as u64;
            if let Some(record) = examine(&buf[..n - 1], &self.filter, &mut self.stats) {
                out.push(record);
            }
        }
        Ok(())
    }
}

/// An offset we stopped at always follows a newline; if it no longer does, the file was
/// rewritten (truncated and refilled past our offset between two polls).
fn at_line_start(file: &mut File, position: u64) -> io::Result<bool> {
    if position == 0 {
        return Ok(true);
    }
    let mut byte = [0u8; 1];
    file.seek(SeekFrom::Start(position - 1))?;
    match file.read_exact(&mut byte) {
        Ok(()) => Ok(byte[0] == b'\n'),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}
