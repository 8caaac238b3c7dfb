//! The supervisor's side of the two ingress paths: what it wraps around the dispatcher
//! (its one `Ingest`) so that shutdown loses nothing.
//!
//! - [`PollIngest`] counts what a poll cycle has handed over, so shutdown knows whether
//!   an unfinished cycle may be dropped at once (it was only reading GitHub) or must be
//!   waited for (deliveries are queued and their outcomes not yet in the ledger).
//! - [`WebhookIngest`] tracks webhook deliveries until they settle. The webhook claims a
//!   comment's id in the poll ledger before routing it (cross-path dedupe, SPEC §4.2);
//!   when its delivery fails — or is still unsettled at shutdown — the claim is
//!   released, so the poller delivers the comment instead of dropping it as handled.
//!   The claims in flight are also written to `<state>/webhook-inflight.json`, so a
//!   start after a crash releases them too ([`recover_webhook_claims`]).
//! - [`LedgerClaims`] is that claim record: the poll ledger seen as
//!   [`HandledIds`].

use crate::fsutil;
use crate::ingress::ledger::{HandledKind, LedgerStore};
use crate::ingress::{Disposition, HandledIds, InboundEvent, Ingest, ItemKind};
use crate::paths::StatePaths;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;

/// The poll ledger as the webhook receiver's record of handled ids.
pub struct LedgerClaims(pub LedgerStore);

impl HandledIds for LedgerClaims {
    fn first_handling(&self, repo: &str, kind: ItemKind, id: u64) -> bool {
        self.0.first_handling(repo, handled_kind(kind), id)
    }
}

fn handled_kind(kind: ItemKind) -> HandledKind {
    match kind {
        ItemKind::Comment => HandledKind::Comment,
        ItemKind::Review => HandledKind::Review,
        ItemKind::ReviewComment => HandledKind::ReviewComment,
    }
}

/// The dispatcher, counting the events a poll cycle submits.
pub(crate) struct PollIngest {
    inner: Arc<dyn Ingest>,
    submitted: AtomicUsize,
}

impl PollIngest {
    pub fn new(inner: Arc<dyn Ingest>) -> Self {
        Self {
            inner,
            submitted: AtomicUsize::new(0),
        }
    }

    /// Called when a cycle starts.
    pub fn reset(&self) {
        self.submitted.store(0, Ordering::SeqCst);
    }

    /// Events handed to the dispatcher since the cycle started.
    pub fn submitted(&self) -> usize {
        self.submitted.load(Ordering::SeqCst)
    }
}

impl Ingest for PollIngest {
    fn ingest(&self, event: InboundEvent) -> BoxFuture<'static, Disposition> {
        self.submitted.fetch_add(1, Ordering::SeqCst);
        self.inner.ingest(event)
    }
}

/// `(repo, kind, id)` of a claim the webhook took in the poll ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ClaimKey {
    pub repo: String,
    pub kind: HandledKind,
    pub id: u64,
}

impl ClaimKey {
    /// The same rule the receiver claims by: only new text (a `created` comment or
    /// review comment, a `submitted` review) is deduplicated across paths.
    pub fn of(event: &InboundEvent) -> Option<Self> {
        let (kind, container) = match (event.gh_event.as_str(), event.action.as_str()) {
            ("issue_comment", "created") => (HandledKind::Comment, "comment"),
            ("pull_request_review_comment", "created") => (HandledKind::ReviewComment, "comment"),
            ("pull_request_review", "submitted") => (HandledKind::Review, "review"),
            _ => return None,
        };
        Some(Self {
            repo: event.payload["repository"]["full_name"]
                .as_str()?
                .to_string(),
            kind,
            id: event.payload[container]["id"].as_u64()?,
        })
    }
}

/// Where the claims of webhook deliveries in flight are kept across a crash.
pub(crate) fn inflight_path(paths: &StatePaths) -> PathBuf {
    paths.root.join("webhook-inflight.json")
}

/// Releases the claims a crashed supervisor left in flight (its deliveries never
/// settled), so this start's poller delivers those comments. Returns how many.
pub(crate) fn recover_webhook_claims(paths: &StatePaths, ledgers: &LedgerStore) -> usize {
    let path = inflight_path(paths);
    let keys: Vec<ClaimKey> = match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            tracing::warn!(path = %path.display(), error = %e, "unreadable webhook in-flight record ignored");
            Vec::new()
        }),
        Err(_) => return 0,
    };
    for key in &keys {
        ledgers.release(&key.repo, key.kind, key.id);
    }
    if let Err(e) = std::fs::remove_file(&path) {
        tracing::warn!(path = %path.display(), error = %e, "webhook in-flight record not removed");
    }
    keys.len()
}

/// Webhook deliveries not settled yet.
#[derive(Default)]
pub(crate) struct InFlight {
    next: AtomicU64,
    open: Mutex<HashMap<u64, Option<ClaimKey>>>,
    idle: Notify,
    /// Where the open claims are written (`None`: not persisted, in tests).
    record: Option<PathBuf>,
}

