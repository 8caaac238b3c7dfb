//! A hermetic world for driving the real Claude Code (any pinned release) through the-loop (SPEC
//! §17.6): the test's own fake of the Messages API ([`FakeModel`]), a private `HOME`
//! and `TMPDIR` for Claude ([`ClaudeHome`]), a private tmux server started with the
//! environment of §17.6 (so every pane — Claude, the screens — inherits it and nothing
//! of the developer's), a state root and an operator config whose `claude` harness is
//! the npm-installed binary with the built-in argv. Sessions are started through the
//! session module, as `sessions start` does, with `the-loop` itself (the real binary)
//! as the hook Claude runs.
//!
//! Dropping the world ends every process it started: the tmux server with every pane,
//! any process group of a pane's program that outlived it, then the files.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use super::claude::{ClaudeHome, ClaudeVersion, NOT_INHERITED, claude_bin};
use super::fake_model::FakeModel;
use super::processes::{end_panes, end_world};
use super::tmux_server::{BIN, TmuxServer};
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use the_loop::events::{EventLog, Source};
use the_loop::github::sim::{IssueSpec, SimGithub, SimHandle};
use the_loop::paths::StatePaths;
use the_loop::session::{Origin, PromptInputs, Registry, SessionRecord, Sessions, Settings};
use the_loop::work_item::WorkItemRef;

/// Long enough for Claude Code to boot and answer on a loaded two-core machine.
pub const PATIENCE: Duration = Duration::from_secs(90);

pub fn item() -> WorkItemRef {
    WorkItemRef::new("octo", "repo", 15)
}

pub struct ClaudeWorld {
    pub model: FakeModel,
    /// The simulated GitHub and `the-loop run`, for the worlds that supervise.
    pub github: Option<Supervised>,
    pub tmux: TmuxServer,
    pub sessions: Arc<Sessions>,
    pub state: PathBuf,
    pub config: PathBuf,
    pub claude: PathBuf,
    // Last: the directory holding HOME, the project, the state root.
    pub home: ClaudeHome,
}

impl ClaudeWorld {
    /// `None` (the test is skipped) when Claude Code is not installed.
    pub async fn new() -> Option<Self> {
        Self::build(None).await
    }

    /// A world whose item is watched on a simulated GitHub, polled every 5 s by a
    /// supervisor (`the-loop run`) the test starts and stops.
    pub async fn supervised() -> Option<Self> {
        claude_bin()?;
        let _ = rustls::crypto::ring::default_provider().install_default();
        let sim = SimGithub::start().await.unwrap();
        sim.require_token(Some(TOKEN));
        sim.add_repo("octo/repo").unwrap();
        let spec = IssueSpec::new("Settle the retry cap")
            .number(item().number)
            .author("carol")
            .body("The retry cap needs settling.")
            .labels(&["the-loop"]);
        sim.add_issue("octo/repo", spec).unwrap();
        Self::build(Some(Supervised {
            sim,
            child: None,
            runs: 0,
        }))
        .await
    }

    async fn build(github: Option<Supervised>) -> Option<Self> {
        let claude = claude_bin()?;
        let model = FakeModel::start().await;
        let home = ClaudeHome::new(&model.url);
        let state = home.dir.path().join("state");
        let config = home.dir.path().join("config.yaml");
        let tmux = TmuxServer::new();
        let (api, polling) = match &github {
            Some(g) => (g.sim.base_url(), "{enabled: true, intervalSeconds: 5}"),
            None => ("http://127.0.0.1:9".to_string(), "{enabled: false}"),
        };
        std::fs::write(
            &config,
            format!(
                r#"github: {{apiUrl: "{api}"}}
repos:
  - {{name: octo/repo, path: "{project}", label: the-loop}}
routing: {{authorizedUsers: [alice]}}
polling: {polling}
sessions:
  harness: claude
  harnesses:
    claude: {{command: "{claude}"}}
  tmux: {{socket: "{socket}", submitDelayMs: 150}}
tui: {{notify: none}}
"#,
                project = home.project.display(),
                claude = claude.display(),
                socket = tmux.socket,
            ),
        )
        .unwrap();
        start_tmux(&tmux, &home, &state, &config);
        let loaded = the_loop::config::load_file(&config).unwrap();
        let paths = StatePaths::new(&state);
        let events = EventLog::open(&paths);
        let mut settings = Settings::new(&loaded.config, Some(config.clone()), &paths).unwrap();
        // The hook Claude runs is the real binary, not this test.
        settings.bin = PathBuf::from(BIN);
        let registry = Registry::new(&paths, events.clone(), Source::Cli);
        let sessions = Arc::new(Sessions::new(
            Arc::new(tmux.tmux()),
            registry,
            events,
            settings,
        ));
        Some(Self {
            model,
            github,
            tmux,
            sessions,
            state,
            config,
            claude,
            home,
        })
    }

