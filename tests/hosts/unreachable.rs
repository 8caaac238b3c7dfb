//! A host that drops off the network: its session shows `unreachable` (not dead, not
//! respawned), comments for it are held `host-unreachable` in their lane, and once the
//! host answers again each goes out exactly once, in order. A paste whose reply the
//! dropped connection lost is held, visibly, until the host can tell whether it arrived:
//! then it is in the box once, and submitted.

use super::remote_sessions::{comment, received, received_all, started, started_with};
use crate::support::sshd::Sshd;
use crate::support::tmux_server::wait_for;
use std::sync::Arc;
use std::time::Duration;
use the_loop::ingress::Ingest;
use the_loop::session::{ActivityState, ActivityTracker, Dispatcher, observe};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn comments_for_a_host_that_dropped_wait_for_it_and_go_out_once_in_order() {
    if !Sshd::available() {
        return;
    }
    let mut sshd = Sshd::start();
    let world = started(&sshd, None).await;
    let dispatcher = Dispatcher::new(
        Arc::clone(&world.sessions),
        &world.loaded.config,
        &world.paths,
    )
    .unwrap();
    let log = sshd.home().join("agent.jsonl");
    let first = dispatcher
        .ingest(comment(7000, "before the drop burst-000"))
        .await;
    assert_eq!(format!("{first:?}"), "Delivered");

    sshd.stop();
    let sent = {
        let dispatcher = dispatcher.clone();
        tokio::spawn(async move {
            let mut dispositions = Vec::new();
            for n in 1..=5u64 {
                let body = format!("while away burst-{n:03}");
                dispositions.push(format!(
                    "{:?}",
                    dispatcher.ingest(comment(7000 + n, &body)).await
                ));
            }
            dispositions
        })
    };
    // Held, and said why; the session is unreachable, not dead.
    let events = world.sessions.events().path().to_path_buf();
    let held = wait_for("a held delivery", Duration::from_secs(30), || async {
        the_loop::events::lines::named(&events, "session.delivery_held")
            .into_iter()
            .next()
    })
    .await;
    assert_eq!(held["reason"], "host-unreachable", "{held}");
    let records = world.sessions.registry().list().unwrap();
    let seen = observe(
        |r| world.sessions.tmux_of(r),
        &records,
        &mut ActivityTracker::new(),
        |_| false,
        the_loop::session::activity::unix_now(),
    )
    .await;
    assert_eq!(seen[0].state, ActivityState::Unreachable);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        received(&log).len(),
        1,
        "nothing reaches an unreachable host"
    );
    assert!(!sent.is_finished(), "the lane waits for the host");

    sshd.restart();
    let dispositions = tokio::time::timeout(Duration::from_secs(60), sent)
        .await
        .expect("the held comments went out once the host was back")
        .unwrap();
    assert!(
        dispositions.iter().all(|d| d == "Delivered"),
        "{dispositions:?}"
    );
    let got = received_all(&log, 6).await;
    let want: Vec<(String, usize)> = (0..6).map(|n| (format!("burst-{n:03}"), 1)).collect();
    assert_eq!(got, want, "each comment once, in order");
    // The same pane: nothing was respawned over the agent that kept running.
    let pane = world.host.tmux.capture_pane(&world.pane, false).await;
    assert!(pane.is_ok(), "{pane:?}");
    let spawned = the_loop::events::lines::named(&events, "session.spawned");
    assert_eq!(spawned.len(), 1, "{spawned:?}");
    drop(dispatcher);
    world.host.transport.disconnect().await;
}

/// The host's tmux, through a gate (`hosts[].tmux`): while `~/paste-gate` exists, a
/// text's paste (`paste-buffer -d -p`, as tmux_interface spells it) never replies in
/// time — as when the connection drops while it runs. With `run-once` in the file, the
/// first such paste runs before its reply is lost.
const GATE: &str = r#"#!/bin/sh
gate="$HOME/paste-gate"
case "$*" in
*"pasteb -d -p "*)
  if [ -e "$gate" ]; then
    if [ "$(cat "$gate")" = run-once ]; then
      echo hold >"$gate"
      TMUX_BIN "$@"
    fi
    exec sleep 60
  fi
  ;;
