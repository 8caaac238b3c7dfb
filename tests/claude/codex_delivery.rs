//! Safe delivery for codex (issue 31, SPEC §18 for codex) against the real Codex 0.171.0
//! in real tmux and the tests' fake of the Responses API, which asks for a shell command
//! outside the sandbox when told to (`RUN[<command>]`), so codex shows its approval
//! request: a comment during the request is held and the command does not run; after
//! `sessions approve` it runs and the comment reaches the model exactly once. A draft
//! the operator typed goes out alone, then the comment on its own.
//!
//! Codex runs under a private `HOME`/`CODEX_HOME` with everything that would leave
//! loopback off (as in `codex_usage.rs`). Its TUI starts a background app-server daemon
//! (from `CODEX_HOME/packages`) in a session of its own that outlives the pane: dropping
//! the world kills the tmux server, every pane's process group, and every process
//! running from the private home, and the tests check nothing is left.
//!
//! The tests wait with generous limits and assert what happened, never how fast.

use crate::support::claude::npm_bin;
use crate::support::fake_openai::{FakeOpenAi, codex_config};
use crate::support::processes::end_world;
use crate::support::tmux_server::{BIN, TmuxServer};
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};
use the_loop::events::{EventLog, Source};
use the_loop::paths::StatePaths;
use the_loop::session::hooks::ReportedState;
use the_loop::session::{
    DeliveryFailure, Origin, PromptInputs, Registry, Sessions, Settings, StartOutcome,
};
use the_loop::work_item::WorkItemRef;

const PATIENCE: Duration = Duration::from_secs(90);
/// Codex 0.171.0's approval request.
const APPROVAL: &str = "Would you like to run the following command?";

pub(crate) fn item() -> WorkItemRef {
    WorkItemRef::new("octo", "repo", 31)
}

pub(crate) struct CodexWorld {
    pub(crate) model: FakeOpenAi,
    pub(crate) tmux: TmuxServer,
    pub(crate) sessions: Sessions,
    pub(crate) state: PathBuf,
    config: PathBuf,
    pub(crate) project: PathBuf,
    // Last: the directory holding them all.
    _dir: tempfile::TempDir,
}

impl CodexWorld {
    pub(crate) async fn new() -> Option<Self> {
        Self::reporting(None).await
    }

    /// A world whose codex answers `--version` as `release` (a wrapper around the real
    /// one) when given: a release nobody recorded.
    async fn reporting(release: Option<&str>) -> Option<Self> {
        Self::build(release, "paste", false).await
    }

    /// A world for limits (issue 43): codex does not retry a failed request itself
    /// (`request_max_retries`, `stream_max_retries` 0, as `CLAUDE_CODE_MAX_RETRIES=0`
    /// for Claude Code) and the-loop backs off 4 s; the session has its app server, as by
    /// default.
    pub(crate) async fn limited() -> Option<Self> {
        Self::build(None, "app-server", true).await
    }

    /// A world whose codex sessions get an app server of their own (issue 41).
    pub(crate) async fn with_app_server() -> Option<Self> {
        Self::build(None, "app-server", false).await
    }

