//! Poll cycles against the simulated GitHub on loopback: an idle cycle (10 and 500
//! watched issues + 20 PRs) and a cycle with one new comment (10 + 20); and, printed
//! before the benchmarks, the requests and 304s of an idle cycle for 10, 100 and 500
//! watched issues + 20 PRs.
//! Run: `cargo bench --bench poll -- --measurement-time 3 --warm-up-time 1`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::Criterion;
use futures::future::BoxFuture;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};
use the_loop::config::{Config, GithubConfig, RepoConfig, RoutingConfig};
use the_loop::events::EventLog;
use the_loop::github::sim::{IssueSpec, PullSpec, SimGithub, SimHandle};
use the_loop::github::{Client, RetryPolicy};
use the_loop::ingress::poller::Poller;
use the_loop::ingress::{Disposition, InboundEvent, Ingest};
use the_loop::paths::StatePaths;
use tokio::runtime::Runtime;

const REPO: &str = "octo/repo";

/// Settles everything at once: the benchmark measures the poller, not a dispatcher.
struct Accept;

impl Ingest for Accept {
    fn ingest(&self, _event: InboundEvent) -> BoxFuture<'static, Disposition> {
        Box::pin(async { Disposition::Delivered })
    }
}

struct Setup {
    sim: SimHandle,
    poller: Poller,
    _dir: tempfile::TempDir,
}

async fn setup(issues: u64) -> Setup {
    let sim = SimGithub::start().await.unwrap();
    for n in 0..issues {
        sim.add_issue(
            REPO,
            IssueSpec::new(&format!("issue {n}")).labels(&["the-loop"]),
        )
        .unwrap();
    }
    for n in 0..20 {
        let spec = PullSpec::new(&format!("pr {n}"), &format!("issue-{}-fix", n + 1))
            .labels(&["the-loop"]);
        sim.add_pull(REPO, spec).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let paths = StatePaths::new(dir.path());
    let config = Config {
        github: GithubConfig {
            api_url: sim.base_url(),
        },
        repos: vec![RepoConfig {
            name: REPO.into(),
            path: None,
            label: "the-loop".into(),
            issues: true,
            pull_requests: true,
            ..RepoConfig::named("")
        }],
        routing: RoutingConfig {
            authorized_users: vec!["alice".into()],
            ..RoutingConfig::default()
        },
        ..Config::default()
    };
    let client = Client::builder(&sim.base_url())
        .token(Some("ghp_benchtoken"))
        .retry_policy(RetryPolicy::none())
        .build()
        .unwrap();
    let mut poller = Poller::new(
        Arc::new(client),
        Arc::new(config),
        paths.clone(),
        EventLog::open(&paths),
        Arc::new(Accept),
    );
    for _ in 0..3 {
        poller.cycle().await;
    }
    Setup {
        sim,
        poller,
        _dir: dir,
    }
}

fn print_idle_costs(rt: &Runtime) {
    for issues in [10, 100, 500] {
        rt.block_on(async {
            let mut s = setup(issues).await;
            s.sim.clear_requests();
            let report = s.poller.cycle().await;
            let stats = s.sim.stats();
            println!(
                "idle cycle, 1 repo, {issues} watched issues + 20 PRs: {} requests, {} 304s \
                 (poll.cycle: {} requests, {} 304s)",
                stats.total, stats.not_modified, report.requests, report.not_modified
            );
        });
    }
}

fn bench_cycles(c: &mut Criterion, rt: &Runtime) {
    let mut s = rt.block_on(setup(10));
    let mut group = c.benchmark_group("poll");
    group.bench_function("idle_cycle_10_issues_20_prs", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                black_box(rt.block_on(s.poller.cycle()));
            }
            start.elapsed()
        })
    });
    group.bench_function("cycle_with_one_new_comment_10_issues_20_prs", |b| {
        b.iter_custom(|iters| {
            let mut measured = Duration::ZERO;
            for n in 0..iters {
                s.sim
                    .add_comment(REPO, 1, "alice", &format!("comment {n}"))
                    .unwrap();
                let start = Instant::now();
                let report = rt.block_on(s.poller.cycle());
                measured += start.elapsed();
                assert_eq!(report.delivered, 1);
                // Settle the overlap re-read so the next iteration starts idle.
                rt.block_on(s.poller.cycle());
            }
            measured
        })
    });
    let mut big = rt.block_on(setup(500));
    group.bench_function("idle_cycle_500_issues_20_prs", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                black_box(rt.block_on(big.poller.cycle()));
            }
            start.elapsed()
        })
    });
    group.finish();
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    print_idle_costs(&rt);
    let mut c = Criterion::default().configure_from_args();
    bench_cycles(&mut c, &rt);
    c.final_summary();
}
