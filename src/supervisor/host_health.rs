//! The other hosts' health (issue 32): each configured host is pinged every
//! [`PING_EVERY`] so `Transport::state` — what the screen's status bar reads — stays
//! current. Every host has a loop of its own, so one that does not answer delays no
//! other; a ping is bounded by the transport's own timeouts (the probe of the master,
//! `ConnectTimeout`, the command's), and nobody waits on it: the screen only reads the
//! state it leaves. The supervisor's loops log each change of a host's state
//! (`host.state_changed`, with why it is unreachable), so the operator reads the reason
//! in the events, not only a ✗ in the status bar.

use super::polling::stopped;
use crate::events::{Event, EventLog, EventType, Level, Source};
use crate::ssh::{HostState, Transport};
use crate::tmux::Hosts;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// How often each host is pinged.
pub const PING_EVERY: Duration = Duration::from_secs(10);

/// Pings every host of `hosts`, then again `every` after each answer (or failure),
/// until `stop` is set. With `log` (the supervisor's), each change of a host's state is
/// logged there as written by that source.
pub async fn keep_hosts_checked(
    hosts: Hosts,
    every: Duration,
    stop: watch::Receiver<bool>,
    log: Option<(EventLog, Source)>,
) {
    let loops = hosts.iter().map(|host| {
        keep_pinging(
            Arc::clone(&host.transport),
            every,
            stop.clone(),
            log.clone(),
        )
    });
    futures::future::join_all(loops).await;
}

/// `host.state_changed` for `host` now in `state`.
pub fn state_event(source: Source, host: &str, state: &HostState) -> Event {
    let level = match state {
        HostState::Unreachable { .. } => Level::Warning,
        _ => Level::Info,
    };
    Event::new(source, EventType::HostStateChanged)
        .level(level)
        .with("host", host)
        .with("state", state.label())
        .with_opt("rtt_ms", state.rtt_ms())
        .with_opt("reason", state.reason().map(str::to_string))
}

async fn keep_pinging(
    transport: Arc<Transport>,
    every: Duration,
    mut stop: watch::Receiver<bool>,
    log: Option<(EventLog, Source)>,
) {
    loop {
        let before = transport.state();
        tokio::select! {
            () = stopped(&mut stop) => return,
            _ = transport.ping() => {}
        }
        let after = transport.state();
        if after.label() != before.label() {
            let host = transport.name();
            match after.reason() {
                Some(reason) => tracing::warn!(host, reason, "host unreachable"),
                None => tracing::info!(
                    host,
                    state = after.label(),
                    rtt_ms = after.rtt_ms(),
                    "host state"
                ),
            }
            if let Some((events, source)) = &log {
                let _ = events.emit(state_event(*source, host, &after));
            }
        }
        tokio::select! {
            () = stopped(&mut stop) => return,
            () = tokio::time::sleep(every) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ssh::{Destination, HostState};
    use crate::tmux::RemoteHost;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;
    use std::time::Instant;

    /// A host whose `ssh` is `program`: `true` answers everything (up), `false` nothing
    /// (unreachable), a script that sleeps never answers.
    fn host(name: &str, program: &Path, dir: &Path) -> RemoteHost {
        let dest = Destination {
            name: name.into(),
            ssh: format!("dev@{name}"),
            config_file: None,
            connect_timeout: Duration::from_secs(1),
            server_alive: Duration::from_secs(1),
        };
        let transport = Transport::new(dest, &dir.join("ssh")).with_program(program);
        RemoteHost::new(
            Arc::new(transport),
            "tmux",
            "~/.the-loop",
            Duration::from_secs(1),
        )
    }

    async fn until(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "{what}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test]
    async fn each_host_is_pinged_apart_and_a_hung_one_stops_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let hung = dir.path().join("hung-ssh");
        std::fs::write(&hung, "#!/bin/sh\nexec sleep 60\n").unwrap();
        std::fs::set_permissions(&hung, std::fs::Permissions::from_mode(0o755)).unwrap();
        let hosts = Hosts::new([
            host("up", Path::new("true"), dir.path()),
            host("down", Path::new("false"), dir.path()),
            host("hung", &hung, dir.path()),
        ]);
        let (stop_tx, stop_rx) = watch::channel(false);
        let paths = crate::paths::StatePaths::new(dir.path());
        let log = (EventLog::open(&paths), Source::Cli);
        let task = tokio::spawn(keep_hosts_checked(
            hosts.clone(),
            Duration::from_millis(50),
            stop_rx,
            Some(log),
        ));
        let state = |name: &str| hosts.get(name).unwrap().transport.state();
        until("the answering host is up", || {
            matches!(state("up"), HostState::Up { .. })
        })
        .await;
        until("the silent host is unreachable", || {
            matches!(state("down"), HostState::Unreachable { .. })
        })
        .await;
        // The hung host is still being asked (its probe waits out its timeout), and
        // that held up neither of the others.
        assert_eq!(state("hung"), HostState::Unknown);
        let asked = Instant::now();
        stop_tx.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(2), task)
            .await
            .expect("a stop ends the pings at once, a hung one included")
            .unwrap();
        assert!(asked.elapsed() < Duration::from_secs(2));

        // Each change logged once (the hosts were pinged many times), with the reason
        // of the one that does not answer; nothing for the one never answered yet.
        let changes = crate::events::lines::named(&paths.events(), "host.state_changed");
        let of = |name: &str| -> Vec<&serde_json::Value> {
            changes.iter().filter(|e| e["host"] == name).collect()
        };
        assert_eq!(of("up").len(), 1, "{changes:#?}");
        assert_eq!(of("up")[0]["state"], "up");
        assert!(of("up")[0]["rtt_ms"].is_u64());
        assert_eq!(of("up")[0]["level"], "info");
        assert_eq!(of("down").len(), 1, "{changes:#?}");
        assert_eq!(of("down")[0]["state"], "unreachable");
        assert_eq!(of("down")[0]["level"], "warning");
        assert!(
            of("down")[0]["reason"]
                .as_str()
                .is_some_and(|r| r.contains("host `down`")),
            "{changes:#?}"
        );
        assert!(of("hung").is_empty(), "{changes:#?}");
    }
}
