//! One activity look over 50 sessions on a real tmux server (private socket), as the
//! TUI does every second and `sessions list` once: the quiet case (no new output: one
//! `list-panes -a`, no capture) and the busy case (no history: a capture per session).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use std::process::Command;
use std::time::Duration;
use the_loop::session::SessionRecord;
use the_loop::session::activity::{ActivityTracker, observe, unix_now};
use the_loop::tmux::{RealTmux, Socket};
use the_loop::work_item::WorkItemRef;

const SESSIONS: u64 = 50;

/// A private tmux server, killed (and its socket file removed) on drop.
struct Server {
    socket: String,
}

impl Server {
    fn tmux(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .output()
            .unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let path = self.tmux(&["display-message", "-p", "#{socket_path}"]);
        let _ = self.tmux(&["kill-server"]);
        let _ = std::fs::remove_file(String::from_utf8_lossy(&path.stdout).trim());
    }
}

fn bench_activity(c: &mut Criterion) {
    let server = Server {
        socket: format!("the-loop-bench-activity-{}", std::process::id()),
    };
    let records: Vec<SessionRecord> = (1..=SESSIONS)
        .map(|n| {
            let item = WorkItemRef::new("octo", "repo", n);
            let record = SessionRecord::new(&item, "claude", std::env::temp_dir());
            let out = server.tmux(&[
                "new-session",
                "-d",
                "-s",
                &record.tmux_session,
                "sleep",
                "600",
            ]);
            assert!(out.status.success(), "{out:?}");
            record
        })
        .collect();
    let tmux: std::sync::Arc<dyn the_loop::tmux::Tmux> = std::sync::Arc::new(RealTmux::new(
        Socket::Name(server.socket.clone()),
        Duration::from_secs(10),
    ));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    let mut group = c.benchmark_group("activity_50_sessions");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(5));
    let mut tracker = ActivityTracker::new();
    runtime.block_on(observe(
        |_| Ok(std::sync::Arc::clone(&tmux)),
        &records,
        &mut tracker,
        |_| false,
        unix_now(),
    ));
    group.bench_function("quiet", |b| {
        b.iter(|| {
            runtime.block_on(observe(
                |_| Ok(std::sync::Arc::clone(&tmux)),
                &records,
                &mut tracker,
                |_| false,
                unix_now(),
            ))
        })
    });
    group.bench_function("every_screen_captured", |b| {
        b.iter(|| {
            let mut fresh = ActivityTracker::new();
            runtime.block_on(observe(
                |_| Ok(std::sync::Arc::clone(&tmux)),
                &records,
                &mut fresh,
                |_| false,
                unix_now(),
            ))
        })
    });
    group.finish();
}

criterion_group!(benches, bench_activity);
criterion_main!(benches);
