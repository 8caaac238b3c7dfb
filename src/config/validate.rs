//! The rules a config must satisfy beyond its types (SPEC §2), and the settings that are
//! legal but worth a warning. Pure functions over a parsed [`Config`]; `parse` attaches
//! file positions.

use super::locate::KeyPath;
use super::{CodexPolicy, Config, HarnessConfig, OpencodePolicy, PermissionMode};
use std::collections::HashMap;
use std::net::SocketAddr;

/// Faster polling burns the rate limit without making delivery noticeably quicker.
pub const MIN_POLL_INTERVAL_SECONDS: u64 = 5;

/// A smaller log would rotate every few events.
pub const MIN_EVENTS_MAX_BYTES: u64 = 64 * 1024;

/// A rule violation or warning at a key path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub path: KeyPath,
    pub message: String,
}

impl Problem {
    pub(super) fn new(path: KeyPath, message: impl Into<String>) -> Self {
        Self {
            path,
            message: message.into(),
        }
    }
}

/// Every rule violation, so the operator fixes them in one pass.
pub fn errors(config: &Config) -> Vec<Problem> {
    let mut out = Vec::new();
    check_polling(config, &mut out);
    check_events(config, &mut out);
    check_repos(config, &mut out);
    check_routing(config, &mut out);
    check_sessions(config, &mut out);
    check_server(config, &mut out);
    check_budgets(config, &mut out);
    check_permission_modes(config, &mut out);
    super::hosts::check(config, &mut out);
    out
}

/// Where a permission mode is set: the global key, then each repo's that names one.
fn permission_modes(config: &Config) -> impl Iterator<Item = (KeyPath, PermissionMode)> + '_ {
    let global = (
        KeyPath::parse("sessions.permissionMode"),
        config.sessions.permission_mode,
    );
    let repos = config.repos.iter().enumerate().filter_map(|(i, repo)| {
        let mode = repo.permission_mode?;
        Some((KeyPath::parse("repos").index(i).key("permissionMode"), mode))
    });
    std::iter::once(global).chain(repos)
}

/// Codex's policy where the config sets one: `sessions.codex`, then each repo's
/// `codex`, with the policy its sessions get.
fn codex_policies(config: &Config) -> impl Iterator<Item = (KeyPath, CodexPolicy)> + '_ {
    let global = config.sessions.codex;
    let repos = config
        .repos
        .iter()
        .enumerate()
        .filter_map(move |(i, repo)| {
            let over = repo.codex?;
            Some((
                KeyPath::parse("repos").index(i).key("codex"),
                global.with(over),
            ))
        });
    std::iter::once((KeyPath::parse("sessions.codex"), global)).chain(repos)
}

/// opencode's policy where the config sets one: `sessions.opencode.permission`, then
/// each repo's `opencode`, with the policy its sessions get.
fn opencode_policies(config: &Config) -> impl Iterator<Item = (KeyPath, OpencodePolicy)> + '_ {
    let global = config.sessions.opencode.permission;
    let repos = config
        .repos
        .iter()
        .enumerate()
        .filter_map(move |(i, repo)| {
            let over = repo.opencode?;
            Some((
                KeyPath::parse("repos").index(i).key("opencode"),
                global.with(over),
            ))
        });
    std::iter::once((KeyPath::parse("sessions.opencode.permission"), global)).chain(repos)
}

/// `bypassPermissions`, and a codex policy that never asks, run tool calls unasked while
/// the agent reads other people's words: each takes a second, explicit key.
fn check_permission_modes(config: &Config, out: &mut Vec<Problem>) {
    if config.sessions.allow_bypass {
        return;
    }
    for (path, policy) in codex_policies(config) {
        if policy.never_asks() {
            out.push(Problem::new(
                path,
                format!(
                    "codex `{policy}` runs commands without asking you while the agent reads comments from GitHub; set sessions.allowBypass: true as well if you mean it, or keep approvalPolicy on-request with a sandbox other than danger-full-access"
                ),
            ));
        }
    }
    for (path, policy) in opencode_policies(config) {
        if policy.never_asks() {
            out.push(Problem::new(
                path,
                format!(
                    "opencode `{policy}` runs tool calls without asking you while the agent reads comments from GitHub; set sessions.allowBypass: true as well if you mean it, or use ask (or deny)"
                ),
            ));
        }
    }
    for (path, mode) in permission_modes(config) {
        if mode == PermissionMode::BypassPermissions {
            out.push(Problem::new(
                path,
                "bypassPermissions runs every tool call unasked while the agent reads comments from GitHub; set sessions.allowBypass: true as well if you mean it, or choose default",
            ));
        }
    }
}

