//! The log is bounded (SPEC §15.5): `events.jsonl` is rotated at `events.maxBytes` into
//! `events.jsonl.1` (older files move to `.2`, `.3`, …), keeping `events.keepFiles`
//! rotated files. Only the supervisor rotates (it holds `supervisor.lock`, so there is
//! one rotator); every other process appends by path, so a line written while the
//! rename happens lands whole in one file or the other — readers follow both.
//!
//! Readers never depend on the whole history: `the-loop events` reads the kept files
//! oldest first ([`retained`]), a follower finishes a rotated file before it moves on,
//! and state derived from the log (open questions) is cached in a checkpoint
//! ([`super::checkpoint`]) so that only what was appended since is read.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

/// The bounds, from `events.maxBytes` / `events.keepFiles`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rotation {
    pub max_bytes: u64,
    pub keep_files: u32,
}

impl Rotation {
    /// At least one byte and one kept file, whatever was asked.
    pub fn new(max_bytes: u64, keep_files: u32) -> Self {
        Self {
            max_bytes: max_bytes.max(1),
            keep_files: keep_files.max(1),
        }
    }
}

/// A rotated file could be reached at most this far back (a guard against a directory
/// full of stray `events.jsonl.N`).
const MAX_FILES: u32 = 1000;

/// `events.jsonl.N`.
pub fn rotated(log: &Path, n: u32) -> PathBuf {
    let mut name = log.as_os_str().to_owned();
    name.push(format!(".{n}"));
    PathBuf::from(name)
}

/// The files of the log that exist, oldest first: `events.jsonl.N` … `.1`, then
/// `events.jsonl` itself.
pub fn retained(log: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = (1..=MAX_FILES)
        .map(|n| rotated(log, n))
        .take_while(|p| p.exists())
        .collect();
    files.reverse();
    if log.exists() {
        files.push(log.to_path_buf());
    }
    files
}

/// Which file a path names now, to tell a rotated file from its successor.
pub type FileId = (u64, u64);

#[cfg(unix)]
pub fn file_id(file: &File) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    file.metadata().ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
pub fn file_id(_file: &File) -> Option<FileId> {
    None
}

/// The identity of the file at `path`, if it exists.
pub fn path_id(path: &Path) -> Option<FileId> {
    File::open(path).ok().and_then(|f| file_id(&f))
}

/// Rotates `log`: `.N-1` → `.N` …, `log` → `.1`, deleting what is beyond `keep`. A
/// missing log is nothing to rotate.
pub fn rotate(log: &Path, keep: u32) -> io::Result<bool> {
    if !log.exists() {
        return Ok(false);
    }
    let keep = keep.max(1);
    // Files beyond the bound (also when keepFiles was lowered) go first.
    let mut n = keep;
    while n < MAX_FILES && rotated(log, n).exists() {
        n += 1;
    }
    for stale in (keep..n).rev() {
        remove_if_present(&rotated(log, stale))?;
    }
    for k in (1..keep).rev() {
        let from = rotated(log, k);
        if from.exists() {
            fs::rename(&from, rotated(log, k + 1))?;
        }
    }
    fs::rename(log, rotated(log, 1))?;
    Ok(true)
}

fn remove_if_present(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Rotates `log` if it has reached `rotation.max_bytes` (at start, an oversized log).
pub fn rotate_if_oversized(log: &Path, rotation: Rotation) -> io::Result<bool> {
    match fs::metadata(log) {
        Ok(m) if m.len() >= rotation.max_bytes => rotate(log, rotation.keep_files),
        Ok(_) => Ok(false),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn rotation_shifts_and_keeps_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("events.jsonl");
        for round in 0..5 {
            fs::write(&log, format!("round {round}\n")).unwrap();
            assert!(rotate(&log, 3).unwrap());
        }
        assert_eq!(
            names(dir.path()),
            ["events.jsonl.1", "events.jsonl.2", "events.jsonl.3"]
        );
        assert_eq!(fs::read_to_string(rotated(&log, 1)).unwrap(), "round 4\n");
        assert_eq!(fs::read_to_string(rotated(&log, 3)).unwrap(), "round 2\n");
        assert!(!rotate(&log, 3).unwrap(), "no log, nothing to do");
        fs::write(&log, "now\n").unwrap();
        let files: Vec<String> = retained(&log)
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            files,
            [
                "events.jsonl.3",
                "events.jsonl.2",
                "events.jsonl.1",
                "events.jsonl"
            ]
        );
        // keepFiles lowered: the extra files go at the next rotation.
        rotate(&log, 1).unwrap();
        assert_eq!(names(dir.path()), ["events.jsonl.1"]);
    }

    #[test]
    fn only_an_oversized_log_is_rotated() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("events.jsonl");
        let rotation = Rotation {
            max_bytes: 10,
            keep_files: 2,
        };
        assert!(!rotate_if_oversized(&log, rotation).unwrap());
        fs::write(&log, "short\n").unwrap();
        assert!(!rotate_if_oversized(&log, rotation).unwrap());
        fs::write(&log, "long enough now\n").unwrap();
        assert!(rotate_if_oversized(&log, rotation).unwrap());
        assert!(!log.exists() && rotated(&log, 1).exists());
    }
}
