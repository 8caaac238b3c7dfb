//! Figures, printed (run with `--nocapture`): the requests and 304s of an idle cycle of
//! the real supervisor (`run --once`, so each cycle is a fresh process restoring its
//! ETags from the ledger) for 10, 100 and 500 watched issues + 20 PRs; and, ignored by
//! default because it takes a minute, the time from a comment becoming visible to its
//! paste completing at the configured 5 s interval. Nothing here asserts a time.

use crate::support::e2e::{LABEL, REPO, Setup, World};
use serde_json::Value;
use std::time::Duration;
use the_loop::github::sim::{IssueSpec, PullSpec};

fn once(w: &World) -> Value {
    let out = w.cli(&["run", "--once"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_cycle_costs_the_same_for_10_100_and_500_watched_issues() {
    let mut costs = Vec::new();
    for issues in [10u64, 100, 500] {
        let w = World::new(Setup::default()).await;
        for n in 1..=issues {
            let spec = IssueSpec::new(&format!("issue {n}")).labels(&[LABEL]);
            w.sim.add_issue(REPO, spec).unwrap();
        }
        for n in 0..20 {
            let spec =
                PullSpec::new(&format!("pr {n}"), &format!("issue-{}-fix", n + 1)).labels(&[LABEL]);
            w.sim.add_pull(REPO, spec).unwrap();
        }
        let first = once(&w);
        assert_eq!(first["items"], issues + 20);
        once(&w); // settles the cursors the first cycle started
        // Past the overlap in which PRs that just moved have their reviews read again
        // (the simulated clock runs a second ahead per write).
        w.sim.advance_clock(Duration::from_secs(1200));
        once(&w);
        let idle = once(&w);
        println!(
            "idle cycle, {issues} issues + 20 PRs: {} requests, {} × 304 (first cycle: {} requests)",
            idle["requests"], idle["not_modified"], first["requests"]
        );
        assert_eq!(
            idle["requests"], idle["not_modified"],
            "idle means all 304: {idle}"
        );
        costs.push(idle["requests"].as_u64().unwrap());
    }
    // Items since the cursor, the open pulls, two comment streams (SPEC §15.3).
    assert_eq!(costs, [4, 4, 4], "the idle cost must not grow: {costs:?}");
}

/// SPEC §15.3 with the real supervisor: 21 open PRs, one of them worked on by a
/// session whose CI has passed, cost at most 8 requests an idle cycle, all 304 (the
/// first version made 25: 4 + one reviews request per open PR).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_cycle_with_21_open_prs_costs_at_most_8_requests() {
    let w = World::new(Setup::default()).await;
    w.watched_issue(15);
    for n in 0..21u64 {
        let branch = if n == 0 {
            "issue-15-fix".to_string()
        } else {
            format!("topic-{n}")
        };
        let spec = PullSpec::new(&format!("pr {n}"), &branch)
            .number(100 + n)
            .author("alice")
            .labels(&[LABEL]);
        w.sim.add_pull(REPO, spec).unwrap();
    }
    w.sim
        .add_check_run(REPO, 100, "unit", Some("success"))
        .unwrap();
    w.start_session(15).await;
    let first = once(&w);
    assert_eq!(first["items"], 22);
    once(&w);
    w.sim.advance_clock(Duration::from_secs(1200));
    once(&w);
    let idle = once(&w);
    println!(
        "idle cycle, 1 issue + 21 PRs (one PR's CI followed for a session): {} requests, {} × 304",
        idle["requests"], idle["not_modified"]
    );
    assert_eq!(idle["requests"], idle["not_modified"], "all 304: {idle}");
    assert!(idle["requests"].as_u64().unwrap() <= 8, "{idle}");
    let checks = w
        .sim
        .requests()
        .iter()
        .filter(|r| r.path.contains("/check-runs"))
        .count();
    assert!(checks >= 1, "the session's PR had its checks read");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: about a minute; run with --ignored --nocapture"]
async fn latency_from_comment_to_paste_at_the_configured_interval() {
    let w = World::supervising(Setup::default(), 15).await;

    let mut total = Vec::new();
    let mut after_poll = Vec::new();
    for i in 0..8u64 {
        // Spread the comments over the interval (a fixed, uneven step).
        tokio::time::sleep(Duration::from_millis(1300 + 700 * (i % 5))).await;
        let body = format!("LATENCY-{i}-TEXT");
        let id = w.comment(15, "alice", &body);
        let created = w
            .sim
            .comments_on(REPO, 15)
            .into_iter()
            .find(|c| c.id == id)
            .unwrap()
            .created_at;
        let delivery = format!("poll-comment-{id}");
        let ok = w
            .wait_event("dispatch.succeeded", |e| {
                e["delivery_id"] == delivery.as_str()
            })
            .await;
        let routed = w
            .wait_event("routing.routed", |e| e["delivery_id"] == delivery.as_str())
            .await;
        let ts = |e: &Value| the_loop::time::parse_ts(e["ts"].as_str().unwrap()).unwrap();
        total.push((ts(&ok) - created).whole_milliseconds());
        after_poll.push((ts(&ok) - ts(&routed)).whole_milliseconds());
    }
    let stats = |v: &[i128]| {
        let mean = v.iter().sum::<i128>() / v.len() as i128;
        format!(
            "min {} ms, mean {mean} ms, max {} ms",
            v.iter().min().unwrap(),
            v.iter().max().unwrap()
        )
    };
    println!(
        "comment visible → paste complete (5 s interval): {}",
        stats(&total)
    );
    println!("routed → paste complete: {}", stats(&after_poll));
}

/// The figures of the 200-comment burst (printed; run with `--ignored --nocapture`,
/// best with the release binary: `THE_LOOP_BIN` is not used here, the test binary's
/// `the-loop` is): 200 comments by alice at once over 20 sessions (10 each) and over
/// 100 sessions (2 each). Time from the burst to its last delivery, and p50/p99 from
/// `routing.routed` to `dispatch.succeeded` per comment; every comment exactly once and
/// in order per session (asserted: that is correctness, not speed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: minutes with 100 sessions; run with --ignored --nocapture"]
async fn burst_of_200_comments_over_20_and_100_sessions() {
    for sessions in [20u64, 100] {
        let mut w = World::new(Setup::default()).await;
        let numbers: Vec<u64> = (1..=sessions).collect();
        for n in &numbers {
            w.watched_issue(*n);
        }
        for n in &numbers {
            w.start_session(*n).await;
        }
        w.start_supervisor();
        w.wait_cycles(2).await;
        let per = 200 / sessions;
        let mut bodies = Vec::new();
        let started = std::time::Instant::now();
        for i in 0..per {
            for n in &numbers {
                let body = format!("BURST-{n}-{i:02}-TEXT");
                w.comment(*n, "alice", &body);
                bodies.push((*n, body));
            }
        }
        let last = bodies.last().unwrap().1.clone();
        w.wait("every burst comment pasted", || {
            (w.pasted().iter().filter(|t| t.contains("BURST-")).count() >= bodies.len())
                .then_some(())
        })
        .await;
        let elapsed = started.elapsed();
        w.wait_cycles(2).await;
        let pasted = w.pasted();
        for (n, body) in &bodies {
            let count = pasted.iter().filter(|t| t.contains(body.as_str())).count();
            assert_eq!(count, 1, "#{n} {body}: {count}");
        }
        for n in &numbers {
            let prefix = format!("BURST-{n}-");
            let order: Vec<&String> = pasted.iter().filter(|t| t.contains(&prefix)).collect();
            assert!(
                order.windows(2).all(|p| p[0] < p[1]),
                "in order for #{n}: {order:?}"
            );
        }
        let ts = |e: &Value| the_loop::time::parse_ts(e["ts"].as_str().unwrap()).unwrap();
        let routed: std::collections::HashMap<String, Value> = w
            .events_named("routing.routed")
            .into_iter()
            .map(|e| (e["delivery_id"].as_str().unwrap_or("").to_string(), e))
            .collect();
        let mut lat: Vec<i128> = w
            .events_named("dispatch.succeeded")
            .iter()
            .filter_map(|ok| {
                let r = routed.get(ok["delivery_id"].as_str()?)?;
                Some((ts(ok) - ts(r)).whole_milliseconds())
            })
            .collect();
        lat.sort();
        let pct = |p: f64| lat[((lat.len() as f64 - 1.0) * p).round() as usize];
        // Without the wait for the next poll cycle: first routed → last pasted.
        let burst_ids: std::collections::HashSet<String> = w
            .events_named("routing.routed")
            .iter()
            .filter_map(|e| e["delivery_id"].as_str().map(str::to_string))
            .collect();
        let oks: Vec<Value> = w
            .events_named("dispatch.succeeded")
            .into_iter()
            .filter(|e| {
                e["delivery_id"]
                    .as_str()
                    .is_some_and(|d| burst_ids.contains(d))
            })
            .collect();
        let first_routed = routed.values().map(ts).min().unwrap();
        let last_ok = oks.iter().map(ts).max().unwrap();
        println!(
            "burst of {} comments over {sessions} sessions: last delivery {:.1} s after the burst, {:.1} s after the cycle routed the first (last: {last}); routed → pasted p50 {} ms, p99 {} ms, max {} ms ({} deliveries)",
            bodies.len(),
            elapsed.as_secs_f64(),
            (last_ok - first_routed).as_seconds_f64(),
            pct(0.5),
            pct(0.99),
            lat.last().unwrap(),
            lat.len()
        );
        w.signal("-TERM");
        w.wait_exit().await;
    }
}
