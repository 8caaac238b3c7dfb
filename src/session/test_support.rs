//! A dispatcher over the fake tmux, for the unit tests of this module.

use super::dispatcher::Dispatcher;
use super::registry::{Registry, SessionRecord};
use super::sessions::LedgerHook;
use super::sessions::Sessions;
use super::settings::{Settings, Timings};
use super::signal::Signaller;
use crate::config::{Config, HarnessConfig, RepoConfig};
use crate::events::{EventLog, Source};
use crate::ingress::{Disposition, InboundEvent, Ingest};
use crate::paths::StatePaths;
use crate::tmux::fake::{FakeClaude, FakeCodex, FakeTmux};
use crate::tmux::{BufferName, Error, Liveness, PaneId, Paste, SessionInfo, SpawnSpec, Tmux};
use crate::work_item::WorkItemRef;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;

/// The fake tmux plus two behaviours the dispatcher tests need: pastes into one pane
/// that wait for a permit, and sessions whose program exits at once.
pub(crate) struct TestTmux {
    pub fake: FakeTmux,
    /// (pane, permits): pastes into that pane wait for a permit.
    gate: Mutex<Option<(PaneId, Arc<Semaphore>)>>,
    /// A spawned argv containing this word dies immediately.
    dies: Mutex<Option<String>>,
    /// Each paste waits this long minus 2 ms per earlier paste: were deliveries to one
    /// pane run concurrently, later ones would overtake earlier ones.
    slowing: Mutex<Option<(Duration, u32)>>,
}

impl TestTmux {
    fn new() -> Self {
        Self {
            fake: FakeTmux::new(),
            gate: Mutex::new(None),
            dies: Mutex::new(None),
            slowing: Mutex::new(None),
        }
    }

    pub fn gate(&self, pane: &PaneId) -> Arc<Semaphore> {
        let permits = Arc::new(Semaphore::new(0));
        *self.gate.lock().unwrap() = Some((pane.clone(), Arc::clone(&permits)));
        permits
    }

    pub fn slow_pastes(&self, first: Duration) {
        *self.slowing.lock().unwrap() = Some((first, 0));
    }

    pub fn die_when_argv_has(&self, word: &str) {
        *self.dies.lock().unwrap() = Some(word.to_string());
    }
}

impl Tmux for TestTmux {
    fn create_session<'a>(&'a self, spec: &'a SpawnSpec) -> BoxFuture<'a, Result<PaneId, Error>> {
        Box::pin(async move {
            let pane = self.fake.create_session(spec).await?;
            let dies = self.dies.lock().unwrap().clone();
            if dies.is_some_and(|w| spec.argv.iter().any(|a| a == &w)) {
                self.fake.set_dead(&spec.name, true);
            }
            Ok(pane)
        })
    }
    fn probe<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Liveness, Error>> {
        self.fake.probe(name)
    }
    fn kill_session<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), Error>> {
        self.fake.kill_session(name)
    }
    fn paste_text<'a>(
        &'a self,
        buffer: &'a BufferName,
        data: &'a [u8],
        pane: &'a PaneId,
        paste: Paste,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            let delay = self.slowing.lock().unwrap().as_mut().map(|(first, n)| {
                *n += 1;
                first.saturating_sub(Duration::from_millis(2) * *n)
            });
            if let Some(delay) = delay {
                tokio::time::sleep(delay).await;
            }
            let gate = self.gate.lock().unwrap().clone();
            if let Some((gated, permits)) = gate
                && &gated == pane
            {
                permits.acquire().await.unwrap().forget();
            }
            self.fake.paste_text(buffer, data, pane, paste).await
        })
    }
    fn delete_buffer<'a>(&'a self, buffer: &'a BufferName) -> BoxFuture<'a, Result<(), Error>> {
        self.fake.delete_buffer(buffer)
    }
    fn capture_pane<'a>(
        &'a self,
        pane: &'a PaneId,
        with_escapes: bool,
    ) -> BoxFuture<'a, Result<String, Error>> {
        self.fake.capture_pane(pane, with_escapes)
    }
    fn window_activity<'a>(&'a self, pane: &'a PaneId) -> BoxFuture<'a, Result<u64, Error>> {
        self.fake.window_activity(pane)
    }
    fn pane_pid<'a>(&'a self, pane: &'a PaneId) -> BoxFuture<'a, Result<u32, Error>> {
        self.fake.pane_pid(pane)
    }
    fn list_sessions<'a>(&'a self) -> BoxFuture<'a, Result<Vec<SessionInfo>, Error>> {
        self.fake.list_sessions()
    }
}

/// Records signals; SIGKILL always ends the victim session, SIGTERM only when obeyed.
pub(crate) struct FakeSignaller {
    tmux: Arc<TestTmux>,
    pub victim: Mutex<Option<String>>,
    pub obey_term: AtomicBool,
    pub sent: Mutex<Vec<(u32, bool)>>,
}

