//! A host that drops off the network: its session shows `unreachable` (not dead, not
//! respawned), comments for it are held `host-unreachable` in their lane, and once the
//! host answers again each goes out exactly once, in order.

use super::remote_sessions::{comment, received, started};
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
    let got = wait_for(
        "every comment in the agent's log",
        Duration::from_secs(30),
        || async {
            let got = received(&log);
            (got.len() >= 6).then_some(got)
        },
    )
    .await;
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
