//! The [`Sessions`] type (SPEC §7.1, §7.5): one tmux server, one registry and one
//! event log, and the session changes every caller makes the same way — pause, resume,
//! finding a session's pane. Its other work lives next to it, one file each: starting
//! a session (`spawn`), pasting into one (`delivery`), respawning a dead harness on
//! the way (`respawn`), stop, close and reset (`ending`).
//!
//! [`Sessions`] is shared by the dispatcher (comments, closes) and the CLI / TUI
//! (operator commands), so a session is started, paused or stopped the same way
//! whoever asks, and every outcome is one event.

use super::registry::{Registry, RegistryError, SessionRecord, Status};
use super::settings::Settings;
use super::signal::{ProcessSignaller, Signaller};
use crate::events::{Event, EventLog, EventType, Source};
use crate::harness::HarnessError;
use crate::paths;
use crate::tmux::{self, PaneId, Tmux};
use crate::work_item::WorkItemRef;
use crate::workspace::{WorkspaceError, Workspaces};
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// Who asked for a lifecycle change, for the events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub source: Source,
    /// `comment`, `cli` or `tui` (the `via` field of pause, resume and stop events).
    pub via: &'static str,
    /// `command`, `labeled`, `cli` or `tui` (the `trigger` of `session.spawned`).
    pub trigger: &'static str,
    pub actor: Option<String>,
}

impl Origin {
    pub fn cli() -> Self {
        Self {
            source: Source::Cli,
            via: "cli",
            trigger: "cli",
            actor: None,
        }
    }

    pub fn tui() -> Self {
        Self {
            source: Source::Tui,
            via: "tui",
            trigger: "tui",
            actor: None,
        }
    }

    /// A control comment (or close) that came in by `source`.
    pub fn comment(source: Source, actor: Option<String>) -> Self {
        Self {
            source,
            via: "comment",
            trigger: "command",
            actor,
        }
    }

    /// A spawn under `routing.spawn: labeled` (SPEC §5.4).
    pub fn labeled(source: Source, actor: Option<String>) -> Self {
        Self {
            trigger: "labeled",
            ..Self::comment(source, actor)
        }
    }

    /// Spawns and respawns caused by GitHub events are the dispatcher's doing.
    pub(crate) fn spawn_source(&self) -> Source {
        if self.via == "comment" {
            Source::Dispatch
        } else {
            self.source
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// (The work item, as written.)
    #[error("no session for {0}: start one with `the-loop sessions start {0}`")]
    NoSession(String),
    #[error("the session for {0} is closed: start a new one with `the-loop sessions start {0}`")]
    Closed(String),
    #[error(transparent)]
    Harness(#[from] HarnessError),
    #[error(
        "the working directory {} for {item} does not exist: fix repos[].path in the config",
        path.display()
    )]
    NoWorkingDir { item: String, path: PathBuf },
    /// A session's host could not be used (not configured, unreachable, no directory).
    #[error("{0}")]
    Remote(String),
    /// SPEC §14.3: nothing spawns for a repository that is not in `repos[]`.
    #[error(
        "{item} is not in a watched repository: add its repository to repos[] in the config to start sessions for it"
    )]
    UnwatchedRepo { item: String },
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    /// A session's workspace on its host (paths in the message are paths there).
    #[error("on host `{host}`: {source}")]
    WorkspaceOnHost {
        host: String,
        #[source]
        source: WorkspaceError,
    },
    #[error(transparent)]
    Tmux(#[from] tmux::Error),
    /// A session's protocol channel could not be set up (codex's app server, issue 41).
    #[error("{0}")]
    Channel(String),
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error("could not signal the harness (pid {pid}) in pane {pane}: {error}")]
    Signal {
        pid: u32,
        pane: String,
        error: std::io::Error,
    },
    #[error(
        "the harness in pane {pane} still runs after SIGTERM and SIGKILL; end it by hand (`tmux kill-pane -t {pane}`)"
    )]
    StillRunning { pane: String },
}

