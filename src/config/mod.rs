//! The operator config (SPEC §2): types with their defaults. Resolution and loading
//! live in `load`, parsing with located errors in `parse`, the rules in `validate`.

mod budgets;
mod codex_policy;
mod hosts;
pub mod load;
mod locate;
mod opencode;
pub mod parse;
mod permission_mode;
pub mod starter;
pub mod validate;
pub mod watch;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

pub use budgets::{BudgetsConfig, ModelPrice, PricingConfig};
pub use codex_policy::{
    ApprovalPolicy, CodexChannel, CodexPolicy, CodexPolicyOverride, SandboxMode,
};
pub use hosts::{
    DEFAULT_CONNECT_TIMEOUT_SECONDS, DEFAULT_REMOTE_STATE_DIR, DEFAULT_REMOTE_TMUX,
    DEFAULT_SERVER_ALIVE_SECONDS, HostConfig, LOCAL_HOST_NAME,
};
pub use load::{
    ConfigError, Environment, LoadedConfig, PathSource, ResolvedPath, load, load_file, resolve,
};
pub use locate::{KeyPath, Position};
pub use opencode::{
    OpencodeConfig, OpencodePolicy, OpencodePolicyOverride, OpencodeProvider, PermissionAction,
};
pub use parse::parse_str;
pub use permission_mode::PermissionMode;

/// The whole operator config. Every section has defaults, so an empty file is valid.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Config {
    pub github: GithubConfig,
    pub repos: Vec<RepoConfig>,
    /// Other machines repos' sessions run on, over SSH (`repos[].host` names one).
    pub hosts: Vec<HostConfig>,
    pub routing: RoutingConfig,
    pub polling: PollingConfig,
    pub events: EventsConfig,
    pub sessions: SessionsConfig,
    pub workspaces: WorkspacesConfig,
    pub ship: ShipConfig,
    pub server: ServerConfig,
    pub tui: TuiConfig,
    pub budgets: BudgetsConfig,
    pub pricing: PricingConfig,
    /// Critic entries stay raw here: an invalid entry is listed with its error rather
    /// than failing the whole file (SPEC §9.1). `critic::spec` validates them.
    pub critics: Vec<serde_norway::Value>,
}

impl Config {
    /// What child processes get of the environment (SPEC §14.4).
    pub fn child_env(&self) -> crate::secrets::ChildEnv {
        crate::secrets::ChildEnv::new(&self.server.webhook_secret_env, &self.sessions.pass_env)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct GithubConfig {
    pub api_url: String,
}

impl Default for GithubConfig {
    fn default() -> Self {
        Self {
            api_url: DEFAULT_API_URL.to_string(),
        }
    }
}

pub const DEFAULT_API_URL: &str = "https://api.github.com";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RepoConfig {
    /// `owner/name`.
    pub name: String,
    /// Working directory for this repo's sessions (`~` expanded at use). With `host`,
    /// a path on that host: never expanded or looked at on this machine.
    #[serde(default)]
    pub path: Option<String>,
    /// Watched items carry this label; `""` watches every open item.
    #[serde(default = "default_label")]
    pub label: String,
    #[serde(default = "yes")]
    pub issues: bool,
    #[serde(default = "yes")]
    pub pull_requests: bool,
    /// Where this repo's sessions work (SPEC §16.1).
    #[serde(default)]
    pub workspace: WorkspaceMode,
    /// The branch new work branches start from; `""` = the remote's default branch
    /// (`origin/HEAD`), else the checkout's current branch.
    #[serde(default)]
    pub base_branch: String,
    /// Commands run in a new worktree before the agent starts, each an argv list (never
    /// a shell); placeholders `{worktree}`, `{repoPath}`, `{branch}`.
    #[serde(default)]
    pub setup: Vec<Vec<String>>,
    /// The time each setup command may take.
    #[serde(default = "default_setup_timeout")]
    pub setup_timeout_seconds: u64,
    /// The harness this repo's sessions run, over `sessions.harness`.
    #[serde(default)]
    pub harness: Option<String>,
    /// This repo's sessions' permission mode, over `sessions.permissionMode`.
    #[serde(default)]
    pub permission_mode: Option<PermissionMode>,
    /// This repo's codex policy keys, over `sessions.codex`.
    #[serde(default)]
    pub codex: Option<CodexPolicyOverride>,
    /// This repo's opencode permission keys, over `sessions.opencode.permission`.
    #[serde(default)]
    pub opencode: Option<OpencodePolicyOverride>,
    /// The `hosts:` entry this repo's sessions, worktrees, setup and critics run on;
    /// none: this machine.
    #[serde(default)]
    pub host: Option<String>,
}

impl RepoConfig {
    /// A repo entry with every other key at its default.
    pub fn named(name: &str) -> Self {
        Self {
            name: name.to_string(),
            path: None,
            label: default_label(),
            issues: true,
            pull_requests: true,
            workspace: WorkspaceMode::default(),
            base_branch: String::new(),
            setup: Vec::new(),
            setup_timeout_seconds: default_setup_timeout(),
            harness: None,
            permission_mode: None,
            codex: None,
            opencode: None,
            host: None,
        }
    }
}

/// Where a repo's sessions run (SPEC §16.1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkspaceMode {
    /// `worktree` when `path` is a git repository, else `shared`.
    #[default]
    Auto,
    /// A git worktree per work item under `workspaces.root`.
    Worktree,
    /// Every session in `path` itself.
    Shared,
}

impl WorkspaceMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Worktree => "worktree",
            Self::Shared => "shared",
        }
    }
}