impl InFlight {
    fn persisted(path: PathBuf) -> Self {
        Self {
            record: Some(path),
            ..Self::default()
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Option<ClaimKey>>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes the open claims (under the lock, so writes land in order).
    fn write(&self, open: &HashMap<u64, Option<ClaimKey>>) {
        let Some(path) = &self.record else {
            return;
        };
        let keys: Vec<&ClaimKey> = open.values().flatten().collect();
        let written = if keys.is_empty() {
            match std::fs::remove_file(path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            }
        } else {
            fsutil::atomic_write_json(path, &keys)
        };
        if let Err(e) = written {
            tracing::warn!(path = %path.display(), error = %e, "webhook in-flight record not written");
        }
    }

    fn enter(&self, key: Option<ClaimKey>) -> u64 {
        let token = self.next.fetch_add(1, Ordering::SeqCst);
        let mut open = self.lock();
        let claimed = key.is_some();
        open.insert(token, key);
        if claimed {
            self.write(&open);
        }
        token
    }

    fn leave(&self, token: u64) {
        let mut open = self.lock();
        if let Some(Some(_)) = open.remove(&token) {
            self.write(&open);
        }
        if open.is_empty() {
            self.idle.notify_waiters();
        }
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Resolves once nothing is in flight.
    pub async fn wait_idle(&self) {
        loop {
            let notified = self.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.len() == 0 {
                return;
            }
            notified.await;
        }
    }

    /// Takes what is still open (shutdown gave up waiting for it).
    pub fn drain(&self) -> Vec<Option<ClaimKey>> {
        let mut open = self.lock();
        let taken: Vec<_> = open.drain().map(|(_, key)| key).collect();
        self.write(&open);
        taken
    }
}

/// The webhook receiver's `Ingest`: the dispatcher plus claim release and tracking.
pub(crate) struct WebhookIngest {
    inner: Arc<dyn Ingest>,
    ledgers: Option<LedgerStore>,
    in_flight: Arc<InFlight>,
}

impl WebhookIngest {
    /// `record`: where claims in flight are kept for [`recover_webhook_claims`].
    pub fn new(
        inner: Arc<dyn Ingest>,
        ledgers: Option<LedgerStore>,
        record: Option<PathBuf>,
    ) -> Self {
        Self {
            inner,
            ledgers,
            in_flight: Arc::new(record.map(InFlight::persisted).unwrap_or_default()),
        }
    }

    pub fn in_flight(&self) -> &Arc<InFlight> {
        &self.in_flight
    }

    /// Releases the claims of deliveries that never settled, so the poller of the next
    /// start delivers them. Returns how many deliveries were still open.
    pub fn release_unsettled(&self) -> usize {
        let open = self.in_flight.drain();
        for key in open.iter().flatten() {
            self.release(key);
        }
        open.len()
    }

    fn release(&self, key: &ClaimKey) {
        if let Some(ledgers) = &self.ledgers {
            ledgers.release(&key.repo, key.kind, key.id);
        }
    }
}

impl Ingest for WebhookIngest {
    fn ingest(&self, event: InboundEvent) -> BoxFuture<'static, Disposition> {
        let key = ClaimKey::of(&event);
        let token = self.in_flight.enter(key.clone());
        let settled = self.inner.ingest(event);
        let ledgers = self.ledgers.clone();
        let in_flight = Arc::clone(&self.in_flight);
        Box::pin(async move {
            let disposition = settled.await;
            if !disposition.is_settled()
                && let (Some(ledgers), Some(key)) = (&ledgers, &key)
            {
                ledgers.release(&key.repo, key.kind, key.id);
            }
            in_flight.leave(token);
            disposition
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::EventLog;
    use crate::paths::StatePaths;
    use serde_json::json;
    use std::time::Duration;
    use tokio::sync::oneshot;

    /// Answers each event with what the test sends on its channel.
    struct Scripted {
        answers: Mutex<Vec<oneshot::Receiver<Disposition>>>,
    }

    impl Ingest for Scripted {
        fn ingest(&self, _event: InboundEvent) -> BoxFuture<'static, Disposition> {
            let rx = self.answers.lock().unwrap().remove(0);
            Box::pin(async move {
                rx.await.unwrap_or(Disposition::Failed {
                    error: "dropped".into(),
                })
            })
        }
    }

    fn comment(id: u64) -> InboundEvent {
        InboundEvent::from_webhook(
            "issue_comment",
            &format!("d-{id}"),
            json!({"action": "created", "repository": {"full_name": "Octo/Repo"},
                   "comment": {"id": id}}),
        )
    }

    fn store() -> (tempfile::TempDir, LedgerStore) {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        let store = LedgerStore::new(paths.clone(), EventLog::open(&paths));
        (dir, store)
    }

    #[test]
    fn claim_keys_follow_the_receivers_rule() {
        let key = ClaimKey::of(&comment(7)).unwrap();
        assert_eq!(
            (key.repo.as_str(), key.kind, key.id),
            ("Octo/Repo", HandledKind::Comment, 7)
        );
        let mut edited = comment(7);
        edited.action = "edited".into();
        assert_eq!(ClaimKey::of(&edited), None);
        let review = InboundEvent::from_webhook(
            "pull_request_review",
            "d",
            json!({"action": "submitted", "repository": {"full_name": "o/r"}, "review": {"id": 9}}),
        );
        assert_eq!(ClaimKey::of(&review).unwrap().kind, HandledKind::Review);
    }

    #[tokio::test]
    async fn a_failed_webhook_delivery_releases_its_claim_and_a_delivered_one_keeps_it() {
        let (_dir, ledgers) = store();
        let claims = LedgerClaims(ledgers.clone());
        let (fail_tx, fail_rx) = oneshot::channel();
        let (ok_tx, ok_rx) = oneshot::channel();
        let scripted = Arc::new(Scripted {
            answers: Mutex::new(vec![fail_rx, ok_rx]),
        });
        let ingest = WebhookIngest::new(scripted, Some(ledgers.clone()), None);

        assert!(claims.first_handling("octo/repo", ItemKind::Comment, 1));
        assert!(claims.first_handling("octo/repo", ItemKind::Comment, 2));
        let failing = ingest.ingest(comment(1));
        let succeeding = ingest.ingest(comment(2));
        assert_eq!(ingest.in_flight().len(), 2);

        fail_tx
            .send(Disposition::Failed {
                error: "pane gone".into(),
            })
            .unwrap();
        ok_tx.send(Disposition::Delivered).unwrap();
        assert!(!failing.await.is_settled());
        assert_eq!(succeeding.await, Disposition::Delivered);
        tokio::time::timeout(Duration::from_secs(1), ingest.in_flight().wait_idle())
            .await
            .unwrap();

        // Released: the poller (or a redelivery) may handle 1 again; 2 stays handled.
        assert!(claims.first_handling("octo/repo", ItemKind::Comment, 1));
        assert!(!claims.first_handling("octo/repo", ItemKind::Comment, 2));
    }

    #[tokio::test]
    async fn unsettled_deliveries_are_released_at_shutdown() {
        let (dir, ledgers) = store();
        let claims = LedgerClaims(ledgers.clone());
        let (_never, rx) = oneshot::channel();
        let scripted = Arc::new(Scripted {
            answers: Mutex::new(vec![rx]),
        });
        let record = dir.path().join("webhook-inflight.json");
        let ingest = WebhookIngest::new(scripted, Some(ledgers.clone()), Some(record.clone()));
        assert!(claims.first_handling("octo/repo", ItemKind::Comment, 5));
        let _pending = ingest.ingest(comment(5));
        assert!(record.exists(), "the claim in flight is on disk");
        let waited =
            tokio::time::timeout(Duration::from_millis(50), ingest.in_flight().wait_idle()).await;
        assert!(waited.is_err(), "still in flight");
        assert_eq!(ingest.release_unsettled(), 1);
        assert_eq!(ingest.in_flight().len(), 0);
        assert!(!record.exists(), "nothing in flight any more");
        assert!(claims.first_handling("octo/repo", ItemKind::Comment, 5));
    }

    #[tokio::test]
    async fn claims_in_flight_at_a_crash_are_released_by_the_next_start() {
        let (dir, ledgers) = store();
        let paths = StatePaths::new(dir.path());
        let claims = LedgerClaims(ledgers.clone());
        let (_never, rx) = oneshot::channel();
        let (done_tx, done_rx) = oneshot::channel();
        let scripted = Arc::new(Scripted {
            answers: Mutex::new(vec![rx, done_rx]),
        });
        let ingest =
            WebhookIngest::new(scripted, Some(ledgers.clone()), Some(inflight_path(&paths)));
        for id in [7, 8] {
            assert!(claims.first_handling("octo/repo", ItemKind::Comment, id));
        }
        let _hanging = ingest.ingest(comment(7));
        let settled = ingest.ingest(comment(8));
        done_tx.send(Disposition::Delivered).unwrap();
        settled.await;
        drop(ingest); // a crash: nothing released

        // The next start, with the ledger as it was on disk.
        let reloaded = LedgerStore::new(paths.clone(), EventLog::open(&paths));
        assert_eq!(recover_webhook_claims(&paths, &reloaded), 1);
        let claims = LedgerClaims(reloaded.clone());
        assert!(
            claims.first_handling("octo/repo", ItemKind::Comment, 7),
            "released"
        );
        assert!(
            !claims.first_handling("octo/repo", ItemKind::Comment, 8),
            "settled: kept"
        );
        assert!(!inflight_path(&paths).exists());
        assert_eq!(recover_webhook_claims(&paths, &reloaded), 0);
    }

    #[test]
    fn the_poll_side_counts_submissions_per_cycle() {
        let (_tx, rx) = oneshot::channel();
        let scripted = Arc::new(Scripted {
            answers: Mutex::new(vec![rx]),
        });
        let poll = PollIngest::new(scripted);
        assert_eq!(poll.submitted(), 0);
        drop(poll.ingest(comment(1)));
        assert_eq!(poll.submitted(), 1);
        poll.reset();
        assert_eq!(poll.submitted(), 0);
    }
}
