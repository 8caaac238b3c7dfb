//! The end-to-end world: a simulated GitHub, a private tmux server whose sessions run
//! `the-loop fake-agent --ask-trigger …`, sessions started through the session module,
//! the dispatcher, and the binary for `ask` / `reply`.

use super::tmux_server::{BIN, TmuxServer, wait_for};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::Duration;
use tempfile::TempDir;
use the_loop::config;
use the_loop::events::{EventLog, Source};
use the_loop::github::Client;
use the_loop::github::sim::{IssueSpec, SimGithub, SimHandle};
use the_loop::ingress::{Disposition, InboundEvent, Ingest};
use the_loop::operator::{OperatorApi, OperatorSocket, REPLY_PATH};
use the_loop::paths::StatePaths;
use the_loop::server::{self, Limits};
use the_loop::session::{
    Dispatcher, Origin, PromptInputs, Registry, Sessions, Settings, StartOutcome,
};
use the_loop::tmux::{PaneId, RealTmux, Tmux};
use the_loop::work_item::WorkItemRef;

pub const TOKEN: &str = "ghp_askreplytesttoken_0123456789abcdef";
pub const REPO: &str = "octo/repo";
pub const TRIGGER: &str = "ASK-OPERATOR";
/// The operator's account: it posts the tool's comments and is authorized.
pub const OPERATOR: &str = "alice";

pub fn item(n: u64) -> WorkItemRef {
    WorkItemRef::new("octo", "repo", n)
}

pub struct World {
    pub sim: SimHandle,
    pub client: Arc<Client>,
    pub events: EventLog,
    pub sessions: Arc<Sessions>,
    pub dispatcher: Dispatcher,
    pub tmux: RealTmux,
    // Dropped last: kills the tmux server, then removes the files.
    pub server: TmuxServer,
    pub dir: TempDir,
}

impl World {
    /// Issues #15–#17 on the simulated GitHub; nothing started yet.
    pub async fn new() -> Self {
        let sim = SimGithub::start().await.unwrap();
        for n in 15..=17 {
            let spec = IssueSpec::new(&format!("Issue {n}"))
                .number(n)
                .author("carol")
                .labels(&["the-loop"]);
            sim.add_issue(REPO, spec).unwrap();
        }
        sim.set_bot_login(OPERATOR);
        sim.require_token(Some(TOKEN));

        let dir = tempfile::tempdir().unwrap();
        let server = TmuxServer::new();
        let work = dir.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        let config_path = dir.path().join("config.yaml");
        let yaml = format!(
            r#"github: {{apiUrl: "{api}"}}
repos:
  - {{name: {REPO}, path: "{work}", label: the-loop}}
routing: {{authorizedUsers: [{OPERATOR}]}}
sessions:
  harness: fake
  # No supervisor runs in this world, so the agent's `ask` posts with its own token,
  # which sessions only get when the operator passes it (SPEC §14.4).
  passEnv: [GH_TOKEN]
  harnesses:
    fake:
      command: "{BIN}"
      args: [fake-agent, --log, "{log}", --ask-trigger, {TRIGGER}, "--", "{{prompt}}"]
  tmux: {{socket: "{socket}", submitDelayMs: 50, probeTimeoutSeconds: 10}}
"#,
            api = sim.base_url(),
            work = work.display(),
            log = dir.path().join("agent.jsonl").display(),
            socket = server.socket,
        );
        std::fs::write(&config_path, yaml).unwrap();
        let config = config::load_file(&config_path).unwrap().config;

        // The server's environment is what every session inherits: the operator's
        // token is there, as in a server started from the operator's shell.
        let started = Command::new("tmux")
            .args(["-L", &server.socket, "new-session", "-d", "-s", "keepalive"])
            .env("GH_TOKEN", TOKEN)
            .env_remove("GITHUB_TOKEN")
            .env_remove("THE_LOOP_GITHUB_API_URL")
            .env_remove("THE_LOOP_TMUX_SOCKET")
            .env("THE_LOOP_LOG", "debug")
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .status()
            .unwrap();
        assert!(started.success(), "tmux server did not start");

        let paths = StatePaths::new(dir.path().join("state"));
        let events = EventLog::open(&paths);
        let registry = Registry::new(&paths, events.clone(), Source::Cli);
        let settings = Settings::new(&config, Some(config_path), &paths).unwrap();
        // With `passEnv: [GH_TOKEN]` the session keeps the server's token; without it,
        // the-loop would set it empty in every session (SPEC §14.4).
        let tmux = server.tmux().with_child_env(config.child_env());
        let sessions = Arc::new(Sessions::new(
            Arc::new(tmux.clone()),
            registry,
            events.clone(),
            settings,
        ));
        let dispatcher = Dispatcher::new(Arc::clone(&sessions), &config, &paths).unwrap();
        let client = Client::builder(&sim.base_url())
            .token(Some(TOKEN))
            .build()
            .unwrap();
        Self {
            sim,
            client: Arc::new(client),
            events,
            sessions,
            dispatcher,
            tmux,
            server,
            dir,
        }
    }

    pub fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    pub fn agent_log(&self) -> PathBuf {
        self.dir.path().join("agent.jsonl")
    }

