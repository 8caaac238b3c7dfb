//! What the screen needs of a host, against the real sshd: the supervisor's pings keep
//! its state current over the one connection (up with a round trip, unreachable once
//! sshd is gone, without holding anything up), and the terminal command the attach key
//! runs reaches the host over that connection with its line intact.

use crate::support::sshd::Sshd;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};
use the_loop::events::{EventLog, Source};
use the_loop::paths::StatePaths;
use the_loop::ssh::{Destination, HostState, Transport};
use the_loop::supervisor::host_health::keep_hosts_checked;
use the_loop::tmux::{Hosts, RemoteHost};
use tokio::sync::watch;

async fn until(what: &str, within: Duration, done: impl Fn() -> bool) {
    let deadline = Instant::now() + within;
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pings_keep_the_state_over_one_connection_and_the_terminal_command_runs_there() {
    if !Sshd::available() {
        return;
    }
    let sshd = Sshd::start();
    let dir = tempfile::Builder::new()
        .prefix("tlh")
        .tempdir_in("/tmp")
        .unwrap();
    let transport = Transport::new(
        Destination {
            name: "build".into(),
            ssh: Sshd::alias().into(),
            config_file: Some(sshd.ssh_config().to_path_buf()),
            connect_timeout: Duration::from_secs(5),
            server_alive: Duration::from_secs(15),
        },
        &dir.path().join("ssh"),
    );
    let hosts = Hosts::new([RemoteHost::new(
        Arc::new(transport),
        "tmux",
        "~/.local/state/the-loop",
        Duration::from_secs(5),
    )]);
    let host = Arc::clone(hosts.get("build").unwrap());
    let (stop_tx, stop_rx) = watch::channel(false);
    let paths = StatePaths::new(dir.path());
    let pings = tokio::spawn(keep_hosts_checked(
        hosts.clone(),
        Duration::from_millis(100),
        stop_rx,
        Some((EventLog::open(&paths), Source::Tui)),
    ));
    until("the host is up", Duration::from_secs(20), || {
        matches!(host.transport.state(), HostState::Up { .. })
    })
    .await;
    let commands = host.transport.stats().commands;
    until("pinged again", Duration::from_secs(10), || {
        host.transport.stats().commands >= commands + 3
    })
    .await;
    assert_eq!(sshd.connections(), 1, "pings share the one connection");

    // The attach key's command, with a line a shell would act on, run without a
    // terminal (ssh says it allocates none and runs it anyway).
    let argv: Vec<String> = ["printf", "%s|", "a'b $HOME", "=loop-x"]
        .map(String::from)
        .to_vec();
    let out = host
        .transport
        .interactive(&argv)
        .unwrap()
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "a'b $HOME|=loop-x|");
    assert_eq!(sshd.connections(), 1, "over the master");

    // The host goes away: the next pings say so, within the transport's timeouts.
    drop(sshd);
    until("the host is unreachable", Duration::from_secs(30), || {
        matches!(host.transport.state(), HostState::Unreachable { .. })
    })
    .await;
    let asked = Instant::now();
    stop_tx.send(true).unwrap();
    tokio::time::timeout(Duration::from_secs(5), pings)
        .await
        .expect("the pings stop when asked")
        .unwrap();
    assert!(asked.elapsed() < Duration::from_secs(5));
    // The operator reads each change and why in the events: up, then unreachable.
    let changes = the_loop::events::lines::named(&paths.events(), "host.state_changed");
    let states: Vec<&str> = changes
        .iter()
        .map(|e| e["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["up", "unreachable"], "{changes:#?}");
    assert_eq!(changes[0]["host"], "build");
    let reason = changes[1]["reason"].as_str().unwrap();
    assert!(reason.contains("host `build`"), "{reason}");
    host.transport.disconnect().await;
}
