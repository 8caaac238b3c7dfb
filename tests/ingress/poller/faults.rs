//! Failures: deliveries that fail (retries, then a give-up notice), GitHub faults (5xx,
//! 429, slow answers), a supervisor killed mid-delivery, and a corrupt ledger.

use crate::support::poller::*;
use std::collections::HashSet;
use std::time::Duration;
use the_loop::events::EventType;
use the_loop::github::sim::Fault;
use the_loop::guard::{MARKER, is_self_authored};
use the_loop::ingress::Disposition;
use the_loop::ingress::ledger::ledger_path;

#[tokio::test]
async fn a_failing_delivery_is_retried_then_given_up_with_one_marked_notice() {
    let mut h = Harness::new(seeded_sim().await).await;
    h.cycle().await;
    let secret = "The deploy key is in vault path kv/prod.";
    let doomed = h.sim.add_comment(REPO, 15, "alice", secret).unwrap();
    let flaky = h
        .sim
        .add_comment(REPO, 15, "alice", "Second note.")
        .unwrap();
    let doomed_id = format!("poll-comment-{doomed}");
    let flaky_id = format!("poll-comment-{flaky}");
    h.ingest.fail(&doomed_id, u32::MAX);
    h.ingest.fail(&flaky_id, 1);
    let first = h.cycle().await;
    assert_eq!((first.failed, first.delivered), (2, 0));
    for _ in 0..5 {
        h.cycle().await;
    }
    let fed = h.ingest.fed_ids();
    // maxRetries = 2: the first attempt and two retries.
    assert_eq!(fed.iter().filter(|id| **id == doomed_id).count(), 3);
    assert_eq!(fed.iter().filter(|id| **id == flaky_id).count(), 2);
    assert_eq!(h.ingest.delivered(), vec![flaky_id.clone()]);

    let notices: Vec<_> = h
        .sim
        .comments_on(REPO, 15)
        .into_iter()
        .filter(|c| c.login == "the-loop-operator")
        .collect();
    assert_eq!(notices.len(), 1, "one notice");
    let notice = &notices[0].body;
    assert!(
        notice.contains(&format!("#issuecomment-{doomed}")),
        "{notice}"
    );
    assert!(
        !notice.contains("vault"),
        "the notice never echoes the body: {notice}"
    );
    assert!(notice.contains(MARKER) && is_self_authored(Some(notice)));

    let failed = h.events_of(EventType::PollCommentFailed);
    assert_eq!(failed.len(), 1);
    let f = &failed[0].fields;
    assert_eq!(f["work_item"], serde_json::json!("github:octo/repo#15"));
    assert_eq!(f["comment_id"], serde_json::json!(doomed));
    assert_eq!(f["attempts"], serde_json::json!(3));
    assert_eq!(f["notice_posted"], serde_json::json!(true));
    assert!(!failed[0].to_line().contains("vault"));
    // The notice itself came back through the stream and was dropped as the tool's own.
    let notice_id = format!("poll-comment-{}", notices[0].id);
    assert_eq!(
        h.ingest.disposition(&notice_id),
        Some(Disposition::Dropped {
            reason: "self-authored".into()
        })
    );
    let ledger = h.poller.ledgers().snapshot(REPO);
    assert!(ledger.pending.is_empty());
    assert_eq!(ledger.items[&15].given_up, vec![doomed]);
}

/// Scripts one fault into the simulator.
type ScriptFault = dyn Fn(&Harness);

#[tokio::test]
async fn github_faults_lose_nothing_and_deliver_nothing_twice() {
    let mut h = Harness::new(seeded_sim().await).await;
    h.cycle().await;
    let faults: Vec<Box<ScriptFault>> = vec![
        Box::new(|h| h.sim.fail_next(3, Fault::Status(500))),
        Box::new(|h| h.sim.fail_next(9, Fault::Status(502))),
        Box::new(|h| {
            h.sim.fail_next_on(
                "/issues/comments",
                1,
                Fault::RateLimited {
                    retry_after: Duration::from_secs(1),
                },
            )
        }),
        Box::new(|h| {
            h.sim
                .fail_next(2, Fault::Delay(Duration::from_millis(1500)))
        }),
        Box::new(|h| {
            h.sim.fail_next_on(
                "/pulls/comments",
                1,
                Fault::RateLimited {
                    retry_after: Duration::from_secs(3),
                },
            )
        }),
        Box::new(|h| h.sim.fail_next_on("/reviews", 5, Fault::Status(503))),
        Box::new(|h| {
            h.sim
                .fail_next(6, Fault::Delay(Duration::from_millis(1200)))
        }),
    ];
    let mut expected = Vec::new();
    let mut errors = 0;
    for (round, fault) in faults.iter().enumerate() {
        for item in [15, 16] {
            let id = h
                .sim
                .add_comment(REPO, item, "alice", &format!("round {round} on #{item}"))
                .unwrap();
            expected.push(format!("poll-comment-{id}"));
        }
        let rc = h
            .sim
            .add_review_comment(REPO, 16, "alice", "src/x.rs", round as u64 + 1, "nit")
            .unwrap();
        expected.push(format!("poll-review-comment-{rc}"));
        fault(&h);
        let report = h.cycle().await;
        errors += report.errors;
        if let Some(until) = report.rate_limited_until {
            let wait = until - time::OffsetDateTime::now_utc();
            tokio::time::sleep(Duration::try_from(wait).unwrap_or_default()).await;
        }
    }
    assert!(errors > 0, "some faults outlast the client's own retries");
    for _ in 0..3 {
        h.cycle().await;
    }
    let delivered = h.ingest.delivered();
    let unique: HashSet<&String> = delivered.iter().collect();
    assert_eq!(
        unique.len(),
        delivered.len(),
        "delivered twice: {delivered:?}"
    );
    let mut sorted_expected = expected.clone();
    sorted_expected.sort();
    let mut sorted = delivered.clone();
    sorted.sort();
    assert_eq!(sorted, sorted_expected);
    let poll_errors = h.events_of(EventType::PollError);
    assert!(!poll_errors.is_empty());
    for e in &poll_errors {
        assert!(!e.to_line().contains(TOKEN));
        assert!(e.fields.contains_key("repo") && e.fields.contains_key("error"));
    }
    assert!(
        poll_errors
            .iter()
            .any(|e| e.fields.get("status") == Some(&serde_json::json!(502))),
        "the status is reported"
    );
}

