//! What polling alone now sees (SPEC §15.1, §15.2): who labeled an item that entered
//! the watched list (its `labeled` twin goes through the real router), and the check
//! runs of watched PRs whose CI concerns a session — a failure once, a pass never, a
//! settled sha for free.

use crate::support::poller::*;
use the_loop::config::SpawnPolicy;
use the_loop::github::sim::IssueSpec;
use the_loop::ingress::InboundEvent;
use the_loop::routing::{DeliveryDedupe, EnabledEvents, Outcome, RouterConfig, route};

async fn labeled_harness() -> Harness {
    Harness::with_config(seeded_sim().await, |c| {
        c.routing.spawn = SpawnPolicy::Labeled;
    })
    .await
}

/// What the real router makes of an event under the harness's config.
fn routed(h: &Harness, event: &InboundEvent) -> Outcome {
    let config = RouterConfig::new(&h.config.routing, EnabledEvents::all()).watching(["octo/repo"]);
    route(&event.as_inbound(), &config, &mut DeliveryDedupe::new())
}

fn events_path(n: u64) -> String {
    format!("/repos/octo/repo/issues/{n}/events")
}

#[tokio::test]
async fn an_issue_labeled_after_the_first_cycle_is_looked_up_once_and_routed_as_labeled() {
    let mut h = labeled_harness().await;
    h.sim
        .add_issue(
            REPO,
            IssueSpec::new("Old, labeled")
                .number(20)
                .author("alice")
                .labels(&["the-loop"]),
        )
        .unwrap();
    let (_, stats) = h.measured_cycle().await;
    assert_eq!(
        stats.path(&events_path(20)),
        0,
        "present at the first cycle"
    );
    assert!(h.ingest.fed().is_empty());

    // Opened with the label by an authorized author, later; and labeled by alice.
    h.sim
        .add_issue(
            REPO,
            IssueSpec::new("New")
                .number(21)
                .author("alice")
                .labels(&["the-loop"]),
        )
        .unwrap();
    h.sim
        .add_issue(REPO, IssueSpec::new("Unlabeled").number(22).author("alice"))
        .unwrap();
    h.sim.add_label_by(REPO, 22, "the-loop", "alice").unwrap();
    let (_, stats) = h.measured_cycle().await;
    assert_eq!(stats.path(&events_path(21)), 1);
    assert_eq!(stats.path(&events_path(22)), 1);
    let fed = h.ingest.fed();
    assert_eq!(fed.len(), 2, "{:?}", h.ingest.fed_ids());
    for (event, _) in &fed {
        assert_eq!(
            (event.gh_event.as_str(), event.action.as_str()),
            ("issues", "labeled")
        );
        assert!(
            event.delivery_id.starts_with("poll-labeled-"),
            "{}",
            event.delivery_id
        );
        assert_eq!(event.payload["sender"]["login"], "alice");
        match routed(&h, event) {
            Outcome::SpawnCandidate { item, actor, .. } => {
                assert!([21, 22].contains(&item.number));
                assert_eq!(actor, "alice");
            }
            other => panic!("expected a spawn candidate, got {other:?}"),
        }
    }
    // Looked up once: the next cycles read no timeline.
    let (_, stats) = h.measured_cycle().await;
    assert_eq!(
        stats.path(&events_path(21)) + stats.path(&events_path(22)),
        0
    );
    assert_eq!(h.ingest.fed().len(), 2);
}

#[tokio::test]
async fn a_strangers_label_or_a_strangers_issue_is_refused_by_the_router() {
    let mut h = labeled_harness().await;
    h.cycle().await;
    // mallory labels alice's issue; alice labels mallory's.
    h.sim
        .add_issue(REPO, IssueSpec::new("a").number(30).author("alice"))
        .unwrap();
    h.sim.add_label_by(REPO, 30, "the-loop", "mallory").unwrap();
    h.sim
        .add_issue(REPO, IssueSpec::new("m").number(31).author("mallory"))
        .unwrap();
    h.sim.add_label_by(REPO, 31, "the-loop", "alice").unwrap();
    h.cycle().await;
    let fed = h.ingest.fed();
    assert_eq!(fed.len(), 2);
    for (event, _) in &fed {
        assert!(
            !matches!(routed(&h, event), Outcome::SpawnCandidate { .. }),
            "{}",
            event.payload
        );
    }
}