/// Budgets are positive amounts of USD; prices are amounts, 0 allowed (a free model).
fn check_budgets(config: &Config, out: &mut Vec<Problem>) {
    for (key, value) in [
        ("sessions.budgetUsd", config.sessions.budget_usd),
        ("budgets.dailyUsd", config.budgets.daily_usd),
    ] {
        if value.is_some_and(|v| !(v.is_finite() && v > 0.0)) {
            out.push(Problem::new(
                KeyPath::parse(key),
                "must be a positive amount of USD (e.g. 25); leave it out for no budget",
            ));
        }
    }
    for (model, price) in &config.pricing.models {
        if model.trim().is_empty() {
            out.push(Problem::new(
                KeyPath::parse("pricing.models"),
                "a model id is empty; name a model id or prefix, e.g. `claude-sonnet-4`",
            ));
        }
        for (field, value) in price.fields() {
            if !(value.is_finite() && value >= 0.0) {
                out.push(Problem::new(
                    KeyPath::parse("pricing.models")
                        .key(model.clone())
                        .key(field),
                    "must be a price in USD per million tokens, 0 or more",
                ));
            }
        }
    }
}

/// Legal settings that weaken a guard or make the tool do nothing.
pub fn warnings(config: &Config) -> Vec<Problem> {
    let mut out = Vec::new();
    if config.routing.authorized_users.is_empty() {
        out.push(Problem::new(
            KeyPath::parse("routing.authorizedUsers"),
            "empty: nothing human-authored will be acted on; add the GitHub logins allowed to steer the agents",
        ));
    }
    if config.server.allow_unsigned {
        out.push(Problem::new(
            KeyPath::parse("server.allowUnsigned"),
            "true: without a webhook secret, anyone who can reach the server can inject events; set a secret instead",
        ));
    }
    if config.server.exposed {
        out.push(Problem::new(
            KeyPath::parse("server.exposed"),
            "true: the webhook route (and /healthz) may be reached from beyond this machine; operator routes stay on the local socket; keep a webhook secret set",
        ));
    }
    for (path, mode) in permission_modes(config) {
        let warning = match mode {
            PermissionMode::BypassPermissions if config.sessions.allow_bypass => {
                "bypassPermissions (allowed by sessions.allowBypass): every tool call runs unasked, steered by comments from GitHub; nothing waits for you"
            }
            PermissionMode::Auto => {
                "auto: Claude Code runs the tool calls it judges lower-risk unasked, steered by comments from GitHub; only the rest wait for you"
            }
            _ => continue,
        };
        out.push(Problem::new(path, warning));
    }
    for (path, policy) in codex_policies(config) {
        if policy.never_asks() && config.sessions.allow_bypass {
            out.push(Problem::new(
                path,
                format!(
                    "codex `{policy}` (allowed by sessions.allowBypass): commands run without asking you, steered by comments from GitHub"
                ),
            ));
        }
    }
    for (path, policy) in opencode_policies(config) {
        if policy.never_asks() && config.sessions.allow_bypass {
            out.push(Problem::new(
                path,
                format!(
                    "opencode `{policy}` (allowed by sessions.allowBypass): tool calls run without asking you, steered by comments from GitHub"
                ),
            ));
        }
    }
    out
}

