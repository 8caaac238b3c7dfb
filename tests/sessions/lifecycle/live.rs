//! Sessions against real tmux with `the-loop fake-agent` as the harness.

use super::env::*;
use crate::support::tmux_server::*;
use std::time::Duration;
use the_loop::ingress::{Disposition, Ingest};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_spawns_and_the_boot_prompt_arrives() {
    let w = World::new();
    let out = w.cli(&["sessions", "start", ITEM]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("started github:octo/repo#15 in tmux session loop-github-octo-repo-15"),
        "{stdout}"
    );

    let lines = wait_log(&w.log, 1).await;
    assert_eq!(lines[0]["boot"], true);
    let boot = lines[0]["text"].as_str().unwrap();
    assert!(boot.contains("the-loop started this session for github:octo/repo#15"));
    assert!(boot.contains("https://github.com/octo/repo/issues/15"));

    let row = w.row(ITEM).unwrap();
    assert_eq!(row["status"], "active");
    assert_eq!(row["harness"], "fake");
    assert_eq!(row["tmuxSession"], "loop-github-octo-repo-15");
    assert!(["working", "idle"].contains(&row["state"].as_str().unwrap()));
    let spawned = w.events("session.spawned");
    assert_eq!(spawned[0]["trigger"], "cli");

    // A second start reports the running session and starts nothing.
    let out = w.cli(&["sessions", "start", ITEM]).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("already has a running session"));
    assert_eq!(w.events("session.spawned").len(), 1);
    assert_eq!(w.list().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_via_ingest_arrives_as_one_bracketed_paste() {
    let w = World::new();
    w.start(ITEM).await;
    let dispatcher = w.dispatcher();
    let body =
        "Please take this one:\n- make the backoff test deterministic\n- keep `retries` at 3";
    assert_eq!(
        dispatcher.ingest(comment(1, body)).await,
        Disposition::Delivered
    );
    let lines = wait_log(&w.log, 2).await;
    let pasted = &lines[1];
    assert_eq!(pasted["bracketed"], true, "{pasted}");
    assert_eq!(pasted["pastes"], 1, "{pasted}");
    let text = pasted["text"].as_str().unwrap();
    assert!(text.contains("UNTRUSTED data from GitHub"));
    assert!(text.contains("make the backoff test deterministic"));
    let ok = w.events("dispatch.succeeded");
    assert_eq!(ok[0]["delivery_id"], "delivery-1");
    let row = w.row(ITEM).unwrap();
    assert!(row["lastEventAt"].is_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_session_receives_nothing() {
    let w = World::new();
    w.start(ITEM).await;
    w.cli(&["sessions", "pause", ITEM]).assert().success();
    assert_eq!(w.row(ITEM).unwrap()["state"], "paused");
    let dispatcher = w.dispatcher();
    assert_eq!(
        dispatcher.ingest(comment(1, "while paused")).await,
        Disposition::Dropped {
            reason: "session-paused".into()
        }
    );
    w.cli(&["sessions", "resume", ITEM]).assert().success();
    assert_eq!(
        dispatcher.ingest(comment(2, "sentinel")).await,
        Disposition::Delivered
    );
    let lines = wait_log(&w.log, 2).await;
    assert_eq!(lines.len(), 2, "boot prompt and sentinel only");
    assert!(texts(&lines)[1].contains("sentinel"));
    assert!(!texts(&lines).iter().any(|t| t.contains("while paused")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_harness_is_respawned_and_the_pending_prompt_delivered() {
    let w = World::new();
    let pane = w.start(ITEM).await;
    w.kill_harness(&pane).await;
    w.wait_state(ITEM, &["dead"]).await;

    let dispatcher = w.dispatcher();
    let got = dispatcher
        .ingest(comment(1, "are you still there? XYZZY"))
        .await;
    assert_eq!(got, Disposition::Delivered);

    let lines = wait_log(&w.log, 2).await;
    assert_eq!(
        lines[1]["boot"], true,
        "the pending prompt is the boot prompt"
    );
    let boot = lines[1]["text"].as_str().unwrap();
    assert!(boot.contains("XYZZY"));
    assert!(
        boot.contains("the-loop started this session for github:octo/repo#15"),
        "the fake harness cannot resume: a fresh conversation"
    );
    let respawned = w.events("session.respawned");
    assert_eq!(respawned.len(), 1);
    assert_eq!(respawned[0]["resumed"], false);
    assert_eq!(w.events("dispatch.succeeded")[0]["respawned"], true);

    // The new harness takes the next event by paste.
    let row = w.wait_state(ITEM, &["working", "idle"]).await;
    let new_pane = the_loop::tmux::PaneId::parse(row["pane"].as_str().unwrap()).unwrap();
    wait_ready(&w.server.tmux(), &new_pane).await;
    assert_eq!(
        dispatcher.ingest(comment(2, "next")).await,
        Disposition::Delivered
    );
    let lines = wait_log(&w.log, 3).await;
    assert_eq!(lines[2]["bracketed"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_ends_the_harness_and_reset_forgets_the_session() {
    let w = World::new();
    w.start(ITEM).await;
    let name = "loop-github-octo-repo-15";

    let out = w.cli(&["sessions", "stop", ITEM]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(w.pane_dead(name), Some(true), "kept, harness ended");
    let row = w.row(ITEM).unwrap();
    assert_eq!(row["status"], "closed");
    assert_eq!(row["state"], "closed");
    assert_eq!(w.events("session.stopped").len(), 1);

    w.cli(&["sessions", "reset", ITEM]).assert().success();
    assert!(w.list().is_empty());
    assert_eq!(w.pane_dead(name), None, "the tmux session is gone");
    assert!(!w.home.join("sessions/github-octo-repo-15.json").exists());
    assert_eq!(w.events("session.reset").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_json_shows_each_state() {
    let w = World::new();
    let items = [
        "github:octo/repo#1",
        "github:octo/repo#2",
        "github:octo/repo#3",
        "github:octo/repo#4",
    ];
    let mut panes = Vec::new();
    for item in items {
        panes.push(w.start(item).await);
    }
    w.cli(&["sessions", "pause", items[1]]).assert().success();
    w.kill_harness(&panes[2]).await;
    w.cli(&["sessions", "stop", items[3]]).assert().success();

    w.wait_state(items[2], &["dead"]).await;
    // A screen unchanged for the working window reads as idle.
    w.wait_state(items[0], &["idle"]).await;
    let states: Vec<(String, String)> = w
        .list()
        .iter()
        .map(|r| {
            (
                r["ref"].as_str().unwrap().to_string(),
                r["state"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = items
        .iter()
        .zip(["idle", "paused", "dead", "closed"])
        .map(|(i, s)| (i.to_string(), s.to_string()))
        .collect();
    assert_eq!(states, expected);
    let idle = w.row(items[0]).unwrap();
    assert!(idle["idleSeconds"].as_u64().unwrap() >= 5, "{idle}");

    let table = w.cli(&["sessions", "list"]).output().unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(table.starts_with("REF"), "{table}");
    for word in [
        "idle",
        "paused",
        "dead",
        "closed",
        "loop-github-octo-repo-3",
    ] {
        assert!(table.contains(word), "{word} in {table}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_occupant_of_the_name_is_never_killed() {
    let w = World::new();
    let name = "loop-github-octo-repo-99";
    let made = w
        .server
        .raw(&["new-session", "-d", "-s", name, "sleep", "600"]);
    assert!(made.status.success(), "{made:?}");
    let pid = |w: &World| {
        String::from_utf8_lossy(
            &w.server
                .raw(&[
                    "list-panes",
                    "-t",
                    &format!("={name}:"),
                    "-F",
                    "#{pane_pid}",
                ])
                .stdout,
        )
        .trim()
        .to_string()
    };
    let before = pid(&w);

    let out = w
        .cli(&["sessions", "start", "github:octo/repo#99"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("never replaced"), "{stderr}");
    assert_eq!(w.pane_dead(name), Some(false), "still running");
    assert_eq!(pid(&w), before, "the same program");
    assert_eq!(w.events("session.spawn_failed").len(), 1);
    assert!(w.list().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_read_only_attaches_a_read_only_client() {
    let w = World::new();
    w.start(ITEM).await;
    // The attach runs in a pane of another private server, as an operator's terminal.
    let outer = TmuxServer::new();
    let home = format!("THE_LOOP_HOME={}", w.home.display());
    let config = format!("THE_LOOP_CONFIG={}", w.config.display());
    let socket = format!("THE_LOOP_TMUX_SOCKET={}", w.server.socket);
    let made = outer.raw(&[
        "new-session",
        "-d",
        "-x",
        "100",
        "-y",
        "30",
        "-s",
        "viewer",
        "-e",
        &home,
        "-e",
        &config,
        "-e",
        &socket,
        BIN,
        "sessions",
        "attach",
        ITEM,
        "--read-only",
    ]);
    assert!(made.status.success(), "{made:?}");
    wait_for(
        "a read-only client on the session",
        Duration::from_secs(15),
        || async {
            let out = w
                .server
                .raw(&["list-clients", "-F", "#{client_readonly} #{session_name}"]);
            let clients = String::from_utf8_lossy(&out.stdout).to_string();
            clients
                .lines()
                .any(|l| l == "1 loop-github-octo-repo-15")
                .then_some(())
        },
    )
    .await;
}
