//! One paste at a time per session, across processes (SPEC §7.4 "per session,
//! deliveries are strictly FIFO").
//!
//! The dispatcher's per-session lane orders deliveries inside the supervisor, but an
//! operator's reply also comes from other processes: `the-loop reply`, a viewer TUI.
//! A delivery is two tmux pastes — the text, then a `\r` after `submitDelayMs` — so a
//! reply pasted in between would be submitted together with the event as one message.
//! Both paths therefore hold this lock from the first paste to the submit: an exclusive
//! `flock` on `sessions/<slug>.paste.lock`. `flock` belongs to the open file, so two
//! holders in one process exclude each other too, and the kernel releases it when a
//! holder dies (no stale lock).

use crate::work_item::WorkItemRef;
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often a waiting caller tries again.
const RETRY: Duration = Duration::from_millis(10);

/// The held lock; dropping it lets the next paste in.
#[derive(Debug)]
pub struct PasteLock {
    _lock: Flock<File>,
}

#[derive(Debug, thiserror::Error)]
pub enum PasteLockError {
    #[error("cannot lock {}: {source}; check the state directory (THE_LOOP_HOME) is writable", path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("another delivery to this session is still in progress after {}s", waited.as_secs())]
    Busy { waited: Duration },
}

/// The lock file of `item`'s session under the registry directory `dir`. Slugs end in
/// the item number, so `<slug>.paste` is never another item's slug.
pub fn path(dir: &Path, item: &WorkItemRef) -> PathBuf {
    dir.join(format!("{}.paste.lock", item.slug()))
}

/// Takes `item`'s paste lock, waiting up to `wait` for a paste in progress to finish.
pub async fn acquire(
    dir: &Path,
    item: &WorkItemRef,
    wait: Duration,
) -> Result<PasteLock, PasteLockError> {
    let path = path(dir, item);
    let io_error = |source| PasteLockError::Io {
        path: path.clone(),
        source,
    };
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        crate::fsutil::create_private_dir_all(dir).map_err(io_error)?;
        let file = crate::fsutil::open_private(
            File::options().create(true).truncate(false).write(true),
            &path,
        )
        .map_err(io_error)?;
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => return Ok(PasteLock { _lock: lock }),
            Err((_, Errno::EWOULDBLOCK | Errno::EINTR)) => {}
            Err((_, errno)) => return Err(io_error(io::Error::from(errno))),
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(PasteLockError::Busy { waited: wait });
        }
        tokio::time::sleep(RETRY).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_second_holder_waits_and_gives_up_when_told() {
        let dir = tempfile::tempdir().unwrap();
        let item = WorkItemRef::new("octo", "repo", 15);
        let held = acquire(dir.path(), &item, Duration::ZERO).await.unwrap();
        let err = acquire(dir.path(), &item, Duration::from_millis(30))
            .await
            .unwrap_err();
        assert!(matches!(err, PasteLockError::Busy { .. }), "{err}");
        let other = WorkItemRef::new("octo", "repo", 16);
        let _independent = acquire(dir.path(), &other, Duration::ZERO).await.unwrap();
        drop(held);
        acquire(dir.path(), &item, Duration::ZERO).await.unwrap();
    }

    #[tokio::test]
    async fn a_waiter_gets_the_lock_once_it_is_released() {
        let dir = tempfile::tempdir().unwrap();
        let item = WorkItemRef::new("octo", "repo", 15);
        let held = acquire(dir.path(), &item, Duration::ZERO).await.unwrap();
        let dir_path = dir.path().to_path_buf();
        let waiter = tokio::spawn(async move {
            acquire(&dir_path, &item, Duration::from_secs(10))
                .await
                .is_ok()
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiter.is_finished());
        drop(held);
        assert!(waiter.await.unwrap());
    }
}
