//! What the session lifecycle needs from the config and the environment, and how long
//! it waits for things.

use crate::config::{Config, PermissionMode, RepoConfig, SessionsConfig};
use crate::paths::StatePaths;
use crate::routing::prompt::{PromptError, Templates};
use crate::work_item::WorkItemRef;
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
    /// After a submit, how long the harness gets to take it before its input box is
    /// looked at (`deliver::confirm_submitted`).
    pub submit_check: Duration,
    /// How long a paste may stay in the box after the submit, with no prompt reported
    /// by the harness, before Enter is pressed again (`deliver::SubmitCheck::grace`).
    pub submit_grace: Duration,
    /// A harness whose screen is known is pasted into only once its last turn-end
    /// report is this old: Claude Code mishandles an Enter that lands while it ends a
    /// turn (decision `2026-12-02-submit-check`).
    pub settle: Duration,
    /// After a paste into a harness whose screen is known, how long it gets to show in
    /// the input box before the delivery gives up on it (SPEC §18.2).
    pub paste_show: Duration,
    /// While a delivery is held, how often the pane is looked at again (SPEC §18.3: at
    /// most every 500 ms).
    pub hold_check: Duration,
    /// After a key on a permission dialog, how long the dialog gets to go before the
    /// key is taken for dropped and pressed again (`hooks::permission`); zero: pressed
    /// once, not watched.
    pub dialog_confirm: Duration,
}

impl Default for Timings {
    fn default() -> Self {
        Self {
            resume_check: Duration::from_secs(2),
            stop_grace: Duration::from_secs(5),
            spawn_settle: Duration::from_secs(10),
            poll: Duration::from_millis(100),
            submit_check: super::delivery::SUBMIT_CHECK_WAIT,
            submit_grace: super::delivery::SUBMIT_GRACE,
            settle: Duration::from_millis(500),
            paste_show: Duration::from_secs(5),
            hold_check: Duration::from_millis(500),
            dialog_confirm: Duration::from_secs(2),
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
    /// The running `the-loop` binary: what harnesses report to (`<bin> hook …`, SPEC
    /// §17), first on every session's `PATH` and its `THE_LOOP_BIN` (SPEC §16.5).
    pub bin: PathBuf,
    pub timings: Timings,
    /// `workspaces.root`, absolute: where worktrees go (SPEC §16.1).
    pub workspaces_root: PathBuf,
    /// Claude Code's global config, where directories are marked trusted (SPEC §16.6);
    /// `None`: no home directory, nothing is marked.
    pub claude_config: Option<PathBuf>,
    /// What setup commands get of the environment (SPEC §14.4).
    pub child_env: crate::secrets::ChildEnv,
    /// `ship.draft`: a pull request the-loop opens starts as a draft (SPEC §19.4).
    pub ship_draft: bool,
    /// `sessions.budgetUsd`, `budgets.dailyUsd` and the prices (SPEC §20.4).
    pub budgets: crate::usage::Budgets,
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
            workspaces_root: crate::workspace::root_dir(&config.workspaces, paths),
            claude_config: crate::workspace::trust::config_file(),
            child_env: config.child_env(),
            ship_draft: config.ship.draft,
            budgets: crate::usage::Budgets::from_config(config),
        })
    }

    pub(crate) fn submit_delay(&self) -> Duration {
        Duration::from_millis(self.sessions.tmux.submit_delay_ms)
    }

    /// Whether the item's repository is in `repos[]` (nothing spawns for any other).
    pub(crate) fn watches(&self, item: &WorkItemRef) -> bool {
        let repo = item.repo_full_name();
        self.repos
            .iter()
            .any(|r| r.name.eq_ignore_ascii_case(&repo))
    }

    /// The config entry of the item's repository.
    pub(crate) fn repo(&self, item: &WorkItemRef) -> Option<&RepoConfig> {
        let repo = item.repo_full_name();
        self.repos
            .iter()
            .find(|r| r.name.eq_ignore_ascii_case(&repo))
    }

    /// The codex policy the item's sessions run under: the repo's keys over the global.
    pub(crate) fn codex_policy(&self, item: &WorkItemRef) -> crate::config::CodexPolicy {
        let global = self.sessions.codex;
        match self.repo(item).and_then(|r| r.codex) {
            Some(over) => global.with(over),
            None => global,
        }
    }

    /// The opencode policy the item's sessions run under: the repo's keys over the global.
    pub(crate) fn opencode_policy(&self, item: &WorkItemRef) -> crate::config::OpencodePolicy {
        let global = self.sessions.opencode.permission;
        match self.repo(item).and_then(|r| r.opencode) {
            Some(over) => global.with(over),
            None => global,
        }
    }

    /// The harness the item's sessions run: the repo's, else `sessions.harness`.
    pub(crate) fn harness_for(&self, item: &WorkItemRef) -> &str {
        self.repo(item)
            .and_then(|r| r.harness.as_deref())
            .unwrap_or(&self.sessions.harness)
    }

    /// The permission mode the item's sessions start in: the repo's, else the global one.
    pub(crate) fn permission_mode(&self, item: &WorkItemRef) -> PermissionMode {
        self.repo(item)
            .and_then(|r| r.permission_mode)
            .unwrap_or(self.sessions.permission_mode)
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
