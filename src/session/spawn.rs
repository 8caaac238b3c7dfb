//! Starting a session (SPEC §7.1, §16): the harness resolved and found, the
//! working directory placed (a worktree or the configured path) and trusted, the
//! spawn template's boot prompt, `new-session` with the environment every session
//! gets, and `session.spawned` / `session.spawn_failed`.

use super::registry::SessionRecord;
use super::sessions::{Origin, PaneState, SessionError, Sessions};
use super::settings::Settings;
use crate::events::{Event, EventType, Level, Source};
use crate::harness::Harness;
use crate::paths;
use crate::routing::prompt::PromptVars;
use crate::tmux::{PaneId, SpawnSpec};
use crate::work_item::WorkItemRef;
use crate::workspace::Placement;

/// What a prompt is rendered from: the GitHub event (or a stand-in for a start
/// without one) and its excerpt.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PromptInputs {
    pub event: String,
    pub action: String,
    pub delivery_id: String,
    /// `owner/name`.
    pub repository: String,
    pub excerpt: String,
}

impl PromptInputs {
    /// A start with no GitHub event behind it (`sessions start`, the TUI's start key).
    pub fn manual(item: &WorkItemRef, how: &str) -> Self {
        Self {
            event: how.to_string(),
            action: String::new(),
            delivery_id: String::new(),
            repository: item.repo_full_name(),
            excerpt: "{}".into(),
        }
    }

    pub(crate) fn vars<'a>(&'a self, item: &'a WorkItemRef) -> PromptVars<'a> {
        PromptVars {
            work_item: item,
            event: &self.event,
            action: &self.action,
            repository: &self.repository,
            delivery_id: &self.delivery_id,
            payload_excerpt: &self.excerpt,
        }
    }
}

/// What `start` found or did.
#[derive(Debug, Clone, PartialEq)]
pub enum StartOutcome {
    Spawned(SessionRecord),
    /// An open session with a live harness exists; nothing was started.
    AlreadyRunning(SessionRecord),
}

impl Sessions {
    /// Starts a session for `item` with the spawn template's boot prompt, unless an
    /// open one with a live harness exists (reported, not duplicated). A dead or absent
    /// one is replaced by a fresh conversation.
    pub async fn start(
        &self,
        item: &WorkItemRef,
        inputs: &PromptInputs,
        origin: &Origin,
    ) -> Result<StartOutcome, SessionError> {
        if let Some(existing) = self.registry.get(item)?.filter(|r| r.status.is_open()) {
            match self.locate(&existing).await {
                PaneState::Live(_) => return Ok(StartOutcome::AlreadyRunning(existing)),
                PaneState::Unknown(error) => {
                    return Err(self.spawn_failed(item, None, origin.spawn_source(), error));
                }
                PaneState::Dead(_) | PaneState::Absent => {}
            }
        }
        let settings = self.settings();
        let harness_name = settings.harness_for(item).to_string();
        let source = origin.spawn_source();
        let fail =
            |error: SessionError| self.spawn_failed(item, Some(&harness_name), source, error);
        if !settings.watches(item) {
            return Err(fail(SessionError::UnwatchedRepo {
                item: item.to_string(),
            }));
        }
        let harness = Harness::resolve(&harness_name, &settings.sessions)
            .map_err(|e| fail(e.into()))?
            .with_permission_mode(settings.permission_mode(item))
            .with_codex_policy(settings.codex_policy(item));
        let repo = settings.repo(item);
        let host = self.host_for(repo, item).await.map_err(fail)?;
        let mut record = match (&host, repo) {
            (Some(host), Some(repo)) => {
                let placed = super::remote::place(host, repo, item, &self.workspaces(), source)
                    .await
                    .map_err(fail)?;
                let mut record =
                    SessionRecord::new(item, harness.name(), placed.cwd().to_path_buf());
                if let Some(worktree) = placed.record() {
                    record.workspace = Some(worktree.dir.clone());
                    record.branch = Some(worktree.branch.clone());
                }
                record.host = Some(host.name().to_string());
                record.harness_version = super::remote::client_version(host, &harness).await;
                self.mark_trusted_on(host, &harness, &record.cwd, item, source)
                    .await;
                record
            }
            _ => self
                .place_here(&harness, item, source)
                .await
                .map_err(fail)?,
        };
        record.harness_session_id = harness.mint_session_id();
        record.permission_mode = harness.permission_mode();
        record.codex_policy = harness.codex_policy();
        record.opencode_policy = harness
            .is_opencode()
            .then(|| settings.opencode_policy(item));
        // On a host, the hooks report back over its connection.
        let harness = match &host {
            None => super::hooks::wire(harness, &settings, item),
            Some(host) => super::remote::wire_hooks(host, harness, item).await,
        };
        let harness = match &host {
            None => self
                .with_codex_app_server(
                    harness,
                    item,
                    &record.cwd,
                    record.harness_version.as_deref(),
                )
                .map_err(fail)?,
            Some(_) => harness,
        };
        let harness = self
            .with_opencode_server(harness, &record.cwd, host.is_some())
            .map_err(fail)?;
        let prompt = settings.templates.render_spawn(&inputs.vars(item));
        let argv = harness.fresh_argv(&prompt, record.harness_session_id.as_deref());
        let spec = spawn_spec(&settings, &record, host.as_deref(), argv);
        let tmux = self.tmux_of(&record).map_err(|e| fail(e.into()))?;
        let (pane, channel) = if harness.opencode_port().is_some() {
            // opencode (issue 44): its server, then its TUI; the prompt through the server.
            let (pane, channel) = self
                .spawn_opencode(tmux.as_ref(), &harness, spec, &prompt, None)
                .await
                .map_err(fail)?;
            if let crate::channel::ChannelRecord::OpencodeServer { session, .. } = &channel {
                record.harness_session_id = Some(session.clone());
                let now = crate::time::now_ts();
                record.reported = Some(super::opencode::state::prompted(session, &now));
            }
            (pane, Some(channel))
        } else {
            self.spawn_panes(tmux.as_ref(), &harness, spec)
                .await
                .map_err(fail)?
        };
        record.pane_id = Some(pane.to_string());
        record.channel = channel;
        self.registry.put(&record).map_err(|e| fail(e.into()))?;
        self.emit(
            Event::new(origin.spawn_source(), EventType::SessionSpawned)
                .with("work_item", item.to_string())
                .with("harness", harness.name())
                .with("tmux_session", record.tmux_session.as_str())
                .with("pane", pane.to_string())
                .with("cwd", record.cwd.display().to_string())
                .with_opt("branch", record.branch.clone())
                .with("harness_session_id", record.harness_session_id.clone())
                .with_opt("harness_version", record.harness_version.clone())
                .with_opt(
                    "permission_mode",
                    record.permission_mode.map(|m| m.as_str()),
                )
                .with_opt("codex_policy", record.codex_policy.map(|p| p.to_string()))
                .with_opt(
                    "opencode_policy",
                    record.opencode_policy.map(|p| p.to_string()),
                )
                .with_opt("channel", record.channel.as_ref().map(|c| c.name()))
                .with("trigger", origin.trigger)
                .with("actor", origin.actor.clone()),
        );
        Ok(StartOutcome::Spawned(record))
    }

