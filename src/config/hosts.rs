//! `hosts:` and `repos[].host` (issue 32): other machines a repo's sessions, worktrees,
//! setup and critics run on, reached with the operator's own `ssh`. This module owns the
//! entry's type, its defaults and its rules; `validate` calls [`check`].

use super::Config;
use super::locate::KeyPath;
use super::validate::Problem;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::PathBuf;

/// Refused as a host name: it is how the-loop speaks of this machine.
pub const LOCAL_HOST_NAME: &str = "local";

/// The longest `hosts[].name`.
pub const MAX_HOST_NAME_CHARS: usize = 32;

/// `hosts[].tmux` unless configured.
pub const DEFAULT_REMOTE_TMUX: &str = "tmux";

/// `hosts[].stateDir` unless configured (on the remote host).
pub const DEFAULT_REMOTE_STATE_DIR: &str = "~/.local/state/the-loop";

/// `hosts[].connectTimeoutSeconds` unless configured, and its bounds.
pub const DEFAULT_CONNECT_TIMEOUT_SECONDS: u64 = 10;
pub const MAX_CONNECT_TIMEOUT_SECONDS: u64 = 120;

/// `hosts[].serverAliveSeconds` unless configured, and its bounds.
pub const DEFAULT_SERVER_ALIVE_SECONDS: u64 = 15;
pub const MAX_SERVER_ALIVE_SECONDS: u64 = 600;

/// One machine reached over SSH. The GitHub token never goes to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HostConfig {
    /// How `repos[].host` names this host: letters, digits, `-`, `_`; 1–32 characters.
    pub name: String,
    /// The destination as the operator's own `ssh` takes it: `dev@build-1`, a `Host`
    /// alias of `~/.ssh/config`, or `ssh://user@host:2222`. Passed to ssh as one argv
    /// element, so it may not start with `-` (it would be read as an option).
    pub ssh: String,
    /// An ssh_config file given to ssh as `-F` (`~` expanded at use, on this machine).
    #[serde(default)]
    pub ssh_config: Option<String>,
    /// The tmux program on the remote host: a name looked up on its `PATH`, or a path.
    #[serde(default = "default_tmux")]
    pub tmux: String,
    /// The-loop's state directory on the remote host. Kept as written: a leading `~/`
    /// is the remote user's home and is expanded on the far side, never here.
    #[serde(default = "default_state_dir")]
    pub state_dir: String,
    /// ssh's `ConnectTimeout`, 1–120.
    #[serde(default = "default_connect_timeout")]
    pub connect_timeout_seconds: u64,
    /// ssh's `ServerAliveInterval`, 1–600.
    #[serde(default = "default_server_alive")]
    pub server_alive_seconds: u64,
}

impl HostConfig {
    /// A host entry with every optional key at its default.
    pub fn new(name: &str, ssh: &str) -> Self {
        Self {
            name: name.to_string(),
            ssh: ssh.to_string(),
            ssh_config: None,
            tmux: default_tmux(),
            state_dir: default_state_dir(),
            connect_timeout_seconds: default_connect_timeout(),
            server_alive_seconds: default_server_alive(),
        }
    }

    /// `sshConfig` with a leading `~` expanded (the file is read by the local ssh).
    pub fn ssh_config_file(&self) -> Option<PathBuf> {
        self.ssh_config
            .as_deref()
            .map(|p| crate::paths::expand_tilde(p.trim()))
    }
}

fn default_tmux() -> String {
    DEFAULT_REMOTE_TMUX.to_string()
}

fn default_state_dir() -> String {
    DEFAULT_REMOTE_STATE_DIR.to_string()
}

fn default_connect_timeout() -> u64 {
    DEFAULT_CONNECT_TIMEOUT_SECONDS
}

fn default_server_alive() -> u64 {
    DEFAULT_SERVER_ALIVE_SECONDS
}

impl Config {
    /// The `hosts:` entry called `name`.
    pub fn host(&self, name: &str) -> Option<&HostConfig> {
        self.hosts.iter().find(|h| h.name == name)
    }

    /// The host the repo `owner/name` runs on; `None` for a local (or unknown) repo.
    pub fn host_of(&self, repo: &str) -> Option<&HostConfig> {
        let repo = self
            .repos
            .iter()
            .find(|r| r.name.eq_ignore_ascii_case(repo))?;
        self.host(repo.host.as_deref()?)
    }
}

