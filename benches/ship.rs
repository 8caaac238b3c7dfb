//! Shipping's figures (SPEC §19.4), printed as median and p99 over 20 ships:
//! - **confirm → URL**: from the operator's confirm (`Shipper::ship` with the shown
//!   head) to the pull request's URL: the refusal checks, `git push` of one commit to a
//!   real git remote over HTTP (`git http-backend` behind a local server that requires
//!   the token, so git asks the running `the-loop` binary for it through askpass), the
//!   open-PR lookup and the PR's creation on the simulated GitHub, the note pasted into
//!   the session (fake tmux), the record updated;
//! - **requests per ship**: to GitHub, and to the git remote (HTTP requests of the push,
//!   the 401 challenge included).
//!
//! `cargo bench --bench ship` (a plain `main`: criterion has no percentiles).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/support/git_remote.rs"]
#[allow(dead_code)]
mod git_remote;

use git_remote::GitRemote;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};
use the_loop::config::{Config, HarnessConfig, RepoConfig};
use the_loop::events::{EventLog, Source};
use the_loop::github::Client;
use the_loop::github::sim::{IssueSpec, SimGithub};
use the_loop::paths::StatePaths;
use the_loop::session::ship::{Order, Shipper};
use the_loop::session::{Origin, PromptInputs, Registry, Sessions, Settings};
use the_loop::tmux::fake::FakeTmux;
use the_loop::work_item::WorkItemRef;

const TOKEN: &str = "ghp_shipbenchtoken_0123456789abcdef";
const SHIPS: u64 = 20;

fn git(dir: &std::path::Path, args: &[&str], env: &[(String, String)]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=b", "-c", "user.email=b@example.com"])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .envs(env.iter().cloned())
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run());
}

async fn run() {
    let dir = tempfile::tempdir().unwrap();
    let remote = GitRemote::start(TOKEN);
    remote.create_repo("octo/repo");
    let checkout = dir.path().join("checkout");
    git(
        dir.path(),
        &["clone", "-q", &remote.url("octo/repo"), "checkout"],
        &remote.auth_env(),
    );
    let sim = SimGithub::start().await.unwrap();
    for n in 1..=SHIPS {
        sim.add_issue("octo/repo", IssueSpec::new("Cap retries").number(n))
            .unwrap();
    }

    let mut config = Config {
        repos: vec![RepoConfig {
            name: "octo/repo".into(),
            path: Some(checkout.display().to_string()),
            ..RepoConfig::named("octo/repo")
        }],
        ..Config::default()
    };
    config.sessions.harness = "agent".into();
    config.sessions.harnesses.insert(
        "agent".into(),
        HarnessConfig {
            command: std::env::current_exe().unwrap().display().to_string(),
            args: vec!["{prompt}".into()],
            ..HarnessConfig::default()
        },
    );
    config.sessions.tmux.submit_delay_ms = 0;
    let paths = StatePaths::new(dir.path().join("state"));
    let events = EventLog::open(&paths);
    let mut settings = Settings::new(&config, None, &paths).unwrap();
    settings.claude_config = None;
    settings.bin = env!("CARGO_BIN_EXE_the-loop").into();
    let tmux = Arc::new(FakeTmux::new());
    let registry = Registry::new(&paths, events.clone(), Source::Cli);
    let sessions = Arc::new(Sessions::new(tmux, registry, events, settings));
    let client = Client::builder(&sim.base_url())
        .token(Some(TOKEN))
        .build()
        .unwrap();
    let shipper = Shipper::new(Arc::clone(&sessions), Arc::new(client));

    let mut times = Vec::new();
    let (mut github_requests, mut remote_requests) = (0, 0);
    for n in 1..=SHIPS {
        let item = WorkItemRef::new("octo", "repo", n);
        sessions
            .start(&item, &PromptInputs::manual(&item, "bench"), &Origin::cli())
            .await
            .unwrap();
        let worktree = sessions.workspaces().record(&item).unwrap().unwrap().dir;
        std::fs::write(worktree.join(format!("f{n}.rs")), "fn f() {}\n").unwrap();
        git(&worktree, &["add", "."], &[]);
        git(&worktree, &["commit", "-q", "-m", "work"], &[]);
        let shown = shipper.preview(&item).await.unwrap();
        let order = Order {
            work_item: item.clone(),
            seen_head: shown.head.clone(),
            title: None,
            body: None,
            draft: None,
            source: Source::Cli,
            actor: "bench".into(),
        };
        let (github_before, remote_before) = (sim.stats().total, remote.requests().len());
        let started = Instant::now();
        let shipped = shipper.ship(&order).await.unwrap();
        times.push(started.elapsed());
        github_requests += sim.stats().total - github_before;
        remote_requests += remote.requests().len() - remote_before;
        assert!(shipped.pushed_now && shipped.pull_opened);
        assert_eq!(
            remote.branch_sha("octo/repo", &format!("the-loop/issue-{n}")),
            Some(shown.head)
        );
    }
    times.sort();
    println!(
        "confirm → pull request URL ({SHIPS} ships, HTTP remote with the token through askpass, simulated GitHub): median {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        percentile(&times, 0.5).as_secs_f64() * 1000.0,
        percentile(&times, 0.99).as_secs_f64() * 1000.0,
        times.last().unwrap().as_secs_f64() * 1000.0,
    );
    println!(
        "requests per ship: GitHub {:.1}, git remote {:.1}",
        github_requests as f64 / SHIPS as f64,
        remote_requests as f64 / SHIPS as f64
    );
}
