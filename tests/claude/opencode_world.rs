//! A hermetic world for the real opencode (issue 44): a private tmux server, opencode
//! 1.18.33 under a private `HOME` and XDG dirs with everything that would leave loopback
//! off (a proxy on loopback that is not there), the tests' fake of the Chat Completions
//! API as its only provider, and the-loop's sessions built as the supervisor builds
//! them, with the supervisor's follower of opencode's events running
//! (`session::opencode::watch::follow_all`). tmux's own hooks count every
//! `paste-buffer` and `send-keys` on the server, so "nothing typed" is a count.
//!
//! Dropping the world kills the tmux server, every pane's process group, and every
//! process still running from its private directory; the tests check nothing is left.

use crate::support::claude::npm_bin;
use crate::support::fake_chat::{ChatRequest, FakeChat};
use crate::support::processes::end_world;
use crate::support::tmux_server::{BIN, KeyCounter, TmuxServer};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};
use the_loop::channel::ChannelRecord;
use the_loop::events::{EventLog, Source};
use the_loop::ingress::{Disposition, InboundEvent, Ingest};
use the_loop::paths::StatePaths;
use the_loop::session::hooks::ReportedState;
use the_loop::session::{
    Delivered, DeliveryFailure, Dispatcher, Origin, PromptInputs, Registry, Sessions, Settings,
    StartOutcome,
};
use the_loop::work_item::WorkItemRef;

pub(crate) const PATIENCE: Duration = Duration::from_secs(120);

/// The fixtures' issue (tests/fixtures/webhook/issue_comment.created*.json).
pub(crate) fn item() -> WorkItemRef {
    WorkItemRef::new("octo", "repo", 15)
}

pub(crate) struct OpencodeWorld {
    pub(crate) model: FakeChat,
    pub(crate) tmux: TmuxServer,
    pub(crate) sessions: Arc<Sessions>,
    pub(crate) dispatcher: Dispatcher,
    pub(crate) state: PathBuf,
    config: PathBuf,
    pub(crate) project: PathBuf,
    stop: tokio::sync::watch::Sender<bool>,
    counter: KeyCounter,
    // Last: the directory holding them all.
    dir: tempfile::TempDir,
}

impl OpencodeWorld {
    pub(crate) async fn new() -> Option<Self> {
        Self::build(true).await
    }

    /// A world where nothing follows opencode's events (no supervisor): the record moves
    /// only when something reads the server (`sessions list`, an answer).
    pub(crate) async fn unfollowed() -> Option<Self> {
        Self::build(false).await
    }

