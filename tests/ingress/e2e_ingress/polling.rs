//! Polling alone is a complete ingress (SPEC §15.1, §15.2), end to end: the real
//! `the-loop run`, the simulated GitHub with issue timelines and check runs, and real
//! tmux. A labeled issue by an authorized author starts a session without a webhook; a
//! stranger's label or issue does not, nor an item present at the first cycle. A
//! failing check of a PR a session works on reaches the agent once; a passing one never.

use crate::support::e2e::{LABEL, REPO, Setup, World, item};
use the_loop::github::sim::{IssueSpec, PullSpec};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_labeled_issue_by_an_authorized_author_starts_a_session_with_polling_alone() {
    let mut w = World::new(Setup {
        spawn: "labeled",
        ..Setup::default()
    })
    .await;
    let present = IssueSpec::new("There before")
        .number(40)
        .author("alice")
        .labels(&[LABEL]);
    w.sim.add_issue(REPO, present).unwrap();
    w.start_supervisor();
    w.wait_cycles(1).await;

    // Opened with the label by alice (authorized); alice's issue labeled by mallory;
    // mallory's issue labeled by alice.
    let opened = IssueSpec::new("Opened labeled")
        .number(41)
        .author("alice")
        .labels(&[LABEL]);
    w.sim.add_issue(REPO, opened).unwrap();
    w.sim
        .add_issue(REPO, IssueSpec::new("a").number(42).author("alice"))
        .unwrap();
    w.sim.add_label_by(REPO, 42, LABEL, "mallory").unwrap();
    w.sim
        .add_issue(REPO, IssueSpec::new("m").number(43).author("mallory"))
        .unwrap();
    w.sim.add_label_by(REPO, 43, LABEL, "alice").unwrap();

    let ref41 = item(41);
    let spawned = w
        .wait_event("session.spawned", |e| e["work_item"] == ref41.as_str())
        .await;
    assert_eq!(spawned["source"], "dispatch", "{spawned}");
    let boot = w
        .wait("the boot prompt of #41", || {
            w.agent_lines().into_iter().find(|l| {
                l["boot"] == true && l["text"].as_str().is_some_and(|t| t.contains("#41"))
            })
        })
        .await;
    assert!(boot["text"].as_str().unwrap().contains("UNTRUSTED"));

    // The stranger's label and the stranger's issue are refused by the router.
    let refused = |n: u64| {
        let r = item(n);
        w.events_named("routing.dropped").into_iter().any(|e| {
            e["work_items"][0] == r.as_str()
                && e["gh_event"] == "issues"
                && matches!(
                    e["reason"].as_str(),
                    Some("unauthorized-actor" | "not-actionable")
                )
        })
    };
    w.wait("both strangers refused", || {
        (refused(42) && refused(43)).then_some(())
    })
    .await;
    w.wait_cycles(2).await;
    for n in [40, 42, 43] {
        assert!(w.session(n).is_none(), "#{n} must not have a session");
    }
    assert!(w.session(41).is_some());
    let spawns = w.events_named("session.spawned");
    assert_eq!(spawns.len(), 1, "{spawns:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_check_is_delivered_once_and_a_passing_one_never() {
    let mut w = World::new(Setup::default()).await;
    w.watched_issue(15);
    let pr = PullSpec::new("Fix the flake", "issue-15-flake")
        .number(16)
        .author("alice")
        .labels(&[LABEL]);
    w.sim.add_pull(REPO, pr).unwrap();
    let unit = w.sim.add_check_run(REPO, 16, "unit-tests", None).unwrap();
    let lint = w.sim.add_check_run(REPO, 16, "lint-job", None).unwrap();
    w.start_session(15).await;
    w.start_supervisor();
    w.wait_cycles(2).await;

    w.sim.complete_check_run(REPO, lint, "success").unwrap();
    w.sim.complete_check_run(REPO, unit, "failure").unwrap();
    let delivery = format!("poll-check-run-{unit}");
    let ok = w
        .wait_event("dispatch.succeeded", |e| {
            e["delivery_id"] == delivery.as_str()
        })
        .await;
    assert_eq!(
        ok["work_item"],
        item(15),
        "the PR's branch links it to #15's session"
    );
    let pasted = w.wait_pasted(&delivery).await;
    assert!(
        pasted.contains("unit-tests") && pasted.contains("failure"),
        "{pasted}"
    );

    w.wait_cycles(3).await;
    assert_eq!(w.pasted_count(&delivery), 1, "once: {:#?}", w.pasted());
    let passing = format!("poll-check-run-{lint}");
    assert_eq!(w.pasted_count(&passing), 0);
    assert!(
        !w.events()
            .iter()
            .any(|e| e["delivery_id"] == passing.as_str()),
        "a passing run is never even routed"
    );
    // The sha settled: later cycles read its checks no more.
    let before = checks_read(&w);
    w.wait_cycles(2).await;
    assert_eq!(checks_read(&w), before, "a settled sha costs nothing");
}

fn checks_read(w: &World) -> usize {
    w.sim
        .requests()
        .iter()
        .filter(|r| r.path.contains("/check-runs"))
        .count()
}
