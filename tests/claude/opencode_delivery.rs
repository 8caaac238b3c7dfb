//! opencode as a harness driven through its own server (issue 44), against the real
//! opencode 1.18.33 and the tests' fake of the Chat Completions API: deliveries go to
//! the session's own opencode session by `prompt_async`, never typed; the server's
//! events move the record; permission requests are answered through the server; a
//! server killed mid-burst is started again and loses nothing; a stranger's comment
//! never reaches it. The tests wait with generous limits and assert what happened,
//! never how fast; the figures are printed.

use crate::opencode_world::{OpencodeWorld, all_argv, item};
use std::time::{Duration, Instant};
use the_loop::session::hooks::ReportedState;

/// Idle: each comment reaches the model once and shows in the pane; nothing is pasted
/// or typed; the server listens on 127.0.0.1 only and its password is in no argv, no
/// log and no tmux environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comment_reaches_opencode_once_through_its_server() {
    let Some(world) = OpencodeWorld::new().await else {
        return;
    };
    let started = world.start().await;
    eprintln!("figure: opencode session start (server healthy, session made, TUI open): {started:?}");
    assert_eq!(world.reported(), Some(ReportedState::Idle));
    let spawned = world.events_named("session.spawned");
    assert_eq!(spawned[0]["channel"], "opencode-server", "{spawned:#?}");
    for (n, needle) in ["HERON", "EGRET", "IBIS"].iter().enumerate() {
        let delivered = world
            .deliver(&format!("d-{n}"), &format!("{needle}: five retries."))
            .await
            .unwrap_or_else(|e| panic!("{e}\n{}", world.screen()));
        assert_eq!(delivered.channel, Some("opencode-server"), "{delivered:?}");
        let request = world.reached_model(needle).await;
        world.shown(&request).await;
        world.turn_ended().await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    for needle in ["HERON", "EGRET", "IBIS"] {
        let got = world.model.requests_with(needle);
        assert_eq!(got.len(), 1, "{got:#?}");
    }
    let succeeded = world.events_named("dispatch.succeeded");
    assert!(
        succeeded.iter().all(|e| e["channel"] == "opencode-server"),
        "{succeeded:#?}"
    );
    assert_eq!(world.pastes(), 0, "pasted into the pane");
    assert_eq!(world.keys(), 0, "keys sent to the pane");

    let (port, _, password_file, _) = world.channel();
    let listening = listening_addresses(port);
    assert_eq!(listening, ["127.0.0.1"], "opencode listens beyond loopback");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&password_file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{password_file:?}");
    let password = std::fs::read_to_string(&password_file).unwrap();
    assert!(password.trim().len() >= 32);
    assert!(!all_argv().contains(password.trim()), "the password is in an argv");
    let env = world.tmux.raw(&["show-environment", "-t", &OpencodeWorld::target()]);
    assert!(!String::from_utf8_lossy(&env.stdout).contains(password.trim()));
    let events = std::fs::read_to_string(world.state.join("events.jsonl")).unwrap();
    assert!(!events.contains(password.trim()), "the password is in the event log");
    // Without it, the server answers nothing.
    let refused = reqwest::Client::new()
        .get(format!("http://127.0.0.1:{port}/session"))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status().as_u16(), 401);
    let processes = world_processes(&world);
    eprintln!("figure: processes per opencode session: {processes} (server, TUI, and their children); ports: 1 (127.0.0.1:{port})");
    assert_eq!(world.shut_down(), Vec::<i32>::new(), "processes left");
}

/// The local addresses (as dotted quads) with a listening TCP socket on `port`.
fn listening_addresses(port: u16) -> Vec<String> {
    let mut out = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state)) = (fields.get(1), fields.get(3)) else {
                continue;
            };
            let Some((addr, p)) = local.split_once(':') else {
                continue;
            };
            if *state != "0A" || u16::from_str_radix(p, 16).ok() != Some(port) {
                continue;
            }
            if addr.len() == 8 {
                let n = u32::from_str_radix(addr, 16).unwrap().to_le_bytes();
                out.push(format!("{}.{}.{}.{}", n[0], n[1], n[2], n[3]));
            } else {
                out.push(format!("[{addr}]"));
            }
        }
    }
    out
}

/// How many processes run from the world's directory.
fn world_processes(world: &OpencodeWorld) -> usize {
    crate::opencode_world::running_from(world.dir()).len()
}

#[allow(dead_code)]
fn unused(_: Instant, _: &the_loop::work_item::WorkItemRef) {
    let _ = item();
}
