//! SPEC §14.4 and §14.5 end to end: nothing the-loop starts — the tmux server, an
//! agent's pane, a critic — receives the GitHub token or the webhook secret unless the
//! operator passes it (`sessions.passEnv`); and the state a full run leaves — worktrees
//! and what agents wrote there included — is the user's alone, including state an
//! older version left readable.

use crate::support::e2e::{SECRET, Setup, TOKEN, World, item, real_tmux};
use crate::support::private_state::assert_private_tree;
use crate::support::workspaces::{Repo, workspace_of};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use the_loop::tmux::PaneId;

/// The variables that must never reach a child.
const WITHHELD: [&str; 5] = [
    "GH_TOKEN",
    "GITHUB_TOKEN",
    "GH_ENTERPRISE_TOKEN",
    "GITHUB_ENTERPRISE_TOKEN",
    "THE_LOOP_WEBHOOK_SECRET",
];

/// The environment of the process running in `pane`, read from `/proc`.
fn pane_environment(w: &World, pane: &PaneId) -> BTreeMap<String, String> {
    let out = w
        .tmux
        .raw(&["display-message", "-p", "-t", pane.as_str(), "#{pane_pid}"]);
    let pid = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let raw = std::fs::read(format!("/proc/{pid}/environ")).expect("the pane's environment");
    raw.split(|b| *b == 0)
        .filter_map(|kv| {
            let kv = String::from_utf8_lossy(kv);
            let (k, v) = kv.split_once('=')?;
            Some((k.to_string(), v.to_string()))
        })
        .collect()
}

