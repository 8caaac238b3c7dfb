use super::*;
use crate::ingress::ledger::{Enqueued, ItemEntry, PendingKind};
use crate::paths::StatePaths;
use serde_json::json;
use std::time::Duration;
use tokio::sync::oneshot;

fn comment_event(id: u64) -> InboundEvent {
    InboundEvent::from_webhook(
        "issue_comment",
        &format!("gh-{id}"),
        json!({"action": "created", "repository": {"full_name": "Octo/Repo"},
               "issue": {"number": 15},
               "comment": {"id": id, "body": "hi", "user": {"login": "alice"},
                           "updated_at": "2026-12-01T10:00:00Z",
                           "html_url": format!("https://github.com/octo/repo/issues/15#issuecomment-{id}")},
               "installation": {"id": 1}, "enterprise": {"huge": "x"}}),
    )
}

fn polled(id: u64) -> Pending {
    let event = comment_event(id);
    ClaimedEvent::of(&event).into_pending(ItemKind::Comment, id, "unused")
}

fn fresh_pending(id: u64) -> Pending {
    Pending {
        attempts: 0,
        last_error: None,
        ..polled(id)
    }
}

fn ledger() -> Ledger {
    let mut l = Ledger::fresh("octo/repo");
    l.items
        .insert(15, ItemEntry::new(json!({"number": 15}), true));
    l
}

fn failed(error: &str) -> Disposition {
    Disposition::Failed {
        error: error.into(),
    }
}

#[test]
fn claim_keys_only_for_new_text() {
    use ItemKind::*;
    let repo = json!({"full_name": "octo/repo"});
    // (event, action, extra payload fields, expected key)
    #[rustfmt::skip]
    let cases = [
        ("issue_comment", "created", json!({"comment": {"id": 7}}), Some((Comment, 7))),
        ("pull_request_review_comment", "created", json!({"comment": {"id": 8}}), Some((ReviewComment, 8))),
        ("pull_request_review", "submitted", json!({"review": {"id": 9}}), Some((Review, 9))),
        ("issue_comment", "edited", json!({"comment": {"id": 7}}), None),
        ("pull_request_review", "dismissed", json!({"review": {"id": 9}}), None),
        ("issue_comment", "created", json!({"comment": {"id": "7"}}), None),
        ("issue_comment", "created", json!({"comment": {"id": 7}, "repository": null}), None),
        ("issues", "opened", json!({"issue": {"id": 7}}), None),
        ("check_run", "completed", json!({"check_run": {"id": 7}}), None),
    ];
    for (gh_event, action, extra, want) in cases {
        let mut payload = json!({"action": action, "repository": repo});
        for (k, v) in extra.as_object().unwrap() {
            payload[k] = v.clone();
        }
        let event = InboundEvent::from_webhook(gh_event, "d", payload);
        let got = ClaimKey::of(&event).map(|k| {
            assert_eq!(k.repo, "octo/repo");
            (k.kind, k.id)
        });
        assert_eq!(got, want, "{gh_event} {}", event.payload);
    }
}

#[test]
fn a_claim_is_first_only_once_and_sees_the_pollers_ids() {
    let mut l = ledger();
    assert!(l.claim(ItemKind::Comment, 1, None));
    assert!(!l.claim(ItemKind::Comment, 1, None));
    assert!(l.claim(ItemKind::Review, 1, None), "kinds are separate");
    l.items.get_mut(&15).unwrap().resolve(
        ItemKind::Comment,
        2,
        Stamp(time::OffsetDateTime::UNIX_EPOCH),
    );
    assert!(
        !l.claim(ItemKind::Comment, 2, None),
        "resolved by the poller"
    );
    assert_eq!(l.enqueue(fresh_pending(3)), Enqueued::Queued);
    assert!(
        !l.claim(ItemKind::Comment, 3, None),
        "pending in the poller"
    );
}

#[test]
fn the_claimed_event_keeps_only_what_is_read() {
    let claimed = ClaimedEvent::of(&comment_event(5));
    let keys: Vec<&str> = claimed
        .payload
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["action", "repository", "issue", "comment"]);
    let p = claimed.into_pending(ItemKind::Comment, 5, "pane gone");
    assert_eq!(p.delivery_id, "poll-comment-5");
    assert_eq!((p.number, p.attempts), (15, 1));
    assert_eq!(p.kind, PendingKind::Comment);
    assert!(p.url.ends_with("#issuecomment-5"));
}

/// The gap SPEC §15.4 closes: the poller sees the comment while the webhook's paste is
/// in flight, and that paste then fails.
#[test]
fn a_comment_seen_by_poll_during_a_webhook_paste_that_fails_is_retried_by_the_poller() {
    let mut l = ledger();
    let claimed = Some(ClaimedEvent::of(&comment_event(7)));
    assert!(l.claim(ItemKind::Comment, 7, claimed));
    assert_eq!(l.enqueue(fresh_pending(7)), Enqueued::Parked);
    assert!(l.pending[0].parked, "not fed while the webhook pastes");
    assert!(l.items[&15].resolved(ItemKind::Comment, 7).is_none());

    assert_eq!(
        l.settle_claim(ItemKind::Comment, 7, &failed("pane gone")),
        ClaimSettled::HandedOver
    );
    assert_eq!(l.pending.len(), 1);
    let p = &l.pending[0];
    assert!(!p.parked);
    assert_eq!(
        (p.attempts, p.last_error.as_deref()),
        (1, Some("pane gone"))
    );
    assert_eq!(l.claim_state(ItemKind::Comment, 7), None);
    assert!(l.is_handled(ItemKind::Comment, 7), "the poller owns it now");
}

