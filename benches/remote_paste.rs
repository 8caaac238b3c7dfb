//! One delivery (`deliver`: a short text as a bracketed paste, then the submitting `\r`,
//! submit delay 0) into a pane running `the-loop fake-agent`, through
//! - **local**: `RealTmux` on a private `-L` socket of this process;
//! - **remote**: `RealTmux::remote` over a `Transport` to a real sshd on loopback
//!   (`tests/support/sshd.rs`), whose fresh user's own tmux server holds the pane.
//!
//! Criterion measures both; then, as criterion has no percentiles, 200 timed deliveries
//! each are printed as p50 / p99 / max, and 100 more remote ones with the connections
//! sshd let in and the transport's counters around them (one master, no connection per
//! command). Figures are printed, never asserted.
//!
//! Without root or `/usr/sbin/sshd` it says why and measures local only. Every tmux
//! server, the SSH master and sshd (with its user) are gone when it returns.
//! `cargo bench --bench remote_paste -- --warm-up-time 1 --measurement-time 5`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(dead_code)]
#[path = "../tests/support/sshd.rs"]
mod sshd;
#[path = "../tests/support/tmux_server.rs"]
mod tmux_server;

use criterion::Criterion;
use sshd::Sshd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};
use the_loop::session::deliver;
use the_loop::ssh::{Destination, Transport};
use the_loop::tmux::{PaneId, RealTmux, Socket, SpawnSpec, Tmux};
use tokio::runtime::Runtime;

const TEXT: &str = "Please look at the failing test in tests/hosts and fix it.";
/// Timed deliveries per path, and remote ones counted for connections; a run without
/// `--bench` (`cargo test --all-targets`) is a smoke test and makes a few of each.
const TIMED: (usize, usize) = (200, 3);
const COUNTED: (u64, u64) = (100, 3);
const SESSION: &str = "loop-bench-remote-paste";
const TIMEOUT: Duration = Duration::from_secs(10);

/// The far side: sshd, the master to it, and the user's tmux server. `close` ends the
/// server and the master; dropping `sshd` then stops it and deletes the user.
struct Remote {
    sshd: Sshd,
    transport: Arc<Transport>,
    tmux: RealTmux,
    /// Holds the control socket; a short path under /tmp (a socket path is limited).
    _control: tempfile::TempDir,
}

impl Remote {
    async fn start() -> Remote {
        let sshd = Sshd::start();
        let control = tempfile::Builder::new()
            .prefix("tlb")
            .tempdir_in("/tmp")
            .unwrap();
        let transport = Arc::new(Transport::new(
            Destination {
                name: "bench".into(),
                ssh: Sshd::alias().into(),
                config_file: Some(sshd.ssh_config().to_path_buf()),
                connect_timeout: TIMEOUT,
                server_alive: Duration::from_secs(15),
            },
            &control.path().join("ssh"),
        ));
        transport.connect().await.unwrap();
        let tmux = RealTmux::remote(Arc::clone(&transport), "tmux", Socket::Default, TIMEOUT);
        Remote {
            sshd,
            transport,
            tmux,
            _control: control,
        }
    }

    /// The fake agent for the user: this build's binary, copied into their home.
    fn install_agent(&self) -> PathBuf {
        let bin = self.sshd.home().join("the-loop");
        std::fs::copy(tmux_server::BIN, &bin).unwrap();
        let owner = format!("{0}:{0}", self.sshd.user());
        let out = Command::new("chown")
            .arg(&owner)
            .arg(&bin)
            .output()
            .unwrap();
        assert!(out.status.success(), "chown {owner}: {out:?}");
        bin
    }

    async fn close(&self) {
        // Its last session gone, the user's tmux server exits.
        let _ = self.tmux.kill_session(SESSION).await;
        self.transport.disconnect().await;
    }
}

/// Why the remote half cannot run here, if it cannot (`Sshd::available` fails under CI
/// instead; a bench measures what it can).
fn sshd_missing() -> Option<&'static str> {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !root {
        Some("not root: the loopback sshd needs a fresh unix user")
    } else if !Path::new("/usr/sbin/sshd").exists() {
        Some("no /usr/sbin/sshd: install openssh-server")
    } else {
        None
    }
}

/// `bin fake-agent` in a new session, once it has enabled bracketed paste.
async fn start_agent(tmux: &RealTmux, bin: &Path, cwd: PathBuf) -> PaneId {
    let spec = SpawnSpec {
        name: SESSION.into(),
        cwd,
        env: vec![],
        argv: vec![bin.display().to_string(), "fake-agent".into()],
        remain_on_exit: true,
        private_files: false,
    };
    let pane = tmux.new_session(&spec).await.unwrap();
    tmux_server::wait_ready(tmux, &pane).await;
    pane
}

fn deliver_once(runtime: &Runtime, tmux: &dyn Tmux, pane: &PaneId) -> Duration {
    let start = Instant::now();
    runtime
        .block_on(deliver(tmux, pane, TEXT, Duration::ZERO))
        .unwrap();
    start.elapsed()
}

