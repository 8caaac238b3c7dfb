//! The supervisor delivers operator replies that waited on a held session (SPEC §18.3):
//! queued in the session's record by whichever process took them (this one's screen or
//! socket, a viewer, `the-loop reply`), they go out once the session can take a paste.
//!
//! The records are scanned for queued replies every [`SCAN`]; a session found with some
//! is looked at every `Timings::hold_check` (500 ms) until the next scan finds its queue
//! empty, and only then.

use super::polling::stopped;
use crate::session::{Registry, Replier};
use crate::work_item::WorkItemRef;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// How often the records are read for queued replies.
const SCAN: Duration = Duration::from_secs(2);

pub(crate) async fn release(replier: Replier, registry: Registry, mut stop: watch::Receiver<bool>) {
    let mut held: Vec<WorkItemRef> = Vec::new();
    let mut next_scan = Instant::now();
    loop {
        if Instant::now() >= next_scan {
            held = queued(&registry).await;
            next_scan = Instant::now() + SCAN;
        }
        // A session whose queue empties is dropped by the next scan.
        for item in &held {
            replier.release_held(item).await;
        }
        let wait = if held.is_empty() {
            next_scan.saturating_duration_since(Instant::now())
        } else {
            replier.hold_check()
        };
        tokio::select! {
            () = stopped(&mut stop) => return,
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// The sessions with replies queued, read off the async runtime.
async fn queued(registry: &Registry) -> Vec<WorkItemRef> {
    let registry = registry.clone();
    let listed = tokio::task::spawn_blocking(move || registry.list()).await;
    match listed {
        Ok(Ok(records)) => records
            .into_iter()
            .filter(|r| !r.hold.replies.is_empty())
            .map(|r| r.work_item)
            .collect(),
        Ok(Err(error)) => {
            tracing::warn!("held replies not looked for: {error}");
            Vec::new()
        }
        Err(error) => {
            tracing::warn!("held replies not looked for: {error}");
            Vec::new()
        }
    }
}