/// The starter's placeholders still in place (`config init` writes them): what to put
/// there instead. Whole names only, so a real `acme/your-repo-tools` is not one.
pub fn placeholders(config: &Config) -> Vec<Problem> {
    use super::starter::{LOGIN_PLACEHOLDER, OWNER_PLACEHOLDER, REPO_PLACEHOLDER};
    let is = |value: &str, placeholder: &str| value.trim().eq_ignore_ascii_case(placeholder);
    let mut out = Vec::new();
    for (i, repo) in config.repos.iter().enumerate() {
        let at = |key: &str| KeyPath::root().key("repos").index(i).key(key);
        let (owner, name) = repo.name.split_once('/').unwrap_or(("", &repo.name));
        if is(owner, OWNER_PLACEHOLDER) || is(name, REPO_PLACEHOLDER) {
            out.push(Problem::new(
                at("name"),
                format!(
                    "`{}` is a placeholder from the starter: put the repository to watch, as owner/name (e.g. `octo/repo`)",
                    repo.name
                ),
            ));
        }
        if let Some(path) = &repo.path
            && path.split('/').any(|part| is(part, REPO_PLACEHOLDER))
        {
            out.push(Problem::new(
                at("path"),
                format!(
                    "`{path}` is a placeholder from the starter: put the directory of your clone of that repository (e.g. `~/src/repo`)"
                ),
            ));
        }
    }
    for (i, login) in config.routing.authorized_users.iter().enumerate() {
        if is(login.trim_start_matches('@'), LOGIN_PLACEHOLDER) {
            out.push(Problem::new(
                KeyPath::root()
                    .key("routing")
                    .key("authorizedUsers")
                    .index(i),
                format!(
                    "`{login}` is a placeholder from the starter: put your own GitHub login (and those of the others allowed to steer the agents)"
                ),
            ));
        }
    }
    out
}

fn check_polling(config: &Config, out: &mut Vec<Problem>) {
    let interval = config.polling.interval_seconds;
    if interval < MIN_POLL_INTERVAL_SECONDS {
        out.push(Problem::new(
            KeyPath::parse("polling.intervalSeconds"),
            format!(
                "must be at least {MIN_POLL_INTERVAL_SECONDS} seconds, got {interval}; faster polling only spends the GitHub rate limit"
            ),
        ));
    }
}

fn check_events(config: &Config, out: &mut Vec<Problem>) {
    let max = config.events.max_bytes;
    if max < MIN_EVENTS_MAX_BYTES {
        out.push(Problem::new(
            KeyPath::parse("events.maxBytes"),
            format!("must be at least {MIN_EVENTS_MAX_BYTES} bytes (64 KiB), got {max}"),
        ));
    }
    if config.events.keep_files == 0 {
        out.push(Problem::new(
            KeyPath::parse("events.keepFiles"),
            "must be at least 1: a rotated log with no file kept would lose history at once",
        ));
    }
}

fn check_repos(config: &Config, out: &mut Vec<Problem>) {
    let mut first_seen: HashMap<String, usize> = HashMap::new();
    for (i, repo) in config.repos.iter().enumerate() {
        let path = KeyPath::root().key("repos").index(i).key("name");
        if !is_owner_and_name(&repo.name) {
            out.push(Problem::new(
                path,
                format!(
                    "expected `owner/name` (e.g. `octo/repo`), got `{}`",
                    repo.name
                ),
            ));
            continue;
        }
        check_workspace(i, repo, out);
        if let Some(harness) = repo.harness.as_deref()
            && !known_harness(config, harness)
        {
            out.push(Problem::new(
                KeyPath::root().key("repos").index(i).key("harness"),
                unknown_harness(config, harness),
            ));
        }
        // GitHub names are case-insensitive: `Octo/Repo` and `octo/repo` are one repo.
        match first_seen.get(&repo.name.to_ascii_lowercase()) {
            Some(first) => out.push(Problem::new(
                path,
                format!(
                    "`{}` is already listed at repos[{first}]; list each repo once",
                    repo.name
                ),
            )),
            None => {
                first_seen.insert(repo.name.to_ascii_lowercase(), i);
            }
        }
    }
}

