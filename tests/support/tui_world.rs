//! A hermetic world for driving `the-loop tui` the way an operator does: the simulated
//! GitHub in the test process, a private tmux server hosting both the screens (each
//! `the-loop tui` in its own 160×48 session, run through `sh` so its exit status is
//! printed afterwards) and the agents (`the-loop fake-agent --ask-trigger …` as a custom
//! harness), a state root, and an operator config with a small script critic.
//! Screens are driven with `send-keys` and read with `capture-pane -p`.
//!
//! Dropping the world kills the tmux server (every screen and agent with it) and removes
//! the files. Nothing here asserts a duration: waits have generous limits.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use super::tmux_server::{BIN, TmuxServer};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use the_loop::github::sim::{IssueSpec, SimGithub, SimHandle};
use the_loop::work_item::WorkItemRef;

pub const REPO: &str = "octo/repo";
pub const TOKEN: &str = "ghp_tuie2etesttoken_0123456789abcdef";
/// The operator: authorized, and the account the tool posts as.
pub const OPERATOR: &str = "alice";
/// A submitted text containing this makes the fake agent ask the operator.
pub const TRIGGER: &str = "ASK-OPERATOR";
/// Written into the session's worktree (as its agent would), so a critic that reads the
/// diff can say it saw it.
pub const DIFF_MARK: &str = "CRITIC-SEES-THIS";
/// Long enough for a few 5 s poll cycles on a loaded two-core machine.
pub const PATIENCE: Duration = Duration::from_secs(90);
pub const WIDTH: u16 = 160;
pub const HEIGHT: u16 = 48;

pub fn item(n: u64) -> WorkItemRef {
    WorkItemRef::new("octo", "repo", n)
}

pub struct TuiWorld {
    pub sim: SimHandle,
    pub home: PathBuf,
    pub config: PathBuf,
    /// What every fake agent received, one JSON line per submission.
    pub agent_log: PathBuf,
    pub work: PathBuf,
    // Dropped after the fields above, before the directory: kills screens and agents.
    pub tmux: TmuxServer,
    dir: tempfile::TempDir,
}

impl TuiWorld {
    /// Issue #15 watched on the simulated GitHub; a git working tree with an uncommitted
    /// change; nothing running yet but the tmux server.
    pub async fn new() -> Self {
        Self::with_issues([15]).await
    }

    /// Like [`new`](Self::new), with these issues watched (#15 is "Settle the retry cap").
    pub async fn with_issues(numbers: impl IntoIterator<Item = u64>) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let sim = SimGithub::start().await.unwrap();
        sim.require_token(Some(TOKEN));
        sim.set_bot_login(OPERATOR);
        for n in numbers {
            let title = if n == 15 {
                "Settle the retry cap".to_string()
            } else {
                format!("Issue {n}")
            };
            let spec = IssueSpec::new(&title)
                .number(n)
                .author("carol")
                .labels(&["the-loop"]);
            sim.add_issue(REPO, spec).unwrap();
        }

        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        git_work_tree(&work);
        let critic = dir.path().join("critic.sh");
        std::fs::write(
            &critic,
            format!(
                "#!/bin/sh\n# A stand-in critic: takes its time, then reports on the material.\nsleep 3\nprintf 'read %s lines; ' \"$(wc -l < \"$1\")\"\nif grep -q {DIFF_MARK} \"$1\"; then echo 'saw {DIFF_MARK} in the diff'; else echo 'no diff seen'; fi\n"
            ),
        )
        .unwrap();
        make_executable(&critic);

