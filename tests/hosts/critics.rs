//! A critic of a session on another host runs there: as the host's user, in the
//! session's directory on the host, bounded there by its timeout.

use super::remote_sessions::started;
use crate::support::sshd::Sshd;
use crate::support::tmux_server::BIN;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// `the-loop critic run NAME --work-item #15` as the operator runs it: its envelope.
fn critic(config: &Path, state: &Path, name: &str) -> (Value, std::process::Output) {
    let out = Command::new(BIN)
        .arg("--config")
        .arg(config)
        .args(["critic", "run", name, "--work-item", "github:octo/repo#15"])
        .args(["--prompt", "review the change"])
        .env("THE_LOOP_HOME", state)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .output()
        .unwrap();
    let line = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    let envelope = serde_json::from_str(&line).unwrap_or(Value::Null);
    (envelope, out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_critic_of_a_session_on_the_host_runs_there_in_its_directory() {
    if !Sshd::available() {
        return;
    }
    let sshd = Sshd::start();
    let world = started(&sshd, None).await;
    let (config_path, state) = (world.config_path(), world.paths.root.clone());
    let (who, out) = critic(&config_path, &state, "whoami");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(who["ok"], true, "{who}");
    assert_eq!(
        who["output"].as_str().map(str::trim),
        Some(sshd.user()),
        "{who}"
    );
    let (place, _) = critic(&config_path, &state, "where");
    assert_eq!(
        place["output"].as_str().map(str::trim),
        sshd.home().to_str(),
        "{place}"
    );

    // Its timeout holds on the host too: nothing of it is left running there.
    let (slow, _) = critic(&config_path, &state, "slow");
    assert_eq!(slow["ok"], false, "{slow}");
    let left = sshd.run_as_user(&["pgrep", "-u", sshd.user(), "-x", "sleep"]);
    assert!(
        !left.status.success(),
        "a sleep is still running on the host"
    );

    // A critic that needs files here says why it does not run there.
    let (files, _) = critic(&config_path, &state, "files");
    assert_eq!(files["ok"], false, "{files}");
    assert!(
        files["error"]
            .as_str()
            .unwrap_or_default()
            .contains("runs on host `build`"),
        "{files}"
    );
    world.host.transport.disconnect().await;
}