    /// A session on this machine: its harness found on `PATH`, asked its release, and
    /// its workspace placed (a worktree, or the repo's path), trusted for Claude Code.
    async fn place_here(
        &self,
        harness: &Harness,
        item: &WorkItemRef,
        source: Source,
    ) -> Result<SessionRecord, SessionError> {
        let settings = self.settings();
        let program = harness.locate(settings.search_path.as_deref())?;
        let version = client_version(harness, &program, item).await;
        let placement = self
            .workspaces()
            .place(item, settings.repo(item), source)
            .await?;
        let cwd = placement.cwd().to_path_buf();
        if !cwd.is_dir() {
            return Err(SessionError::NoWorkingDir {
                item: item.to_string(),
                path: cwd,
            });
        }
        self.mark_trusted(harness, &cwd, item, source).await;
        let mut record = SessionRecord::new(item, harness.name(), cwd);
        if let Placement::Worktree(ws) = &placement {
            record.workspace = Some(ws.dir.clone());
            record.branch = Some(ws.branch.clone());
        }
        record.harness_version = version;
        Ok(record)
    }

    /// Logs `session.spawn_failed` and passes the error on.
    pub(crate) fn spawn_failed(
        &self,
        item: &WorkItemRef,
        harness: Option<&str>,
        source: Source,
        error: impl Into<SessionError>,
    ) -> SessionError {
        let error = error.into();
        let harness =
            harness.map_or_else(|| self.settings().sessions.harness.clone(), str::to_string);
        self.emit(
            Event::new(source, EventType::SessionSpawnFailed)
                .level(Level::Error)
                .with("work_item", item.to_string())
                .with("harness", harness)
                .with("error", error.to_string()),
        );
        error
    }

