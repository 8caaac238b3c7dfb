//! Workspaces (SPEC §16): every session of a git repository works in its own git
//! worktree, `<workspaces.root>/<owner>-<repo>/<N>`, on a branch that routes back to its
//! work item — so two agents never edit the same files or switch each other's branches,
//! and the operator's own checkout is never touched.
//!
//! This module is the one home of that concept; sessions, the CLI, critics and the TUI
//! call it:
//! - [`git`]: the git runner (argv, `git -C`, timeouts, `GIT_TERMINAL_PROMPT=0`, hooks off).
//! - [`Workspaces::place`] ([`create`]): the directory a session runs in — a new
//!   worktree, the existing one for the item (respawn, restart, `sessions start`), or
//!   `repos[].path` itself for a `shared` repo. Setup commands run in a new worktree.
//! - [`Workspaces::finish`] ([`ending`]): when a session stops or its item closes, a
//!   clean worktree whose commits are all in its base or pushed is removed with its
//!   branch; anything else is kept and the event says why. Only
//!   [`Workspaces::discard`] (`sessions reset --discard-workspace`) removes work.
//! - [`status`]: branch, changed files, commits ahead, and the diff against the base
//!   (the same material critics review).
//! - [`trust`]: Claude Code's trust mark for the directories the-loop starts it in.
//! - [`Workspaces::on`] / [`Workspaces::reaching`]: the same rules for a repo on another
//!   host (issue 32): its git there and its files through [`files`], over the host's
//!   connection; the records stay here, naming the host.
//!
//! Branch names, paths and setup argv come only from the config, the work-item ref and
//! git's own refs, never from GitHub text.

mod create;
pub mod diff_model;
mod ending;
mod files;
pub mod git;
mod process;
pub mod push;
mod setup;
pub mod status;
pub mod store;
pub mod trust;

#[cfg(any(test, feature = "test-support"))]
pub mod test_repo;

pub use ending::{Assessment, Finished};
pub use git::{Git, GitError};
pub use store::{Kind, StoreError, WorkspaceRecord};

use crate::config::{HostConfig, RepoConfig, WorkspaceMode, WorkspacesConfig};
use crate::events::{EventLog, Source};
use crate::paths::StatePaths;
use crate::ssh::Transport;
use crate::work_item::WorkItemRef;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use store::Store;

/// The branch prefix of every branch the-loop creates (`the-loop/issue-15`,
/// `the-loop/pr-7`); the router maps both back to their item (SPEC §5.2).
pub const BRANCH_PREFIX: &str = "the-loop/";

/// The branch of a new worktree for issue `number`.
pub fn issue_branch(number: u64) -> String {
    format!("{BRANCH_PREFIX}issue-{number}")
}

/// The local branch of a pull request from a fork.
pub fn fork_pull_branch(number: u64) -> String {
    format!("{BRANCH_PREFIX}pr-{number}")
}

/// Where a fork pull request's head is kept while its worktree exists.
fn fork_pull_ref(number: u64) -> String {
    format!("refs/the-loop/pull/{number}")
}

/// Why a session could not get its workspace. Every message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error(
        "{} is not a git repository ({stderr}): set repos[].workspace: shared to run sessions there without worktrees",
        path.display()
    )]
    NotARepository { path: PathBuf, stderr: String },
    #[error(
        "cannot tell which branch new work in {} starts from (no origin/HEAD, and the checkout is on no branch): set repos[].baseBranch",
        repo.display()
    )]
    NoBase { repo: PathBuf },
    #[error(
        "the base branch `{base}` exists neither on the remote nor locally in {}: fix repos[].baseBranch",
        repo.display()
    )]
    BaseMissing { base: String, repo: PathBuf },
    #[error(
        "{} exists but is not a worktree of {} for this work item; the-loop never writes over it: move it away, then start again",
        dir.display(),
        repo.display()
    )]
    DirExists { dir: PathBuf, repo: PathBuf },
    #[error("`{name}` is not a usable branch name ({why}): fix repos[].baseBranch")]
    InvalidBranch { name: String, why: String },
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("setup command `{command}` {outcome}; the worktree {} is kept, and a new start runs setup again", dir.display())]
    SetupFailed {
        command: String,
        /// `exited with 1: <stderr tail>`, `timed out after 600s`, …
        outcome: String,
        dir: PathBuf,
    },
    #[error("could not create {}: {error}", dir.display())]
    Io { dir: PathBuf, error: std::io::Error },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Refused(String),
}

