use super::*;
use crate::config::Keywords;
use crate::ingress::poller::fetch::{Listing, Snapshot, Stream};
use serde_json::json;

fn t(secs: i64) -> OffsetDateTime {
    OffsetDateTime::UNIX_EPOCH + time::Duration::seconds(1_800_000_000 + secs)
}

fn ts(secs: i64) -> String {
    models::format_timestamp(t(secs))
}

#[test]
fn classification_table() {
    let (baseline, since) = (t(100), t(200));
    let s = |x| Some(Stamp(t(x)));
    let cases = [
        // resolved, created, updated → seen
        (s(250), 250, 250, Seen::Skip),
        (s(250), 240, 240, Seen::Skip),
        (s(250), 250, 260, Seen::Edited),
        (None, 50, 90, Seen::History),
        (None, 150, 250, Seen::Edited),
        (None, 210, 210, Seen::New),
        (None, 210, 230, Seen::New),
    ];
    for (resolved, created, updated, expected) in cases {
        assert_eq!(
            classify(resolved, t(created), t(updated), baseline, since),
            expected,
            "{resolved:?} {created} {updated}"
        );
    }
}

fn comment(id: u64, login: &str, body: &str) -> Value {
    json!({"id": id, "user": {"login": login}, "body": body,
           "created_at": ts(id as i64), "updated_at": ts(id as i64),
           "issue_url": "https://api.github.com/repos/o/r/issues/15",
           "html_url": format!("https://github.com/o/r/issues/15#issuecomment-{id}")})
}

#[test]
fn a_pending_command_is_the_latest_authorized_or_tool_comment() {
    let allow = Allowlist::new(&["alice".to_string()]);
    let kw = ControlKeywords::new(&Keywords::default());
    let marked = guard::mark_self_authored("Session started.");
    let find = |thread: &[Value]| pending_command(thread, &allow, &kw).and_then(models::id);
    let start = comment(1, "alice", "the-loop start");
    assert_eq!(find(std::slice::from_ref(&start)), Some(1));
    // Strangers do not answer it, and cannot issue one.
    assert_eq!(
        find(&[start.clone(), comment(2, "mallory", "lol")]),
        Some(1)
    );
    assert_eq!(find(&[comment(2, "mallory", "the-loop start")]), None);
    // The tool or the operator answered it.
    assert_eq!(find(&[start.clone(), comment(2, "bot", &marked)]), None);
    assert_eq!(find(&[start.clone(), comment(2, "Alice", "thanks")]), None);
    // An ambiguous comment is not a command; a later command wins.
    assert_eq!(
        find(&[comment(1, "alice", "the-loop start or the-loop stop")]),
        None
    );
    assert_eq!(
        find(&[start, comment(2, "alice", "the-loop pause")]),
        Some(2)
    );
    // A marked comment holding a keyword is the tool's, never a command.
    let quoted = guard::mark_self_authored("You said: the-loop start");
    assert_eq!(find(&[comment(1, "alice", &quoted)]), None);
}

struct Fixture {
    rc: RepoConfig,
    allow: Allowlist,
    kw: ControlKeywords,
    sessions: BTreeSet<u64>,
    linked: BTreeSet<u64>,
}

impl Fixture {
    fn new() -> Self {
        Self {
            rc: RepoConfig {
                name: "o/r".into(),
                path: None,
                label: "the-loop".into(),
                issues: true,
                pull_requests: true,
                ..RepoConfig::named("")
            },
            allow: Allowlist::new(&["alice".to_string()]),
            kw: ControlKeywords::new(&Keywords::default()),
            sessions: BTreeSet::new(),
            linked: BTreeSet::new(),
        }
    }

    fn apply(&self, ledger: &mut Ledger, snap: Snapshot) -> Applied {
        apply(
            ledger,
            snap,
            Ctx {
                rc: &self.rc,
                allowlist: &self.allow,
                keywords: &self.kw,
                sessions: &self.sessions,
                linked: &self.linked,
                etags: EtagCache::default(),
            },
        )
    }
}

fn item(n: u64, state: &str, labels: &[&str], updated: i64) -> Value {
    let labels: Vec<Value> = labels.iter().map(|l| json!({"name": l})).collect();
    json!({"id": 1000 + n, "number": n, "state": state, "labels": labels, "title": "t",
           "html_url": format!("https://github.com/o/r/issues/{n}"),
           "updated_at": ts(updated), "created_at": ts(0), "comments": 1,
           "closed_at": if state == "closed" { Value::String(ts(updated)) } else { Value::Null }})
}

fn snapshot(date: i64, listing: Listing) -> Snapshot {
    Snapshot {
        date: t(date),
        first: false,
        listing,
        lookups: Vec::new(),
        lookup_errors: Vec::new(),
        pulls: None,
        baselines: BTreeMap::new(),
        issue_comments: None,
        review_comments: None,
        reviews: Vec::new(),
        timelines: Vec::new(),
        entered_since: t(0),
        checks: Vec::new(),
    }
}