/// The placeholders of `repos[].setup` arguments.
pub const SETUP_PLACEHOLDERS: &[&str] = &["{worktree}", "{repoPath}", "{branch}"];

fn default_setup_timeout() -> u64 {
    600
}

/// Where worktrees go (SPEC §16.1).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct WorkspacesConfig {
    /// `""` = `<state>/worktrees`; a leading `~` is expanded.
    pub root: String,
}

/// How a session's work goes out (SPEC §19.4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ShipConfig {
    /// A pull request the-loop opens is a draft unless the request says `--ready`.
    pub draft: bool,
}

impl Default for ShipConfig {
    fn default() -> Self {
        Self { draft: true }
    }
}

fn default_label() -> String {
    "the-loop".to_string()
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct RoutingConfig {
    pub authorized_users: Vec<String>,
    pub spawn: SpawnPolicy,
    pub deliver_edits: bool,
    pub keywords: Keywords,
}

impl Default for RoutingConfig {
    fn default() -> Self {
        Self {
            authorized_users: Vec::new(),
            spawn: SpawnPolicy::Command,
            deliver_edits: false,
            keywords: Keywords::default(),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SpawnPolicy {
    #[default]
    Command,
    Labeled,
    Never,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Keywords {
    pub start: String,
    pub stop: String,
    pub pause: String,
    pub resume: String,
}

impl Default for Keywords {
    fn default() -> Self {
        Self {
            start: "the-loop start".into(),
            stop: "the-loop stop".into(),
            pause: "the-loop pause".into(),
            resume: "the-loop resume".into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct PollingConfig {
    pub enabled: bool,
    /// Seconds between cycles; at least 5.
    pub interval_seconds: u64,
    pub max_retries: u32,
}

impl Default for PollingConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            interval_seconds: 30,
            max_retries: 3,
        }
    }
}

/// The event log's bounds (SPEC §15.5): `events.jsonl` rotates at `maxBytes` into
/// `events.jsonl.1` …, keeping `keepFiles` rotated files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct EventsConfig {
    pub max_bytes: u64,
    pub keep_files: u32,
}

impl EventsConfig {
    /// The event log's rotation bounds.
    pub fn rotation(&self) -> crate::events::Rotation {
        crate::events::Rotation::new(self.max_bytes, self.keep_files)
    }
}

/// 64 MiB.
pub const DEFAULT_EVENTS_MAX_BYTES: u64 = 64 * 1024 * 1024;

impl Default for EventsConfig {
    fn default() -> Self {
        Self {
            max_bytes: DEFAULT_EVENTS_MAX_BYTES,
            keep_files: 4,
        }
    }
}

/// `sessions.holdNotifySeconds` unless configured.
pub const DEFAULT_HOLD_NOTIFY_SECONDS: u64 = 60;

/// `sessions.commentsPerMinute` unless configured (SPEC §19.2).
pub const DEFAULT_COMMENTS_PER_MINUTE: u32 = 6;

/// The most `sessions.commentsPerMinute` may allow: GitHub itself slows an account
/// down at about 80 new comments a minute.
pub const MAX_COMMENTS_PER_MINUTE: u32 = 60;

/// The built-in harness names `sessions.harness` may name (their adapters: the `harness` module).
pub const BUILT_IN_HARNESSES: &[&str] = &["claude", "codex", "cursor", "opencode"];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct SessionsConfig {
    pub harness: String,
    pub harnesses: BTreeMap<String, HarnessConfig>,
    /// Event template file; `""` = built-in.
    pub prompt_template: String,
    /// Spawn (boot prompt) template file; `""` = built-in.
    pub spawn_prompt_template: String,
    /// Variables handed to sessions and critics even when they hold a secret (SPEC
    /// §14.4): by default the GitHub token variables and the webhook secret are withheld.
    pub pass_env: Vec<String>,
    pub tmux: TmuxConfig,
    /// Mark the directories Claude Code starts in as trusted (SPEC §16.6).
    pub trust_workspaces: bool,
    /// A delivery held this long notifies like a question (SPEC §18.3); 0 never does.
    pub hold_notify_seconds: u64,
    /// How many comments one session's agent may post (`the-loop comment`) in any
    /// minute (SPEC §19.2).
    pub comments_per_minute: u32,
    /// One session's cost at which its deliveries are held (SPEC §20.4), in USD; none
    /// when unset.
    pub budget_usd: Option<f64>,
    /// The permission mode Claude Code sessions start in (`--permission-mode`), unless
    /// the repo names its own.
    pub permission_mode: PermissionMode,
    /// `bypassPermissions` is refused unless this says so too.
    pub allow_bypass: bool,
    /// Codex's approval policy and sandbox (`--ask-for-approval`, `--sandbox`), unless
    /// the repo names its own; a policy that never asks needs `allowBypass` too.
    pub codex: CodexPolicy,
    /// How a local codex session is driven: its TUI alone (`paste`) or attached to an
    /// app server the-loop starts for it (`app-server`).
    pub codex_channel: CodexChannel,
    /// opencode's sessions: the model, its providers, the permission policy.
    pub opencode: OpencodeConfig,
    /// After a limit, the session gets one short framed note that its previous turn
    /// ended on it (issue 43); by default it gets nothing but what waited.
    pub resume_after_limit: bool,
    /// A rate limit or overload backs off this long after the first failed turn,
    /// doubling (with jitter) after each next one.
    pub limit_backoff_seconds: u64,
    /// The most a back-off waits.
    pub limit_backoff_max_seconds: u64,
    /// Added to a usage limit's printed reset (Claude Code prints it to the minute).
    pub limit_reset_margin_seconds: u64,
}

impl Default for SessionsConfig {
    fn default() -> Self {
        Self {
            harness: "claude".into(),
            harnesses: BTreeMap::new(),
            prompt_template: String::new(),
            spawn_prompt_template: String::new(),
            pass_env: Vec::new(),
            tmux: TmuxConfig::default(),
            trust_workspaces: true,
            hold_notify_seconds: DEFAULT_HOLD_NOTIFY_SECONDS,
            comments_per_minute: DEFAULT_COMMENTS_PER_MINUTE,
            budget_usd: None,
            permission_mode: PermissionMode::default(),
            allow_bypass: false,
            codex: CodexPolicy::default(),
            codex_channel: CodexChannel::default(),
            opencode: OpencodeConfig::default(),
            resume_after_limit: false,
            limit_backoff_seconds: 30,
            limit_backoff_max_seconds: 15 * 60,
            limit_reset_margin_seconds: 60,
        }
    }
}

/// A custom or overriding harness (SPEC §7.2). Argv only, never a shell.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct HarnessConfig {
    pub command: String,
    pub args: Vec<String>,
    pub resume_args: Vec<String>,
    pub oneshot_args: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct TmuxConfig {
    /// `tmux -L` socket name; `""` = the operator's default server.
    pub socket: String,
    pub remain_on_exit: bool,
    pub resume_on_respawn: bool,
    pub submit_delay_ms: u64,
    pub probe_timeout_seconds: u64,
}

impl Default for TmuxConfig {
    fn default() -> Self {
        Self {
            socket: String::new(),
            remain_on_exit: true,
            resume_on_respawn: true,
            submit_delay_ms: 120,
            probe_timeout_seconds: 10,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ServerConfig {
    pub enabled: bool,
    pub listen: String,
    pub exposed: bool,
    pub webhook_path: String,
    pub webhook_secret_env: String,
    pub allow_unsigned: bool,
    pub max_body_bytes: usize,
    pub allowed_origins: Vec<String>,
    /// Open connections at most, per listener (SPEC §14.2); more are closed at once.
    pub max_connections: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            listen: "127.0.0.1:8787".into(),
            exposed: false,
            webhook_path: "/gh-webhook".into(),
            webhook_secret_env: crate::secrets::DEFAULT_WEBHOOK_SECRET_ENV.into(),
            allow_unsigned: false,
            max_body_bytes: 1_048_576,
            allowed_origins: Vec::new(),
            max_connections: 256,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct TuiConfig {
    pub theme: String,
    pub keymap: String,
    pub notify: NotifyMode,
    /// Mouse reporting (SPEC §21.1); `false` leaves the mouse to the terminal.
    pub mouse: bool,
}

impl Default for TuiConfig {
    fn default() -> Self {
        Self {
            theme: "default".into(),
            keymap: "default".into(),
            notify: NotifyMode::Bell,
            mouse: true,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NotifyMode {
    #[default]
    Bell,
    Desktop,
    None,
}

impl RepoConfig {
    /// The repo's working directory on this machine, with a leading `~` expanded.
    /// `None` for a repo on another host: its `path` is a path there, and means nothing
    /// here (a `~` in it is the remote user's home).
    pub fn working_dir(&self) -> Option<PathBuf> {
        if self.host.is_some() {
            return None;
        }
        self.path.as_deref().map(crate::paths::expand_tilde)
    }

    /// Whether this repo watches `item`, an issue-shaped GitHub item (an entry of the
    /// REST issues listing, or a webhook's `issue`): open, of a kind the repo watches
    /// (`issues`, `pullRequests`; an item with a non-null `pull_request` is a PR), and
    /// carrying [`RepoConfig::label`], ASCII-case-insensitively (`""` watches every open
    /// item). The one rule: the poller's watched list and `spawn: labeled` both use it.
    pub fn watches(&self, item: &serde_json::Value) -> bool {
        let is_pr = item.get("pull_request").is_some_and(|p| !p.is_null());
        let kind_ok = if is_pr {
            self.pull_requests
        } else {
            self.issues
        };
        let label_ok = self.label.is_empty()
            || item["labels"].as_array().is_some_and(|labels| {
                labels.iter().any(|l| {
                    l["name"]
                        .as_str()
                        .is_some_and(|n| n.eq_ignore_ascii_case(&self.label))
                })
            });
        item["state"].as_str() == Some("open") && kind_ok && label_ok
    }
}

#[cfg(test)]
mod coverage_tests;
#[cfg(test)]
mod watches_tests;