    /// Marks `dir` trusted in Claude Code's config before the `claude` harness starts
    /// there, when the-loop made it or the operator configured it (SPEC §16.6). A
    /// failure is a warning: the agent still starts, its trust dialog then waits.
    pub(crate) async fn mark_trusted(
        &self,
        harness: &Harness,
        dir: &std::path::Path,
        item: &WorkItemRef,
        source: Source,
    ) {
        let settings = self.settings();
        let Some(file) = settings.claude_config.clone() else {
            return;
        };
        if !harness.is_claude() || !settings.sessions.trust_workspaces {
            return;
        }
        let same = |a: &std::path::Path, b: &std::path::Path| {
            let canon = |p: &std::path::Path| std::fs::canonicalize(p).ok();
            canon(a).is_some() && canon(a) == canon(b)
        };
        let configured = settings
            .repo(item)
            .and_then(crate::config::RepoConfig::working_dir)
            .is_some_and(|p| same(&p, dir));
        if !configured && !self.workspaces().owns(dir) {
            return;
        }
        let target = dir.to_path_buf();
        let marked = tokio::task::spawn_blocking({
            let file = file.clone();
            move || crate::workspace::trust::trust(&file, &target)
        })
        .await;
        let error = match marked {
            Ok(Ok(_)) => return,
            Ok(Err(e)) => e.to_string(),
            Err(e) => e.to_string(),
        };
        self.emit(
            Event::new(source, EventType::WorkspaceTrustFailed)
                .level(Level::Warning)
                .with("work_item", item.to_string())
                .with("dir", dir.display().to_string())
                .with("file", file.display().to_string())
                .with("error", error),
        );
    }

    /// Waits until a freshly spawned harness has drawn something (or the settle time
    /// passed), so a delivery queued behind the spawn does not reach a program that
    /// has not set up its terminal yet.
    pub(crate) async fn settle(&self, item: &WorkItemRef, pane: &PaneId) {
        let timings = self.settings().timings;
        let deadline = tokio::time::Instant::now() + timings.spawn_settle;
        let record = self.registry.get(item).ok().flatten();
        let Some(Ok(tmux)) = record.map(|r| self.tmux_of(&r)) else {
            return;
        };
        while tokio::time::Instant::now() < deadline {
            match tmux.capture_pane(pane, false).await {
                Ok(screen) if !screen.trim().is_empty() => return,
                Ok(_) => {}
                Err(_) => return, // gone or unknown: the delivery will find out
            }
            tokio::time::sleep(timings.poll).await;
        }
    }
}

/// `new-session` for `record` running `argv`, with the environment every session gets.
pub(crate) fn spawn_spec(
    settings: &Settings,
    record: &SessionRecord,
    host: Option<&crate::tmux::RemoteHost>,
    argv: Vec<String>,
) -> SpawnSpec {
    if let Some(host) = host {
        return SpawnSpec {
            name: record.tmux_session.clone(),
            cwd: record.cwd.clone(),
            env: super::remote::pane_env(host, record),
            argv,
            remain_on_exit: settings.sessions.tmux.remain_on_exit,
            private_files: false,
        };
    }
    let mut env = vec![
        (
            paths::ENV_WORK_ITEM.to_string(),
            record.work_item.to_string(),
        ),
        (
            paths::ENV_HOME.to_string(),
            settings.home.display().to_string(),
        ),
    ];
    if let Some(config) = &settings.config_path {
        env.push((paths::ENV_CONFIG.to_string(), config.display().to_string()));
    }
    if !settings.sessions.tmux.socket.is_empty() {
        env.push((
            paths::ENV_TMUX_SOCKET.to_string(),
            settings.sessions.tmux.socket.clone(),
        ));
    }
    env.extend(agent_path_env(Some(settings.bin.as_path())));
    SpawnSpec {
        name: record.tmux_session.clone(),
        cwd: record.cwd.clone(),
        env,
        argv,
        remain_on_exit: settings.sessions.tmux.remain_on_exit,
        private_files: record.workspace.is_some(),
    }
}

/// SPEC §16.5: `PATH` starting with the running binary's directory, and `THE_LOOP_BIN`,
/// so `the-loop ask` works in a session even when the binary was never installed.
fn agent_path_env(bin: Option<&std::path::Path>) -> Vec<(String, String)> {
    let Some(bin) = bin.and_then(|b| b.to_str()) else {
        return Vec::new();
    };
    let mut env = vec![(paths::ENV_BIN.to_string(), bin.to_string())];
    let dir = std::path::Path::new(bin).parent().and_then(|d| d.to_str());
    // A directory with `:` cannot be a PATH entry; THE_LOOP_BIN still names the binary.
    if let Some(dir) = dir.filter(|d| !d.is_empty() && !d.contains(':')) {
        let rest = std::env::var("PATH").unwrap_or_default();
        let rest: Vec<&str> = rest
            .split(':')
            .filter(|p| !p.is_empty() && *p != dir)
            .collect();
        let path = std::iter::once(dir)
            .chain(rest)
            .collect::<Vec<_>>()
            .join(":");
        env.push(("PATH".to_string(), path));
    }
    env
}

/// The release a harness whose screen the-loop reads names itself (`claude
/// --version`, `codex --version`, asked once per binary); `None` for the others, and when it cannot be
/// told (then its screen is unknown: deliveries are held, SPEC §18.2).
pub(super) async fn client_version(
    harness: &Harness,
    program: &std::path::Path,
    item: &WorkItemRef,
) -> Option<String> {
    crate::session::delivery::ScreenReader::of(harness.screen())?;
    crate::harness::version::of(program)
        .await
        .inspect_err(|error| tracing::warn!(work_item = %item, "{error}"))
        .ok()
}