/// The rules of `hosts[]` and `repos[].host`.
pub(super) fn check(config: &Config, out: &mut Vec<Problem>) {
    let mut first_seen: HashMap<String, usize> = HashMap::new();
    for (i, host) in config.hosts.iter().enumerate() {
        let at = |key: &str| KeyPath::root().key("hosts").index(i).key(key);
        if let Some(why) = name_problem(&host.name) {
            out.push(Problem::new(at("name"), why));
        } else {
            // One host, one name: `Build` and `build` would be told apart by case only.
            match first_seen.get(&host.name.to_ascii_lowercase()) {
                Some(first) => out.push(Problem::new(
                    at("name"),
                    format!(
                        "`{}` is already the name of hosts[{first}]; give each host its own name",
                        host.name
                    ),
                )),
                None => {
                    first_seen.insert(host.name.to_ascii_lowercase(), i);
                }
            }
        }
        if let Some(why) = argv_word_problem(&host.ssh) {
            out.push(Problem::new(
                at("ssh"),
                format!(
                    "{why}; write the destination as your own ssh takes it, e.g. `dev@build-1`, a Host alias, or `ssh://dev@build-1:2222`"
                ),
            ));
        }
        if let Some(file) = &host.ssh_config
            && (file.trim().is_empty() || file.chars().any(char::is_control))
        {
            out.push(Problem::new(
                at("sshConfig"),
                "must be the path of an ssh_config file (e.g. `~/.ssh/config-build`), without control characters; leave it out for ssh's own",
            ));
        }
        if let Some(why) = argv_word_problem(&host.tmux) {
            out.push(Problem::new(
                at("tmux"),
                format!(
                    "{why}; write the remote tmux program, e.g. `tmux` or `/usr/local/bin/tmux`"
                ),
            ));
        }
        if let Some(why) = remote_dir_problem(&host.state_dir) {
            out.push(Problem::new(
                at("stateDir"),
                format!(
                    "{why}; write an absolute path or one under the remote home, e.g. `{DEFAULT_REMOTE_STATE_DIR}`"
                ),
            ));
        }
        for (key, value, max, default) in [
            (
                "connectTimeoutSeconds",
                host.connect_timeout_seconds,
                MAX_CONNECT_TIMEOUT_SECONDS,
                DEFAULT_CONNECT_TIMEOUT_SECONDS,
            ),
            (
                "serverAliveSeconds",
                host.server_alive_seconds,
                MAX_SERVER_ALIVE_SECONDS,
                DEFAULT_SERVER_ALIVE_SECONDS,
            ),
        ] {
            if !(1..=max).contains(&value) {
                out.push(Problem::new(
                    at(key),
                    format!("must be between 1 and {max} (seconds), got {value}; the default is {default}"),
                ));
            }
        }
    }
    check_repo_hosts(config, out);
}

/// Every `repos[].host` names a `hosts:` entry, and such a repo's `path` is a directory
/// there: its sessions run in it (or in worktrees of it), and nothing here can guess it.
fn check_repo_hosts(config: &Config, out: &mut Vec<Problem>) {
    for (i, repo) in config.repos.iter().enumerate() {
        let Some(name) = &repo.host else { continue };
        if config.host(name).is_some() {
            let why = match repo.path.as_deref() {
                None => Some("missing"),
                Some("~") => None,
                Some(path) => remote_dir_problem(path),
            };
            if let Some(why) = why {
                let at = KeyPath::root().key("repos").index(i);
                let at = if repo.path.is_some() {
                    at.key("path")
                } else {
                    at
                };
                out.push(Problem::new(
                    at,
                    format!(
                        "path {why}: a repo on host `{name}` runs its sessions in a directory there; write an absolute path or one under the remote home, e.g. `~/src/{}`",
                        repo.name.rsplit('/').next().unwrap_or("repo")
                    ),
                ));
            }
            continue;
        }
        let known: Vec<String> = config
            .hosts
            .iter()
            .map(|h| format!("`{}`", h.name))
            .collect();
        let known = if known.is_empty() {
            "none are defined under `hosts:`".to_string()
        } else {
            format!("the known hosts are {}", known.join(", "))
        };
        out.push(Problem::new(
            KeyPath::root().key("repos").index(i).key("host"),
            format!(
                "unknown host `{name}`; {known}; leave `host` out to run this repo's sessions on this machine"
            ),
        ));
    }
}

/// Why `name` cannot name a host.
fn name_problem(name: &str) -> Option<String> {
    let chars = name.chars().count();
    if chars == 0 || chars > MAX_HOST_NAME_CHARS {
        return Some(format!(
            "must be 1 to {MAX_HOST_NAME_CHARS} characters, got {chars}; e.g. `build-1`"
        ));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Some("may hold only letters, digits, `-` and `_`; e.g. `build-1`".to_string());
    }
    if name.eq_ignore_ascii_case(LOCAL_HOST_NAME) {
        return Some(format!(
            "`{name}` is reserved for this machine; choose another name (repos without `host` run here)"
        ));
    }
    None
}

/// Why `value` cannot go to a program as one argv element of its own. The value is not
/// quoted back: it may hold control characters.
fn argv_word_problem(value: &str) -> Option<&'static str> {
    if value.is_empty() {
        Some("empty")
    } else if value.starts_with('-') {
        Some("may not start with `-` (ssh would read it as an option)")
    } else if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        Some("may not contain whitespace or control characters")
    } else {
        None
    }
}

/// Why `dir` is not a directory on the remote host: absolute, or `~/…` (the remote home).
fn remote_dir_problem(dir: &str) -> Option<&'static str> {
    if dir.is_empty() {
        Some("empty")
    } else if dir.chars().any(char::is_control) {
        Some("may not contain control characters")
    } else if !(dir.starts_with('/') || dir.starts_with("~/")) {
        Some("must start with `/` or `~/` (the remote user's home)")
    } else {
        None
    }
}

#[cfg(test)]
#[path = "hosts_tests.rs"]
mod tests;