/// The agent's own count of what it got, and whether any of it arrived typed rather
/// than as one bracketed paste: the deliveries timed were real ones.
fn agent_saw(runtime: &Runtime, tmux: &dyn Tmux, pane: &PaneId) -> String {
    let screen = runtime.block_on(tmux.capture_pane(pane, false)).unwrap();
    let first = screen.lines().next().unwrap_or_default().to_string();
    let typed = screen.contains("[typed]");
    format!("{first}; recent ones typed: {typed}")
}

/// The processes `pgrep -a what` lists whose command line names one of `ours`, or
/// "nothing". A killed server is a zombie for a moment, until init reaps it.
fn left_of_ours(what: &str, ours: &[String]) -> String {
    let mut left = Vec::new();
    for _ in 0..20 {
        let out = Command::new("pgrep").args(["-a", what]).output().unwrap();
        left = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|line| ours.iter().any(|mark| line.contains(mark.as_str())))
            .map(str::to_string)
            .collect();
        if left.is_empty() {
            return "nothing of ours".into();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    left.join("; ")
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn figures(runtime: &Runtime, tmux: &dyn Tmux, pane: &PaneId, timed: usize) -> String {
    let mut samples: Vec<Duration> = (0..timed)
        .map(|_| deliver_once(runtime, tmux, pane))
        .collect();
    samples.sort();
    let n = samples.len();
    format!(
        "p50 {} p99 {} max {} (n={n})",
        ms(samples[n / 2]),
        ms(samples[(n * 99 / 100).min(n - 1)]),
        ms(samples[n - 1])
    )
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test` runs a bench target without it.
    let benching = std::env::args().any(|a| a == "--bench");
    let (timed, counted) = if benching {
        (TIMED.0, COUNTED.0)
    } else {
        (TIMED.1, COUNTED.1)
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut criterion = Criterion::default()
        .sample_size(50)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();

    let local_server = tmux_server::TmuxServer::new();
    let local = local_server.tmux();
    let local_pane = runtime.block_on(start_agent(
        &local,
        Path::new(tmux_server::BIN),
        std::env::temp_dir(),
    ));

    let remote = match sshd_missing() {
        Some(why) => {
            eprintln!("remote: skipped ({why}); measuring local only");
            None
        }
        None => {
            let remote = runtime.block_on(Remote::start());
            let bin = remote.install_agent();
            let pane = runtime.block_on(start_agent(&remote.tmux, &bin, remote.sshd.home()));
            Some((remote, pane))
        }
    };

    let mut group = criterion.benchmark_group("deliver_short");
    group.bench_function("local", |b| {
        b.iter(|| deliver_once(&runtime, &local, &local_pane))
    });
    if let Some((remote, pane)) = &remote {
        group.bench_function("remote_loopback_ssh", |b| {
            b.iter(|| deliver_once(&runtime, &remote.tmux, pane))
        });
    }
    group.finish();

    eprintln!(
        "deliver, local:  {}",
        figures(&runtime, &local, &local_pane, timed)
    );
    if let Some((remote, pane)) = &remote {
        eprintln!(
            "deliver, remote: {}",
            figures(&runtime, &remote.tmux, pane, timed)
        );
        let (sshd_before, stats_before) = (remote.sshd.connections(), remote.transport.stats());
        for _ in 0..counted {
            deliver_once(&runtime, &remote.tmux, pane);
        }
        let (sshd_after, stats_after) = (remote.sshd.connections(), remote.transport.stats());
        let commands = stats_after.commands - stats_before.commands;
        eprintln!(
            "remote, {counted} deliveries: {} connections opened ({sshd_after} accepted by sshd in all, \
             the transport started {} masters); {commands} commands over the master ({:.1} per delivery)",
            sshd_after - sshd_before,
            stats_after.connections,
            commands as f64 / counted as f64,
        );
    }

    eprintln!("local agent:  {}", agent_saw(&runtime, &local, &local_pane));
    if let Some((remote, pane)) = &remote {
        eprintln!("remote agent: {}", agent_saw(&runtime, &remote.tmux, pane));
    }

    // What names our processes in `pgrep -a`: other runs on this machine may have
    // ssh and tmux processes of their own.
    let mut ours = vec![local_server.socket.clone(), SESSION.to_string()];
    if let Some((remote, _)) = remote {
        ours.extend([
            remote.sshd.user().to_string(),
            remote.sshd.home().display().to_string(),
            remote.transport.control_path().display().to_string(),
        ]);
        ours.extend(
            remote
                .sshd
                .ssh_config()
                .parent()
                .map(|dir| dir.display().to_string()),
        );
        runtime.block_on(remote.close());
        drop(remote);
    }
    drop(local_server);
    drop(runtime);
    for what in ["ssh", "tmux"] {
        eprintln!(
            "left afterwards (pgrep -a {what}): {}",
            left_of_ours(what, &ours)
        );
    }
    criterion.final_summary();
}
