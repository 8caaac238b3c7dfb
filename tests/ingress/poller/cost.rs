//! What an idle cycle costs, the dedupe shared with the webhook path, `sessions reset`,
//! and the run loop.

use crate::support::poller::*;
use the_loop::events::EventType;
use the_loop::github::sim::{IssueSpec, PullSpec, SimGithub};
use the_loop::ingress::claims::ClaimSettled;
use the_loop::ingress::ledger::forget_item;
use the_loop::ingress::{ClaimKey, Disposition};

/// `issues` labeled issues and `prs` labeled PRs (plus unlabeled noise), polled until
/// steady; then one idle cycle's (requests, 304s).
async fn idle_cost(issues: u64, prs: u64) -> (u64, u64) {
    let sim = SimGithub::start().await.unwrap();
    for n in 0..issues {
        let spec = IssueSpec::new(&format!("issue {n}")).labels(&["the-loop"]);
        sim.add_issue(REPO, spec).unwrap();
    }
    for n in 0..prs {
        let spec = PullSpec::new(&format!("pr {n}"), &format!("issue-{}-fix", n + 1))
            .labels(&["the-loop"]);
        sim.add_pull(REPO, spec).unwrap();
    }
    for n in 0..10 {
        sim.add_issue(REPO, IssueSpec::new(&format!("noise {n}")))
            .unwrap();
    }
    let mut h = Harness::new(sim).await;
    for _ in 0..3 {
        h.cycle().await;
    }
    // Past the overlap in which a PR that just moved has its reviews read again (the
    // simulated clock runs a second ahead per write: hundreds of items were written).
    h.sim.advance_clock(std::time::Duration::from_secs(1200));
    h.cycle().await;
    let (report, stats) = h.measured_cycle().await;
    assert_eq!(report.items as u64, issues + prs);
    assert_eq!(report.errors, 0);
    assert_eq!(
        (report.requests, report.not_modified),
        (stats.total, stats.not_modified),
        "poll.cycle counts what GitHub saw"
    );
    (stats.total, stats.not_modified)
}

#[tokio::test]
async fn an_idle_cycle_costs_the_same_for_10_100_and_500_watched_issues() {
    let mut costs = Vec::new();
    for issues in [10, 100, 500] {
        let (requests, not_modified) = idle_cost(issues, 20).await;
        eprintln!("idle cycle, {issues} issues + 20 PRs: {requests} requests, {not_modified} 304s");
        costs.push((requests, not_modified));
    }
    // Items since the cursor, the open pulls, two comment streams: every one a 304,
    // free of rate limit. No PR moved, so no reviews are read (SPEC §15.3).
    assert_eq!(costs, vec![(4, 4); 3]);
}

/// SPEC §15.3: the idle cost is per repository, whatever the number of open PRs (the
/// first version read every watched PR's reviews: 4 + 1 per PR).
#[tokio::test]
async fn an_idle_cycle_costs_the_same_for_0_20_and_100_open_prs() {
    let mut costs = Vec::new();
    for prs in [0, 20, 100] {
        let (requests, not_modified) = idle_cost(10, prs).await;
        eprintln!("idle cycle, 10 issues + {prs} PRs: {requests} requests, {not_modified} 304s");
        costs.push(requests);
    }
    // Without a watched PR the open pulls are not listed. (100 open PRs fill the page
    // exactly, and a full last page is never cached: that listing answers 200.)
    assert_eq!(costs, vec![3, 4, 4]);
}

#[tokio::test]
async fn a_review_moves_its_pr_and_only_that_pr_has_its_reviews_read() {
    use the_loop::github::sim::ReviewState;
    let mut h = Harness::new(seeded_sim().await).await;
    h.sim
        .add_pull(
            REPO,
            PullSpec::new("other", "other-branch")
                .number(18)
                .labels(&["the-loop"]),
        )
        .unwrap();
    for _ in 0..2 {
        h.cycle().await;
    }
    h.sim.advance_clock(std::time::Duration::from_secs(60));
    h.cycle().await;
    let review = h
        .sim
        .add_review(REPO, 16, "alice", ReviewState::Commented, "Looks close.")
        .unwrap();
    let (_, stats) = h.measured_cycle().await;
    assert_eq!(stats.path("/repos/octo/repo/pulls/16/reviews"), 1);
    assert_eq!(stats.path("/repos/octo/repo/pulls/18/reviews"), 0);
    assert_eq!(h.ingest.delivered(), vec![format!("poll-review-{review}")]);
}