/// The tmux server's global environment (what every new session starts from).
fn server_environment(w: &World) -> String {
    let out = w.tmux.raw(&["show-environment", "-g"]);
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn assert_no_secret(what: &str, text: &str) {
    assert!(!text.contains(TOKEN), "{what} holds the token:\n{text}");
    assert!(
        !text.contains(SECRET),
        "{what} holds the webhook secret:\n{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tmux_server_and_agent_panes_the_supervisor_starts_hold_no_secret() {
    let mut w = World::new(Setup::default()).await;
    w.watched_issue(5);
    // The supervisor (with GH_TOKEN and the webhook secret in its environment) starts
    // the tmux server itself, for an authorized start command.
    w.start_supervisor();
    w.wait_cycles(1).await;
    w.comment(5, "alice", "the-loop start");
    w.wait_event("session.spawned", |e| e["work_item"] == item(5))
        .await;
    let pane = w.wait("#5's pane", || w.pane(5)).await;

    assert_no_secret(
        "the tmux server's global environment",
        &server_environment(&w),
    );
    let env = pane_environment(&w, &pane);
    let shown = format!("{env:#?}");
    assert_no_secret("the agent's environment", &shown);
    for name in WITHHELD {
        assert!(
            env.get(name).is_none_or(String::is_empty),
            "{name} reached the agent: {shown}"
        );
    }
    assert_eq!(env.get("THE_LOOP_WORK_ITEM"), Some(&item(5)), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tmux_server_started_elsewhere_with_a_token_does_not_hand_it_to_sessions() {
    let w = World::new(Setup::default()).await;
    w.watched_issue(6);
    // The operator's own server, started from a shell that exported the token.
    let out = std::process::Command::new("tmux")
        .args(["-L", &w.tmux.socket, "-f", "/dev/null"])
        .args(["new-session", "-d", "-s", "operator", "cat"])
        .env("GH_TOKEN", TOKEN)
        .env("THE_LOOP_WEBHOOK_SECRET", SECRET)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        server_environment(&w).contains(TOKEN),
        "the set-up holds the token"
    );

    let pane = w.start_session(6).await;
    let env = pane_environment(&w, &pane);
    assert_no_secret("the agent's environment", &format!("{env:#?}"));
    assert_eq!(
        env.get("GH_TOKEN").map(String::as_str),
        Some(""),
        "set empty"
    );
}

/// A `tmux` first on the world's `PATH` that records every argv it is run with (one
/// line each) and execs the real one.
fn recording_tmux(dir: &Path) -> PathBuf {
    let log = dir.join("tmux-argv.log");
    let script = format!(
        "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{log}'\nexec '{real}' \"$@\"\n",
        log = log.display(),
        real = real_tmux().display(),
    );
    let wrapper = dir.join("tmux");
    std::fs::write(&wrapper, script).unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    log
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pass_env_hands_a_listed_variable_to_sessions_off_argv() {
    let bin = tempfile::tempdir().unwrap();
    let argv_log = recording_tmux(bin.path());
    let setup = Setup {
        path_prefix: Some(bin.path().to_path_buf()),
        ..Setup::default()
    };
    let w = World::new(setup).await;
    w.watched_issue(7);
    let yaml = w
        .config_yaml(&w.setup)
        .replace("sessions:\n", "sessions:\n  passEnv: [GH_TOKEN]\n");
    std::fs::write(&w.config, yaml).unwrap();
    let pane = w.start_session(7).await;
    let env = pane_environment(&w, &pane);
    assert_eq!(env.get("GH_TOKEN").map(String::as_str), Some(TOKEN));
    assert!(
        env.get("THE_LOOP_WEBHOOK_SECRET")
            .is_none_or(String::is_empty),
        "only what is listed is passed"
    );
    // The value never crossed a tmux client's argv (the process table): the session
    // was started through `exec-env`, whose file is gone once taken.
    let argv = std::fs::read_to_string(&argv_log).unwrap();
    assert!(argv.contains(" new -d "), "a session was started: {argv}");
    assert!(argv.contains(" exec-env "), "{argv}");
    assert!(
        !argv.contains(TOKEN),
        "the token was in tmux's argv: {argv}"
    );
    let handoff = w.state().join("spawn-env");
    let left: Vec<_> = std::fs::read_dir(&handoff).unwrap().collect();
    assert!(left.is_empty(), "hand-off files left: {left:?}");
    assert_eq!(
        std::fs::metadata(&handoff).unwrap().permissions().mode() & 0o777,
        0o700
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn critics_run_without_the_token_or_the_webhook_secret() {
    let w = World::new(Setup::default()).await;
    let yaml = format!(
        "{}critics:\n  - name: envdump\n    command: sh\n    args: [-c, 'env; : \"$0\"', '{{promptFile}}']\n    outputFormat: text\n",
        w.config_yaml(&w.setup)
    );
    std::fs::write(&w.config, yaml).unwrap();
    let out = w
        .cli(&["critic", "run", "envdump", "--prompt", "material"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let envelope: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let output = envelope["output"].as_str().unwrap();
    assert!(
        output.contains("THE_LOOP_HOME="),
        "the environment was printed: {output}"
    );
    assert_no_secret("the critic's environment", output);
    for name in WITHHELD {
        assert!(!output.contains(&format!("{name}=")), "{name}: {output}");
    }
}

/// SPEC §14.5 and §18.5: a run under a umask that hides nothing — sessions started by
/// the CLI and by the supervisor, each in a git worktree the-loop made and set up, an
/// agent that edits its worktree, a comment delivered, a question and its reply through
/// the operator socket, a hook report, a critic round, one worktree removed and one
/// kept — leaves nothing under the state root open to group or others, and a restart
/// keeps it so. State an older version left readable is tightened at start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_run_leaves_only_private_state_and_tightens_what_was_loose() {
    let repo = Repo::new();
    // Setup's output is ignored, so a worktree with only that in it is clean.
    std::fs::write(repo.clone.join(".git/info/exclude"), "build/\n").unwrap();
    // What the agent writes into its worktree when told to (a directory and a file).
    let edit = tempfile::tempdir().unwrap();
    std::fs::create_dir(edit.path().join("notes")).unwrap();
    std::fs::write(edit.path().join("notes/agent.txt"), "the agent's work\n").unwrap();
    let setup = Setup {
        umask: Some("000"),
        agent_args: vec![
            "--edit-on".into(),
            "EDIT-NOW".into(),
            "--edit-from".into(),
            edit.path().display().to_string(),
        ],
        repo_yaml: concat!(
            "    setup:\n",
            "      - [sh, -c, \"mkdir -p build && echo ready > build/setup.txt\"]\n",
        )
        .into(),
        ..Setup::default()
    };
    let mut w = repo.world(setup).await;
    // What an older version left behind: readable by everyone.
    let sessions = w.home.join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let old = sessions.join("old-notes.txt");
    std::fs::write(&old, "pending comment bodies").unwrap();
    std::fs::write(w.home.join("events.jsonl"), "").unwrap();
    for (path, mode) in [
        (&w.home, 0o755),
        (&sessions, 0o755),
        (&old, 0o644),
        (&w.home.join("events.jsonl"), 0o644),
    ] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let yaml = format!(
        "{}critics:\n  - name: echo\n    command: cat\n    args: ['{{promptFile}}']\n    outputFormat: text\n",
        w.config_yaml(&w.setup)
    );
    std::fs::write(&w.config, yaml).unwrap();

    // The supervisor starts first, so what the run makes is never tightened by a start.
    w.watched_issue(8);
    w.watched_issue(9);
    w.start_supervisor();
    w.wait_cycles(1).await;
    // #8: started by the CLI (its worktree made and set up by `sessions start`); #9:
    // by the supervisor, for an authorized command.
    w.start_session(8).await;
    w.comment(9, "alice", "the-loop start");
    w.wait_event("session.spawned", |e| e["work_item"] == item(9))
        .await;
    let tree = workspace_of(&w, 8);
    assert!(
        tree.starts_with(&w.home),
        "worktrees live in the state root"
    );
    assert!(tree.join("build/setup.txt").is_file(), "setup ran");

    w.comment(8, "alice", "PRIVATE-STATE-TEXT EDIT-NOW");
    w.wait_pasted("PRIVATE-STATE-TEXT").await;
    w.wait("the agent's edit", || {
        tree.join("notes/agent.txt").is_file().then_some(())
    })
    .await;
    w.cli(&["ask", "--work-item", &item(8), "--question", "which way?"])
        .assert()
        .success();
    w.cli(&["reply", "--work-item", &item(8), "--text", "left"])
        .assert()
        .success();
    // Claude Code's hook, as its settings file runs it inside the session.
    w.cli(&["hook", "claude"])
        .env("THE_LOOP_WORK_ITEM", item(8))
        .write_stdin(r#"{"hook_event_name":"Stop","last_assistant_message":"done"}"#)
        .assert()
        .success();
    w.wait_event("session.turn_ended", |e| e["work_item"] == item(8))
        .await;
    let tree_arg = tree.display().to_string();
    w.cli(&[
        "critic",
        "run",
        "echo",
        "--prompt",
        "x",
        "--work-item",
        &item(8),
        "--cwd",
        &tree_arg,
    ])
    .assert()
    .success();
    // #9's clean worktree goes; #8's, with the agent's work in it, stays.
    for n in [9, 8] {
        w.cli(&["sessions", "stop", &item(n)]).assert().success();
    }
    w.wait_event("workspace.removed", |e| e["work_item"] == item(9))
        .await;
    w.wait_event("workspace.kept", |e| e["work_item"] == item(8))
        .await;
    w.signal("-TERM");
    w.wait_exit().await;

    for made in ["poll", "critics", "logs", "workspaces", "sessions"] {
        assert!(w.home.join(made).is_dir(), "the run made {made}/");
    }
    assert!(tree.join("notes/agent.txt").is_file(), "the kept worktree");
    assert_private_tree(&w.home);

    w.start_supervisor();
    w.wait_cycles(1).await;
    w.signal("-TERM");
    w.wait_exit().await;
    assert_private_tree(&w.home);
}
