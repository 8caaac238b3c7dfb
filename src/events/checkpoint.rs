//! State derived from the log, cached (SPEC §15.5). Some readers need what the whole
//! history implies — the open questions — but must not read the whole history. A
//! checkpoint file holds that state as of a byte offset of one log file (named by its
//! device and inode, so a rotation cannot confuse it): a reader loads it and reads only
//! what was appended since, through the rotated files if the log rotated meanwhile, and
//! writes a fresh checkpoint when it had much to read. The supervisor refreshes it as
//! the log grows (off the writer's thread) and before it rotates an oversized log, so
//! the state survives rotation and no reader's cost grows with history.
//!
//! Any process may write a checkpoint (atomically, under a unique temporary name);
//! each is consistent on its own, so the last writer wins and an older one only makes
//! the next reader read a little more. With no usable checkpoint (none yet, or it fell
//! off the kept files) the state is rebuilt from every kept file.

use super::Event;
use super::read::{Filter, ReadStats, examine};
use super::rotate::{self, FileId};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// A reader that read at least this much writes a fresh checkpoint.
pub const REWRITE_AFTER: u64 = 256 * 1024;

/// State folded from the log's events, in log order.
pub trait LogState: Default + Serialize + DeserializeOwned {
    /// The events that can change it (readers skip the rest cheaply).
    fn filter() -> Filter;
    fn observe(&mut self, event: &Event);
}

#[derive(Debug, Serialize, Deserialize)]
struct Stored<S> {
    /// `[dev, ino]` of the file `offset` belongs to.
    file: FileId,
    /// A digest of that file's first line: an inode number is reused once its file is
    /// deleted, so the number alone could name a newer file.
    head: String,
    offset: u64,
    state: S,
}

/// The kept files with what identifies each: `(path, [dev, ino], first-line digest)`.
type Named = (PathBuf, Option<FileId>, Option<String>);

/// A digest of a file's first complete line (within its first 4 KiB); `None` while
/// there is none (such a file is not checkpointed).
fn head_digest(path: &Path) -> Option<String> {
    use sha2::{Digest, Sha256};
    use std::io::Read;
    let mut first = Vec::new();
    File::open(path)
        .ok()?
        .take(4096)
        .read_to_end(&mut first)
        .ok()?;
    let end = first.iter().position(|b| *b == b'\n')?;
    Some(hex::encode(&Sha256::digest(&first[..end])[..12]))
}

/// The state now, and where in the current `events.jsonl` it ends (a follower
/// continues there).
#[derive(Debug)]
pub struct Caught<S> {
    pub state: S,
    pub end: u64,
    /// Bytes read to get here (the checkpoint saved the rest).
    pub read: u64,
}

/// The checkpoint of `state_name` beside `log`: `<dir>/<state_name>.json`.
pub fn path_for(log: &Path, state_name: &str) -> PathBuf {
    log.with_file_name(format!("{state_name}.json"))
}

/// Loads the checkpoint at `checkpoint`, reads what `log` gained since and returns the
/// state as of the log's end. Writes a fresh checkpoint when it read
/// [`REWRITE_AFTER`] bytes or more, or when `force`.
pub fn catch_up<S: LogState>(log: &Path, checkpoint: &Path, force: bool) -> io::Result<Caught<S>> {
    let stored: Option<Stored<S>> = std::fs::read(checkpoint)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok());
    let files: Vec<Named> = rotate::retained(log)
        .into_iter()
        .map(|p| {
            let id = rotate::path_id(&p);
            let head = head_digest(&p);
            (p, id, head)
        })
        .collect();
    let (mut state, start, offset) = match stored {
        Some(s) => match files
            .iter()
            .position(|(_, id, head)| *id == Some(s.file) && head.as_ref() == Some(&s.head))
        {
            Some(i) => (s.state, i, s.offset),
            None => (S::default(), 0, 0),
        },
        None => (S::default(), 0, 0),
    };
    let filter = S::filter();
    let mut read = 0;
    let mut end = 0;
    let mut last_id = None;
    let mut last_head = None;
    for (i, (path, id, head)) in files.iter().enumerate().skip(start) {
        let from = if i == start { offset } else { 0 };
        let (position, bytes) = fold(path, from, &filter, &mut state)?;
        read += bytes;
        end = position;
        last_id = *id;
        last_head.clone_from(head);
    }
    let current = files.last().is_some_and(|(p, _, _)| p == log);
    if !current {
        end = 0; // the log was rotated and nothing was written since
        last_id = None;
    }
    // A checkpoint on a rotated file is moved to the current one at once, before the
    // rotated file can fall off the kept ones.
    let behind = start + 1 < files.len() || stored_missing(&files, start, offset);
    let named = last_id.zip(last_head);
    if let Some((file, head)) = named.filter(|_| force || behind || read >= REWRITE_AFTER) {
        let stored = Stored {
            file,
            head,
            offset: end,
            state,
        };
        if let Err(e) = crate::fsutil::atomic_write_json(checkpoint, &stored) {
            tracing::warn!(path = %checkpoint.display(), error = %e, "event log checkpoint not written");
        }
        return Ok(Caught {
            state: stored.state,
            end,
            read,
        });
    }
    Ok(Caught { state, end, read })
}