esac
exec TMUX_BIN "$@"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paste_whose_reply_was_lost_is_held_until_its_host_tells_then_in_the_box_once() {
    if !Sshd::available() {
        return;
    }
    let sshd = Sshd::start();
    let home = sshd.home().display().to_string();
    let tmux = the_loop::paths::find_program("tmux", std::env::var_os("PATH").as_deref())
        .expect("tmux on PATH");
    let gate = format!("{home}/tmux-gate");
    let script = GATE.replace("TMUX_BIN", &tmux.display().to_string());
    let out = sshd.run_as_user_with(
        &["dd", &format!("of={gate}"), "status=none"],
        Some(script.as_bytes()),
    );
    assert!(out.status.success(), "{out:?}");
    assert!(sshd.run_as_user(&["chmod", "700", &gate]).status.success());
    let world = started_with(&sshd, None, |yaml| {
        yaml.replace(
            r#"stateDir: "~/.tl"}"#,
            &format!(r#"stateDir: "~/.tl", tmux: "{gate}"}}"#),
        )
        .replace("probeTimeoutSeconds: 10", "probeTimeoutSeconds: 2")
    })
    .await;
    let dispatcher = Dispatcher::new(
        Arc::clone(&world.sessions),
        &world.loaded.config,
        &world.paths,
    )
    .unwrap();
    let log = sshd.home().join("agent.jsonl");
    let item = the_loop::work_item::WorkItemRef::new("octo", "repo", 15);
    let set_gate = |word: &str| {
        let of = format!("of={home}/paste-gate");
        let out = sshd.run_as_user_with(
            &["dd", &of, "status=none"],
            Some(format!("{word}\n").as_bytes()),
        );
        assert!(out.status.success(), "{out:?}");
    };
    let open_gate = || {
        let out = sshd.run_as_user(&["rm", "-f", &format!("{home}/paste-gate")]);
        assert!(out.status.success(), "{out:?}");
    };

    // One whose paste never ran, one whose paste ran: neither is known when the reply
    // is lost.
    for (n, gate) in [(1u64, "hold"), (2, "run-once")] {
        set_gate(gate);
        let sent = {
            let dispatcher = dispatcher.clone();
            tokio::spawn(async move {
                let body = format!("in doubt burst-{n:03}");
                format!("{:?}", dispatcher.ingest(comment(8000 + n, &body)).await)
            })
        };
        // Held, visibly, naming the buffer that settles it. The paste path records the
        // buffer, then its lane records the hold: wait for both.
        let (record, held) = wait_for(
            "the paste held in doubt, its lane held",
            Duration::from_secs(60),
            || async {
                let record = world.sessions.registry().get(&item).ok()??;
                let held = record.hold.summary()?;
                record.hold.in_doubt.is_some().then_some((record, held))
            },
        )
        .await;
        assert_eq!(held.reason.as_str(), "host-unreachable");
        assert!(record.hold.unsubmitted.is_some());
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!sent.is_finished(), "the lane waits for the host to tell");
        assert_eq!(
            received(&log).len(),
            n as usize - 1,
            "nothing submitted yet"
        );

        // The host answers: settled, in the box once, submitted.
        open_gate();
        let disposition = tokio::time::timeout(Duration::from_secs(60), sent)
            .await
            .expect("delivered once the host told")
            .unwrap();
        assert_eq!(disposition, "Delivered");
        let record = world.sessions.registry().get(&item).unwrap().unwrap();
        assert!(record.hold.is_empty(), "{:?}", record.hold);
    }
    let got = received_all(&log, 2).await;
    assert_eq!(
        got,
        [("burst-001".to_string(), 1), ("burst-002".to_string(), 1)],
        "each once"
    );
    let text = std::fs::read_to_string(&log).unwrap();
    let pastes: Vec<u64> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["text"].as_str().is_some_and(|t| t.contains("in doubt")))
        .map(|e| e["pastes"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(pastes, [1, 1], "one paste each: {text}");
    drop(dispatcher);
    world.host.transport.disconnect().await;
}
