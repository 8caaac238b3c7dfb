//! Per-session FIFO lanes (SPEC §7.4): one queue and one worker task per session, so
//! deliveries to a session happen strictly in the order they were submitted while
//! different sessions deliver concurrently. A worker that has been idle for a while
//! ends and its lane is removed; the next job starts a new one.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

struct Lane<J> {
    tx: UnboundedSender<J>,
    depth: Arc<AtomicUsize>,
}

/// The lanes, keyed by session (its slug).
pub(crate) struct Lanes<J> {
    lanes: Mutex<HashMap<String, Lane<J>>>,
    idle: Duration,
}

/// What [`Lanes::push`] did.
pub(crate) struct Pushed<J> {
    /// Jobs waiting in the lane, this one included.
    pub depth: usize,
    /// The lane had no worker: start one with this receiver (see [`Lanes::next`]).
    pub start_worker: Option<Worker<J>>,
}

/// A lane's receiving end, owned by its worker task.
pub(crate) struct Worker<J> {
    key: String,
    rx: UnboundedReceiver<J>,
    depth: Arc<AtomicUsize>,
}

impl<J: Send + 'static> Lanes<J> {
    /// Workers end after `idle` without a job.
    pub fn new(idle: Duration) -> Self {
        Self {
            lanes: Mutex::new(HashMap::new()),
            idle,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Lane<J>>> {
        self.lanes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Appends `job` to `key`'s lane.
    pub fn push(&self, key: &str, job: J) -> Pushed<J> {
        let mut lanes = self.lock();
        let job = match lanes.get(key) {
            Some(lane) => {
                // Counted before sending, so the worker never counts below zero.
                let depth = lane.depth.fetch_add(1, Ordering::SeqCst) + 1;
                match lane.tx.send(job) {
                    Ok(()) => {
                        return Pushed {
                            depth,
                            start_worker: None,
                        };
                    }
                    // The worker is gone (it panicked): replace the lane.
                    Err(returned) => returned.0,
                }
            }
            None => job,
        };
        let (tx, rx) = unbounded_channel();
        let depth = Arc::new(AtomicUsize::new(1));
        if tx.send(job).is_err() {
            unreachable!("the receiver is held right here");
        }
        lanes.insert(
            key.to_string(),
            Lane {
                tx,
                depth: Arc::clone(&depth),
            },
        );
        Pushed {
            depth: 1,
            start_worker: Some(Worker {
                key: key.to_string(),
                rx,
                depth,
            }),
        }
    }

    /// The worker's next job, or `None` when the lane has been idle for the idle time
    /// (the lane is then removed, under the same lock `push` takes, so no job is lost).
    pub async fn next(&self, worker: &mut Worker<J>) -> Option<J> {
        loop {
            match tokio::time::timeout(self.idle, worker.rx.recv()).await {
                Ok(Some(job)) => {
                    worker.depth.fetch_sub(1, Ordering::SeqCst);
                    return Some(job);
                }
                Ok(None) => return None,
                Err(_) => {
                    let mut lanes = self.lock();
                    if worker.rx.is_empty() {
                        lanes.remove(&worker.key);
                        return None;
                    }
                }
            }
        }
    }

    /// Jobs queued in `key`'s lane, not counting the one its worker runs.
    pub fn depth(&self, key: &str) -> usize {
        self.lock()
            .get(key)
            .map_or(0, |lane| lane.depth.load(Ordering::SeqCst))
    }

    /// How many lanes have a worker (for tests and the TUI).
    pub fn active(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn jobs_come_out_in_order_and_an_idle_lane_is_removed() {
        let lanes = Lanes::new(Duration::from_millis(50));
        let first = lanes.push("a", 1);
        let mut worker = first.start_worker.unwrap();
        assert_eq!(first.depth, 1);
        let second = lanes.push("a", 2);
        assert!(second.start_worker.is_none());
        assert_eq!(second.depth, 2);
        assert_eq!(lanes.next(&mut worker).await, Some(1));
        assert_eq!(lanes.next(&mut worker).await, Some(2));
        assert_eq!(lanes.next(&mut worker).await, None, "idle: the worker ends");
        assert_eq!(lanes.active(), 0);
        assert!(lanes.push("a", 3).start_worker.is_some(), "a new worker");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn jobs_pushed_while_workers_time_out_are_neither_lost_nor_reordered() {
        let lanes = Arc::new(Lanes::new(Duration::from_millis(2)));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut workers = Vec::new();
        for i in 0..300u32 {
            if let Some(mut worker) = lanes.push("a", i).start_worker {
                let (lanes, seen) = (Arc::clone(&lanes), Arc::clone(&seen));
                workers.push(tokio::spawn(async move {
                    while let Some(job) = lanes.next(&mut worker).await {
                        seen.lock().unwrap().push(job);
                    }
                }));
            }
            // Around the idle time, so lanes end and restart while jobs arrive.
            tokio::time::sleep(Duration::from_micros(u64::from(i % 7) * 500)).await;
        }
        for worker in workers {
            worker.await.unwrap();
        }
        assert_eq!(*seen.lock().unwrap(), (0..300).collect::<Vec<_>>());
    }
}