/// No checkpoint was used: the state was rebuilt from the start of the kept files.
fn stored_missing(files: &[Named], start: usize, offset: u64) -> bool {
    start == 0 && offset == 0 && !files.is_empty()
}

/// Applies the complete lines of `path` from `from` on; returns the offset just past
/// the last complete line and the bytes read.
fn fold<S: LogState>(
    path: &Path,
    from: u64,
    filter: &Filter,
    state: &mut S,
) -> io::Result<(u64, u64)> {
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((0, 0)),
        Err(e) => return Err(e),
    };
    let len = file.metadata()?.len();
    // A checkpoint past the end (the file was replaced by a shorter one): start over.
    let from = if from > len { 0 } else { from };
    file.seek(SeekFrom::Start(from))?;
    let mut input = BufReader::with_capacity(256 * 1024, file);
    let mut position = from;
    let mut stats = ReadStats::default();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = input.read_until(b'\n', &mut buf)?;
        if n == 0 || buf.last() != Some(&b'\n') {
            break;
        }
        position += n as u64;
        // A cheap pre-check: most lines are not of the types the state follows.
        if let Some(record) = examine(&buf[..n - 1], filter, &mut stats) {
            state.observe(&record.event);
        }
    }
    Ok((position, position - from))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{EventLog, EventType, Source};

    /// Counts `session.reset` events.
    #[derive(Debug, Default, Serialize, Deserialize)]
    struct Resets(u64);

    impl LogState for Resets {
        fn filter() -> Filter {
            Filter::parse(Some("session.reset"), None, None, None).unwrap()
        }
        fn observe(&mut self, _event: &Event) {
            self.0 += 1;
        }
    }

    fn emit(log: &EventLog, n: usize) {
        for _ in 0..n {
            log.emit(Event::new(Source::Cli, EventType::SessionReset))
                .unwrap();
            log.emit(Event::new(Source::Cli, EventType::PollCycle))
                .unwrap();
        }
    }

    #[test]
    fn a_checkpoint_is_caught_up_across_rotations() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let cp = path_for(&path, "resets");
        let log = EventLog::open_path(&path);
        emit(&log, 3);
        let first: Caught<Resets> = catch_up(&path, &cp, true).unwrap();
        assert_eq!(first.state.0, 3);
        assert!(cp.exists());
        emit(&log, 2);
        rotate::rotate(&path, 2).unwrap();
        emit(&log, 4);
        let caught: Caught<Resets> = catch_up(&path, &cp, false).unwrap();
        assert_eq!(
            caught.state.0, 9,
            "2 in the rotated file after the checkpoint, 4 since"
        );
        assert_eq!(caught.end, std::fs::metadata(&path).unwrap().len());
        assert!(caught.read < std::fs::metadata(&path).unwrap().len() * 2);

        // Rotated twice more: the checkpoint's file is gone; rebuilt from what is kept.
        catch_up::<Resets>(&path, &cp, true).unwrap();
        for _ in 0..3 {
            rotate::rotate(&path, 1).unwrap();
            emit(&log, 1);
        }
        let rebuilt: Caught<Resets> = catch_up(&path, &cp, false).unwrap();
        assert_eq!(rebuilt.state.0, 2, "the one kept file and the current one");
    }

    #[test]
    fn no_log_and_a_corrupt_checkpoint_read_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let cp = path_for(&path, "resets");
        std::fs::write(&cp, b"{not json").unwrap();
        let caught: Caught<Resets> = catch_up(&path, &cp, true).unwrap();
        assert_eq!((caught.state.0, caught.end), (0, 0));
    }
}
