//! One snapshot of the live backend, as the screen takes every couple of seconds and
//! after each burst of events: 50 sessions on a real tmux server (private socket) read
//! from the registry with their activity, 60 watched items from a poll ledger, open
//! questions and status from the followed event log — the viewer role, which reads the
//! most from files.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/support/tmux_server.rs"]
mod tmux_server;

use criterion::{Criterion, criterion_group, criterion_main};
use std::sync::Arc;
use std::time::Duration;
use the_loop::config::{self, LoadedConfig};
use the_loop::critic::{CriticRunner, Recorder};
use the_loop::events::{EventLog, Source};
use the_loop::paths::StatePaths;
use the_loop::session::{Registry, Replier, SessionRecord, Sessions, Settings};
use the_loop::tui::Backend;
use the_loop::tui::live::{LiveBackend, LiveParts, Supervision};
use the_loop::work_item::WorkItemRef;
use tokio::sync::watch;

const SESSIONS: u64 = 50;
const WATCHED: u64 = 60;

fn bench_snapshot(c: &mut Criterion) {
    let server = tmux_server::TmuxServer::new();
    let dir = tempfile::tempdir().unwrap();
    let paths = StatePaths::new(dir.path().join("state"));
    let events = EventLog::open(&paths);
    let registry = Registry::new(&paths, events.clone(), Source::Cli);
    for n in 1..=SESSIONS {
        let item = WorkItemRef::new("octo", "repo", n);
        let record = SessionRecord::new(&item, "claude", std::env::temp_dir());
        let out = server.raw(&[
            "new-session",
            "-d",
            "-s",
            &record.tmux_session,
            "sleep",
            "600",
        ]);
        assert!(out.status.success(), "{out:?}");
        registry.put(&record).unwrap();
    }
    let items: serde_json::Map<String, serde_json::Value> = (1..=WATCHED)
        .map(|n| {
            let entry = serde_json::json!({
                "item": {"number": n, "title": format!("Issue {n}"), "state": "open",
                         "html_url": format!("https://github.com/octo/repo/issues/{n}")},
                "watched": true,
                "comments": {"1": "2026-01-01T00:00:00Z", "2": "2026-01-01T00:00:00Z"},
            });
            (n.to_string(), entry)
        })
        .collect();
    let ledger = the_loop::ingress::ledger::ledger_path(&paths, "octo/repo");
    std::fs::create_dir_all(ledger.parent().unwrap()).unwrap();
    std::fs::write(&ledger, serde_json::json!({"items": items}).to_string()).unwrap();

    let yaml = format!(
        "repos:\n  - {{name: octo/repo, path: /tmp}}\nsessions:\n  tmux: {{socket: {}}}\n",
        server.socket
    );
    let config_file = dir.path().join("config.yaml");
    std::fs::write(&config_file, yaml).unwrap();
    let loaded: LoadedConfig = config::load_file(&config_file).unwrap();
    let settings = Settings::new(&loaded.config, None, &paths).unwrap();
    let tmux = server.tmux();
    let sessions = Arc::new(Sessions::new(
        Arc::new(tmux),
        registry,
        events.clone(),
        settings,
    ));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (config_tx, config_rx) = watch::channel(Arc::new(loaded));
    let backend = runtime.block_on(async {
        let why = "no GitHub in the bench".to_string();
        let recorder = Recorder::new(&paths, events.clone());
        LiveBackend::start(LiveParts {
            replier: Replier::new(Arc::clone(&sessions)).without_github(why.clone()),
            critics: CriticRunner::new(recorder, Err(why.clone()), Source::Tui),
            shipper: Err(why),
            paths: paths.clone(),
            config_flag: None,
            config: config_rx,
            sessions,
            events,
            supervision: Supervision::Viewer { config: config_tx },
        })
    });
    let first = runtime.block_on(backend.snapshot());
    assert_eq!(
        first.sessions.len(),
        WATCHED as usize,
        "{:?}",
        first.sessions
    );

    let mut group = c.benchmark_group("tui_live");
    group.sample_size(30);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("snapshot_50_sessions_60_watched", |b| {
        b.iter(|| runtime.block_on(backend.snapshot()))
    });
    group.finish();
    drop(backend);
    drop(runtime);
    drop(server);
}

criterion_group!(benches, bench_snapshot);
criterion_main!(benches);