use std::collections::BTreeMap;

#[test]
fn the_first_cycle_baselines_and_queues_only_a_pending_command() {
    let f = Fixture::new();
    let mut ledger = Ledger::fresh("o/r");
    let mut snap = snapshot(
        500,
        Listing::Full(Some(vec![item(15, "open", &["the-loop"], 10)])),
    );
    snap.first = true;
    snap.baselines.insert(
        15,
        vec![
            comment(1, "carol", "old news"),
            comment(2, "alice", "the-loop start"),
        ],
    );
    let applied = f.apply(&mut ledger, snap);
    assert_eq!(ledger.started_at, Some(Stamp(t(500))));
    assert_eq!(ledger.cursors.issue_comments, Some(Stamp(t(500))));
    assert_eq!(applied.baselined, vec![15]);
    assert_eq!(applied.queued, 1);
    assert_eq!(ledger.pending[0].delivery_id, "poll-comment-2");
    let entry = &ledger.items[&15];
    assert!(entry.resolved(ItemKind::Comment, 1).is_some());
    assert!(entry.resolved(ItemKind::Comment, 2).is_none());
}

fn baselined_ledger(f: &Fixture) -> Ledger {
    let mut ledger = Ledger::fresh("o/r");
    let mut snap = snapshot(
        100,
        Listing::Full(Some(vec![item(15, "open", &["the-loop"], 10)])),
    );
    snap.first = true;
    snap.baselines.insert(15, vec![comment(90, "carol", "old")]);
    f.apply(&mut ledger, snap);
    ledger
}

#[test]
fn streams_queue_new_comments_in_time_order_and_skip_the_rest() {
    let f = Fixture::new();
    let mut ledger = baselined_ledger(&f);
    let mut late = comment(120, "alice", "second");
    late["created_at"] = json!(ts(120));
    let mut elsewhere = comment(115, "alice", "on an unwatched item");
    elsewhere["issue_url"] = json!("https://api.github.com/repos/o/r/issues/99");
    let mut snap = snapshot(200, Listing::Since(None));
    snap.issue_comments = Some(Stream {
        since: t(70),
        items: Some(vec![
            comment(90, "carol", "old"), // baselined: skipped
            comment(110, "mallory", "first"),
            elsewhere,
            late,
        ]),
    });
    let applied = f.apply(&mut ledger, snap);
    assert_eq!(applied.queued, 2);
    let ids: Vec<&str> = ledger
        .pending
        .iter()
        .map(|p| p.delivery_id.as_str())
        .collect();
    assert_eq!(ids, ["poll-comment-110", "poll-comment-120"]);
    assert_eq!(ledger.cursors.issue_comments, Some(Stamp(t(120))));
    // The same answer again (the overlap) queues nothing new.
    let mut snap = snapshot(210, Listing::Since(None));
    snap.issue_comments = Some(Stream {
        since: t(90),
        items: Some(vec![comment(110, "mallory", "first")]),
    });
    assert_eq!(f.apply(&mut ledger, snap).queued, 0);
}

#[test]
fn a_comment_the_webhook_handled_is_a_duplicate() {
    let f = Fixture::new();
    let mut ledger = baselined_ledger(&f);
    assert!(ledger.claim(ItemKind::Comment, 110, None));
    ledger.settle_claim(
        ItemKind::Comment,
        110,
        &crate::ingress::Disposition::Delivered,
    );
    let mut snap = snapshot(200, Listing::Since(None));
    snap.issue_comments = Some(Stream {
        since: t(70),
        items: Some(vec![comment(110, "alice", "hi")]),
    });
    let applied = f.apply(&mut ledger, snap);
    assert_eq!(applied.queued, 0);
    assert_eq!(applied.duplicates.len(), 1);
    assert!(ledger.items[&15].resolved(ItemKind::Comment, 110).is_some());
}

#[test]
fn a_close_is_queued_once_per_closing_and_only_with_a_session() {
    let mut f = Fixture::new();
    let mut ledger = baselined_ledger(&f);
    let closed = || Listing::Since(Some(vec![item(15, "closed", &["the-loop"], 150)]));
    f.apply(&mut ledger, snapshot(200, closed()));
    assert!(ledger.pending.is_empty(), "no session, no close");
    assert!(
        ledger.items.is_empty(),
        "an unwatched item without a session is dropped"
    );

    let mut ledger = baselined_ledger(&f);
    f.sessions.insert(15);
    f.apply(&mut ledger, snapshot(200, closed()));
    assert_eq!(ledger.pending.len(), 1);
    assert_eq!(ledger.pending[0].gh_event, "issues");
    f.apply(&mut ledger, snapshot(210, closed()));
    assert_eq!(ledger.pending.len(), 1, "queued once");
    // The session is gone: the close is no longer wanted.
    f.sessions.clear();
    f.apply(&mut ledger, snapshot(220, Listing::Since(None)));
    assert!(ledger.pending.is_empty());
}

