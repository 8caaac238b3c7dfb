//! SPEC §14.4 and §14.5 end to end: nothing the-loop starts — the tmux server, an
//! agent's pane, a critic — receives the GitHub token or the webhook secret unless the
//! operator passes it (`sessions.passEnv`); and the state a full run leaves is the
//! user's alone (directories 0700, files 0600), including state an older version left
//! readable.

use crate::support::e2e::{REPO, SECRET, Setup, TOKEN, World, item, real_tmux};
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

/// Every directory under `root` and `root` itself 0700, every other entry 0600.
fn loose_entries(root: &Path) -> Vec<String> {
    let mut loose = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(path) = stack.pop() {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let mode = meta.permissions().mode() & 0o777;
        let want = if meta.is_dir() { 0o700 } else { 0o600 };
        if mode != want {
            loose.push(format!("{:o} {}", mode, path.display()));
        }
        if meta.is_dir() {
            stack.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        }
    }
    loose.sort();
    loose
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_run_leaves_only_private_state_and_tightens_what_was_loose() {
    let mut w = World::new(Setup::default()).await;
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

    // A full run: a session, the supervisor, a delivered comment, a question, a reply,
    // a recorded critic round, a restart.
    w.watched_issue(8);
    w.start_session(8).await;
    w.start_supervisor();
    w.wait_cycles(1).await;
    w.comment(8, "alice", "PRIVATE-STATE-TEXT");
    w.wait_pasted("PRIVATE-STATE-TEXT").await;
    w.cli(&["ask", "--work-item", &item(8), "--question", "which way?"])
        .assert()
        .success();
    w.cli(&["reply", "--work-item", &item(8), "--text", "left"])
        .assert()
        .success();
    w.cli(&[
        "critic",
        "run",
        "echo",
        "--prompt",
        "x",
        "--work-item",
        &item(8),
    ])
    .assert()
    .success();
    w.signal("-TERM");
    w.wait_exit().await;
    w.start_supervisor();
    w.wait_cycles(1).await;
    w.signal("-TERM");
    w.wait_exit().await;

    assert!(
        w.home.join("poll").is_dir(),
        "the run wrote a ledger for {REPO}"
    );
    assert!(
        w.home.join("critics").is_dir(),
        "the run saved a critic result"
    );
    assert!(w.home.join("logs").is_dir(), "the run logged");
    let loose = loose_entries(&w.home);
    assert!(
        loose.is_empty(),
        "state readable by others:\n{}",
        loose.join("\n")
    );
}
