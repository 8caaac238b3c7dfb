//! The state writer (SPEC §15.6): one thread that performs the supervisor's durable
//! state writes — temp file, fsync, rename ([`crate::fsutil::atomic_write`]) — so no
//! fsync ever runs on an async runtime thread. Callers hand it the bytes (serialized on
//! their side, under whatever lock keeps them consistent) and get a [`Durable`]: await
//! it when the write must be on disk before going on (a poll ledger before its pending
//! events are fed, a webhook claim before the paste), or drop it when an in-memory copy
//! is the authority and the file is only its backup (the router's dedupe).
//!
//! Writes are performed in the order they were handed over. A file handed over again
//! before its previous bytes were written is written once, with the newest bytes, and
//! every waiter of the older ones is answered by that write: "at least this state is on
//! disk". A process that exits calls [`flush`] first (the supervisor's shutdown does).

use std::collections::{HashMap, VecDeque};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use tokio::sync::oneshot;

type Waiter = oneshot::Sender<Result<(), String>>;

#[derive(Default)]
struct Queue {
    /// Files waiting, oldest first (each once).
    order: VecDeque<PathBuf>,
    /// Their newest bytes and everyone waiting for them.
    latest: HashMap<PathBuf, (Vec<u8>, Vec<Waiter>)>,
    /// Barriers: answered once everything handed over before them is written.
    barriers: Vec<(u64, Waiter)>,
    /// Writes handed over / performed so far (for the barriers).
    submitted: u64,
    written: u64,
}

struct Writer {
    queue: Mutex<Queue>,
    wake: Condvar,
}

impl Writer {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn run(&self) {
        loop {
            let (path, bytes, waiters) = {
                let mut q = self.lock();
                loop {
                    if let Some(path) = q.order.pop_front() {
                        let (bytes, waiters) = q.latest.remove(&path).unwrap_or_default();
                        break (path, bytes, waiters);
                    }
                    q = self.wake.wait(q).unwrap_or_else(|e| e.into_inner());
                }
            };
            let result = crate::fsutil::atomic_write(&path, &bytes).map_err(|e| e.to_string());
            if let Err(e) = &result {
                tracing::warn!(path = %path.display(), error = %e, "state file not written");
            }
            for waiter in waiters {
                let _ = waiter.send(result.clone());
            }
            let mut q = self.lock();
            // Nothing waiting: everything handed over so far is written (a file handed
            // over again during this write is queued anew, so not empty then).
            if q.order.is_empty() {
                q.written = q.submitted;
            }
            let written = q.written;
            let (done, open): (Vec<_>, Vec<_>) = std::mem::take(&mut q.barriers)
                .into_iter()
                .partition(|(at, _)| *at <= written);
            q.barriers = open;
            drop(q);
            for (_, waiter) in done {
                let _ = waiter.send(Ok(()));
            }
        }
    }
}

fn writer() -> &'static Writer {
    static WRITER: OnceLock<&'static Writer> = OnceLock::new();
    WRITER.get_or_init(|| {
        let writer: &'static Writer = Box::leak(Box::new(Writer {
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
        }));
        let spawned = std::thread::Builder::new()
            .name("state-writer".into())
            .spawn(move || writer.run());
        if let Err(e) = spawned {
            // Without the thread nothing would ever be written: say so loudly. Waiters
            // see their sender dropped and report the failure.
            tracing::error!(error = %e, "the state writer thread could not start");
        }
        writer
    })
}

/// A write handed to the state writer.
#[must_use = "await it (or call wait_blocking) when the write must be on disk first; drop it otherwise"]
pub struct Durable {
    rx: Option<oneshot::Receiver<Result<(), String>>>,
}

impl Durable {
    /// Nothing to wait for (nothing was written).
    pub fn done() -> Self {
        Self { rx: None }
    }

    /// Resolves once the bytes (or newer ones for the same file) are on disk.
    pub async fn wait(self) -> io::Result<()> {
        match self.rx {
            None => Ok(()),
            Some(rx) => match rx.await {
                Ok(result) => result.map_err(io::Error::other),
                Err(_) => Err(io::Error::other("the state writer stopped")),
            },
        }
    }

    /// As [`wait`](Self::wait), blocking the current thread (for code that is not
    /// async: tests, start-up, command-line tools).
    pub fn wait_blocking(self) -> io::Result<()> {
        futures::executor::block_on(self.wait())
    }
}

/// Hands `bytes` over to be written atomically to `path`.
pub fn write(path: PathBuf, bytes: Vec<u8>) -> Durable {
    let (tx, rx) = oneshot::channel();
    let w = writer();
    let mut q = w.lock();
    q.submitted += 1;
    match q.latest.get_mut(&path) {
        Some((pending, waiters)) => {
            *pending = bytes;
            waiters.push(tx);
        }
        None => {
            q.latest.insert(path.clone(), (bytes, vec![tx]));
            q.order.push_back(path);
        }
    }
    drop(q);
    w.wake.notify_one();
    Durable { rx: Some(rx) }
}

/// Serializes `value` as pretty JSON (as [`crate::fsutil::atomic_write_json`] does) and
/// hands it over.
pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Durable {
    match serde_json::to_vec_pretty(value) {
        Ok(mut bytes) => {
            bytes.push(b'\n');
            write(path.to_path_buf(), bytes)
        }
        Err(e) => {
            let (tx, rx) = oneshot::channel();
            let _ = tx.send(Err(format!("cannot serialize {}: {e}", path.display())));
            Durable { rx: Some(rx) }
        }
    }
}

/// Resolves once everything handed over before the call is on disk.
pub fn flush() -> Durable {
    let (tx, rx) = oneshot::channel();
    let w = writer();
    let mut q = w.lock();
    if q.order.is_empty() && q.written >= q.submitted {
        let _ = tx.send(Ok(()));
    } else {
        let at = q.submitted;
        q.barriers.push((at, tx));
    }
    drop(q);
    w.wake.notify_one();
    Durable { rx: Some(rx) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn writes_land_in_order_and_the_newest_bytes_win() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        let pending: Vec<Durable> = (0..50)
            .map(|n| write(path.clone(), format!("{n}").into_bytes()))
            .collect();
        for d in pending {
            d.wait().await.unwrap();
        }
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "49");
        let other = dir.path().join("other.json");
        let _dropped = write(other.clone(), b"x".to_vec());
        flush().wait().await.unwrap();
        assert_eq!(std::fs::read(&other).unwrap(), b"x");
    }

    #[test]
    fn a_failed_write_is_reported_to_its_waiter() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, "").unwrap();
        let err = write(blocker.join("state.json"), b"x".to_vec())
            .wait_blocking()
            .unwrap_err();
        assert!(!err.to_string().is_empty());
        write_json(&dir.path().join("ok.json"), &serde_json::json!({"a": 1}))
            .wait_blocking()
            .unwrap();
        assert!(Durable::done().wait_blocking().is_ok());
    }
}