#[tokio::test]
async fn a_rate_limit_blocks_requests_until_the_reset() {
    let mut h = Harness::new(seeded_sim().await).await;
    h.cycle().await;
    h.sim.fail_next(
        1,
        Fault::RateLimited {
            retry_after: Duration::from_secs(120),
        },
    );
    let report = h.cycle().await;
    assert_eq!(report.errors, 1);
    let until = report.rate_limited_until.expect("the reset is reported");
    assert!(until > time::OffsetDateTime::now_utc() + time::Duration::seconds(100));
    let err = &h.events_of(EventType::PollError)[0];
    assert!(err.fields["retry_in_ms"].as_u64().unwrap() > 100_000);
    // Never hammer: the next cycle sends nothing at all.
    let (report, stats) = h.measured_cycle().await;
    assert_eq!(stats.total, 0);
    assert_eq!(report.errors, 1);
}

#[tokio::test]
async fn a_restart_redelivers_nothing_settled_and_everything_not() {
    let mut h = Harness::new(seeded_sim().await).await;
    h.cycle().await;
    let ids: Vec<String> = (0..4)
        .map(|n| {
            let id = h
                .sim
                .add_comment(REPO, 15, "alice", &format!("step {n}"))
                .unwrap();
            format!("poll-comment-{id}")
        })
        .collect();
    // The supervisor dies while #1 and #3 are being pasted.
    h.ingest.hang(&ids[1]);
    h.ingest.hang(&ids[3]);
    let killed = tokio::time::timeout(Duration::from_secs(3), h.cycle()).await;
    assert!(killed.is_err(), "the cycle hangs on the stuck deliveries");
    assert_eq!(h.ingest.delivered(), vec![ids[0].clone(), ids[2].clone()]);

    let later = h
        .sim
        .add_comment(REPO, 15, "alice", "after the crash")
        .unwrap();
    h.restart();
    let (_, stats) = h.measured_cycle().await;
    h.cycle().await;
    assert_eq!(
        h.ingest.delivered(),
        vec![
            ids[1].clone(),
            ids[3].clone(),
            format!("poll-comment-{later}")
        ]
    );
    // The persisted ETags came back with the data they vouch for: 304s at once.
    assert!(stats.not_modified > 0, "{stats:?}");
}

#[tokio::test]
async fn a_corrupt_ledger_is_moved_aside_and_the_repo_starts_over() {
    let mut h = Harness::new(seeded_sim().await).await;
    h.cycle().await;
    let before = h
        .sim
        .add_comment(REPO, 15, "alice", "delivered once")
        .unwrap();
    h.cycle().await;
    let path = ledger_path(&h.paths, REPO);
    std::fs::write(&path, b"{\"version\": 1, \"items\": {\"15\": ").unwrap();
    h.restart();
    let (_, stats) = h.measured_cycle().await;
    assert_eq!(h.events_of(EventType::StateCorrupt).len(), 1);
    let aside = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("octo-repo.json.corrupt-")
        })
        .count();
    assert_eq!(aside, 1);
    // A first cycle again: no history, nothing re-delivered.
    assert_eq!(stats.path("/repos/octo/repo/issues/comments"), 0);
    assert!(h.ingest.fed().is_empty(), "{:?}", h.ingest.fed_ids());
    let after = h
        .sim
        .add_comment(REPO, 15, "alice", "after the repair")
        .unwrap();
    h.cycle().await;
    assert_eq!(h.ingest.delivered(), vec![format!("poll-comment-{after}")]);
    assert_ne!(before, after);
    let saved: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(saved["repo"], serde_json::json!(REPO));
}

#[tokio::test]
async fn a_failed_cycle_keeps_no_etag_for_answers_it_did_not_process() {
    let sim = seeded_sim().await;
    sim.add_pull(
        REPO,
        the_loop::github::sim::PullSpec::new("Another", "chore")
            .number(18)
            .labels(&["the-loop"]),
    )
    .unwrap();
    let mut h = Harness::new(sim).await;
    h.add_session(15);
    h.cycle().await;
    h.cycle().await;
    // Then, with nothing else happening afterwards: a review on #16 and a close of #15,
    // read in a cycle whose last request (PR #18's reviews) fails for good.
    let review = h
        .sim
        .add_review(
            REPO,
            16,
            "alice",
            the_loop::github::sim::ReviewState::Commented,
            "LGTM",
        )
        .unwrap();
    h.sim.close_issue(REPO, 15).unwrap();
    h.sim
        .fail_next_on("/pulls/18/reviews", 4, Fault::Status(503));
    let failed = h.cycle().await;
    assert_eq!(failed.errors, 1);
    assert!(h.ingest.fed().is_empty());
    h.cycle().await;
    h.cycle().await;
    let fed = h.ingest.fed_ids();
    assert!(fed.contains(&format!("poll-review-{review}")), "{fed:?}");
    assert!(
        fed.iter().any(|id| id.starts_with("poll-closed-")),
        "{fed:?}"
    );
    assert_eq!(fed.len(), 2, "{fed:?}");
}
