//! An agent acts only on its own work item (SPEC §19.2, §19.5): a process found in one
//! session's pane (real tmux, the pane's process tree) may not comment or propose as
//! another session, whatever `$THE_LOOP_WORK_ITEM` says.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::tmux_server::TmuxServer;
use std::sync::Arc;
use the_loop::config::Config;
use the_loop::events::{EventLog, Source};
use the_loop::paths::StatePaths;
use the_loop::session::caller::{ancestors, check, session_of};
use the_loop::session::{Registry, SessionRecord, Sessions, Settings};
use the_loop::tmux::Tmux;
use the_loop::work_item::WorkItemRef;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_in_one_sessions_pane_acts_only_as_that_session() {
    let server = TmuxServer::new();
    let dir = tempfile::tempdir().unwrap();
    let paths = StatePaths::new(dir.path());
    let events = EventLog::open(&paths);
    let settings = Settings::new(&Config::default(), None, &paths).unwrap();
    let registry = Registry::new(&paths, events.clone(), Source::Cli);
    let tmux = Arc::new(server.tmux());
    let sessions = Sessions::new(tmux.clone(), registry, events, settings);
    let item = |n| WorkItemRef::new("octo", "repo", n);
    for n in [7, 8] {
        let record = SessionRecord::new(&item(n), "agent", dir.path().to_path_buf());
        let out = server.raw(&[
            "new-session",
            "-d",
            "-s",
            &record.tmux_session,
            "sleep",
            "600",
        ]);
        assert!(out.status.success(), "{out:?}");
        sessions.registry().put(&record).unwrap();
    }
    let pane_of = |n| {
        let name = item(n).tmux_session_name();
        let out = server.raw(&[
            "display-message",
            "-p",
            "-t",
            &format!("={name}:"),
            "#{pane_id}",
        ]);
        the_loop::tmux::PaneId::parse(String::from_utf8_lossy(&out.stdout).trim()).unwrap()
    };
    let in_seven = tmux.pane_pid(&pane_of(7)).await.unwrap();
    assert_eq!(ancestors(in_seven)[0], in_seven);

    assert_eq!(session_of(&sessions, in_seven).await, Some(item(7)));
    assert_eq!(check(&sessions, &item(7), in_seven).await, Ok(()));
    assert_eq!(
        check(&sessions, &item(8), in_seven).await,
        Err(item(7)),
        "the agent of #7 claiming #8"
    );
    // A process in no session's pane (the operator's shell; this test) is no one's.
    let outside = std::process::id();
    assert_eq!(session_of(&sessions, outside).await, None);
    assert_eq!(check(&sessions, &item(8), outside).await, Ok(()));
    let _ = server.raw(&["kill-server"]);
}

/// `sessions deliver` pastes blind into a client whose screen is unknown: only the
/// operator may ask for it. Run from a session's pane (an agent told to release its own
/// or another session's held deliveries), the real binary refuses and releases nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_deliver_is_refused_from_an_agents_pane() {
    let server = TmuxServer::new();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "repos: [{{name: octo/repo}}]\nsessions: {{tmux: {{socket: \"{}\"}}}}\n",
            server.socket
        ),
    )
    .unwrap();
    let paths = StatePaths::new(&state);
    let events = EventLog::open(&paths);
    let registry = Registry::new(&paths, events, Source::Cli);
    let item = |n| WorkItemRef::new("octo", "repo", n);
    let out = dir.path().join("out.txt");
    let bin = env!("CARGO_BIN_EXE_the-loop");
    let script = format!(
        "'{bin}' sessions deliver {} --wait 1 > '{}' 2>&1; echo \"EXIT:$?\" >> '{}'; sleep 600",
        item(8),
        out.display(),
        out.display()
    );
    for n in [7, 8] {
        let mut record = SessionRecord::new(&item(n), "claude", dir.path().to_path_buf());
        record.harness_version = Some("2.1.400".into());
        record.hold.release_one = None;
        registry.put(&record).unwrap();
    }
    // #8's agent is where the deliveries wait; #7's agent asks for them.
    let record = registry.get(&item(8)).unwrap().unwrap();
    let _ = server.raw(&[
        "new-session",
        "-d",
        "-s",
        &record.tmux_session,
        "sleep",
        "600",
    ]);
    let seven = item(7).tmux_session_name();
    let started = server.raw(&[
        "new-session",
        "-d",
        "-s",
        &seven,
        "-e",
        &format!("THE_LOOP_HOME={}", state.display()),
        "-e",
        &format!("THE_LOOP_CONFIG={}", config.display()),
        "sh",
        "-c",
        &script,
    ]);
    assert!(started.status.success(), "{started:?}");
    let start = std::time::Instant::now();
    let said = loop {
        let said = std::fs::read_to_string(&out).unwrap_or_default();
        if said.contains("EXIT:") {
            break said;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "{said}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert!(said.contains("EXIT:1"), "{said}");
    assert!(said.contains("is the operator's"), "{said}");
    assert!(said.contains("github:octo/repo#7"), "{said}");
    let after = registry.get(&item(8)).unwrap().unwrap();
    assert_eq!(after.hold.release_one, None, "nothing was released");
    let _ = server.raw(&["kill-server"]);
}
