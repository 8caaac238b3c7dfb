//! One hermetic world per test: a private tmux server, a state root, an operator config
//! whose harness is `the-loop fake-agent` (logging to a file), and helpers to run the
//! CLI and the dispatcher against them.

use crate::support::tmux_server::*;
use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use the_loop::config;
use the_loop::events::{EventLog, Source};
use the_loop::ingress::InboundEvent;
use the_loop::paths::StatePaths;
use the_loop::session::{Dispatcher, Registry, Sessions, Settings};
use the_loop::tmux::{PaneId, RealTmux, Tmux};

pub const ITEM: &str = "github:octo/repo#15";

pub struct World {
    pub server: TmuxServer,
    /// Holds the state root, config and log; removed on drop.
    _dir: tempfile::TempDir,
    pub home: PathBuf,
    pub config: PathBuf,
    /// What the fake agents received, one JSON line per submission.
    pub log: PathBuf,
}

impl World {
    pub fn new() -> Self {
        Self::with_harness(BIN)
    }

    /// A world whose harness runs `command` (a missing one to test that error).
    pub fn with_harness(command: &str) -> Self {
        let server = TmuxServer::new();
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("state");
        let log = dir.path().join("agent.jsonl");
        let config = dir.path().join("config.yaml");
        let yaml = format!(
            r#"repos:
  - name: octo/repo
    path: {work}
routing:
  authorizedUsers: [alice]
sessions:
  harness: fake
  harnesses:
    fake:
      command: {command}
      args: [fake-agent, --log, {log}, "{{prompt}}"]
  tmux:
    socket: {socket}
    submitDelayMs: 50
"#,
            work = dir.path().display(),
            log = log.display(),
            socket = server.socket,
        );
        std::fs::write(&config, yaml).unwrap();
        Self {
            server,
            _dir: dir,
            home,
            config,
            log,
        }
    }

    /// Rewrites the config (tests of configuration errors).
    pub fn write_config(&self, yaml: &str) {
        std::fs::write(&self.config, yaml).unwrap();
    }

    /// `the-loop ARGS` in this world, outside any tmux.
    pub fn cli(&self, args: &[&str]) -> Command {
        let mut cmd = Command::cargo_bin("the-loop").unwrap();
        cmd.args(args)
            .env("THE_LOOP_HOME", &self.home)
            .env("THE_LOOP_CONFIG", &self.config)
            .env("THE_LOOP_TMUX_SOCKET", &self.server.socket)
            .env_remove("TMUX")
            .env_remove("TMUX_PANE");
        cmd
    }

    /// `sessions list --json`.
    pub fn list(&self) -> Vec<Value> {
        let out = self.cli(&["sessions", "list", "--json"]).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
        rows.as_array().unwrap().clone()
    }

    pub fn row(&self, item: &str) -> Option<Value> {
        self.list().into_iter().find(|r| r["ref"] == item)
    }

    /// `sessions start ITEM` and waits for the agent to enable bracketed paste.
    pub async fn start(&self, item: &str) -> PaneId {
        self.cli(&["sessions", "start", item]).assert().success();
        let pane = self.pane(item);
        wait_ready(&self.server.tmux(), &pane).await;
        pane
    }

    pub fn pane(&self, item: &str) -> PaneId {
        let row = self.row(item).expect("a session row");
        PaneId::parse(row["pane"].as_str().unwrap()).unwrap()
    }

    /// A dispatcher over this world, as the supervisor would build it.
    pub fn dispatcher(&self) -> Dispatcher {
        let loaded = config::load_file(&self.config).unwrap();
        let paths = StatePaths::new(&self.home);
        let events = EventLog::open(&paths);
        let settings = Settings::new(&loaded.config, loaded.path.clone(), &paths).unwrap();
        let tmux = RealTmux::from_config(&loaded.config);
        let registry = Registry::new(&paths, events.clone(), Source::Dispatch);
        let sessions = Arc::new(Sessions::new(Arc::new(tmux), registry, events, settings));
        Dispatcher::new(sessions, &loaded.config, &paths).unwrap()
    }

    /// Every event-log line named `name`.
    pub fn events(&self, name: &str) -> Vec<Value> {
        std::fs::read_to_string(self.home.join("events.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|e| e["event"] == name)
            .collect()
    }

    /// Waits until `item`'s listed state is one of `states`.
    pub async fn wait_state(&self, item: &str, states: &[&str]) -> Value {
        let what = format!("{item} to be {states:?}");
        wait_for(&what, Duration::from_secs(20), || async {
            self.row(item)
                .filter(|r| states.iter().any(|s| r["state"] == *s))
        })
        .await
    }

    /// Kills the harness in `pane` with SIGKILL, as a crash would.
    pub async fn kill_harness(&self, pane: &PaneId) {
        let pid = self.server.tmux().pane_pid(pane).await.unwrap();
        let status = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    pub fn pane_dead(&self, name: &str) -> Option<bool> {
        let out = self.server.raw(&[
            "list-panes",
            "-t",
            &format!("={name}:"),
            "-F",
            "#{pane_dead}",
        ]);
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim() == "1")
    }
}

/// The issue-comment fixture (alice on octo/repo#15), with its own id and body.
pub fn comment(id: u64, body: &str) -> InboundEvent {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/webhook/issue_comment.created.json");
    let mut payload: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    payload["comment"]["id"] = id.into();
    payload["comment"]["body"] = body.into();
    InboundEvent::from_webhook("issue_comment", &format!("delivery-{id}"), payload)
}

pub fn texts(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .map(|l| l["text"].as_str().unwrap().to_string())
        .collect()
}