    async fn build(release: Option<&str>, channel: &str, limits: bool) -> Option<Self> {
        let codex = npm_bin("codex", "THE_LOOP_CODEX_BIN", "Codex")?;
        let model = FakeOpenAi::start().await;
        let dir = tempfile::tempdir().unwrap();
        let (home, project) = (dir.path().join("home"), dir.path().join("project"));
        let (state, config) = (dir.path().join("state"), dir.path().join("config.yaml"));
        for d in [&home.join(".codex"), &project, &dir.path().join("tmp")] {
            std::fs::create_dir_all(d).unwrap();
        }
        let codex = match release {
            None => codex,
            Some(release) => {
                use std::os::unix::fs::PermissionsExt;
                let wrapper = dir.path().join("codex-as-other-release");
                let script = format!(
                    "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'codex-cli {release}'; exit 0; fi\nexec '{}' \"$@\"\n",
                    codex.display()
                );
                std::fs::write(&wrapper, script).unwrap();
                std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
                wrapper
            }
        };
        let mut codex_toml = codex_config(&model.base_url, &project);
        let mut limited = "";
        if limits {
            let provider = "wire_api = \"responses\"\n";
            codex_toml = codex_toml.replacen(
                provider,
                &format!("{provider}request_max_retries = 0\nstream_max_retries = 0\n"),
                1,
            );
            // A full window brings up codex's "Approaching rate limits" model-switch
            // menu, which holds deliveries (not-ready) until someone answers it.
            codex_toml.push_str("\n[notice]\nhide_rate_limit_model_nudge = true\n");
            limited = "  limitBackoffSeconds: 4\n  limitBackoffMaxSeconds: 4\n  limitResetMarginSeconds: 1\n";
        }
        std::fs::write(home.join(".codex/config.toml"), codex_toml).unwrap();
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
  harness: codex
  codexChannel: {channel}
{limited}  harnesses:
    codex: {{command: "{codex}"}}
  tmux: {{socket: "{socket}", submitDelayMs: 150}}
tui: {{notify: none}}
"#,
                project = project.display(),
                codex = codex.display(),
                channel = channel,
                limited = limited,
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
            .env("CODEX_HOME", home.join(".codex"))
            .env("TMPDIR", dir.path().join("tmp"))
            .env("TERM", "xterm-256color")
            // What codex would fetch from the internet (its announcement tip) goes to a
            // proxy on loopback that is not there: no name is looked up, nothing leaves.
            .env("HTTPS_PROXY", "http://127.0.0.1:9")
            .env("HTTP_PROXY", "http://127.0.0.1:9")
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("THE_LOOP_HOME", &state)
            .env("THE_LOOP_CONFIG", &config);
        assert!(command.status().unwrap().success(), "tmux did not start");
        let loaded = the_loop::config::load_file(&config).unwrap();
        let paths = StatePaths::new(&state);
        let events = EventLog::open(&paths);
        let mut settings = Settings::new(&loaded.config, Some(config.clone()), &paths).unwrap();
        // The hook codex runs is the real binary, not this test.
        settings.bin = PathBuf::from(BIN);
        let registry = Registry::new(&paths, events.clone(), Source::Cli);
        let sessions = Sessions::new(Arc::new(tmux.tmux()), registry, events, settings);
        Some(Self {
            model,
            tmux,
            sessions,
            state,
            config,
            project,
            _dir: dir,
        })
    }

    /// Starts the session (its boot prompt is the first turn) and waits for its end.
    pub(crate) async fn start(&self) {
        self.spawn().await;
        self.wait_events("session.turn_ended", 1).await;
    }

    /// Starts the session, its boot prompt the first turn.
    pub(crate) async fn spawn(&self) {
        let inputs = PromptInputs::manual(&item(), "test");
        let outcome = self
            .sessions
            .start(&item(), &inputs, &Origin::cli())
            .await
            .unwrap();
        assert!(matches!(outcome, StartOutcome::Spawned(_)), "{outcome:?}");
    }

    /// Delivers a comment by `alice` with `body`, as the dispatcher does, once.
    pub(crate) async fn deliver(&self, id: &str, body: &str) -> Result<(), DeliveryFailure> {
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
        self.sessions
            .deliver_event(&item(), &inputs)
            .await
            .map(|_| ())
    }