#[test]
fn a_failed_webhook_paste_the_poller_never_saw_is_handed_over_with_its_event() {
    let mut l = ledger();
    assert!(l.claim(
        ItemKind::Comment,
        8,
        Some(ClaimedEvent::of(&comment_event(8)))
    ));
    assert_eq!(
        l.settle_claim(ItemKind::Comment, 8, &failed("tmux did not answer")),
        ClaimSettled::HandedOver
    );
    assert_eq!(l.pending.len(), 1);
    assert_eq!(l.pending[0].delivery_id, "poll-comment-8");
    // The poll stream then sees the same comment: it is the same pending entry.
    assert_eq!(l.enqueue(fresh_pending(8)), Enqueued::AlreadyPending);
    // A claim without an event (an older binary's) is released instead.
    assert!(l.claim(ItemKind::Comment, 9, None));
    assert_eq!(
        l.settle_claim(ItemKind::Comment, 9, &failed("x")),
        ClaimSettled::Released
    );
    assert!(!l.is_handled(ItemKind::Comment, 9));
}

#[test]
fn a_settled_webhook_paste_drops_the_parked_poll_entry_as_the_duplicate() {
    let mut l = ledger();
    assert!(l.claim(ItemKind::Comment, 7, None));
    assert_eq!(l.enqueue(fresh_pending(7)), Enqueued::Parked);
    match l.settle_claim(ItemKind::Comment, 7, &Disposition::Delivered) {
        ClaimSettled::Kept { parked: Some(p) } => assert_eq!(p.id, 7),
        other => panic!("expected the parked entry back, got {other:?}"),
    }
    assert!(l.pending.is_empty());
    assert!(l.items[&15].resolved(ItemKind::Comment, 7).is_some());
    assert_eq!(
        l.claim_state(ItemKind::Comment, 7),
        Some(ClaimState::Settled)
    );
    // Later sightings are duplicates, edits are not.
    assert!(matches!(
        l.enqueue(fresh_pending(7)),
        Enqueued::Duplicate(_)
    ));
    let mut edit = fresh_pending(7);
    edit.action = "edited".into();
    edit.delivery_id = "poll-comment-7-edited-1".into();
    assert_eq!(l.enqueue(edit), Enqueued::Queued);
    assert_eq!(
        l.settle_claim(ItemKind::Comment, 99, &Disposition::Delivered),
        ClaimSettled::Unknown
    );
}

#[test]
fn claims_left_in_flight_are_recovered_as_failures() {
    let mut l = ledger();
    for id in [1, 2] {
        assert!(l.claim(
            ItemKind::Comment,
            id,
            Some(ClaimedEvent::of(&comment_event(id)))
        ));
    }
    l.settle_claim(ItemKind::Comment, 2, &Disposition::Delivered);
    assert_eq!(l.enqueue(fresh_pending(1)), Enqueued::Parked);
    assert_eq!(l.recover_claims(UNSETTLED), 1);
    assert_eq!(l.pending.len(), 1);
    assert!(!l.pending[0].parked);
    assert_eq!(l.pending[0].last_error.as_deref(), Some(UNSETTLED));
    assert_eq!(l.recover_claims(UNSETTLED), 0);
}

#[test]
fn settled_claims_are_bounded_in_flight_ones_never_evicted() {
    let mut l = ledger();
    assert!(l.claim(ItemKind::Review, 1, None));
    for id in 0..(CLAIMS_CAPACITY as u64 + 5) {
        assert!(l.claim(ItemKind::Comment, id, None));
        l.settle_claim(ItemKind::Comment, id, &Disposition::Delivered);
    }
    assert_eq!(l.claims.len(), CLAIMS_CAPACITY);
    assert_eq!(
        l.claim_state(ItemKind::Review, 1),
        Some(ClaimState::InFlight)
    );
}

/// Answers each event with what the test sends on its channel.
struct Scripted {
    answers: Mutex<Vec<oneshot::Receiver<Disposition>>>,
}

impl Ingest for Scripted {
    fn ingest(&self, _event: InboundEvent) -> BoxFuture<'static, Disposition> {
        let rx = self.answers.lock().unwrap().remove(0);
        Box::pin(async move { rx.await.unwrap_or_else(|_| failed("dropped")) })
    }
}

/// Takes the claim and waits for it to be on disk; false when it was taken already.
async fn take(claims: &Claims, event: &InboundEvent) -> bool {
    match claims.take(&ClaimKey::of(event).unwrap(), event) {
        Some(written) => {
            written.wait().await.unwrap();
            true
        }
        None => false,
    }
}

