use super::*;
use crate::events::{EventLog, EventReader, Filter};
use crate::ingress::Disposition;
use crate::paths::StatePaths;
use serde_json::json;

fn at(secs: i64) -> Stamp {
    Stamp(OffsetDateTime::UNIX_EPOCH + time::Duration::seconds(secs))
}

fn pending(kind: PendingKind, id: u64, number: u64, action: &str) -> Pending {
    Pending {
        kind,
        id,
        number,
        updated_at: at(id as i64),
        url: format!("https://github.com/o/r/issues/{number}#issuecomment-{id}"),
        attempts: 0,
        last_error: None,
        parked: false,
        gh_event: "issue_comment".into(),
        action: action.into(),
        delivery_id: format!("poll-comment-{id}-{action}"),
        payload: json!({"comment": {"id": id}}),
    }
}

fn ledger_with_item(number: u64) -> Ledger {
    let mut l = Ledger::fresh("o/r");
    l.items
        .insert(number, ItemEntry::new(json!({"number": number}), true));
    l
}

#[test]
fn resolved_ids_are_bounded_oldest_first() {
    let mut e = ItemEntry::new(json!({}), true);
    for id in 0..(RESOLVED_PER_ITEM as u64 + 10) {
        e.resolve(ItemKind::Comment, id, at(id as i64));
    }
    assert_eq!(e.comments.len(), RESOLVED_PER_ITEM);
    assert!(e.resolved(ItemKind::Comment, 9).is_none());
    assert!(e.resolved(ItemKind::Comment, 10).is_some());
    // A later sighting keeps the newest stamp.
    e.resolve(ItemKind::Comment, 100, at(5000));
    e.resolve(ItemKind::Comment, 100, at(1));
    assert_eq!(e.resolved(ItemKind::Comment, 100), Some(at(5000)));
}

#[test]
fn enqueue_drops_what_the_webhook_claimed_but_not_its_edits() {
    let mut l = ledger_with_item(15);
    assert!(l.claim(ItemKind::Comment, 7, None));
    l.settle_claim(ItemKind::Comment, 7, &Disposition::Delivered);
    match l.enqueue(pending(PendingKind::Comment, 7, 15, "created")) {
        Enqueued::Duplicate(p) => assert_eq!(p.id, 7),
        other => panic!("expected a duplicate, got {other:?}"),
    }
    assert!(l.pending.is_empty());
    assert!(l.items[&15].resolved(ItemKind::Comment, 7).is_some());
    assert_eq!(
        l.enqueue(pending(PendingKind::Comment, 7, 15, "edited")),
        Enqueued::Queued
    );
    assert_eq!(
        l.enqueue(pending(PendingKind::Comment, 7, 15, "edited")),
        Enqueued::AlreadyPending
    );
}

#[test]
fn settling_records_and_failures_give_up_after_max_retries() {
    let mut l = ledger_with_item(15);
    let p = pending(PendingKind::Comment, 1, 15, "created");
    let id = p.delivery_id.clone();
    l.enqueue(p);
    let failed = Disposition::Failed {
        error: "tmux did not answer".into(),
    };
    assert_eq!(l.settle(&id, &failed, 2), Settled::Retry { attempts: 1 });
    assert_eq!(l.settle(&id, &failed, 2), Settled::Retry { attempts: 2 });
    match l.settle(&id, &failed, 2) {
        Settled::GaveUp(p) => {
            assert_eq!(p.attempts, 3);
            assert_eq!(p.last_error.as_deref(), Some("tmux did not answer"));
        }
        other => panic!("expected a give-up, got {other:?}"),
    }
    assert!(l.pending.is_empty());
    assert_eq!(l.items[&15].given_up, vec![1]);
    assert!(l.items[&15].resolved(ItemKind::Comment, 1).is_some());
    assert_eq!(l.settle(&id, &failed, 2), Settled::Unknown);

    let p = pending(PendingKind::Comment, 2, 15, "created");
    let id = p.delivery_id.clone();
    l.enqueue(p);
    let dropped = Disposition::Dropped {
        reason: "unauthorized-actor".into(),
    };
    assert_eq!(l.settle(&id, &dropped, 2), Settled::Dropped);
    assert!(l.items[&15].resolved(ItemKind::Comment, 2).is_some());
}