#[tokio::test]
async fn without_the_labeled_policy_no_timeline_is_read() {
    let mut h = Harness::new(seeded_sim().await).await;
    h.cycle().await;
    h.sim
        .add_issue(
            REPO,
            IssueSpec::new("New")
                .number(21)
                .author("alice")
                .labels(&["the-loop"]),
        )
        .unwrap();
    let (_, stats) = h.measured_cycle().await;
    assert_eq!(stats.path(&events_path(21)), 0);
    assert!(h.ingest.fed().is_empty());
}

fn check_runs_path(h: &Harness, pr: u64) -> String {
    let sha = h.sim.head_sha(REPO, pr).unwrap();
    format!("/repos/octo/repo/commits/{sha}/check-runs")
}

#[tokio::test]
async fn a_failing_check_of_a_pr_linked_to_a_session_is_fed_once_and_a_pass_never() {
    let mut h = Harness::new(seeded_sim().await).await;
    // #16's branch `issue-15-backoff` links it to #15, which has the session.
    h.add_session(15);
    let unit = h.sim.add_check_run(REPO, 16, "unit", None).unwrap();
    let lint = h.sim.add_check_run(REPO, 16, "lint", None).unwrap();
    h.cycle().await;
    h.cycle().await;
    let path = check_runs_path(&h, 16);

    h.sim.complete_check_run(REPO, lint, "success").unwrap();
    h.sim.complete_check_run(REPO, unit, "failure").unwrap();
    let (_, stats) = h.measured_cycle().await;
    assert_eq!(stats.path(&path), 1);
    assert_eq!(h.ingest.fed_ids(), vec![format!("poll-check-run-{unit}")]);
    let (event, disposition) = &h.ingest.fed()[0];
    assert_eq!(event.gh_event, "check_run");
    assert_eq!(event.payload["check_run"]["conclusion"], "failure");
    assert_eq!(
        disposition.as_ref(),
        Some(&the_loop::ingress::Disposition::Delivered)
    );
    match routed(&h, event) {
        Outcome::Deliver { work_items, .. } => {
            let numbers: Vec<u64> = work_items.iter().map(|w| w.number).collect();
            assert!(
                numbers.contains(&16) && numbers.contains(&15),
                "{numbers:?}"
            );
        }
        other => panic!("expected a delivery, got {other:?}"),
    }

    // Every run completed and handled: the sha costs nothing more.
    let (_, stats) = h.measured_cycle().await;
    assert_eq!(stats.path(&path), 0);
    assert_eq!(h.ingest.fed().len(), 1);

    // A push: the new head's checks are followed again.
    h.sim.push_commit(REPO, 16).unwrap();
    let again = h
        .sim
        .add_check_run(REPO, 16, "unit", Some("timed_out"))
        .unwrap();
    h.cycle().await;
    assert_eq!(
        h.ingest.fed_ids(),
        vec![
            format!("poll-check-run-{unit}"),
            format!("poll-check-run-{again}")
        ]
    );
}

#[tokio::test]
async fn checks_are_read_only_with_a_session_and_runs_before_the_first_cycle_are_history() {
    let mut h = Harness::new(seeded_sim().await).await;
    h.sim
        .add_check_run(REPO, 16, "unit", Some("failure"))
        .unwrap();
    let (_, stats) = h.measured_cycle().await;
    let path = check_runs_path(&h, 16);
    assert_eq!(stats.path(&path), 0, "no session");
    h.cycle().await;
    h.add_session(16);
    let (_, stats) = h.measured_cycle().await;
    assert_eq!(stats.path(&path), 1);
    // A failure that was there before the session started is still news to it.
    assert_eq!(h.ingest.fed().len(), 1);

    // A fresh state root: what completed before its first cycle is history.
    let sim = seeded_sim().await;
    sim.add_check_run(REPO, 16, "unit", Some("failure"))
        .unwrap();
    sim.advance_clock(std::time::Duration::from_secs(5));
    let mut h = Harness::new(sim).await;
    h.add_session(16);
    h.cycle().await;
    h.cycle().await;
    assert_eq!(h.sim.stats().path(&check_runs_path(&h, 16)), 1, "read");
    assert!(h.ingest.fed().is_empty());
}