#[test]
fn a_pull_request_a_session_follows_is_read_without_the_label_while_open() {
    let mut f = Fixture::new();
    let mut ledger = baselined_ledger(&f);
    let pull = |state: &str, updated: i64| {
        let mut p = item(42, state, &[], updated);
        p["pull_request"] = json!({"url": "https://api.github.com/repos/o/r/pulls/42"});
        p
    };
    f.apply(
        &mut ledger,
        snapshot(200, Listing::Since(Some(vec![pull("open", 150)]))),
    );
    assert!(
        !ledger.items.contains_key(&42),
        "no label, not followed: not read"
    );

    f.linked.insert(42);
    let mut snap = snapshot(
        210,
        Listing::Full(Some(vec![item(15, "open", &["the-loop"], 10)])),
    );
    snap.lookups = vec![pull("open", 160)];
    f.apply(&mut ledger, snap);
    assert!(
        ledger.items[&42].watched,
        "followed: read whatever its label"
    );
    assert!(ledger.items[&15].watched);

    f.apply(
        &mut ledger,
        snapshot(220, Listing::Since(Some(vec![pull("closed", 170)]))),
    );
    assert!(
        ledger.items.get(&42).is_none_or(|e| !e.watched),
        "a closed pull request is no longer read"
    );
    assert!(ledger.pending.is_empty(), "and its close is no session's");
}

#[test]
fn a_full_listing_unwatches_what_it_no_longer_lists() {
    let f = Fixture::new();
    let mut ledger = baselined_ledger(&f);
    f.apply(
        &mut ledger,
        snapshot(
            200,
            Listing::Full(Some(vec![item(16, "open", &["The-Loop"], 150)])),
        ),
    );
    assert!(!ledger.items.contains_key(&15));
    assert!(
        ledger.items[&16].watched,
        "labels compare case-insensitively"
    );
    assert!(
        ledger.items[&16].baseline_at.is_none(),
        "baselined once its thread is read"
    );
    assert_eq!(ledger.last_full_listing, Some(Stamp(t(200))));
}

#[test]
fn comments_sharing_the_cursors_timestamp_are_never_skipped() {
    let f = Fixture::new();
    let mut ledger = baselined_ledger(&f);
    // Cycle A sees comment 110 at second 150; comment 111 lands in the same second but
    // becomes visible only after that answer.
    let at = |id: u64| {
        let mut c = comment(id, "alice", "same second");
        c["created_at"] = json!(ts(150));
        c["updated_at"] = json!(ts(150));
        c
    };
    let mut snap = snapshot(160, Listing::Since(None));
    snap.issue_comments = Some(Stream {
        since: t(100),
        items: Some(vec![at(110)]),
    });
    f.apply(&mut ledger, snap);
    let cursor = ledger.cursors.issue_comments.unwrap();
    assert_eq!(cursor, Stamp(t(150)));
    // The next request starts at or before the cursor (inclusive on GitHub's side) …
    let plan = crate::ingress::poller::fetch::Plan::new(&ledger, t(170), &BTreeSet::new(), false);
    let since = plan.since(Some(cursor));
    assert!(since <= cursor.0 - crate::ingress::poller::CURSOR_OVERLAP + time::Duration::ZERO);
    // … so the answer holds both; only the new one is queued.
    let mut snap = snapshot(170, Listing::Since(None));
    snap.issue_comments = Some(Stream {
        since,
        items: Some(vec![at(110), at(111)]),
    });
    f.apply(&mut ledger, snap);
    let ids: Vec<&str> = ledger
        .pending
        .iter()
        .map(|p| p.delivery_id.as_str())
        .collect();
    assert_eq!(ids, ["poll-comment-110", "poll-comment-111"]);
}

#[test]
fn an_idle_snapshot_changes_nothing_worth_writing() {
    let f = Fixture::new();
    let mut ledger = baselined_ledger(&f);
    let mut snap = snapshot(200, Listing::Since(None));
    snap.issue_comments = Some(Stream {
        since: t(70),
        items: None,
    });
    assert!(!f.apply(&mut ledger, snap).changed);
    // Reading a PR's reviews (it moved) moves when they were read: written.
    let mut snap = snapshot(205, Listing::Since(None));
    snap.reviews = vec![(15, None)];
    assert!(f.apply(&mut ledger, snap).changed);
    assert_eq!(ledger.items[&15].reviews_read_at, Some(Stamp(t(205))));
    let mut snap = snapshot(210, Listing::Since(None));
    snap.issue_comments = Some(Stream {
        since: t(70),
        items: Some(Vec::new()),
    });
    assert!(f.apply(&mut ledger, snap).changed, "a 200 is written");
}