/// Where a session runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Placement {
    /// In this directory, shared with every other session of the repo (a `shared` repo,
    /// a path that is not a git repository, or no `repos[].path`).
    Shared(PathBuf),
    /// In the item's own worktree.
    Worktree(Box<WorkspaceRecord>),
}

impl Placement {
    /// The session's working directory.
    pub fn cwd(&self) -> &Path {
        match self {
            Self::Shared(dir) => dir,
            Self::Worktree(record) => &record.cwd,
        }
    }

    pub fn record(&self) -> Option<&WorkspaceRecord> {
        match self {
            Self::Shared(_) => None,
            Self::Worktree(record) => Some(record),
        }
    }
}

/// The workspaces of one state root: where worktrees go, their records, the git runner
/// and the event log their events go to. Cheap to build; holds no open files.
#[derive(Debug, Clone)]
pub struct Workspaces {
    git: Git,
    root: PathBuf,
    store: Store,
    events: EventLog,
    /// What setup commands get of the environment (SPEC §14.4).
    child_env: crate::secrets::ChildEnv,
    /// The connections to the config's hosts, by name: a record that names one is
    /// reached there ([`Workspaces::reaching`]).
    hosts: Arc<BTreeMap<String, Arc<Transport>>>,
    /// The host these workspaces' git and files are on; `None`: this machine.
    host: Option<Arc<Transport>>,
}

impl Workspaces {
    /// `workspaces.root` (`""`: `<state>/worktrees`), records under `<state>/workspaces`.
    pub fn new(config: &WorkspacesConfig, paths: &StatePaths, events: EventLog) -> Self {
        Self::at(root_dir(config, paths), paths, events)
    }

    /// Worktrees under `root` (absolute).
    pub fn at(root: PathBuf, paths: &StatePaths, events: EventLog) -> Self {
        Self {
            git: Git::default(),
            root,
            store: Store::new(paths.workspaces_dir()),
            events,
            child_env: crate::secrets::ChildEnv::default(),
            hosts: Arc::default(),
            host: None,
        }
    }

    /// With the connections to the config's hosts, for worktrees made there.
    pub fn with_hosts(mut self, hosts: impl IntoIterator<Item = Arc<Transport>>) -> Self {
        self.hosts = Arc::new(
            hosts
                .into_iter()
                .map(|t| (t.name().to_string(), t))
                .collect(),
        );
        self
    }

    /// These workspaces as seen on `host`: its git and its files, over its connection
    /// (the store stays this machine's).
    pub fn on(&self, host: Arc<Transport>) -> Self {
        Self {
            git: self.git.clone().on(Arc::clone(&host)),
            host: Some(host),
            ..self.clone()
        }
    }

    /// With worktrees under `root` (on a host: a path there).
    pub(crate) fn rooted(mut self, root: PathBuf) -> Self {
        self.root = root;
        self
    }

    /// Where `record`'s worktree is reached: here, or on its host. A host no longer in
    /// the config is refused, saying so.
    pub fn reaching(&self, record: &WorkspaceRecord) -> Result<Self, WorkspaceError> {
        let Some(name) = &record.host else {
            return Ok(Self {
                host: None,
                git: if self.host.is_some() {
                    Git::default()
                } else {
                    self.git.clone()
                },
                ..self.clone()
            });
        };
        match self.hosts.get(name) {
            Some(host) => Ok(self.on(Arc::clone(host))),
            None => Err(WorkspaceError::Refused(format!(
                "the worktree {} of {} is on host `{name}`, which is not in the config's hosts: add it back to reach it",
                record.dir.display(),
                record.work_item
            ))),
        }
    }