#[test]
fn a_close_is_never_given_up() {
    let mut l = ledger_with_item(15);
    let mut p = pending(PendingKind::Close, 99, 15, "closed");
    p.delivery_id = "poll-closed-99-1".into();
    l.enqueue(p);
    let failed = Disposition::Failed { error: "x".into() };
    for n in 1..=5 {
        assert_eq!(
            l.settle("poll-closed-99-1", &failed, 0),
            Settled::Retry { attempts: n }
        );
    }
}

#[test]
fn forgetting_an_item_clears_its_threads_pending_and_review_etags() {
    let mut l = ledger_with_item(16);
    let e = l.items.get_mut(&16).unwrap();
    e.baseline_at = Some(at(1));
    e.resolve(ItemKind::Comment, 1, at(1));
    e.resolve(ItemKind::Review, 2, at(1));
    e.reviews_baselined = true;
    e.close_fed = Some("x".into());
    l.enqueue(pending(PendingKind::Comment, 3, 16, "created"));
    l.enqueue(pending(PendingKind::Comment, 4, 17, "created"));
    let tag = |u: &str| {
        vec![crate::github::etag::PageTag {
            url: u.into(),
            etag: "\"e\"".into(),
        }]
    };
    l.etags.insert(
        "id http://h/repos/o/r/pulls/16/reviews?per_page=100".into(),
        tag("a"),
    );
    l.etags.insert(
        "id http://h/repos/o/r/pulls/160/reviews?per_page=100".into(),
        tag("b"),
    );
    l.forget_item(16);
    let e = &l.items[&16];
    assert!(e.watched && e.baseline_at.is_none() && !e.reviews_baselined);
    assert!(e.comments.is_empty() && e.reviews.is_empty() && e.close_fed.is_none());
    assert_eq!(l.pending.len(), 1);
    assert_eq!(l.pending[0].number, 17);
    assert_eq!(l.etags.len(), 1, "only PR #16's reviews ETag goes");
}

#[test]
fn a_ledger_round_trips_through_json() {
    let mut l = ledger_with_item(15);
    l.started_at = Some(at(100));
    l.cursors.issue_comments = Some(at(200));
    l.items
        .get_mut(&15)
        .unwrap()
        .resolve(ItemKind::Comment, 5, at(150));
    l.enqueue(pending(PendingKind::Review, 6, 15, "submitted"));
    let text = serde_json::to_string_pretty(&l).unwrap();
    assert!(
        text.contains("\"startedAt\": \"1970-01-01T00:01:40Z\""),
        "{text}"
    );
    let back: Ledger = serde_json::from_str(&text).unwrap();
    assert_eq!(back, l);
}

fn store(dir: &std::path::Path) -> (LedgerStore, StatePaths) {
    let paths = StatePaths::new(dir);
    (
        LedgerStore::new(paths.clone(), EventLog::open(&paths)),
        paths,
    )
}

#[test]
fn a_corrupt_ledger_is_moved_aside_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (s, paths) = store(dir.path());
    let path = ledger_path(&paths, "Octo/Repo");
    assert!(path.ends_with("poll/octo-repo.json"));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, b"{\"version\": 1, \"items\": [oops").unwrap();
    let l = s.snapshot("octo/repo");
    assert!(l.started_at.is_none(), "starts over as a first cycle");
    assert!(!path.exists());
    let aside: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("octo-repo.json.corrupt-"))
        .collect();
    assert_eq!(aside.len(), 1);
    let events: Vec<_> = EventReader::open(&paths.events(), Filter::default())
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(events.len(), 1);
    assert_eq!(
        events[0].event.event,
        crate::events::EventType::StateCorrupt
    );
}

#[test]
fn a_ledger_from_a_newer_binary_is_not_misread() {
    let dir = tempfile::tempdir().unwrap();
    let (s, paths) = store(dir.path());
    let path = ledger_path(&paths, "o/r");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(
        &path,
        br#"{"version": 99, "startedAt": "2026-01-01T00:00:00Z"}"#,
    )
    .unwrap();
    assert!(s.snapshot("o/r").started_at.is_none());
    assert!(!path.exists());
}

