//! The single-supervisor lock (SPEC §11.6): an exclusive `flock` on
//! `<state>/supervisor.lock`. Whoever holds it polls, serves and dispatches; a second
//! `the-loop tui` finds it held and becomes a viewer.
//!
//! `flock` belongs to the open file, so the kernel drops it when the holder exits for any
//! reason (`kill -9` included): no stale lock to clean up. Rust opens files close-on-exec,
//! so a tmux server or harness spawned by the supervisor never inherits it. The file also
//! names its holder (pid, start time) for viewers; that text is written in place, never
//! by rename — a renamed-in file would be a different inode with no lock on it.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::paths::StatePaths;

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("cannot open the supervisor lock {}: {source}; check the state directory (THE_LOOP_HOME) is writable", path.display())]
    Open { path: PathBuf, source: io::Error },
    #[error("cannot lock {}: {source}; the state directory must be on a filesystem that supports flock", path.display())]
    Lock { path: PathBuf, source: io::Error },
}

/// Who holds (or last held) the lock, as written into the lock file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockHolder {
    pub pid: u32,
    /// `YYYY-MM-DDTHH:MM:SS.mmmZ`.
    pub started_at: String,
}

/// The held lock. Dropping it (or exiting) releases it.
#[derive(Debug)]
pub struct SupervisorLock {
    file: File,
    path: PathBuf,
    holder: LockHolder,
}

impl SupervisorLock {
    /// Takes the lock if nobody holds it: `Ok(None)` when another supervisor (in this
    /// process or any other) does. Never waits.
    pub fn try_acquire(paths: &StatePaths) -> Result<Option<Self>, LockError> {
        let path = paths.lock();
        let open_err = |source| LockError::Open {
            path: path.clone(),
            source,
        };
        crate::fsutil::create_private_dir_all(&paths.root).map_err(open_err)?;
        let mut options = OpenOptions::new();
        // No truncate: the holder's record must survive until the lock is ours.
        options.read(true).write(true).create(true).truncate(false);
        let file = crate::fsutil::open_private(&mut options, &path).map_err(open_err)?;
        // `File::try_lock` is stable since 1.89 and the toolchain is newer; Cargo.toml's
        // `rust-version` (1.85) predates it (and the let-chains already in use), and
        // bumping it re-lints every module, so the lint is silenced here only.
        let locked = file.try_lock();
        match locked {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Ok(None),
            Err(TryLockError::Error(source)) => return Err(LockError::Lock { path, source }),
        }
        let holder = LockHolder {
            pid: std::process::id(),
            started_at: crate::time::now_ts(),
        };
        let mut lock = Self { file, path, holder };
        // The record is for viewers' information; failing to write it does not make the
        // lock any less held.
        if let Err(e) = lock.write_holder() {
            tracing::warn!(path = %lock.path.display(), error = %e, "could not record the lock holder");
        }
        Ok(Some(lock))
    }

    pub fn holder(&self) -> &LockHolder {
        &self.holder
    }

    fn write_holder(&mut self) -> io::Result<()> {
        let mut text = serde_json::to_string(&self.holder).map_err(io::Error::other)?;
        text.push('\n');
        self.file.set_len(0)?;
        self.file.seek(SeekFrom::Start(0))?;
        self.file.write_all(text.as_bytes())
    }
}

impl Drop for SupervisorLock {
    /// Clears the record before the close releases the lock, so no viewer reads a holder
    /// that has gone.
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
    }
}

/// The holder recorded in the lock file, if any. Informational: after a crash the record
/// of a dead holder remains until the next supervisor starts, so a caller that needs to
/// know whether a supervisor runs calls [`SupervisorLock::try_acquire`].
pub fn read_holder(paths: &StatePaths) -> Option<LockHolder> {
    let mut text = String::new();
    File::open(paths.lock())
        .ok()?
        .read_to_string(&mut text)
        .ok()?;
    serde_json::from_str(text.trim()).ok()
}