impl Signaller for FakeSignaller {
    fn signal(&self, pid: u32, kill: bool) -> std::io::Result<()> {
        self.sent.lock().unwrap().push((pid, kill));
        if (kill || self.obey_term.load(Ordering::SeqCst))
            && let Some(victim) = self.victim.lock().unwrap().as_deref()
        {
            self.tmux.fake.set_dead(victim, true);
        }
        Ok(())
    }
}

/// Records the items whose poll-ledger entry `reset` forgot.
#[derive(Default)]
pub(crate) struct RecordingLedger {
    pub forgotten: Mutex<Vec<WorkItemRef>>,
}

impl LedgerHook for RecordingLedger {
    fn forget_item(&self, item: &WorkItemRef) -> Result<bool, String> {
        self.forgotten.lock().unwrap().push(item.clone());
        Ok(true)
    }
}

pub(crate) struct Fixture {
    pub dir: tempfile::TempDir,
    pub tmux: Arc<TestTmux>,
    pub signals: Arc<FakeSignaller>,
    pub ledger: Arc<RecordingLedger>,
    pub sessions: Arc<Sessions>,
    pub dispatcher: Dispatcher,
    pub config: Config,
}

/// The harness the fixture spawns: any existing binary will do, tmux is fake. It mints
/// conversation ids and can resume them.
pub(crate) fn agent_harness() -> HarnessConfig {
    HarnessConfig {
        command: std::env::current_exe().unwrap().display().to_string(),
        args: vec!["--fresh".into(), "{sessionId}".into(), "{prompt}".into()],
        resume_args: vec!["--resume".into(), "{sessionId}".into(), "{prompt}".into()],
        oneshot_args: vec![],
    }
}

pub(crate) fn test_config(dir: &std::path::Path) -> Config {
    let mut config = Config::default();
    config.routing.authorized_users = vec!["alice".into()];
    config.repos = vec![RepoConfig {
        name: "octo/repo".into(),
        path: Some(dir.display().to_string()),
        label: "the-loop".into(),
        issues: true,
        pull_requests: true,
        ..RepoConfig::named("")
    }];
    config.sessions.harness = "agent".into();
    config
        .sessions
        .harnesses
        .insert("agent".into(), agent_harness());
    config.sessions.tmux.submit_delay_ms = 0;
    config
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        Self::with_config(dir, |_| {})
    }

    pub fn with_config(dir: tempfile::TempDir, change: impl FnOnce(&mut Config)) -> Self {
        let mut config = test_config(dir.path());
        change(&mut config);
        let paths = StatePaths::new(dir.path());
        let events = EventLog::open(&paths);
        let mut settings = Settings::new(&config, None, &paths).unwrap();
        settings.claude_config = None; // never the developer's own ~/.claude.json
        settings.timings = Timings {
            resume_check: Duration::from_millis(20),
            stop_grace: Duration::from_millis(50),
            spawn_settle: Duration::ZERO,
            poll: Duration::from_millis(5),
            submit_check: Duration::ZERO,
            submit_grace: Duration::ZERO,
            settle: Duration::ZERO,
            paste_show: Duration::from_millis(200),
            hold_check: Duration::from_millis(20),
            dialog_confirm: Duration::ZERO,
        };
        let tmux = Arc::new(TestTmux::new());
        let signals = Arc::new(FakeSignaller {
            tmux: Arc::clone(&tmux),
            victim: Mutex::new(None),
            obey_term: AtomicBool::new(true),
            sent: Mutex::new(Vec::new()),
        });
        let registry = Registry::new(&paths, events.clone(), Source::Dispatch);
        let ledger = Arc::new(RecordingLedger::default());
        let sessions = Arc::new(
            Sessions::new(tmux.clone(), registry, events, settings)
                .with_signaller(signals.clone())
                .with_ledger(ledger.clone()),
        );
        let dispatcher = Dispatcher::new(Arc::clone(&sessions), &config, &paths).unwrap();
        Self {
            dir,
            tmux,
            signals,
            ledger,
            sessions,
            dispatcher,
            config,
        }
    }

    /// A live session for issue `n`, as if spawned earlier.
    pub fn live_session(&self, n: u64) -> PaneId {
        let item = item(n);
        let pane = self.tmux.fake.add_session(&item.tmux_session_name(), false);
        let mut record = SessionRecord::new(&item, "agent", self.dir.path().to_path_buf());
        record.pane_id = Some(pane.to_string());
        record.harness_session_id = Some(format!("conversation-{n}"));
        self.sessions.registry().put(&record).unwrap();
        *self.signals.victim.lock().unwrap() = Some(item.tmux_session_name());
        pane
    }

    pub fn record(&self, n: u64) -> Option<SessionRecord> {
        self.sessions.registry().get(&item(n)).unwrap()
    }

    pub async fn ingest(&self, event: InboundEvent) -> Disposition {
        self.dispatcher.ingest(event).await
    }

    pub fn events_named(&self, name: &str) -> Vec<Value> {
        crate::events::lines::named(&self.dir.path().join("events.jsonl"), name)
    }

    /// The submitted texts a pane received (each bracketed paste, in order).
    pub fn pasted(&self, pane: &PaneId) -> Vec<String> {
        let input = String::from_utf8(self.tmux.fake.pane_input(pane)).unwrap();
        input
            .split("\x1b[200~")
            .skip(1)
            .map(|chunk| chunk.split("\x1b[201~").next().unwrap().to_string())
            .collect()
    }
}

