//! SPEC §16.5: a session's `PATH` starts with the running binary's directory, so an
//! agent's `the-loop ask` works even when the-loop was built but never installed.

use crate::support::e2e::{Setup, item};
use crate::support::tmux_server::BIN;
use crate::support::workspaces::Repo;
use std::path::Path;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_loop_ask_works_in_a_session_when_the_loop_is_not_on_path() {
    // A PATH with tmux, git and env, and no the-loop on it (it lives in target/).
    let path = "/usr/local/bin:/usr/bin:/bin";
    for dir in path.split(':') {
        assert!(
            !Path::new(dir).join("the-loop").exists(),
            "the-loop is installed in {dir}: this test needs it absent"
        );
    }
    let bin_dir = Path::new(BIN).parent().unwrap();
    assert!(!path.split(':').any(|d| Path::new(d) == bin_dir));
    let repo = Repo::new();
    // The agent is `env the-loop ask …`: `env` finds `the-loop` on the session's PATH
    // exactly as an agent's shell would.
    let setup = Setup {
        harness: Some((
            "env".into(),
            "[the-loop, ask, --question, \"PATH-QUESTION from {prompt}\"]".into(),
        )),
        env: vec![("PATH".into(), path.into())],
        ..Setup::default()
    };
    let w = repo.world(setup).await;
    w.watched_issue(7);
    w.cli(&["sessions", "start", &item(7)]).assert().success();
    let asked = w
        .wait_event("session.awaiting_input", |e| e["work_item"] == item(7))
        .await;
    assert!(
        asked["question"]
            .as_str()
            .unwrap()
            .starts_with("PATH-QUESTION"),
        "{asked}"
    );
}
