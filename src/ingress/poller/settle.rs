//! The settle phase: every pending event of a repo goes to the `Ingest`, in order (those
//! parked behind a webhook claim in flight wait for it, `ingress::claims`), and
//! each outcome is written to the ledger the moment it settles (so a crash re-feeds only
//! what was in flight). An event waiting on a held session (SPEC §18.3) does not hold
//! the cycle up: it stays in flight — pending in the ledger, not fed again — and settles
//! whenever the hold clears. A delivery that fails `maxRetries` times more is given up: a
//! `poll.comment_failed` event and a marked notice on the item naming the comment URL —
//! never its body, which may be what made it fail.

use crate::events::{Event, EventLog, EventType, Level, Source};
use crate::github::Client;
use crate::ingress::Ingest;
use crate::ingress::ledger::{LedgerStore, NOTICE_ATTEMPTS, Notice, Pending, Settled};
use crate::work_item::WorkItemRef;
use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::Notify;

/// Counts of one repo's feed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct FeedTally {
    pub delivered: usize,
    pub dropped: usize,
    pub failed: usize,
    pub given_up: usize,
}

/// How often a feed waiting on its batch asks whether what is left waits on a hold.
const HOLD_CHECK: Duration = Duration::from_millis(100);

/// Settlements of events fed by earlier cycles that were still open (held, SPEC §18.3)
/// when their cycle moved on. Each is written to the ledger the moment it settles, by
/// the task that awaited it; the tally and any give-up are taken by the repo's next
/// feed. Shared, cheap to clone.
#[derive(Clone, Default)]
pub(super) struct InFlight {
    inner: Arc<Mutex<InFlightInner>>,
    settled: Arc<Notify>,
}

#[derive(Default)]
struct InFlightInner {
    /// (lower-cased repo, delivery id) of every event fed and not settled yet.
    open: HashSet<(String, String)>,
    /// Settled, not yet taken by the repo's feed.
    done: Vec<(String, String, Settled)>,
}

impl InFlight {
    fn lock(&self) -> MutexGuard<'_, InFlightInner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn is_open(&self, repo: &str, id: &str) -> bool {
        self.lock()
            .open
            .contains(&(repo.to_ascii_lowercase(), id.to_string()))
    }

    /// Events fed and not settled yet, across repos.
    pub fn open(&self) -> usize {
        self.lock().open.len()
    }

    fn finish(&self, repo: &str, id: String, settled: Settled) {
        let repo = repo.to_ascii_lowercase();
        let mut inner = self.lock();
        inner.open.remove(&(repo.clone(), id.clone()));
        inner.done.push((repo, id, settled));
        drop(inner);
        self.settled.notify_waiters();
    }

    /// Takes `repo`'s settlements.
    fn take(&self, repo: &str) -> Vec<(String, Settled)> {
        let repo = repo.to_ascii_lowercase();
        let mut inner = self.lock();
        let (mine, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut inner.done)
            .into_iter()
            .partition(|(r, _, _)| *r == repo);
        inner.done = rest;
        mine.into_iter().map(|(_, id, s)| (id, s)).collect()
    }
}