pub(crate) fn item(n: u64) -> WorkItemRef {
    WorkItemRef::new("octo", "repo", n)
}

/// An `issue_comment` `created` by `login` on issue `n`, delivery `d-<id>`.
pub(crate) fn comment_by(login: &str, id: u64, n: u64, body: &str) -> InboundEvent {
    InboundEvent::from_webhook(
        "issue_comment",
        &format!("d-{id}"),
        json!({
            "action": "created",
            "comment": {
                "id": id,
                "body": body,
                "html_url": format!("https://github.com/octo/repo/issues/{n}#issuecomment-{id}"),
                "user": {"login": login}
            },
            "issue": {
                "number": n,
                "title": format!("Issue {n}"),
                "state": "open",
                "html_url": format!("https://github.com/octo/repo/issues/{n}"),
                "user": {"login": "carol"}
            },
            "repository": {"full_name": "octo/repo", "html_url": "https://github.com/octo/repo"},
            "sender": {"login": login}
        }),
    )
}

pub(crate) fn comment(id: u64, n: u64, body: &str) -> InboundEvent {
    comment_by("alice", id, n, body)
}

/// An issue closed (or a PR merged when `pr`).
pub(crate) fn closed(id: u64, n: u64) -> InboundEvent {
    InboundEvent::from_webhook(
        "issues",
        &format!("d-{id}"),
        json!({
            "action": "closed",
            "issue": {"number": n, "state": "closed", "html_url": format!("https://github.com/octo/repo/issues/{n}")},
            "repository": {"full_name": "octo/repo"},
            "sender": {"login": "mallory"}
        }),
    )
}

/// `issues` `labeled` with `label` by alice on an issue alice opened.
pub(crate) fn labeled(id: u64, n: u64, label: &str) -> InboundEvent {
    InboundEvent::from_webhook(
        "issues",
        &format!("d-{id}"),
        json!({
            "action": "labeled",
            "label": {"name": label},
            "issue": {
                "number": n, "title": "Add retries", "state": "open",
                "html_url": format!("https://github.com/octo/repo/issues/{n}"),
                "user": {"login": "alice"},
                "labels": [{"name": label}]
            },
            "repository": {"full_name": "octo/repo"},
            "sender": {"login": "alice"}
        }),
    )
}

impl Fixture {
    /// A live Claude Code session for issue `n` whose screen `claude` draws.
    pub fn claude_session(&self, n: u64) -> (PaneId, Arc<FakeClaude>) {
        let item = item(n);
        let pane = self.tmux.fake.add_session(&item.tmux_session_name(), false);
        let mut record = SessionRecord::new(&item, "claude", self.dir.path().to_path_buf());
        record.pane_id = Some(pane.to_string());
        // The fake draws Claude Code 2.1.197's screens.
        record.harness_version = Some("2.1.197".into());
        self.sessions.registry().put(&record).unwrap();
        *self.signals.victim.lock().unwrap() = Some(item.tmux_session_name());
        let claude = Arc::new(FakeClaude::default());
        self.tmux.fake.set_screen(&pane, claude.screen());
        (pane, claude)
    }

    /// A live Codex 0.171.0 session for issue `n` whose screen `codex` draws.
    pub fn codex_session(&self, n: u64) -> (PaneId, Arc<FakeCodex>) {
        let item = item(n);
        let pane = self.tmux.fake.add_session(&item.tmux_session_name(), false);
        let mut record = SessionRecord::new(&item, "codex", self.dir.path().to_path_buf());
        record.pane_id = Some(pane.to_string());
        record.harness_version = Some("0.171.0".into());
        self.sessions.registry().put(&record).unwrap();
        let codex = Arc::new(FakeCodex::default());
        self.tmux.fake.set_screen(&pane, codex.screen());
        (pane, codex)
    }

    /// The Enters a pane received (each submit is one plain `\r`).
    pub fn enters(&self, pane: &PaneId) -> usize {
        self.tmux
            .fake
            .pane_input(pane)
            .iter()
            .filter(|b| **b == b'\r')
            .count()
    }
}
