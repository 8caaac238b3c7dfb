//! Notes to the poller from other processes. `the-loop sessions reset` may run while a
//! supervisor holds the ledger in memory and rewrites it every cycle, so it does not edit
//! the ledger: it drops a note file, `poll/<owner>-<repo>.forget-<number>-<uuid>`, and
//! the poller applies and deletes it at the start of its next cycle. One file per note
//! (created atomically under a unique name) needs no lock and loses nothing: a note
//! written while the poller drains is simply seen next time.

use crate::fsutil;
use crate::paths::StatePaths;
use std::fs;
use std::io;
use std::path::PathBuf;

use super::file_stem;

fn prefix(repo: &str) -> String {
    format!("{}.forget-", file_stem(repo))
}

/// Forgets an item's poll ledger entry (`sessions reset`, SPEC §7.5): its resolved ids,
/// attempts and give-ups, and anything pending for it. Its existing comments are
/// baselined again at the next cycle, as if the item were first seen (so a pending
/// authorized control command is fed once more; answered ones are not). Safe to call
/// from any process, with or without a supervisor running.
pub fn forget_item(paths: &StatePaths, repo: &str, number: u64) -> io::Result<()> {
    crate::github::repo_path(repo)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    let name = format!("{}{number}-{}", prefix(repo), uuid::Uuid::new_v4().simple());
    fsutil::atomic_write(&paths.poll_dir().join(name), b"")
}

/// The forget notes waiting for `repo`: `(item number, note file)`.
pub fn pending_forgets(paths: &StatePaths, repo: &str) -> Vec<(u64, PathBuf)> {
    let prefix = prefix(repo);
    let Ok(dir) = fs::read_dir(paths.poll_dir()) else {
        return Vec::new();
    };
    let mut notes: Vec<(u64, PathBuf)> = dir
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let rest = name.strip_prefix(&prefix)?;
            let number = rest.split('-').next()?.parse().ok()?;
            Some((number, entry.path()))
        })
        .collect();
    notes.sort();
    notes
}