    async fn build(follow: bool) -> Option<Self> {
        let opencode = npm_bin("opencode", "THE_LOOP_OPENCODE_BIN", "opencode")?;
        let model = FakeChat::start().await;
        let dir = tempfile::tempdir().unwrap();
        let (home, project) = (dir.path().join("home"), dir.path().join("project"));
        let (state, config) = (dir.path().join("state"), dir.path().join("config.yaml"));
        for d in [&home, &project, &dir.path().join("tmp")] {
            std::fs::create_dir_all(d).unwrap();
        }
        let tmux = TmuxServer::new();
        std::fs::write(
            &config,
            format!(
                r#"github: {{apiUrl: "http://127.0.0.1:9"}}
repos:
  - {{name: octo/repo, path: "{project}", label: the-loop}}
routing: {{authorizedUsers: [alice]}}
polling: {{enabled: false}}
sessions:
  harness: opencode
  harnesses:
    opencode: {{command: "{opencode}"}}
  opencode:
    model: fake/fake-model
    providers:
      - {{id: fake, baseUrl: "{base_url}", models: [fake-model]}}
  tmux: {{socket: "{socket}", submitDelayMs: 150}}
tui: {{notify: none}}
"#,
                project = project.display(),
                opencode = opencode.display(),
                base_url = model.base_url,
                socket = tmux.socket,
            ),
        )
        .unwrap();
        let mut command = Command::new("tmux");
        command
            .args(["-L", &tmux.socket, "-f", "/dev/null"])
            .args(["new-session", "-d", "-s", "keepalive"])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap())
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env("XDG_CACHE_HOME", home.join(".cache"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .env("TMPDIR", dir.path().join("tmp"))
            .env("TERM", "xterm-256color")
            // What opencode would fetch from the internet goes to a proxy on loopback
            // that is not there: no name is looked up, nothing leaves.
            .env("HTTPS_PROXY", "http://127.0.0.1:9")
            .env("HTTP_PROXY", "http://127.0.0.1:9")
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("THE_LOOP_HOME", &state)
            .env("THE_LOOP_CONFIG", &config);
        assert!(command.status().unwrap().success(), "tmux did not start");
        let counter = KeyCounter::install(&tmux, dir.path());
        let loaded = the_loop::config::load_file(&config).unwrap();
        let paths = StatePaths::new(&state);
        let events = EventLog::open(&paths);
        let mut settings = Settings::new(&loaded.config, Some(config.clone()), &paths).unwrap();
        // The password's hand-off (`exec-env`) is the real binary, not this test.
        settings.bin = PathBuf::from(BIN);
        let registry = Registry::new(&paths, events.clone(), Source::Cli);
        let sessions = Arc::new(Sessions::new(
            Arc::new(tmux.tmux()),
            registry,
            events,
            settings,
        ));
        let dispatcher = Dispatcher::new(Arc::clone(&sessions), &loaded.config, &paths).unwrap();
        let (stop, stopped) = tokio::sync::watch::channel(false);
        if follow {
            tokio::spawn(the_loop::session::opencode::watch::follow_all(
                Arc::clone(&sessions),
                stopped,
            ));
        }
        Some(Self {
            model,
            tmux,
            sessions,
            dispatcher,
            state,
            config,
            project,
            stop,
            counter,
            dir,
        })
    }

    /// Starts the session; its boot prompt goes through the server.
    pub(crate) async fn spawn(&self) -> Duration {
        let inputs = PromptInputs::manual(&item(), "test");
        let started = Instant::now();
        let outcome = self
            .sessions
            .start(&item(), &inputs, &Origin::cli())
            .await
            .unwrap();
        let took = started.elapsed();
        assert!(matches!(outcome, StartOutcome::Spawned(_)), "{outcome:?}");
        took
    }

    /// Starts the session and waits for its boot turn to end.
    pub(crate) async fn start(&self) -> Duration {
        let took = self.spawn().await;
        self.wait_events("session.turn_ended", 1).await;
        took
    }

    /// Delivers a comment by `alice` with `body`, as the dispatcher does, once.
    pub(crate) async fn deliver(&self, id: &str, body: &str) -> Result<Delivered, DeliveryFailure> {
        let excerpt = serde_json::json!({
            "comment": {"user": {"login": "alice"}, "body": body},
        })
        .to_string();
        let inputs = PromptInputs {
            event: "issue_comment".into(),
            action: "created".into(),
            delivery_id: id.into(),
            repository: "octo/repo".into(),
            excerpt,
        };
        self.sessions.deliver_event(&item(), &inputs).await
    }

    /// Delivers again while held, as the held lane does, until it goes out.
    pub(crate) async fn deliver_once_released(&self, id: &str, body: &str) -> Delivered {
        let start = Instant::now();
        loop {
            match self.deliver(id, body).await {
                Ok(delivered) => return delivered,
                Err(DeliveryFailure::Held(_)) => {
                    assert!(start.elapsed() < PATIENCE, "still held:\n{}", self.screen());
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(other) => panic!("delivery failed: {other}\n{}", self.screen()),
            }
        }
    }

    /// Feeds the dispatcher a comment on the issue as the poller shapes it: by `alice`
    /// (allowed to steer) or, `stranger`, by `mallory` (not); `id` its comment id.
    pub(crate) async fn ingest_comment(&self, stranger: bool, id: u64, body: &str) -> Disposition {
        let fixture = if stranger {
            "issue_comment.created.unauthorized.json"
        } else {
            "issue_comment.created.json"
        };
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/webhook")
            .join(fixture);
        let mut payload: Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        payload["comment"]["body"] = body.into();
        payload["comment"]["id"] = id.into();
        self.dispatcher
            .ingest(InboundEvent {
                source: Source::Poll,
                gh_event: "issue_comment".into(),
                action: "created".into(),
                delivery_id: format!("poll-comment-{id}"),
                payload,
            })
            .await
    }

    /// The session's server, asked with its password, and its opencode session.
    pub(crate) fn server(&self) -> (the_loop::channel::opencode::Server, String) {
        let channel = self.record().channel.unwrap();
        the_loop::session::opencode::server_of(&channel).unwrap()
    }

    pub(crate) fn record(&self) -> the_loop::session::SessionRecord {
        self.sessions.registry().get(&item()).unwrap().unwrap()
    }

    /// The recorded channel: port, opencode session, password file, server pane.
    pub(crate) fn channel(&self) -> (u16, String, PathBuf, String) {
        match self.record().channel {
            Some(ChannelRecord::OpencodeServer {
                port,
                session,
                password_file,
                server_pane,
            }) => (port, session, password_file, server_pane),
            other => panic!("no opencode channel: {other:?}"),
        }
    }

    pub(crate) fn reported(&self) -> Option<ReportedState> {
        self.record().reported.map(|r| r.state)
    }

    pub(crate) fn events_named(&self, name: &str) -> Vec<Value> {
        the_loop::events::lines::named(&self.state.join("events.jsonl"), name)
    }

    pub(crate) async fn wait_events(&self, name: &str, n: usize) -> Vec<Value> {
        self.wait(&format!("{n} × {name}"), || {
            let found = self.events_named(name);
            (found.len() >= n).then_some(found)
        })
        .await
    }

    pub(crate) async fn wait<T>(&self, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
        let start = Instant::now();
        loop {
            if let Some(value) = check() {
                return value;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "timed out waiting for {what}; opencode's pane:\n{}\nthe model got: {:#?}\ntitles asked about: {:#?}",
                self.screen(),
                self.model.fresh(),
                self.model.title_texts()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// [`Self::wait`] for a check that must await.
    pub(crate) async fn wait_async<T, F: std::future::Future<Output = Option<T>>>(
        &self,
        what: &str,
        mut check: impl FnMut() -> F,
    ) -> T {
        let start = Instant::now();
        loop {
            if let Some(value) = check().await {
                return value;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "timed out waiting for {what}; opencode's pane:\n{}",
                self.screen()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until the model got a request with `needle`; that request.
    pub(crate) async fn reached_model(&self, needle: &str) -> ChatRequest {
        self.wait(&format!("`{needle}` to reach the model"), || {
            self.model.requests_with(needle).first().cloned()
        })
        .await
    }

    /// Waits until the pane shows the model's answer to `request`: its turn is there.
    pub(crate) async fn shown(&self, request: &ChatRequest) {
        self.wait_screen(&format!("Answer {}.", request.id)).await;
    }

    pub(crate) async fn turn_ended(&self) {
        self.wait("opencode's turn to end", || {
            (self.reported() == Some(ReportedState::Idle)).then_some(())
        })
        .await;
    }

    pub(crate) fn target() -> String {
        format!("={}:", item().tmux_session_name())
    }

    pub(crate) fn screen(&self) -> String {
        let out = self
            .tmux
            .raw(&["capture-pane", "-p", "-t", &Self::target()]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub(crate) async fn wait_screen(&self, needle: &str) {
        self.wait(&format!("`{needle}` in opencode's pane"), || {
            self.screen().contains(needle).then_some(())
        })
        .await;
    }

    pub(crate) fn cli(&self, args: &[&str]) -> std::process::Output {
        Command::new(BIN)
            .args(args)
            .env("THE_LOOP_HOME", &self.state)
            .env("THE_LOOP_CONFIG", &self.config)
            .env_remove("THE_LOOP_TMUX_SOCKET")
            .env_remove("THE_LOOP_WORK_ITEM")
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .output()
            .unwrap()
    }

    pub(crate) fn ran(&self) -> bool {
        self.project.join("ran.txt").exists()
    }

    /// `paste-buffer`s on the tmux server so far.
    pub(crate) fn pastes(&self) -> usize {
        self.counter.pastes()
    }

    /// `send-keys` on the tmux server so far.
    pub(crate) fn keys(&self) -> usize {
        self.counter.keys()
    }

    /// Ends every process this world started and returns the ones still running from
    /// its private directory (none, when the clean-up works).
    pub(crate) fn shut_down(&self) -> Vec<i32> {
        let _ = self.stop.send(true);
        end_world(&self.tmux, self.dir.path())
    }
}

impl Drop for OpencodeWorld {
    fn drop(&mut self) {
        self.shut_down();
        let _ = std::fs::remove_file(self.tmux.socket_file());
    }
}

/// Every process's argv on this machine, joined, for what must never show there.
pub(crate) fn all_argv() -> String {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return String::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .map(|pid| {
            let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&raw).replace('\0', " ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}