impl SessionError {
    /// The exit code of SPEC §1: 2 for configuration problems, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Harness(HarnessError::Unknown { .. } | HarnessError::NoCommand { .. })
            | Self::NoWorkingDir { .. }
            | Self::UnwatchedRepo { .. }
            | Self::Workspace(
                WorkspaceError::NotARepository { .. } | WorkspaceError::InvalidBranch { .. },
            )
            | Self::WorkspaceOnHost {
                source: WorkspaceError::NotARepository { .. } | WorkspaceError::InvalidBranch { .. },
                ..
            } => 2,
            _ => 1,
        }
    }
}

/// Where a session's harness is, looked up by its tmux session name: a stored pane id
/// outlives a restarted tmux server (which numbers panes from `%0` again), a name does
/// not mean anything else.
#[derive(Debug)]
pub enum PaneState {
    Live(PaneId),
    Dead(PaneId),
    Absent,
    /// tmux did not answer (or is not installed): never treated as absent.
    Unknown(tmux::Error),
}

/// Whether a pause or resume changed anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Toggle {
    Changed,
    Unchanged,
}

/// Forgets a work item's entry in the poll ledger (`poll/<owner>-<repo>.json`), so a
/// reset item is baselined afresh the next time it is seen. The poller module provides
/// the implementation; `sessions reset` and the TUI pass it to
/// [`Sessions::with_ledger`]. Returns whether an entry existed.
pub trait LedgerHook: Send + Sync {
    fn forget_item(&self, item: &WorkItemRef) -> Result<bool, String>;
}

/// The session lifecycle over one tmux server, one registry and one event log.
pub struct Sessions {
    pub(crate) tmux: Arc<dyn Tmux>,
    /// The tmux servers of other hosts, for sessions whose record names one.
    hosts: tmux::Hosts,
    pub(crate) registry: Registry,
    pub(crate) events: EventLog,
    settings: RwLock<Arc<Settings>>,
    pub(crate) signaller: Arc<dyn Signaller>,
    pub(crate) ledger: Option<Arc<dyn LedgerHook>>,
}

impl Sessions {
    /// Over the given parts (tests use fakes). A process builds its sessions with
    /// `Sessions::open` (supervisor/wiring.rs), the one wiring with real tmux and the
    /// poll-ledger hook.
    pub fn new(
        tmux: Arc<dyn Tmux>,
        registry: Registry,
        events: EventLog,
        settings: Settings,
    ) -> Self {
        Self {
            tmux,
            hosts: tmux::Hosts::default(),
            registry,
            events,
            settings: RwLock::new(Arc::new(settings)),
            signaller: Arc::new(ProcessSignaller),
            ledger: None,
        }
    }

    /// Replaces how harness processes are signalled (tests).
    pub fn with_signaller(mut self, signaller: Arc<dyn Signaller>) -> Self {
        self.signaller = signaller;
        self
    }

    /// What `reset` calls to forget the item's poll-ledger entry.
    pub fn with_ledger(mut self, ledger: Arc<dyn LedgerHook>) -> Self {
        self.ledger = Some(ledger);
        self
    }

    /// With the hosts of the config (`Sessions::open` wires them).
    pub fn with_hosts(mut self, hosts: tmux::Hosts) -> Self {
        self.hosts = hosts;
        self
    }

    pub fn hosts(&self) -> &tmux::Hosts {
        &self.hosts
    }

    /// The tmux server a session of `host` runs on: this machine's for `None`. A host
    /// the config no longer names cannot be reached ([`tmux::Error::Unreachable`]).
    pub fn tmux_on(&self, host: Option<&str>) -> Result<Arc<dyn Tmux>, tmux::Error> {
        match host {
            None => Ok(Arc::clone(&self.tmux)),
            Some(name) => self
                .hosts
                .get(name)
                .map(|h| Arc::clone(&h.tmux))
                .ok_or_else(|| tmux::Error::Unreachable {
                    reason: format!("host `{name}` is not in the config's hosts: add it back to reach its sessions"),
                }),
        }
    }

