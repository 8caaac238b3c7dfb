//! Nothing lost, nothing doubled: GitHub failing for a while (500s, 429 with
//! `retry-after`, slow answers), the supervisor killed with `kill -9` in the middle of a
//! burst, and a SIGTERM while deliveries are queued.

use crate::support::e2e::{Setup, World};
use std::time::Duration;
use the_loop::github::sim::Fault;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn github_faults_lose_no_comment_and_deliver_none_twice() {
    let w = World::supervising(Setup::default(), 15).await;

    // Server errors: more than one call's retries, so a cycle fails.
    w.sim.fail_next(6, Fault::Status(500));
    w.comment(15, "alice", "FAULT-A-TEXT");
    w.wait_event("poll.error", |e| e["status"] == 500).await;
    w.wait_pasted("FAULT-A-TEXT").await;

    // Secondary rate limit with retry-after, then slow answers.
    w.sim.fail_next(
        3,
        Fault::RateLimited {
            retry_after: Duration::from_secs(1),
        },
    );
    w.comment(15, "alice", "FAULT-B-TEXT");
    w.wait_pasted("FAULT-B-TEXT").await;
    w.sim.fail_next(4, Fault::Delay(Duration::from_secs(2)));
    w.comment(15, "alice", "FAULT-C-TEXT");
    w.wait_pasted("FAULT-C-TEXT").await;

    w.wait_cycles(2).await;
    for text in ["FAULT-A-TEXT", "FAULT-B-TEXT", "FAULT-C-TEXT"] {
        assert_eq!(w.pasted_count(text), 1, "{text}: {:#?}", w.pasted());
    }
    let errors = w.events_named("poll.cycle");
    assert!(
        errors.iter().any(|c| c["errors"].as_u64() > Some(0)),
        "at least one cycle failed and was retried"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_in_the_middle_of_a_burst_loses_nothing() {
    let setup = Setup {
        submit_delay_ms: 250,
        ..Setup::default()
    };
    let mut w = World::supervising(setup, 15).await;
    let bodies = w.burst(15, 8).await;
    w.kill9().await;
    let before_restart = w.pasted().len();
    assert!(
        before_restart < bodies.len(),
        "killed mid-burst ({before_restart} delivered)"
    );

    let counts = w.restart_until_pasted(&bodies).await;
    assert!(counts.iter().all(|&c| c >= 1), "none lost: {counts:?}");
    let extra: usize = counts.iter().map(|c| c - 1).sum();
    assert!(extra <= 1, "at most the one in flight twice: {counts:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_queued_deliveries_finish_or_retries_them_on_the_next_start() {
    let setup = Setup {
        submit_delay_ms: 300,
        ..Setup::default()
    };
    let mut w = World::supervising(setup, 15).await;
    let bodies = w.burst(15, 6).await;
    let at_signal = w.pasted().len();
    w.signal("-TERM");
    let status = w.wait_exit().await;
    assert!(status.success(), "a signal is a clean stop: {status:?}");
    let stopped = w.wait_event("supervisor.stopped", |_| true).await;
    assert_eq!(stopped["reason"], "signal");
    if at_signal < bodies.len() {
        // Deliveries were queued when the signal came: they finished before the exit.
        assert_eq!(stopped["cycle"], "drained", "{stopped}");
        assert_eq!(w.pasted().len(), bodies.len(), "{:#?}", w.pasted());
    }

    // Whatever did not finish is retried by the next start; nothing twice.
    let counts = w.restart_until_pasted(&bodies).await;
    assert_eq!(counts, vec![1; bodies.len()], "{:#?}", w.pasted());
}