    /// Starts a session for issue `n` through the session module and waits until the
    /// fake agent is ready for pastes.
    pub async fn start_session(&self, n: u64) -> PaneId {
        let item = item(n);
        let inputs = PromptInputs::manual(&item, "test");
        let outcome = self
            .sessions
            .start(&item, &inputs, &Origin::cli())
            .await
            .unwrap();
        let StartOutcome::Spawned(record) = outcome else {
            panic!("{outcome:?}");
        };
        let pane = PaneId::parse(record.pane_id.as_deref().unwrap()).unwrap();
        self.wait_screen(&pane, "fake-agent ready").await;
        pane
    }

    pub async fn wait_screen(&self, pane: &PaneId, text: &str) -> String {
        wait_for(
            &format!("`{text}` on the screen"),
            Duration::from_secs(20),
            || async {
                let screen = self.tmux.capture_pane(pane, false).await.ok()?;
                screen.contains(text).then_some(screen)
            },
        )
        .await
    }

    /// `login` comments on issue `n` on GitHub; the comment, as GitHub returns it.
    pub async fn comment(&self, n: u64, login: &str, body: &str) -> Value {
        self.sim.add_comment(REPO, n, login, body).unwrap();
        self.last_comment(n).await
    }

    /// The newest comment on issue `n`, read through the API as the poller reads it.
    pub async fn last_comment(&self, n: u64) -> Value {
        let comments = self.client.list_item_comments(REPO, n).await.unwrap();
        comments.last().cloned().expect("a comment")
    }

    /// Feeds a comment to the dispatcher shaped as the poller shapes it (an
    /// `issue_comment` `created`, delivery `poll-comment-<id>`).
    pub async fn ingest(&self, n: u64, comment: &Value) -> Disposition {
        let issue = self.client.get_issue(REPO, n).await.unwrap();
        let payload = json!({
            "action": "created",
            "comment": comment,
            "issue": issue,
            "repository": {"full_name": REPO},
            "sender": comment["user"],
        });
        let id = comment["id"].as_u64().unwrap();
        let event = InboundEvent {
            source: Source::Poll,
            gh_event: "issue_comment".into(),
            action: "created".into(),
            delivery_id: format!("poll-comment-{id}"),
            payload,
        };
        self.dispatcher.ingest(event).await
    }

    /// Every event-log line so far.
    pub fn events(&self) -> Vec<Value> {
        the_loop::events::lines::all(self.events.path())
    }

    pub fn events_named(&self, name: &str) -> Vec<Value> {
        the_loop::events::lines::named(self.events.path(), name)
    }

    /// Waits until `name` has been logged `n` times.
    pub async fn wait_events(&self, name: &str, n: usize) -> Vec<Value> {
        wait_for(
            &format!("{n} × {name}"),
            Duration::from_secs(30),
            || async {
                let found = self.events_named(name);
                (found.len() >= n).then_some(found)
            },
        )
        .await
    }

    /// Everything the product wrote to its log files (`<state>/logs`).
    pub fn log_files_text(&self) -> String {
        let mut text = String::new();
        if let Ok(entries) = std::fs::read_dir(self.state().join("logs")) {
            for entry in entries.flatten() {
                text.push_str(&std::fs::read_to_string(entry.path()).unwrap_or_default());
            }
        }
        text
    }

    /// Runs the binary as the operator would, off the runtime's threads (the simulator
    /// must keep serving), with `stdin` piped in when given.
    pub async fn run(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .env("THE_LOOP_HOME", self.state())
            .env("THE_LOOP_CONFIG", self.dir.path().join("config.yaml"))
            .env("GH_TOKEN", TOKEN)
            .env_remove("GITHUB_TOKEN")
            .env_remove("THE_LOOP_GITHUB_API_URL")
            .env_remove("THE_LOOP_TMUX_SOCKET")
            .env_remove("THE_LOOP_WORK_ITEM")
            // Verbose, so the log files have something to search for leaks.
            .env("THE_LOOP_LOG", "debug")
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let input = stdin.map(str::to_string);
        tokio::task::spawn_blocking(move || {
            let mut child = cmd.spawn().unwrap();
            if let (Some(text), Some(mut pipe)) = (input, child.stdin.take()) {
                std::io::Write::write_all(&mut pipe, text.as_bytes()).unwrap();
            }
            child.wait_with_output().unwrap()
        })
        .await
        .unwrap()
    }
}

impl World {
    /// The operator routes as a supervisor serves them, on a socket of their own — not
    /// `<state>/operator.sock`, so the CLI runs of a test stay in-process.
    pub async fn serve_replies(&self) -> OperatorSocket {
        let api = Arc::new(OperatorApi::new(
            Arc::clone(&self.sessions),
            Arc::clone(&self.client),
            self.events.clone(),
        ));
        let app = server::guarded(api.router(), &[], self.events.clone());
        let path = self.dir.path().join("api/operator.sock");
        OperatorSocket::bind(&path, app, Limits::default()).unwrap()
    }
}

/// An HTTP client for the operator socket.
pub fn http(socket: &OperatorSocket) -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .unix_socket(socket.path())
        .build()
        .unwrap()
}

/// The reply route's URL (the host is ignored over a Unix socket).
pub fn reply_url() -> String {
    format!("http://localhost{REPLY_PATH}")
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}