fn store() -> (tempfile::TempDir, StatePaths, LedgerStore, EventLog) {
    let dir = tempfile::tempdir().unwrap();
    let paths = StatePaths::new(dir.path());
    let events = EventLog::open(&paths);
    let store = LedgerStore::new(paths.clone(), events.clone());
    (dir, paths, store, events)
}

#[tokio::test]
async fn the_claiming_ingest_settles_each_claim_by_its_outcome() {
    let (_dir, _paths, ledgers, events) = store();
    let claims = Claims::new(ledgers.clone(), events);
    let (fail_tx, fail_rx) = oneshot::channel();
    let (ok_tx, ok_rx) = oneshot::channel();
    let scripted = Arc::new(Scripted {
        answers: Mutex::new(vec![fail_rx, ok_rx]),
    });
    let ingest = ClaimingIngest::new(scripted, Some(claims.clone()));
    for id in [1, 2] {
        let event = comment_event(id);
        assert!(take(&claims, &event).await);
        assert!(!take(&claims, &event).await);
    }
    let failing = ingest.ingest(comment_event(1));
    let succeeding = ingest.ingest(comment_event(2));
    assert_eq!(ingest.in_flight().len(), 2);
    fail_tx.send(failed("pane gone")).unwrap();
    ok_tx.send(Disposition::Delivered).unwrap();
    assert!(!failing.await.is_settled());
    assert_eq!(succeeding.await, Disposition::Delivered);
    tokio::time::timeout(Duration::from_secs(1), ingest.in_flight().wait_idle())
        .await
        .unwrap();
    let l = ledgers.snapshot("octo/repo");
    let ids: Vec<&str> = l.pending.iter().map(|p| p.delivery_id.as_str()).collect();
    assert_eq!(ids, ["poll-comment-1"], "the failure went to the poller");
    assert_eq!(
        l.claim_state(ItemKind::Comment, 2),
        Some(ClaimState::Settled)
    );
}

#[tokio::test]
async fn a_crash_leaves_claims_in_flight_on_disk_and_the_next_start_hands_them_over() {
    let (_dir, paths, ledgers, events) = store();
    let claims = Claims::new(ledgers.clone(), events.clone());
    let (_never, rx) = oneshot::channel();
    let scripted = Arc::new(Scripted {
        answers: Mutex::new(vec![rx]),
    });
    let ingest = ClaimingIngest::new(scripted, Some(claims.clone()));
    let event = comment_event(5);
    assert!(take(&claims, &event).await);
    let _hanging = ingest.ingest(event);
    drop(ingest); // a crash: nothing settled

    // The next start, with the ledger as it was on disk.
    let reloaded = LedgerStore::new(paths.clone(), events);
    assert_eq!(
        reloaded.snapshot("octo/repo").in_flight_claims(),
        vec![(ItemKind::Comment, 5)]
    );
    assert_eq!(recover(&reloaded, &["octo/repo".into()]).await, 1);
    let l = reloaded.snapshot("octo/repo");
    assert_eq!(l.pending.len(), 1);
    assert_eq!(l.pending[0].delivery_id, "poll-comment-5");
    assert_eq!(recover(&reloaded, &["octo/repo".into()]).await, 0);
}

#[tokio::test]
async fn unsettled_deliveries_are_handed_over_at_shutdown() {
    let (_dir, _paths, ledgers, events) = store();
    let claims = Claims::new(ledgers.clone(), events);
    let (_never, rx) = oneshot::channel();
    let scripted = Arc::new(Scripted {
        answers: Mutex::new(vec![rx]),
    });
    let ingest = ClaimingIngest::new(scripted, Some(claims.clone()));
    let event = comment_event(6);
    assert!(take(&claims, &event).await);
    let _pending = ingest.ingest(event);
    let waited =
        tokio::time::timeout(Duration::from_millis(50), ingest.in_flight().wait_idle()).await;
    assert!(waited.is_err(), "still in flight");
    assert_eq!(ingest.hand_over_unsettled().await, 1);
    assert!(ingest.in_flight().is_empty());
    let l = ledgers.snapshot("octo/repo");
    assert_eq!(l.pending[0].delivery_id, "poll-comment-6");
    assert!(l.in_flight_claims().is_empty());
}

#[tokio::test]
async fn the_legacy_in_flight_record_is_released_once() {
    let (_dir, paths, ledgers, _events) = store();
    let (_, saved) = ledgers.update("octo/repo", |l| l.claim(ItemKind::Comment, 3, None));
    saved.wait().await.unwrap();
    let record = paths.root.join("webhook-inflight.json");
    std::fs::write(&record, r#"[{"repo":"octo/repo","kind":"comment","id":3}]"#).unwrap();
    assert_eq!(recover_legacy(&paths, &ledgers).await, 1);
    assert!(!record.exists());
    assert!(
        !ledgers
            .snapshot("octo/repo")
            .is_handled(ItemKind::Comment, 3)
    );
    assert_eq!(recover_legacy(&paths, &ledgers).await, 0);
}