    /// Delivers again while held, as the held lane does, until it goes out.
    pub(crate) async fn deliver_once_released(&self, id: &str, body: &str) {
        let start = Instant::now();
        loop {
            match self.deliver(id, body).await {
                Ok(()) => return,
                Err(DeliveryFailure::Held(_)) => {
                    assert!(start.elapsed() < PATIENCE, "still held:\n{}", self.screen());
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                Err(other) => panic!("delivery failed: {other}\n{}", self.screen()),
            }
        }
    }

    /// Delivers once released, waits for the model to get `needle`, then a little
    /// longer (a second copy would have come by then).
    pub(crate) async fn deliver_until_seen(&self, id: &str, body: &str, needle: &str) {
        self.deliver_once_released(id, body).await;
        self.wait("the comment to reach the model", || {
            (!self.model.requests_with(needle).is_empty()).then_some(())
        })
        .await;
        tokio::time::sleep(Duration::from_secs(2)).await;
    }

    /// The operator approves the pending request (`sessions approve`); the command runs,
    /// then the held comment `body` goes out, reaching the model exactly once after the
    /// turn ends, and the request is resolved as approved. How long from the approval
    /// to the delivery.
    async fn approve_then_deliver_once(&self, id: &str, body: &str) -> Duration {
        let out = self.cli(&["sessions", "approve", &item().to_string()]);
        assert!(out.status.success(), "{out:?}");
        let approved = Instant::now();
        self.wait("the approved command to run", || self.ran().then_some(()))
            .await;
        self.deliver_once_released(id, body).await;
        let delivered = approved.elapsed();
        let needle = body.split(':').next().unwrap_or(body);
        self.wait("the comment to reach the model", || {
            (!self.model.requests_with(needle).is_empty()).then_some(())
        })
        .await;
        self.wait("codex's turn to end", || {
            (self.reported() == Some(ReportedState::Idle)).then_some(())
        })
        .await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(self.model.requests_with(needle).len(), 1);
        let resolved = self.events_named("session.permission_resolved");
        assert_eq!(resolved.len(), 1, "{resolved:#?}");
        assert_eq!(resolved[0]["decision"], "approved");
        delivered
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
                "timed out waiting for {what}; codex's pane:\n{}\nthe model got: {:#?}",
                self.screen(),
                self.model.fresh()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
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
        self.wait(&format!("`{needle}` in codex's pane"), || {
            self.screen().contains(needle).then_some(())
        })
        .await;
    }

    pub(crate) fn reported(&self) -> Option<ReportedState> {
        let record = self.sessions.registry().get(&item()).ok()??;
        record.reported.map(|r| r.state)
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

    /// Ends every process this world started and returns the ones still running from
    /// its private directory (none, when the clean-up works).
    pub(crate) fn shut_down(&self) -> Vec<i32> {
        end_world(&self.tmux, self._dir.path())
    }
}

impl Drop for CodexWorld {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// A comment that arrives while codex waits on its approval request does not answer
/// it; `sessions approve` does, the command runs, and the comment follows, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comment_during_codexs_approval_request_waits_for_the_operator() {
    let Some(world) = CodexWorld::new().await else {
        return;
    };
    world.start().await;
    world
        .deliver("d-1", "Run the check, please: RUN[touch ran.txt]")
        .await
        .unwrap();
    world.wait_screen(APPROVAL).await;
    world
        .wait("the hook's awaiting-permission", || {
            (world.reported() == Some(ReportedState::AwaitingPermission)).then_some(())
        })
        .await;
    let asked = world.events_named("session.permission_requested");
    assert_eq!(asked.len(), 1, "{asked:#?}");
    assert_eq!(asked[0]["summary"], "touch ran.txt");

    let held = world
        .deliver("d-2", "KINGFISHER: please also bump the cap to 5.")
        .await;
    assert!(
        matches!(&held, Err(DeliveryFailure::Held(h)) if h.reason.as_str() == "permission-dialog"),
        "{held:?}"
    );
    // Give a wrong Enter time to act before judging.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!world.ran(), "the approval was answered by a paste");
    assert!(world.model.requests_with("KINGFISHER").is_empty());
    assert!(world.screen().contains(APPROVAL), "{}", world.screen());

    let delivered = world
        .approve_then_deliver_once("d-2", "KINGFISHER: please also bump the cap to 5.")
        .await;
    eprintln!("figure: approved → comment delivered in {delivered:?} (codex 0.171.0)");
    assert_eq!(world.shut_down(), Vec::<i32>::new(), "processes left");
}

/// Codex titles a new session on the side, with its own thread, and runs `notify` for
/// that thread's turn (issue 41). Answered after the boot turn's command call, that
/// notice lands while the approval request stands: it names another thread, so it
/// neither resolves the request nor ends the session's turn. The row stays
/// awaiting-permission, a comment waits, `sessions approve` runs the command, and the
/// comment reaches the model once, afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_title_threads_notice_moves_nothing_of_the_session() {
    let Some(world) = CodexWorld::new().await else {
        return;
    };
    world.model.run_first("touch ran.txt");
    world
        .model
        .titles_after_the_call(Duration::from_millis(1500));
    world.spawn().await;
    world.wait_screen(APPROVAL).await;
    world
        .wait("the hook's awaiting-permission", || {
            (world.reported() == Some(ReportedState::AwaitingPermission)).then_some(())
        })
        .await;
    world
        .wait("the title to be answered", || {
            world.model.answered().iter().any(|a| a.title).then_some(())
        })
        .await;
    // Give its notice time to land and be recorded.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        world.reported(),
        Some(ReportedState::AwaitingPermission),
        "{:#?}",
        world.events_named("session.permission_resolved")
    );
    assert!(world.events_named("session.permission_resolved").is_empty());
    assert!(world.events_named("session.turn_ended").is_empty());
    // The command needed escalation, and the-loop's default policy asks for it: the
    // row says which.
    let out = world.cli(&["sessions", "list", "--json"]);
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        rows[0]["codexPolicy"],
        serde_json::json!({"approvalPolicy": "on-request", "sandbox": "workspace-write"}),
        "{rows:#}"
    );
    assert_eq!(rows[0]["state"], "awaiting-permission", "{rows:#}");
    let held = world.deliver("d-2", "KINGFISHER: and bump the cap.").await;
    assert!(
        matches!(&held, Err(DeliveryFailure::Held(h)) if h.reason.as_str() == "permission-dialog"),
        "{held:?}"
    );
    world
        .approve_then_deliver_once("d-2", "KINGFISHER: and bump the cap.")
        .await;
    assert_eq!(world.shut_down(), Vec::<i32>::new(), "processes left");
}

