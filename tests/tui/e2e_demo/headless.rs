//! `the-loop demo --headless`: the same world without a screen (the supervisor as
//! `the-loop run`), stopped with SIGINT as Ctrl-C would, and cleaned up.

use crate::support::demo::{BIN, alive, demo_entries, events, wait_until};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[test]
fn headless_runs_the_script_and_sigint_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let temp = dir.path().join("tmp");
    let sockets = dir.path().join("tmux");
    std::fs::create_dir_all(&temp).unwrap();
    std::fs::create_dir_all(&sockets).unwrap();
    let mut child = Command::new(BIN)
        .args(["demo", "--headless"])
        .env("TMPDIR", &temp)
        .env("TMUX_TMPDIR", &sockets)
        .env("THE_LOOP_DEMO_PACE", "fast")
        .env_remove("TMUX")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = Arc::new(Mutex::new(String::new()));
    let reader = {
        let stderr = Arc::clone(&stderr);
        let pipe = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let mut all = stderr.lock().unwrap();
                all.push_str(&line);
                all.push('\n');
            }
        })
    };
    let said = || stderr.lock().unwrap().clone();

    // It says where to look, and the script plays up to the agent's question.
    let root: PathBuf = wait_until(
        "the headless announcement",
        Duration::from_secs(30),
        || {
            let text = said();
            let home = text.split("THE_LOOP_HOME=").nth(1)?.split(' ').next()?;
            Some(PathBuf::from(home))
        },
        said,
    );
    assert!(said().contains("tmux -L the-loop-demo-"), "{}", said());
    wait_until(
        "the agent's question in the event log",
        Duration::from_secs(60),
        || {
            events(&root)
                .iter()
                .any(|e| e["event"] == "session.awaiting_input")
                .then_some(())
        },
        said,
    );
    // The demo agent works in its own worktree of the demo checkout (SPEC §16): the
    // operator's welcome made it write its fix there, and the checkout is untouched.
    let created = events(&root)
        .into_iter()
        .find(|e| e["event"] == "workspace.created")
        .expect("a worktree for the demo issue");
    assert_eq!(created["work_item"], "github:octo/demo#12");
    assert_eq!(created["branch"], "the-loop/issue-12");
    let worktree = PathBuf::from(created["workspace"].as_str().unwrap());
    assert!(worktree.starts_with(root.canonicalize().unwrap().join("worktrees")));
    let agent = std::fs::read_to_string(root.join("fake-agent.jsonl")).unwrap();
    let boot: serde_json::Value = serde_json::from_str(agent.lines().next().unwrap()).unwrap();
    assert_eq!(
        boot["cwd"],
        worktree.display().to_string(),
        "the agent runs there"
    );
    wait_until(
        "the agent's fix in its worktree",
        Duration::from_secs(30),
        || {
            std::fs::read_to_string(worktree.join("src/retry.rs"))
                .ok()
                .filter(|t| t.contains("cap_ms"))
        },
        said,
    );
    let checkout = std::fs::read_to_string(root.join("work/demo/src/retry.rs")).unwrap();
    assert!(
        !checkout.contains("cap_ms"),
        "the checkout is the operator's"
    );

    let supervisor: i32 = events(&root)
        .iter()
        .find(|e| e["event"] == "supervisor.started")
        .and_then(|e| e["pid"].as_i64())
        .unwrap() as i32;

    // Ctrl-C: the demo stops its supervisor once and takes everything down.
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let status = wait_until(
        "the demo to exit",
        Duration::from_secs(30),
        || child.try_wait().unwrap(),
        said,
    );
    reader.join().unwrap();
    assert!(status.success(), "{status:?}\n{}", said());
    assert!(said().contains("stopped by SIGINT"), "{}", said());
    assert!(!alive(supervisor));
    assert!(!root.exists());
    assert_eq!(demo_entries(&temp), Vec::<PathBuf>::new());
    let uid_dirs: Vec<PathBuf> = std::fs::read_dir(&sockets)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    for d in uid_dirs {
        assert_eq!(
            demo_entries(&d),
            Vec::<PathBuf>::new(),
            "a demo socket is left"
        );
    }
}
