//! What the session lifecycle needs from the config and the environment, and how long
//! it waits for things.

use crate::config::{Config, RepoConfig, SessionsConfig};
use crate::paths::StatePaths;
use crate::routing::WorkItemRef;
use crate::routing::prompt::{PromptError, Templates};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// How long the lifecycle waits for things to happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timings {
    /// A resumed conversation must still run after this long (SPEC §7.5: ~2 s).
    pub resume_check: Duration,
    /// Between SIGTERM and SIGKILL when stopping a harness.
    pub stop_grace: Duration,
    /// After a spawn, how long the next delivery waits for the harness's first output.
    pub spawn_settle: Duration,
    /// How often those waits look again.
    pub poll: Duration,
}

impl Default for Timings {
    fn default() -> Self {
        Self {
            resume_check: Duration::from_secs(2),
            stop_grace: Duration::from_secs(5),
            spawn_settle: Duration::from_secs(10),
            poll: Duration::from_millis(100),
        }
    }
}

/// What the lifecycle needs from the config and the environment. Replace it with
/// [`Sessions::set_settings`] when the config reloads.
#[derive(Debug, Clone)]
pub struct Settings {
    pub sessions: SessionsConfig,
    pub repos: Vec<RepoConfig>,
    pub templates: Templates,
    /// `THE_LOOP_HOME` for spawned sessions (absolute).
    pub home: PathBuf,
    /// `THE_LOOP_CONFIG` for spawned sessions, when a file is in use.
    pub config_path: Option<PathBuf>,
    /// Where harness binaries are looked up; the process's `PATH` when `None`.
    pub search_path: Option<OsString>,
    /// The `the-loop` binary harnesses report to (`<bin> hook …`, SPEC §17): the
    /// running one.
    pub bin: PathBuf,
    pub timings: Timings,
}

impl Settings {
    /// From the effective config (templates loaded now: a missing template file is a
    /// configuration error the operator must see before anything spawns).
    pub fn new(
        config: &Config,
        config_path: Option<PathBuf>,
        paths: &StatePaths,
    ) -> Result<Self, PromptError> {
        Ok(Self {
            sessions: config.sessions.clone(),
            repos: config.repos.clone(),
            templates: Templates::load(&config.sessions)?,
            home: std::path::absolute(&paths.root).unwrap_or_else(|_| paths.root.clone()),
            config_path: config_path.map(|p| std::path::absolute(&p).unwrap_or(p)),
            search_path: None,
            bin: running_binary(),
            timings: Timings::default(),
        })
    }

    pub(crate) fn submit_delay(&self) -> Duration {
        Duration::from_millis(self.sessions.tmux.submit_delay_ms)
    }

    /// The repo's `path`, else the current directory.
    pub(crate) fn working_dir(&self, item: &WorkItemRef) -> Option<PathBuf> {
        let repo = item.repo_full_name();
        self.repos
            .iter()
            .find(|r| r.name.eq_ignore_ascii_case(&repo))
            .and_then(RepoConfig::working_dir)
            .or_else(|| std::env::current_dir().ok())
    }
}

/// The running binary's absolute path (`the-loop` on PATH when it cannot be known).
/// A binary replaced while it runs (rebuilt, upgraded) reads as `… (deleted)` on Linux:
/// the path it was started from is where the new one is.
pub fn running_binary() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| std::path::absolute(p).ok())
        .map(
            |p| match p.to_str().and_then(|s| s.strip_suffix(" (deleted)")) {
                Some(original) => PathBuf::from(original),
                None => p,
            },
        )
        .unwrap_or_else(|| PathBuf::from("the-loop"))
}
