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
