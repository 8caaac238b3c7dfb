//! The other hosts' health (issue 32): each configured host is pinged every
//! [`PING_EVERY`] so `Transport::state` — what the screen's status bar reads — stays
//! current. Every host has a loop of its own, so one that does not answer delays no
//! other; a ping is bounded by the transport's own timeouts (the probe of the master,
//! `ConnectTimeout`, the command's), and nobody waits on it: the screen only reads the
//! state it leaves. The supervisor logs each change of a host's state, whoever noticed
//! it — the transport reports every change it makes (`Transport::changes`), a ping's
//! and a delivery's alike — as `host.state_changed`, with why it is unreachable, so the
//! operator reads the reason in the events, not only a ✗ in the status bar.

use super::polling::stopped;
use crate::events::{Event, EventLog, EventType, Level, Source};
use crate::ssh::{HostState, Transport};
use crate::tmux::Hosts;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::sync::watch;

/// How often each host is pinged.
pub const PING_EVERY: Duration = Duration::from_secs(10);

/// Pings every host of `hosts`, then again `every` after each answer (or failure),
/// until `stop` is set. With `log` (the supervisor's), each change of a host's state —
/// whoever noticed it: a ping, a delivery's command, the session check — is logged
/// there once, as written by that source.
pub async fn keep_hosts_checked(
    hosts: Hosts,
    every: Duration,
    stop: watch::Receiver<bool>,
    log: Option<(EventLog, Source)>,
) {
    let loops = hosts.iter().map(|host| {
        let transport = Arc::clone(&host.transport);
        // Subscribed before the first ping, so its answer is a change seen.
        let logged = log.clone().map(|log| {
            log_changes(
                transport.name().to_string(),
                transport.changes(),
                stop.clone(),
                log,
            )
        });
        let pinged = keep_pinging(transport, every, stop.clone());
        async move {
            match logged {
                Some(logged) => {
                    futures::future::join(pinged, logged).await;
                }
                None => pinged.await,
            }
        }
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

async fn keep_pinging(transport: Arc<Transport>, every: Duration, mut stop: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            () = stopped(&mut stop) => return,
            _ = transport.ping() => {}
        }
        tokio::select! {
            () = stopped(&mut stop) => return,
            () = tokio::time::sleep(every) => {}
        }
    }
}

/// Logs each change `changes` reports of `host`'s state, until `stop` is set (a change
/// already reported is logged first).
async fn log_changes(
    host: String,
    mut changes: UnboundedReceiver<HostState>,
    mut stop: watch::Receiver<bool>,
    (events, source): (EventLog, Source),
) {
    loop {
        let state = tokio::select! {
            biased;
            state = changes.recv() => match state {
                Some(state) => state,
                None => return,
            },
            () = stopped(&mut stop) => return,
        };
        match state.reason() {
            Some(reason) => tracing::warn!(host, reason, "host unreachable"),
            None => tracing::info!(
                host,
                state = state.label(),
                rtt_ms = state.rtt_ms(),
                "host state"
            ),
        }
        let _ = events.emit(state_event(source, &host, &state));
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

    /// An executable `sh` script `name` in `dir` running `body`.
    fn script(dir: &Path, name: &str, body: &str) -> std::path::PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    async fn until(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "{what}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// A host that drops and comes back between two pings, noticed by someone else's
    /// command (a held delivery's retry, the session check): each change is logged once
    /// all the same, as it happened — not only what a ping saw change (issue 42).
    #[tokio::test]
    async fn a_change_noticed_by_any_caller_is_logged_once() {
        let dir = tempfile::tempdir().unwrap();
        let down = dir.path().join("down");
        let answer = format!("[ -e '{}' ] && exit 255\nexit 0", down.display());
        let ssh = script(dir.path(), "toggling-ssh", &answer);
        let hosts = Hosts::new([host("flaky", &ssh, dir.path())]);
        let transport = Arc::clone(&hosts.get("flaky").unwrap().transport);
        let (stop_tx, stop_rx) = watch::channel(false);
        let paths = crate::paths::StatePaths::new(dir.path());
        // One ping at start, the next an hour away: what follows is noticed by others.
        let task = tokio::spawn(keep_hosts_checked(
            hosts.clone(),
            Duration::from_secs(3600),
            stop_rx,
            Some((EventLog::open(&paths), Source::Cli)),
        ));
        let logged = || -> Vec<String> {
            crate::events::lines::named(&paths.events(), "host.state_changed")
                .iter()
                .map(|e| e["state"].as_str().unwrap_or_default().to_string())
                .collect()
        };
        until("the first ping's up is logged", || logged() == ["up"]).await;

        std::fs::write(&down, "").unwrap();
        let command = ["true".to_string()];
        assert!(
            transport
                .run(&command, None, Duration::from_secs(5))
                .await
                .is_err()
        );
        assert!(
            transport
                .run(&command, None, Duration::from_secs(5))
                .await
                .is_err()
        );
        until("the drop is logged", || logged() == ["up", "unreachable"]).await;
        std::fs::remove_file(&down).unwrap();
        transport
            .run(&command, None, Duration::from_secs(5))
            .await
            .unwrap();
        transport
            .run(&command, None, Duration::from_secs(5))
            .await
            .unwrap();
        until("the return is logged", || {
            logged() == ["up", "unreachable", "up"]
        })
        .await;

        stop_tx.send(true).unwrap();
        task.await.unwrap();
        let changes = crate::events::lines::named(&paths.events(), "host.state_changed");
        assert_eq!(changes[1]["level"], "warning");
        assert!(changes[1]["reason"].as_str().is_some_and(|r| !r.is_empty()));
        assert_eq!(logged(), ["up", "unreachable", "up"], "each once");
    }

    #[tokio::test]
    async fn each_host_is_pinged_apart_and_a_hung_one_stops_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let hung = script(dir.path(), "hung-ssh", "exec sleep 60");
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