    /// The release of the Claude Code under test.
    pub fn version(&self) -> ClaudeVersion {
        ClaudeVersion::of(&self.claude)
    }

    /// Appends `yaml` (top-level keys the config does not have yet) to the operator
    /// config, and gives the in-process sessions the settings it now makes. The hooks
    /// and the CLI read the file themselves.
    pub fn configure(&self, yaml: &str) {
        let mut config = std::fs::read_to_string(&self.config).unwrap();
        config.push_str(yaml);
        std::fs::write(&self.config, config).unwrap();
        let loaded = the_loop::config::load_file(&self.config).unwrap();
        let paths = StatePaths::new(&self.state);
        let mut settings =
            Settings::new(&loaded.config, Some(self.config.clone()), &paths).unwrap();
        settings.bin = PathBuf::from(BIN);
        self.sessions.set_settings(settings);
    }

    /// Runs the real Claude Code under test as if it were release `version`: a stand-in
    /// `claude` answers `--version` with it and runs the real binary for anything else.
    /// A release the-loop has not recorded is how a new user's next upgrade looks.
    pub fn claude_reporting(&self, version: &str) {
        use std::os::unix::fs::PermissionsExt;
        let wrapper = self.home.dir.path().join("claude-as-other-release");
        let script = format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '{version} (Claude Code)'; exit 0; fi\nexec '{}' \"$@\"\n",
            self.claude.display()
        );
        std::fs::write(&wrapper, script).unwrap();
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
        let config = std::fs::read_to_string(&self.config).unwrap();
        let from = format!("claude: {{command: \"{}\"}}", self.claude.display());
        assert!(config.contains(&from), "{config}");
        let to = format!("claude: {{command: \"{}\"}}", wrapper.display());
        std::fs::write(&self.config, config.replace(&from, &to)).unwrap();
        self.configure("");
    }

    /// Sessions start in `mode` (`sessions.permissionMode`).
    pub fn permission_mode(&self, mode: &str) {
        let config = std::fs::read_to_string(&self.config).unwrap();
        let config = config.replacen(
            "sessions:\n",
            &format!("sessions:\n  permissionMode: {mode}\n"),
            1,
        );
        std::fs::write(&self.config, config).unwrap();
        self.configure("");
    }

    /// Starts the session on [`item`] (its boot prompt is the first turn) and waits until
    /// that turn ended.
    pub async fn start(&self) -> SessionRecord {
        let inputs = PromptInputs::manual(&item(), "test");
        let outcome = self
            .sessions
            .start(&item(), &inputs, &Origin::cli())
            .await
            .unwrap();
        let the_loop::session::StartOutcome::Spawned(record) = outcome else {
            panic!("not spawned: {outcome:?}")
        };
        self.wait_events("session.turn_ended", 1).await;
        record
    }

    /// Delivers a comment by `alice` on the item, as the dispatcher does.
    pub async fn deliver(&self, delivery_id: &str, body: &str) -> String {
        let excerpt = serde_json::json!({
            "comment": {"user": {"login": "alice"}, "body": body},
        })
        .to_string();
        let inputs = PromptInputs {
            event: "issue_comment".into(),
            action: "created".into(),
            delivery_id: delivery_id.into(),
            repository: "octo/repo".into(),
            excerpt,
        };
        self.sessions
            .deliver_event(&item(), &inputs)
            .await
            .unwrap_or_else(|e| panic!("delivery failed: {e}"));
        let vars = the_loop::routing::prompt::PromptVars {
            work_item: &item(),
            event: &inputs.event,
            action: &inputs.action,
            repository: &inputs.repository,
            delivery_id: &inputs.delivery_id,
            payload_excerpt: &inputs.excerpt,
        };
        self.sessions.settings().templates.render_event(&vars)
    }

    /// Every event-log record so far.
    pub fn events(&self) -> Vec<Value> {
        the_loop::events::lines::all(&self.state.join("events.jsonl"))
    }

    pub fn events_named(&self, name: &str) -> Vec<Value> {
        the_loop::events::lines::named(&self.state.join("events.jsonl"), name)
    }

    /// Waits until `n` events named `name` are in the log, and returns them.
    pub async fn wait_events(&self, name: &str, n: usize) -> Vec<Value> {
        let what = format!("{n} × {name}");
        self.wait(&what, || {
            let found = self.events_named(name);
            (found.len() >= n).then_some(found)
        })
        .await
    }

    /// Waits until the fake model has had `n` agent-loop requests; on a timeout the
    /// failure shows Claude's pane and the log as well.
    pub async fn wait_agent_requests(&self, n: usize) -> Vec<super::fake_model::Recorded> {
        self.wait(&format!("{n} agent-loop requests"), || {
            let got = self.model.agent_requests();
            (got.len() >= n).then_some(got)
        })
        .await
    }

    /// Polls `check` every 50 ms; on timeout fails showing the pane and the log.
    pub async fn wait<T>(&self, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
        let start = Instant::now();
        loop {
            if let Some(value) = check() {
                return value;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "timed out waiting for {what}; Claude's pane:\n{}\nthe events:\n{:#?}",
                self.screen(),
                self.events()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The session's pane as text.
    pub fn screen(&self) -> String {
        self.screen_of(&item())
    }

    /// `item`'s session's pane as text.
    pub fn screen_of(&self, item: &WorkItemRef) -> String {
        let target = format!("={}:", item.tmux_session_name());
        let out = self.tmux.raw(&["capture-pane", "-p", "-t", &target]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The session's pane with its attributes (`capture-pane -e`), escapes shown: what
    /// the screen reader read, for a failure's message.
    pub fn screen_with_attributes(&self) -> String {
        let target = format!("={}:", item().tmux_session_name());
        let out = self.tmux.raw(&["capture-pane", "-p", "-e", "-t", &target]);
        String::from_utf8_lossy(&out.stdout)
            .escape_debug()
            .to_string()
    }

    /// Waits until Claude's pane shows `needle`.
    pub async fn wait_screen(&self, needle: &str) -> String {
        self.wait(&format!("`{needle}` in Claude's pane"), || {
            let s = self.screen();
            s.contains(needle).then_some(s)
        })
        .await
    }

    /// `the-loop ARGS` against this world's state and config, outside any tmux.
    pub fn cli(&self, args: &[&str]) -> std::process::Output {
        self.command(args).output().unwrap()
    }

    /// [`Self::cli`], not started yet (to run it in the background).
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(BIN);
        command
            .args(args)
            .env("THE_LOOP_HOME", &self.state)
            .env("THE_LOOP_CONFIG", &self.config)
            .env_remove("THE_LOOP_TMUX_SOCKET")
            .env_remove("THE_LOOP_WORK_ITEM")
            .env_remove("GH_TOKEN")
            .env_remove("GITHUB_TOKEN")
            .env_remove("TMUX")
            .env_remove("TMUX_PANE");
        command
    }

    /// The item's row of `sessions list --json`.
    pub fn listed(&self) -> Value {
        let out = self.cli(&["sessions", "list", "--json"]);
        assert!(out.status.success(), "{out:?}");
        let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["ref"] == item().to_string())
            .cloned()
            .unwrap_or_else(|| panic!("{item} not listed: {rows}", item = item()))
    }

    /// Waits until `sessions list --json` shows `state` (from `source`).
    pub async fn wait_listed(&self, state: &str, source: &str) -> Value {
        self.wait(&format!("sessions list to show {state} ({source})"), || {
            let row = self.listed();
            (row["state"] == state && row["stateSource"] == source).then_some(row)
        })
        .await
    }

    /// Runs `the-loop tui` in a new 160×48 session of the world's server.
    pub fn open_screen(&self, name: &str) -> super::tui_world::Screen {
        let script =
            format!("unset TMUX TMUX_PANE; '{BIN}' tui; echo \"EXIT:$?\"; exec sleep 86400");
        let out = self.tmux.raw(&[
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            "160",
            "-y",
            "48",
            "--",
            "sh",
            "-c",
            &script,
        ]);
        assert!(out.status.success(), "{out:?}");
        super::tui_world::Screen::on(&self.tmux.socket, name)
    }
}

/// The token the simulated GitHub requires of the supervisor.
pub const TOKEN: &str = "ghp_claudeworldtoken_0123456789abcdef";

/// The simulated GitHub and the supervisor run against it.
pub struct Supervised {
    pub sim: SimHandle,
    child: Option<Child>,
    runs: u32,
}

impl ClaudeWorld {
    fn supervised_mut(&mut self) -> &mut Supervised {
        self.github
            .as_mut()
            .expect("a world made by ClaudeWorld::supervised")
    }

    /// A comment by `login` on the item, on the simulated GitHub.
    pub fn comment(&self, login: &str, body: &str) -> u64 {
        let github = self.github.as_ref().expect("a supervised world");
        github
            .sim
            .add_comment("octo/repo", item().number, login, body)
            .unwrap()
    }

    /// Starts `the-loop run` against the simulated GitHub; its output goes to files in
    /// the world's directory.
    pub fn start_supervisor(&mut self) {
        let dir = self.home.dir.path().to_path_buf();
        let (state, config) = (self.state.clone(), self.config.clone());
        let github = self.supervised_mut();
        assert!(github.child.is_none(), "a supervisor is already running");
        github.runs += 1;
        let out = std::fs::File::create(dir.join(format!("run{}.out", github.runs))).unwrap();
        let err = std::fs::File::create(dir.join(format!("run{}.err", github.runs))).unwrap();
        let child = Command::new(BIN)
            .arg("run")
            .env("THE_LOOP_HOME", &state)
            .env("THE_LOOP_CONFIG", &config)
            .env("THE_LOOP_GITHUB_API_URL", github.sim.base_url())
            .env("GH_TOKEN", TOKEN)
            .env("THE_LOOP_LOG", "the_loop=debug")
            .env_remove("GITHUB_TOKEN")
            .env_remove("THE_LOOP_TMUX_SOCKET")
            .env_remove("THE_LOOP_WORK_ITEM")
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .expect("spawn the-loop run");
        github.child = Some(child);
    }

    /// Stops the supervisor as an operator would (SIGTERM) and waits for it to exit.
    pub async fn stop_supervisor(&mut self) {
        let mut child = self
            .supervised_mut()
            .child
            .take()
            .expect("a running supervisor");
        let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
        let start = Instant::now();
        while child.try_wait().unwrap().is_none() {
            assert!(start.elapsed() < PATIENCE, "the supervisor did not exit");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The running supervisor's pid.
    pub fn supervisor_pid(&self) -> u32 {
        let github = self.github.as_ref().expect("a supervised world");
        github.child.as_ref().expect("a running supervisor").id()
    }

    /// Waits for `n` poll cycles after those already logged.
    pub async fn wait_cycles(&self, n: usize) {
        let seen = self.events_named("poll.cycle").len();
        self.wait_events("poll.cycle", seen + n).await;
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The server's global environment is what every pane gets: Claude's of §17.6, this
/// world's state root and config, and nothing of the developer's tokens or tmux.
fn start_tmux(
    tmux: &TmuxServer,
    home: &ClaudeHome,
    state: &std::path::Path,
    config: &std::path::Path,
) {
    let mut command = Command::new("tmux");
    command
        .args(["-L", &tmux.socket, "-f", "/dev/null"])
        .args(["new-session", "-d", "-s", "keepalive"])
        .envs(home.env())
        .env("THE_LOOP_HOME", state)
        .env("THE_LOOP_CONFIG", config)
        .env("THE_LOOP_LOG", "the_loop=debug");
    for var in NOT_INHERITED {
        command.env_remove(var);
    }
    assert!(command.status().unwrap().success(), "tmux did not start");
}

impl ClaudeWorld {
    /// The dispatcher over this world's sessions, routing as its config says: events
    /// go through it as the supervisor sends them (lanes, holds, starts).
    pub fn dispatcher(&self) -> the_loop::session::Dispatcher {
        let loaded = the_loop::config::load_file(&self.config).unwrap();
        let paths = StatePaths::new(&self.state);
        the_loop::session::Dispatcher::new(Arc::clone(&self.sessions), &loaded.config, &paths)
            .unwrap()
    }

    /// Ends every process of this world (its tmux server, its panes' process groups);
    /// the ones still running after, which must be none.
    pub fn shut_down(&self) -> Vec<i32> {
        end_world(&self.tmux, self.home.dir.path())
    }
}

impl Drop for ClaudeWorld {
    fn drop(&mut self) {
        end_panes(&self.tmux);
    }
}