#[tokio::test]
async fn a_comment_the_webhook_handled_first_is_not_fed_again() {
    let mut h = Harness::new(seeded_sim().await).await;
    h.cycle().await;
    let by_webhook = h
        .sim
        .add_comment(REPO, 15, "alice", "Seen by webhook.")
        .unwrap();
    let claims = h.claims();
    let event = webhook_comment(15, by_webhook);
    let key = ClaimKey::of(&event).unwrap();
    claims.take(&key, &event).unwrap().wait().await.unwrap();
    claims.settle(&key, &Disposition::Delivered).await;
    let by_poll = h
        .sim
        .add_comment(REPO, 15, "alice", "Seen by poll.")
        .unwrap();
    h.cycle().await;
    assert_eq!(h.ingest.fed_ids(), vec![format!("poll-comment-{by_poll}")]);
    // The poller's own ids answer the webhook's question too.
    let late = webhook_comment(15, by_poll);
    assert!(claims.take(&ClaimKey::of(&late).unwrap(), &late).is_none());
    let dropped = h.events_of(EventType::RoutingDropped);
    assert_eq!(dropped.len(), 1);
    assert_eq!(
        dropped[0].fields["reason"],
        serde_json::json!("duplicate-delivery")
    );
    assert_eq!(
        dropped[0].fields["delivery_id"],
        serde_json::json!(format!("poll-comment-{by_webhook}"))
    );
    assert_eq!(dropped[0].fields["actor"], serde_json::json!("alice"));
}

/// SPEC §15.4: the poller sees a comment while the webhook's paste of it is in flight;
/// that paste fails. The first version recorded the comment as the webhook's and lost
/// it; now it waits behind the claim and the poller delivers it.
#[tokio::test]
async fn a_comment_seen_while_the_webhook_pastes_it_is_retried_when_that_paste_fails() {
    let mut h = Harness::new(seeded_sim().await).await;
    h.cycle().await;
    let id = h
        .sim
        .add_comment(REPO, 15, "alice", "Pasted by webhook?")
        .unwrap();
    let claims = h.claims();
    let event = webhook_comment(15, id);
    let key = ClaimKey::of(&event).unwrap();
    claims.take(&key, &event).unwrap().wait().await.unwrap();
    h.cycle().await;
    h.cycle().await;
    assert!(h.ingest.fed_ids().is_empty(), "parked behind the claim");
    assert!(h.events_of(EventType::RoutingDropped).is_empty());

    let failed = Disposition::Failed {
        error: "pane gone".into(),
    };
    assert_eq!(claims.settle(&key, &failed).await, ClaimSettled::HandedOver);
    h.cycle().await;
    assert_eq!(h.ingest.delivered(), vec![format!("poll-comment-{id}")]);
    h.cycle().await;
    assert_eq!(h.ingest.fed_ids().len(), 1, "once");
}

#[tokio::test]
async fn reset_forgets_an_item_which_is_baselined_again() {
    let mut h = Harness::new(seeded_sim().await).await;
    h.cycle().await;
    let first = h
        .sim
        .add_comment(REPO, 15, "alice", "Before the reset.")
        .unwrap();
    h.cycle().await;
    forget_item(&h.paths, REPO, 15).unwrap();
    let (_, stats) = h.measured_cycle().await;
    assert_eq!(
        stats.path("/repos/octo/repo/issues/15/comments"),
        1,
        "re-baselined"
    );
    let second = h
        .sim
        .add_comment(REPO, 15, "alice", "After the reset.")
        .unwrap();
    h.cycle().await;
    h.cycle().await;
    assert_eq!(
        h.ingest.delivered(),
        vec![
            format!("poll-comment-{first}"),
            format!("poll-comment-{second}")
        ]
    );
}

#[tokio::test]
async fn reset_of_a_pr_baselines_its_reviews_again() {
    use the_loop::github::sim::ReviewState;
    let mut h = Harness::new(seeded_sim().await).await;
    h.cycle().await;
    let old = h
        .sim
        .add_review(REPO, 16, "alice", ReviewState::Commented, "Before.")
        .unwrap();
    h.cycle().await;
    h.cycle().await;
    forget_item(&h.paths, REPO, 16).unwrap();
    h.cycle().await;
    h.cycle().await;
    let new = h
        .sim
        .add_review(REPO, 16, "alice", ReviewState::Approved, "After.")
        .unwrap();
    h.cycle().await;
    assert_eq!(
        h.ingest.delivered(),
        vec![format!("poll-review-{old}"), format!("poll-review-{new}")]
    );
}
