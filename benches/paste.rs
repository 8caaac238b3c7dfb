//! Time from a `deliver` call to paste completion (the bracketed paste and the
//! submitting `\r` both accepted by tmux), submit delay 0, into a real tmux pane running
//! `the-loop fake-agent` on a private socket.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::process::Command;
use std::time::Duration;
use the_loop::session::deliver;
use the_loop::tmux::{PaneId, RealTmux, Socket, SpawnSpec, Tmux};

/// A private tmux server, killed (and its socket file removed) on drop.
struct Server {
    socket: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let out = Command::new("tmux")
            .args([
                "-L",
                &self.socket,
                "display-message",
                "-p",
                "#{socket_path}",
            ])
            .env_remove("TMUX")
            .output();
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .env_remove("TMUX")
            .output();
        if let Ok(out) = out {
            let _ = std::fs::remove_file(String::from_utf8_lossy(&out.stdout).trim());
        }
    }
}

fn text(bytes: usize) -> String {
    let mut text = String::new();
    let mut i = 0;
    while text.len() < bytes {
        text.push_str(&format!("line {i:05}\tpayload ✓ {}\n", "x".repeat(i % 60)));
        i += 1;
    }
    text.truncate(bytes);
    text
}

async fn start(tmux: &RealTmux) -> PaneId {
    let spec = SpawnSpec {
        name: "loop-bench".into(),
        cwd: std::env::temp_dir(),
        env: vec![],
        argv: vec![env!("CARGO_BIN_EXE_the-loop").into(), "fake-agent".into()],
        remain_on_exit: true,
        private_files: false,
    };
    let pane = tmux.new_session(&spec).await.unwrap();
    for _ in 0..500 {
        let screen = tmux.capture_pane(&pane, false).await.unwrap_or_default();
        if screen.contains("fake-agent ready") {
            return pane;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the fake agent did not start");
}

fn paste(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = Server {
        socket: format!("the-loop-bench-{}", std::process::id()),
    };
    let tmux = RealTmux::new(Socket::Name(server.socket.clone()), Duration::from_secs(10));
    let pane = runtime.block_on(start(&tmux));

    let mut group = c.benchmark_group("deliver");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    for (label, bytes) in [("4KB", 4 * 1024), ("100KB", 100 * 1024)] {
        let prompt = text(bytes);
        group.throughput(Throughput::Bytes(bytes as u64));
        group.bench_with_input(BenchmarkId::from_parameter(label), &prompt, |b, prompt| {
            b.iter(|| {
                runtime
                    .block_on(deliver(&tmux, &pane, prompt, Duration::ZERO))
                    .unwrap()
            });
        });
    }
    group.finish();
    drop(server);
}

criterion_group!(benches, paste);
criterion_main!(benches);