    /// Whether these workspaces can be asked now: this machine, or a host that is up
    /// (a host that dropped would make each look wait for its connect timeout).
    pub fn reachable(&self) -> bool {
        self.host
            .as_ref()
            .is_none_or(|h| matches!(h.state(), crate::ssh::HostState::Up { .. }))
    }

    /// The host these workspaces are on (`None`: this machine).
    pub fn host(&self) -> Option<&str> {
        self.host.as_deref().map(Transport::name)
    }

    /// The environment policy for setup commands (the default withholds the token
    /// variables and the default webhook-secret variable).
    pub fn with_child_env(mut self, child_env: crate::secrets::ChildEnv) -> Self {
        self.child_env = child_env;
        self
    }

    pub fn with_git(mut self, git: Git) -> Self {
        self.git = git;
        self
    }

    pub fn git(&self) -> &Git {
        &self.git
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The worktree directory of `item`: `<root>/<owner>-<repo>/<N>`.
    pub fn dir_for(&self, item: &WorkItemRef) -> PathBuf {
        self.root
            .join(item.repo_dir_name())
            .join(item.number.to_string())
    }

    /// The item's workspace record, if the-loop made a worktree for it.
    pub fn record(&self, item: &WorkItemRef) -> Result<Option<WorkspaceRecord>, StoreError> {
        self.store.get(item)
    }

    /// Every workspace record.
    pub fn records(&self) -> Vec<WorkspaceRecord> {
        self.store.list()
    }

    /// Whether `dir` is one the-loop creates worktrees in (for the trust mark).
    pub fn owns(&self, dir: &Path) -> bool {
        let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        canon(dir).starts_with(canon(&self.root))
    }

    /// Logs `event`, naming the host when these workspaces are on one.
    pub(crate) fn emit(&self, mut event: crate::events::Event) {
        if let Some(host) = self.host()
            && !event.fields.contains_key("host")
        {
            event = event.with("host", host);
        }
        let _ = self.events.emit(event);
    }

    /// The mode a repo's sessions use: `auto` is `worktree` for a git repository.
    pub async fn mode_of(&self, repo: &RepoConfig) -> WorkspaceMode {
        match repo.working_dir() {
            None => WorkspaceMode::Shared,
            Some(path) => self.mode_at(repo.workspace, &path).await,
        }
    }

    /// `mode` for a repo at `path` (on a host: a path there): `auto` is `worktree` when
    /// `path` is in a git repository.
    async fn mode_at(&self, mode: WorkspaceMode, path: &Path) -> WorkspaceMode {
        match mode {
            WorkspaceMode::Auto if self.toplevel(path).await.is_ok() => WorkspaceMode::Worktree,
            WorkspaceMode::Auto => WorkspaceMode::Shared,
            other => other,
        }
    }

    /// The top directory of the repository `path` is in, and `path` relative to it.
    async fn toplevel(&self, path: &Path) -> Result<(PathBuf, PathBuf), WorkspaceError> {
        let out = self
            .git
            .run(path, &["rev-parse", "--show-toplevel", "--show-prefix"])
            .await?;
        let mut lines = out.stdout.lines();
        match (out.success, lines.next()) {
            (true, Some(top)) if !top.trim().is_empty() => Ok((
                PathBuf::from(top.trim()),
                PathBuf::from(lines.next().unwrap_or("").trim()),
            )),
            _ => Err(WorkspaceError::NotARepository {
                path: path.to_path_buf(),
                stderr: git::tail(&out.stderr),
            }),
        }
    }

    /// Where `item`'s session runs; see [`create`]. `source` is who asked, for events.
    pub async fn place(
        &self,
        item: &WorkItemRef,
        repo: Option<&RepoConfig>,
        source: Source,
    ) -> Result<Placement, WorkspaceError> {
        let Some((repo, path)) = repo.and_then(|r| Some((r, r.working_dir()?))) else {
            let here = std::env::current_dir().map_err(|error| WorkspaceError::Io {
                dir: PathBuf::from("."),
                error,
            })?;
            return Ok(Placement::Shared(here));
        };
        self.place_at(item, repo, path, source).await
    }

    /// Where `item`'s session of `repo` at `path` runs: `path` itself, or the item's
    /// worktree when the repo's mode asks for one. On a host ([`Workspaces::on`]),
    /// `path` and the worktrees ([`Workspaces::rooted`]) are paths there.
    pub(crate) async fn place_at(
        &self,
        item: &WorkItemRef,
        repo: &RepoConfig,
        path: PathBuf,
        source: Source,
    ) -> Result<Placement, WorkspaceError> {
        match self.mode_at(repo.workspace, &path).await {
            WorkspaceMode::Worktree => self
                .prepare(item, repo, &path, source)
                .await
                .map(|r| Placement::Worktree(Box::new(r))),
            _ => Ok(Placement::Shared(path)),
        }
    }
}

/// `workspaces.root` as an absolute path (`""`: `<state>/worktrees`).
pub fn root_dir(config: &WorkspacesConfig, paths: &StatePaths) -> PathBuf {
    let root = if config.root.trim().is_empty() {
        paths.worktrees_dir()
    } else {
        crate::paths::expand_tilde(config.root.trim())
    };
    std::path::absolute(&root).unwrap_or(root)
}

/// What `config check` says about each repo's workspace (SPEC §16.1): a line per repo.
/// A repo on another host is described as the config states it, without connecting.
pub async fn describe_modes(
    repos: &[RepoConfig],
    hosts: &[HostConfig],
    workspaces: &WorkspacesConfig,
    paths: &StatePaths,
) -> Vec<String> {
    let ws = Workspaces::new(workspaces, paths, EventLog::open(paths));
    let mut notes = Vec::new();
    for repo in repos {
        if let Some(host) = repo
            .host
            .as_deref()
            .and_then(|name| hosts.iter().find(|h| h.name == name))
        {
            notes.push(format!("repos {}: {}", repo.name, on_host_note(repo, host)));
            continue;
        }
        let (owner, name) = repo.name.split_once('/').unwrap_or((&repo.name, ""));
        let repo_dir = ws
            .root
            .join(WorkItemRef::new(owner, name, 1).repo_dir_name());
        let note = match (repo.workspace, repo.working_dir()) {
            (_, None) => "no path: sessions share the directory the supervisor runs in".into(),
            (WorkspaceMode::Shared, Some(p)) => {
                format!("workspace: shared — every session runs in {}", p.display())
            }
            (mode, Some(p)) => match ws.toplevel(&p).await {
                Ok(_) => format!(
                    "workspace: worktree — one git worktree per work item under {}",
                    repo_dir.display()
                ),
                Err(_) if mode == WorkspaceMode::Worktree => format!(
                    "workspace: worktree, but {} is not a git repository: sessions will fail to start",
                    p.display()
                ),
                Err(_) => format!(
                    "workspace: shared — {} is not a git repository, so every session runs there",
                    p.display()
                ),
            },
        };
        notes.push(format!("repos {}: {note}", repo.name));
    }
    notes
}

/// Where `repo`'s sessions work on `host`, as far as the config tells: whether its path
/// is a git repository there is for `the-loop hosts check` to find out.
fn on_host_note(repo: &RepoConfig, host: &HostConfig) -> String {
    let path = repo.path.as_deref().unwrap_or("(no path)");
    let worktrees = format!("{}/worktrees", host.state_dir.trim_end_matches('/'));
    let mode = match repo.workspace {
        WorkspaceMode::Shared => format!("workspace: shared — every session runs in {path}"),
        WorkspaceMode::Worktree => {
            format!("workspace: worktree — one git worktree per work item under {worktrees}")
        }
        WorkspaceMode::Auto => format!(
            "workspace: auto — one git worktree per work item under {worktrees} if {path} is a git repository, else every session runs in {path}"
        ),
    };
    format!(
        "on host `{}` ({}), paths there: {mode}; not checked from here — `the-loop hosts check {}` connects and checks",
        host.name, host.ssh, host.name
    )
}