#[tokio::test]
async fn forget_notes_are_applied_once_then_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let (s, paths) = store(dir.path());
    s.update("o/r", |l| {
        let mut e = ItemEntry::new(json!({"number": 15}), true);
        e.baseline_at = Some(at(1));
        e.resolve(ItemKind::Comment, 1, at(1));
        l.items.insert(15, e);
    })
    .1
    .wait()
    .await
    .unwrap();
    forget_item(&paths, "o/r", 15).unwrap();
    forget_item(&paths, "o/other", 15).unwrap();
    assert!(forget_item(&paths, "not a repo", 1).is_err());
    assert_eq!(pending_forgets(&paths, "o/r").len(), 1);
    assert_eq!(s.apply_forget_notes("o/r").await.unwrap(), vec![15]);
    assert!(pending_forgets(&paths, "o/r").is_empty());
    assert_eq!(pending_forgets(&paths, "o/other").len(), 1);
    let on_disk: Ledger =
        serde_json::from_slice(&std::fs::read(ledger_path(&paths, "o/r")).unwrap()).unwrap();
    assert!(on_disk.items[&15].baseline_at.is_none());
    assert!(on_disk.items[&15].comments.is_empty());
    assert_eq!(
        s.apply_forget_notes("o/r").await.unwrap(),
        Vec::<u64>::new()
    );
}

#[test]
fn claims_are_persisted_and_repos_compared_case_insensitively() {
    let dir = tempfile::tempdir().unwrap();
    let (s, paths) = store(dir.path());
    let claim = |s: &LedgerStore, repo: &str| {
        let (first, saved) = s.update_if(repo, |l| {
            let first = l.claim(ItemKind::Comment, 42, None);
            (first, first)
        });
        saved.wait_blocking().unwrap();
        first
    };
    assert!(claim(&s, "o/r"));
    assert!(!claim(&s, "O/R"));
    let (again, _) = store(dir.path());
    assert!(!claim(&again, "o/r"));
    assert!(ledger_path(&paths, "o/r").exists());
}

#[test]
fn repositories_whose_readable_names_meet_get_ledgers_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let paths = StatePaths::new(dir.path());
    let (a, b) = (ledger_path(&paths, "a-b/c"), ledger_path(&paths, "a/b-c"));
    assert_ne!(a, b);
    for path in [&a, &b] {
        let name = path.file_name().unwrap().to_string_lossy();
        assert!(
            name.starts_with("a-b-c-h") && name.ends_with(".json"),
            "{name}"
        );
    }
    assert_eq!(ledger_path(&paths, "A-B/C"), a, "GitHub names ignore case");
    assert!(ledger_path(&paths, "Octo/Repo").ends_with("poll/octo-repo.json"));
    assert_eq!(
        legacy_ledger_path(&paths, "octo/repo"),
        None,
        "never renamed"
    );
    forget_item(&paths, "a-b/c", 1).unwrap();
    forget_item(&paths, "a/b-c", 2).unwrap();
    let numbers = |repo: &str| -> Vec<u64> {
        pending_forgets(&paths, repo)
            .into_iter()
            .map(|(n, _)| n)
            .collect()
    };
    assert_eq!(
        numbers("a-b/c"),
        [1],
        "each repo's notes under its own name"
    );
    assert_eq!(numbers("a/b-c"), [2]);
}

#[test]
fn an_old_ledger_is_moved_to_its_repos_name_and_never_given_to_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let (s, paths) = store(dir.path());
    // What an earlier release wrote for `a-b/c`, at the name `a/b-c` also had.
    let legacy = paths.poll_dir().join("a-b-c.json");
    assert_eq!(legacy_ledger_path(&paths, "a-b/c").as_ref(), Some(&legacy));
    assert_eq!(legacy_ledger_path(&paths, "a/b-c").as_ref(), Some(&legacy));
    let mut old = ledger_with_item(7);
    old.repo = "a-b/c".into();
    old.started_at = Some(at(100));
    std::fs::create_dir_all(paths.poll_dir()).unwrap();
    std::fs::write(&legacy, serde_json::to_vec(&old).unwrap()).unwrap();

    // The read-only reader finds it under the old name, for its own repo only.
    let read = read(&paths, "a-b/c").unwrap().expect("the old ledger");
    assert!(read.items.contains_key(&7));
    assert!(
        crate::ingress::ledger::read(&paths, "a/b-c")
            .unwrap()
            .is_none()
    );

    let other = s.snapshot("a/b-c");
    assert!(
        other.started_at.is_none(),
        "the other repo starts as a first cycle"
    );
    assert!(legacy.exists(), "and leaves the old file alone");

    let own = s.snapshot("a-b/c");
    assert_eq!(own.started_at, Some(at(100)));
    assert!(own.items.contains_key(&7));
    assert!(!legacy.exists(), "moved");
    assert!(ledger_path(&paths, "a-b/c").exists());
}