/// `baseBranch`, `setup` and `setupTimeoutSeconds` of `repos[i]` (SPEC §16.1).
fn check_workspace(i: usize, repo: &super::RepoConfig, out: &mut Vec<Problem>) {
    let at = |key: &str| KeyPath::root().key("repos").index(i).key(key);
    let base = &repo.base_branch;
    if let Some(why) = branch_problem(base) {
        out.push(Problem::new(
            at("baseBranch"),
            format!("`{base}` is not a branch name: {why}; write a branch such as `main`, or \"\" for the remote's default"),
        ));
    }
    if repo.setup_timeout_seconds == 0 {
        out.push(Problem::new(
            at("setupTimeoutSeconds"),
            "must be greater than 0 (seconds); the default is 600",
        ));
    }
    for (n, argv) in repo.setup.iter().enumerate() {
        let path = at("setup").index(n);
        match argv.first() {
            None => out.push(Problem::new(
                path.clone(),
                "an empty command: write the executable and its arguments, e.g. `[npm, ci]`",
            )),
            Some(program) if program.trim().is_empty() || program.chars().any(char::is_whitespace) => {
                out.push(Problem::new(
                    path.clone().index(0),
                    format!("`{program}`: a command is one executable; put its arguments in the list after it (never a shell line)"),
                ))
            }
            Some(_) => {}
        }
        for (a, arg) in argv.iter().enumerate() {
            if let Some(unknown) = unknown_placeholder(arg) {
                out.push(Problem::new(
                    path.clone().index(a),
                    format!(
                        "unknown placeholder `{unknown}`; the known ones are {}",
                        super::SETUP_PLACEHOLDERS.join(", ")
                    ),
                ));
            }
        }
    }
}

/// Why `name` is not a branch git would accept (`""` is the default, fine).
fn branch_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return None;
    }
    if name.starts_with('-') {
        Some("it may not start with `-`")
    } else if name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        Some("it may not contain spaces or control characters")
    } else if name.contains("..") || name.contains("@{") || name.contains("//") {
        Some("it may not contain `..`, `@{` or `//`")
    } else if name
        .chars()
        .any(|c| matches!(c, '~' | '^' | ':' | '?' | '*' | '[' | '\\'))
    {
        Some("it may not contain `~ ^ : ? * [ \\`")
    } else if name.ends_with('/')
        || name.ends_with('.')
        || name.ends_with(".lock")
        || name.starts_with('/')
    {
        Some("it may not start with `/` or end with `/`, `.` or `.lock`")
    } else {
        None
    }
}

/// The first `{word}` in `arg` that is not a setup placeholder.
fn unknown_placeholder(arg: &str) -> Option<String> {
    crate::substitute::unknown(arg, super::SETUP_PLACEHOLDERS)
        .first()
        .map(|t| t.to_string())
}

/// `owner/name`, each part made of the characters GitHub allows (the rule refs use).
fn is_owner_and_name(name: &str) -> bool {
    use crate::work_item::valid_segment;
    name.split_once('/')
        .is_some_and(|(owner, repo)| valid_segment(owner) && valid_segment(repo))
}

fn check_routing(config: &Config, out: &mut Vec<Problem>) {
    for (i, login) in config.routing.authorized_users.iter().enumerate() {
        let bare = login.trim();
        let bare = bare.strip_prefix('@').unwrap_or(bare);
        if bare.trim().is_empty() {
            out.push(Problem::new(
                KeyPath::parse("routing.authorizedUsers").index(i),
                "an empty login matches nobody; write a GitHub login such as `alice`, or remove the entry",
            ));
        }
    }
}

/// Whether `name` is a harness the config can run: a built-in or a key of
/// `sessions.harnesses`.
fn known_harness(config: &Config, name: &str) -> bool {
    super::BUILT_IN_HARNESSES.contains(&name) || config.sessions.harnesses.contains_key(name)
}