/// Feeds `repo`'s pending events (those not parked and not already in flight) to the
/// `Ingest`, in order, and waits until each has settled — or waits on a held session
/// ([`Ingest::holding`]): those settle later, in their own task, and are counted by a
/// later feed. Settlements from earlier cycles are counted here too.
pub(super) async fn feed(
    store: &LedgerStore,
    ingest: &Arc<dyn Ingest>,
    in_flight: &InFlight,
    repo: &str,
    max_retries: u32,
) -> (FeedTally, Vec<Pending>) {
    let batch = store.read(repo, |l| {
        l.pending
            .iter()
            .filter(|p| !p.parked && !in_flight.is_open(repo, &p.delivery_id))
            .map(|p| (p.delivery_id.clone(), p.to_event()))
            .collect::<Vec<_>>()
    });
    let mut waiting: HashSet<String> = HashSet::new();
    // `ingest` queues synchronously, so calling it in order keeps the order.
    for (id, event) in batch {
        let settled = ingest.ingest(event);
        in_flight
            .lock()
            .open
            .insert((repo.to_ascii_lowercase(), id.clone()));
        waiting.insert(id.clone());
        let (store, in_flight, repo) = (store.clone(), in_flight.clone(), repo.to_string());
        tokio::spawn(async move {
            let disposition = settled.await;
            let (settled, saved) =
                store.update(&repo, |l| l.settle(&id, &disposition, max_retries));
            if let Err(e) = saved.wait().await {
                tracing::warn!(repo, error = %e, "poll ledger not written after a settlement");
            }
            in_flight.finish(&repo, id, settled);
        });
    }
    let mut tally = FeedTally::default();
    let mut gave_up = Vec::new();
    loop {
        // Registered before taking, so a settlement in between is not missed.
        let notified = in_flight.settled.notified();
        for (id, settled) in in_flight.take(repo) {
            waiting.remove(&id);
            match settled {
                Settled::Delivered => tally.delivered += 1,
                Settled::Dropped => tally.dropped += 1,
                Settled::Retry { .. } => tally.failed += 1,
                Settled::GaveUp(p) => {
                    tally.given_up += 1;
                    gave_up.push(*p);
                }
                Settled::Unknown => {}
            }
        }
        if waiting.iter().all(|id| ingest.holding(id)) {
            return (tally, gave_up);
        }
        tokio::select! {
            () = notified => {}
            () = tokio::time::sleep(HOLD_CHECK) => {}
        }
    }
}

/// The notice posted on an item when one of its comments is given up. It names the
/// comment by URL and never quotes it.
pub(super) fn notice_body(p: &Pending) -> String {
    format!(
        "the-loop could not deliver {} to the agent session after {} attempts and has \
         stopped retrying.\n\nThe comment was not passed on: post it again, or send its \
         content with `the-loop reply`.",
        if p.url.is_empty() {
            format!("{} {}", p.kind_label(), p.id)
        } else {
            p.url.clone()
        },
        p.attempts
    )
}

impl Pending {
    fn kind_label(&self) -> &'static str {
        self.kind.item_kind().map_or("event", |k| k.as_str())
    }
}

/// Reports each give-up and posts its notice; a notice that cannot be posted now is kept
/// in the ledger and tried again on later cycles.
pub(super) async fn give_up(
    client: &Client,
    store: &LedgerStore,
    events: &EventLog,
    repo: &str,
    gave_up: Vec<Pending>,
) {
    for p in gave_up {
        let body = notice_body(&p);
        let posted = client.post_comment(repo, p.number, &body).await;
        let work_item = crate::routing::extract::subject(&p.gh_event, &p.payload)
            .map_or_else(|| work_item(repo, p.number), |r| r.to_string());
        let _ = events.emit(
            Event::new(Source::Poll, EventType::PollCommentFailed)
                .level(Level::Error)
                .with("work_item", work_item)
                .with("comment_id", p.id)
                .with("comment_url", p.url.clone())
                .with("attempts", p.attempts)
                .with("error", p.last_error.clone().unwrap_or_default())
                .with("notice_posted", posted.is_ok()),
        );
        if let Err(e) = posted {
            tracing::warn!(repo, number = p.number, error = %e, "give-up notice not posted; will retry");
            let notice = Notice {
                number: p.number,
                body,
                attempts: 1,
            };
            let (_, saved) = store.update(repo, |l| l.notices.push(notice));
            if let Err(e) = saved.wait().await {
                tracing::warn!(repo, error = %e, "poll ledger not written");
            }
        }
    }
}

/// Retries the notices that could not be posted earlier.
pub(super) async fn retry_notices(client: &Client, store: &LedgerStore, repo: &str) {
    let notices = store.read(repo, |l| l.notices.clone());
    if notices.is_empty() {
        return;
    }
    let mut keep = Vec::new();
    for mut n in notices {
        match client.post_comment(repo, n.number, &n.body).await {
            Ok(_) => {}
            Err(e) => {
                n.attempts += 1;
                if n.attempts < NOTICE_ATTEMPTS {
                    keep.push(n);
                } else {
                    tracing::warn!(repo, number = n.number, error = %e, "give-up notice dropped after repeated failures");
                }
            }
        }
    }
    let (_, saved) = store.update(repo, |l| l.notices = keep);
    if let Err(e) = saved.wait().await {
        tracing::warn!(repo, error = %e, "poll ledger not written");
    }
}