    /// The tmux server of `record`'s session.
    pub fn tmux_of(&self, record: &SessionRecord) -> Result<Arc<dyn Tmux>, tmux::Error> {
        self.tmux_on(record.host.as_deref())
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    pub fn tmux(&self) -> &Arc<dyn Tmux> {
        &self.tmux
    }

    pub fn events(&self) -> &EventLog {
        &self.events
    }

    /// The workspaces of this state root, as the settings in force place them.
    pub fn workspaces(&self) -> Workspaces {
        let settings = self.settings();
        Workspaces::at(
            settings.workspaces_root.clone(),
            &paths::StatePaths::new(&settings.home),
            self.events.clone(),
        )
        .with_child_env(settings.child_env.clone())
        .with_hosts(self.hosts.iter().map(|h| Arc::clone(&h.transport)))
    }

    pub fn settings(&self) -> Arc<Settings> {
        match self.settings.read() {
            Ok(s) => Arc::clone(&s),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    pub fn set_settings(&self, settings: Settings) {
        match self.settings.write() {
            Ok(mut s) => *s = Arc::new(settings),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(settings),
        }
    }

    pub(crate) fn emit(&self, event: Event) {
        let _ = self.events.emit(event);
    }

    /// Finds the session's pane by name on its host (one `list-panes -a`).
    pub async fn locate(&self, record: &SessionRecord) -> PaneState {
        let tmux = match self.tmux_of(record) {
            Ok(tmux) => tmux,
            Err(error) => return PaneState::Unknown(error),
        };
        let tmux_session = record.tmux_session.as_str();
        match tmux.list_sessions().await {
            Err(error) => PaneState::Unknown(error),
            Ok(all) => match all.into_iter().find(|s| s.name == tmux_session) {
                None => PaneState::Absent,
                Some(s) if s.liveness == tmux::Liveness::Live => PaneState::Live(s.pane),
                Some(s) => PaneState::Dead(s.pane),
            },
        }
    }

    /// Holds deliveries back (`session-paused`); the pane is untouched.
    pub fn pause(&self, item: &WorkItemRef, origin: &Origin) -> Result<Toggle, SessionError> {
        self.set_paused(item, true, origin)
    }

    /// Lets deliveries through again.
    pub fn resume(&self, item: &WorkItemRef, origin: &Origin) -> Result<Toggle, SessionError> {
        self.set_paused(item, false, origin)
    }

    fn set_paused(
        &self,
        item: &WorkItemRef,
        paused: bool,
        origin: &Origin,
    ) -> Result<Toggle, SessionError> {
        let (from, to) = if paused {
            (Status::Active, Status::Paused)
        } else {
            (Status::Paused, Status::Active)
        };
        let outcome = self.registry.update(item, |record| match record.status {
            Status::Closed => Err(SessionError::Closed(record.work_item.to_string())),
            status if status == from => {
                record.status = to;
                Ok((Toggle::Changed, record.work_item.clone()))
            }
            _ => Ok((Toggle::Unchanged, record.work_item.clone())),
        })?;
        let (toggle, item) = outcome.ok_or_else(|| SessionError::NoSession(item.to_string()))??;
        if toggle == Toggle::Changed {
            let event = if paused {
                EventType::SessionPaused
            } else {
                EventType::SessionResumed
            };
            self.emit(
                Event::new(origin.source, event)
                    .with("work_item", item.to_string())
                    .with("actor", origin.actor.clone())
                    .with("via", origin.via),
            );
        }
        Ok(toggle)
    }

    pub(crate) fn submit_delay(&self) -> Duration {
        self.settings().submit_delay()
    }
}

#[cfg(test)]
#[path = "sessions_tests.rs"]
mod tests;