        let world = Self {
            sim,
            home: dir.path().join("state"),
            config: dir.path().join("config.yaml"),
            agent_log: dir.path().join("agent.jsonl"),
            work,
            tmux: TmuxServer::new(),
            dir,
        };
        std::fs::write(&world.config, world.config_yaml(&critic)).unwrap();
        world.start_tmux();
        world
    }

    fn config_yaml(&self, critic: &Path) -> String {
        format!(
            r#"github: {{apiUrl: "{api}"}}
repos:
  - {{name: {REPO}, path: "{work}", label: the-loop}}
routing: {{authorizedUsers: [{OPERATOR}]}}
polling: {{intervalSeconds: 5}}
sessions:
  harness: fake
  harnesses:
    fake:
      command: "{BIN}"
      args: [fake-agent, --log, "{log}", --ask-trigger, {TRIGGER}, "--", "{{prompt}}"]
  tmux: {{socket: "{socket}", submitDelayMs: 50, probeTimeoutSeconds: 10}}
tui: {{notify: none}}
critics:
  - {{name: diffcheck, command: "{critic}", args: ["{{promptFile}}"], outputFormat: text, timeoutSeconds: 60}}
"#,
            api = self.sim.base_url(),
            work = self.work.display(),
            log = self.agent_log.display(),
            socket = self.tmux.socket,
            critic = critic.display(),
        )
    }

    /// Starts the private server with the environment every screen and agent inherits:
    /// this world's state root, config and token, nothing from the developer's.
    fn start_tmux(&self) {
        let status = Command::new("tmux")
            // No user config: the default prefix (C-b) detaches in the attach test.
            .args(["-L", &self.tmux.socket, "-f", "/dev/null"])
            .args(["new-session", "-d", "-s", "keepalive"])
            .env("THE_LOOP_HOME", &self.home)
            .env("THE_LOOP_CONFIG", &self.config)
            .env("GH_TOKEN", TOKEN)
            .env("THE_LOOP_LOG", "the_loop=debug")
            .env_remove("GITHUB_TOKEN")
            .env_remove("THE_LOOP_GITHUB_API_URL")
            .env_remove("THE_LOOP_TMUX_SOCKET")
            .env_remove("THE_LOOP_WORK_ITEM")
            .env_remove("NO_COLOR")
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .status()
            .unwrap();
        assert!(status.success(), "the tmux server did not start");
    }

    /// Runs `the-loop tui ARGS` in a new 160×48 tmux session called `name`. When it
    /// exits, the pane prints `EXIT:<status>` and stays.
    pub fn open_screen(&self, name: &str, args: &[&str]) -> Screen {
        let script = format!(
            "unset TMUX TMUX_PANE; '{BIN}' tui {}; echo \"EXIT:$?\"; exec sleep 86400",
            args.join(" ")
        );
        self.new_session(name, WIDTH, HEIGHT, &["sh", "-c", &script])
    }

    /// Runs `program tui` directly as the pane's command (no shell, so `#{pane_pid}` is
    /// its pid), in a `width`×`height` session called `name`.
    pub fn open_program(&self, program: &str, name: &str, width: u16, height: u16) -> Screen {
        self.new_session(name, width, height, &[program, "tui"])
    }

    fn new_session(&self, name: &str, width: u16, height: u16, command: &[&str]) -> Screen {
        let (w, h) = (width.to_string(), height.to_string());
        let mut args = vec!["new-session", "-d", "-s", name, "-x", &w, "-y", &h, "--"];
        args.extend_from_slice(command);
        let out = self.tmux.raw(&args);
        assert!(out.status.success(), "{out:?}");
        Screen {
            socket: self.tmux.socket.clone(),
            target: format!("={name}:"),
        }
    }

    /// Starts sessions on these issues through the session module (as `sessions start`
    /// does), without waiting for their agents.
    pub async fn start_sessions(&self, numbers: impl IntoIterator<Item = u64>) {
        use std::sync::Arc;
        use the_loop::events::{EventLog, Source};
        use the_loop::paths::StatePaths;
        use the_loop::session::{Origin, PromptInputs, Registry, Sessions, Settings};
        let loaded = the_loop::config::load_file(&self.config).unwrap();
        let paths = StatePaths::new(&self.home);
        let events = EventLog::open(&paths);
        let settings = Settings::new(&loaded.config, Some(self.config.clone()), &paths).unwrap();
        let registry = Registry::new(&paths, events.clone(), Source::Cli);
        let sessions = Sessions::new(Arc::new(self.tmux.tmux()), registry, events, settings);
        for n in numbers {
            let item = item(n);
            let inputs = PromptInputs::manual(&item, "test");
            sessions
                .start(&item, &inputs, &Origin::cli())
                .await
                .unwrap();
        }
    }

    /// What the fake agents received, in order (boot prompts included).
    pub fn agent_lines(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.agent_log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("agent log lines are JSON"))
            .collect()
    }

    /// Waits for an agent submission that `accept`s, and returns it.
    pub async fn wait_agent(&self, what: &str, accept: impl Fn(&Value) -> bool) -> Value {
        wait(what, || self.agent_lines().into_iter().find(|l| accept(l))).await
    }

    /// Every event-log record so far.
    pub fn events(&self) -> Vec<Value> {
        the_loop::events::lines::all(&self.home.join("events.jsonl"))
    }

    pub fn events_named(&self, name: &str) -> Vec<Value> {
        the_loop::events::lines::named(&self.home.join("events.jsonl"), name)
    }

    /// The visible text of a session's agent pane.
    pub fn agent_screen(&self, n: u64) -> String {
        let target = format!("={}:", item(n).tmux_session_name());
        let out = self.tmux.raw(&["capture-pane", "-p", "-t", &target]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// One `the-loop tui` in its tmux session.
pub struct Screen {
    socket: String,
    target: String,
}

impl Screen {
    /// The screen in tmux session `name` on the server of `socket`.
    pub fn on(socket: &str, name: &str) -> Self {
        Self {
            socket: socket.to_string(),
            target: format!("={name}:"),
        }
    }

    fn tmux(&self, args: &[&str]) -> std::process::Output {
        super::tmux_server::raw_on(&self.socket, args)
    }

    /// The screen as plain text, one line per row.
    pub fn text(&self) -> String {
        let out = self.tmux(&["capture-pane", "-p", "-t", &self.target]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Presses keys, in tmux's names (`r`, `Enter`, `C-s`, `Escape`).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", self.target.as_str()];
        args.extend_from_slice(keys);
        let out = self.tmux(&args);
        assert!(out.status.success(), "send-keys {keys:?}: {out:?}");
    }

    /// Types text literally, character by character.
    pub fn type_text(&self, text: &str) {
        let out = self.tmux(&["send-keys", "-l", "-t", &self.target, text]);
        assert!(out.status.success(), "send-keys -l: {out:?}");
    }

    /// The pid of the pane's program.
    pub fn pid(&self) -> u32 {
        self.format("#{pane_pid}").parse().expect("a pane pid")
    }

    /// A tmux format about the pane, e.g. `#{alternate_on}`.
    pub fn format(&self, format: &str) -> String {
        let out = self.tmux(&["display-message", "-p", "-t", &self.target, format]);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Waits until the screen satisfies `accept`; on timeout, fails showing the screen.
    pub async fn wait_for(&self, what: &str, accept: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let text = self.text();
            if accept(&text) {
                return text;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "timed out waiting for {what}; the screen:\n{text}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until `needle` is on the screen.
    pub async fn wait_text(&self, needle: &str) -> String {
        self.wait_for(&format!("`{needle}` on the screen"), |t| t.contains(needle))
            .await
    }

    /// Waits for the screen's program to exit and returns its status.
    pub async fn wait_exit(&self) -> i32 {
        let text = self.wait_text("EXIT:").await;
        let status = text
            .split("EXIT:")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .expect("a status after EXIT:");
        status.parse().expect("a numeric exit status")
    }
}

/// Polls `check` every 100 ms until it yields, or fails after [`PATIENCE`].
pub async fn wait<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(start.elapsed() < PATIENCE, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A repository with one commit: the operator's checkout, which sessions make their
/// worktrees from (SPEC §16).
fn git_work_tree(dir: &Path) {
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=test", "-c", "user.email=test@example.com"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q"]);
    std::fs::write(dir.join("retry.txt"), "cap = 3\n").unwrap();
    git(&["add", "retry.txt"]);
    git(&["commit", "-q", "-m", "first"]);
}

impl TuiWorld {
    /// The agent's edit: an uncommitted change holding [`DIFF_MARK`] in the worktree the
    /// session of #`number` works in; returns that worktree.
    pub fn agent_edits(&self, number: u64) -> std::path::PathBuf {
        let created = self
            .events_named("workspace.created")
            .into_iter()
            .find(|e| e["work_item"] == format!("github:{REPO}#{number}"))
            .expect("a worktree for the session");
        let dir = std::path::PathBuf::from(created["workspace"].as_str().unwrap());
        std::fs::write(
            dir.join("retry.txt"),
            format!("cap = 3\nper_repo = true # {DIFF_MARK}\n"),
        )
        .unwrap();
        dir
    }
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}