/// "unknown harness `NAME`; expected …": the built-ins and the config's own.
fn unknown_harness(config: &Config, name: &str) -> String {
    let custom: Vec<String> = config
        .sessions
        .harnesses
        .keys()
        .map(|k| format!("`{k}`"))
        .collect();
    let custom = if custom.is_empty() {
        "none defined".to_string()
    } else {
        custom.join(", ")
    };
    let built_in: Vec<String> = super::BUILT_IN_HARNESSES
        .iter()
        .map(|h| format!("`{h}`"))
        .collect();
    format!(
        "unknown harness `{name}`; expected a built-in ({}) or a key of sessions.harnesses ({custom})",
        built_in.join(", ")
    )
}

fn check_sessions(config: &Config, out: &mut Vec<Problem>) {
    let sessions = &config.sessions;
    if !known_harness(config, &sessions.harness) {
        out.push(Problem::new(
            KeyPath::parse("sessions.harness"),
            unknown_harness(config, &sessions.harness),
        ));
    }
    for (name, harness) in &sessions.harnesses {
        check_harness(name, harness, out);
    }
    for (i, name) in sessions.pass_env.iter().enumerate() {
        let name = name.trim();
        if name.contains(|c: char| c == '=' || c == '\0' || c.is_whitespace()) {
            out.push(Problem::new(
                KeyPath::parse("sessions.passEnv").index(i),
                // Not quoted back: an entry written as `NAME=value` holds a secret.
                "not an environment variable name (it holds `=`, a space or NUL); list names only, e.g. `GH_TOKEN`, never a value",
            ));
        }
    }
    if !(1..=super::MAX_COMMENTS_PER_MINUTE).contains(&sessions.comments_per_minute) {
        out.push(Problem::new(
            KeyPath::parse("sessions.commentsPerMinute"),
            format!(
                "must be between 1 and {} (comments one session may post in a minute); the default is {}",
                super::MAX_COMMENTS_PER_MINUTE,
                super::DEFAULT_COMMENTS_PER_MINUTE
            ),
        ));
    }
    if sessions.tmux.probe_timeout_seconds == 0 {
        out.push(Problem::new(
            KeyPath::parse("sessions.tmux.probeTimeoutSeconds"),
            "must be greater than 0 (seconds); the default is 10",
        ));
    }
}

fn check_harness(name: &str, harness: &HarnessConfig, out: &mut Vec<Problem>) {
    let path = KeyPath::parse("sessions.harnesses")
        .key(name)
        .key("command");
    if harness.command.trim().is_empty() {
        out.push(Problem::new(
            path,
            "missing: a harness needs `command`, the executable to run (e.g. `command: my-agent`)",
        ));
    } else if harness.command.chars().any(char::is_whitespace) {
        out.push(Problem::new(
            path,
            format!(
                "`{}`: a command is one executable; put its arguments in args",
                harness.command
            ),
        ));
    }
}

fn check_server(config: &Config, out: &mut Vec<Problem>) {
    let server = &config.server;
    match server.listen.parse::<SocketAddr>() {
        Err(_) => out.push(Problem::new(
            KeyPath::parse("server.listen"),
            format!(
                "expected an IP address and port such as `127.0.0.1:8787`, got `{}`",
                server.listen
            ),
        )),
        Ok(addr) if !addr.ip().is_loopback() && !server.exposed => out.push(Problem::new(
            KeyPath::parse("server.listen"),
            format!(
                "`{addr}` is not a loopback address; set `server.exposed: true` to listen beyond this machine, or use `127.0.0.1:{}`",
                addr.port()
            ),
        )),
        Ok(_) => {}
    }
    if !server.webhook_path.starts_with('/') {
        out.push(Problem::new(
            KeyPath::parse("server.webhookPath"),
            format!(
                "must start with `/` (e.g. `/gh-webhook`), got `{}`",
                server.webhook_path
            ),
        ));
    }
    if server.max_body_bytes == 0 {
        out.push(Problem::new(
            KeyPath::parse("server.maxBodyBytes"),
            "must be greater than 0 (bytes); the default is 1048576",
        ));
    }
    if server.max_connections == 0 {
        out.push(Problem::new(
            KeyPath::parse("server.maxConnections"),
            "must be greater than 0 (open connections per listener); the default is 256",
        ));
    }
}