/// `github:owner/repo#N` (the host is the API's, which the poller does not restate).
pub(super) fn work_item(repo: &str, number: u64) -> String {
    let (owner, name) = repo.split_once('/').unwrap_or((repo, ""));
    WorkItemRef::new(owner, name, number).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingress::ledger::{PendingKind, Stamp};
    use crate::ingress::{Disposition, InboundEvent};
    use crate::paths::StatePaths;
    use futures::future::BoxFuture;
    use serde_json::json;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::sync::oneshot;

    /// Holds every event until the test lets it go; counts what it was fed.
    #[derive(Default)]
    struct HeldIngest {
        fed: AtomicUsize,
        release: Mutex<Vec<oneshot::Sender<Disposition>>>,
    }

    impl Ingest for HeldIngest {
        fn ingest(&self, _event: InboundEvent) -> BoxFuture<'static, Disposition> {
            self.fed.fetch_add(1, Ordering::SeqCst);
            let (tx, rx) = oneshot::channel();
            self.release.lock().unwrap().push(tx);
            Box::pin(async move { rx.await.unwrap_or(Disposition::Interrupted) })
        }

        fn holding(&self, _delivery_id: &str) -> bool {
            true
        }
    }

    fn pending(id: u64) -> Pending {
        Pending {
            kind: PendingKind::Comment,
            id,
            number: 1,
            updated_at: Stamp(time::OffsetDateTime::UNIX_EPOCH),
            url: String::new(),
            attempts: 0,
            last_error: None,
            parked: false,
            gh_event: "issue_comment".into(),
            action: "created".into(),
            delivery_id: format!("poll-comment-{id}"),
            payload: json!({"comment": {"id": id}}),
        }
    }

    #[tokio::test]
    async fn a_held_delivery_does_not_hold_the_cycle_and_is_not_fed_twice() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        let store = LedgerStore::new(paths.clone(), EventLog::open(&paths));
        let (_, saved) = store.update("o/r", |l| {
            l.pending.push(pending(1));
        });
        saved.wait().await.unwrap();
        let held = Arc::new(HeldIngest::default());
        let ingest: Arc<dyn Ingest> = held.clone();
        let in_flight = InFlight::default();

        let (tally, _) = feed(&store, &ingest, &in_flight, "o/r", 3).await;
        assert_eq!(tally, FeedTally::default(), "returned while held");
        assert_eq!(in_flight.open(), 1);
        let (tally, _) = feed(&store, &ingest, &in_flight, "o/r", 3).await;
        assert_eq!(tally, FeedTally::default());
        assert_eq!(
            held.fed.load(Ordering::SeqCst),
            1,
            "in flight: not fed again"
        );

        // The hold clears: settled in the ledger at once, counted by the next feed.
        let tx = held.release.lock().unwrap().pop().unwrap();
        tx.send(Disposition::Delivered).unwrap();
        for _ in 0..200 {
            if in_flight.open() == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(store.read("o/r", |l| l.pending.is_empty()));
        let (tally, _) = feed(&store, &ingest, &in_flight, "o/r", 3).await;
        assert_eq!(tally.delivered, 1);
        assert_eq!(held.fed.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn an_interrupted_delivery_stays_pending_without_an_attempt() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        let store = LedgerStore::new(paths.clone(), EventLog::open(&paths));
        let (_, saved) = store.update("o/r", |l| l.pending.push(pending(1)));
        saved.wait().await.unwrap();
        let held = Arc::new(HeldIngest::default());
        let ingest: Arc<dyn Ingest> = held.clone();
        let in_flight = InFlight::default();
        feed(&store, &ingest, &in_flight, "o/r", 3).await;
        // The supervisor stops: the dispatcher's side goes away.
        held.release.lock().unwrap().clear();
        for _ in 0..200 {
            if in_flight.open() == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let attempts = store.read("o/r", |l| {
            l.pending.iter().map(|p| p.attempts).collect::<Vec<_>>()
        });
        assert_eq!(attempts, vec![0]);
    }
}