/// A codex release nobody recorded (issue 40): its hooks' turn end and its readable
/// composer agree, so a comment goes out as on 0.171.0 — no hand release — once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unrecorded_codex_release_is_delivered_on_agreement() {
    let Some(world) = CodexWorld::reporting(Some("0.171.999")).await else {
        return;
    };
    world.start().await;
    world
        .deliver_once_released("d-1", "HERON: one more thing.")
        .await;
    world
        .wait("the comment to reach the model", || {
            (!world.model.requests_with("HERON").is_empty()).then_some(())
        })
        .await;
    world
        .wait("codex's turn to end", || {
            (world.reported() == Some(ReportedState::Idle)).then_some(())
        })
        .await;
    let record = world.sessions.registry().get(&item()).unwrap().unwrap();
    assert_eq!(record.harness_version.as_deref(), Some("0.171.999"));
    let read = world.sessions.client_reading(&record).unwrap();
    assert!(read.contains("seen live: idle ✓"), "{read}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(world.model.requests_with("HERON").len(), 1);
    let record = world.sessions.registry().get(&item()).unwrap().unwrap();
    assert!(record.hold.unread.is_none(), "{:?}", record.hold);
    assert_eq!(world.shut_down(), Vec::<i32>::new(), "processes left");
}

/// A draft the operator typed is not sent with a comment: the comment waits, the draft
/// goes out alone when the operator sends it, then the comment on its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_in_codexs_composer_goes_out_alone_then_the_comment() {
    let Some(world) = CodexWorld::new().await else {
        return;
    };
    world.start().await;
    let target = CodexWorld::target();
    let draft = "DRAFT: my own words";
    world.tmux.raw(&["send-keys", "-t", &target, "-l", draft]);
    world.wait_screen(draft).await;

    let held = world.deliver("d-1", "HERON: five retries.").await;
    assert!(
        matches!(&held, Err(DeliveryFailure::Held(h)) if h.reason.as_str() == "operator-draft"),
        "{held:?}"
    );
    // Keys typed in a burst are a paste to codex: the Enter goes on its own.
    tokio::time::sleep(Duration::from_secs(1)).await;
    world.tmux.raw(&["send-keys", "-t", &target, "Enter"]);
    world
        .wait("the draft to reach the model", || {
            (!world.model.requests_with(draft).is_empty()).then_some(())
        })
        .await;
    world
        .deliver_until_seen("d-1", "HERON: five retries.", "HERON")
        .await;
    let drafts = world.model.requests_with(draft);
    let comments = world.model.requests_with("HERON");
    assert_eq!(drafts.len(), 1, "{drafts:#?}");
    assert_eq!(comments.len(), 1, "{comments:#?}");
    assert!(
        !drafts[0].iter().any(|t| t.contains("HERON")),
        "{drafts:#?}"
    );
    assert!(
        !comments[0].iter().any(|t| t.contains(draft)),
        "{comments:#?}"
    );
    assert_eq!(world.shut_down(), Vec::<i32>::new(), "processes left");
}
