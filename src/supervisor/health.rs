//! What a screen shows about the running supervisor (SPEC §11.1 status bar): the last
//! poll cycle, the rate limit, the HTTP server, config warnings and the last reload
//! error. One value behind a `watch` channel: writers replace parts of it, readers take
//! a snapshot or wait for the next change.

use crate::config::{Config, LoadedConfig};
use crate::github::RateInfo;
use crate::ingress::poller::CycleReport;
use crate::ingress::webhook::WebhookStatus;
use std::net::SocketAddr;
use std::time::Duration;
use time::OffsetDateTime;
use tokio::sync::watch;

/// The last `poll.cycle`, with when it finished.
#[derive(Debug, Clone, PartialEq)]
pub struct CycleSummary {
    pub at: OffsetDateTime,
    pub report: CycleReport,
}

/// The network listener (the webhook receiver and `/healthz`), SPEC §4.2, §14.1.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ServerState {
    /// `server.enabled: false` (or `run --once`).
    #[default]
    Off,
    Listening {
        addr: SocketAddr,
        /// Whether the webhook route needs a signature, accepts unsigned requests, or
        /// answers 404 (no secret).
        webhook: WebhookStatus,
        exposed: bool,
    },
    /// It could not bind (or stopped with an error); polling carries on.
    Failed { error: String },
}

/// A snapshot of the supervisor for a status bar.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SupervisorStatus {
    /// `owner/name` of every configured repo.
    pub repos: Vec<String>,
    pub polling_enabled: bool,
    pub poll_interval: Duration,
    pub last_cycle: Option<CycleSummary>,
    /// What GitHub's last answer said about the budget.
    pub rate: Option<RateInfo>,
    pub server: ServerState,
    /// Standing warnings: the config's own (an empty allowlist, `allowUnsigned`,
    /// `exposed`), the webhook route's, no token, changes that need a restart.
    pub warnings: Vec<String>,
    /// The last `config.reload_failed` error, until a reload succeeds.
    pub reload_error: Option<String>,
    /// `routing.authorizedUsers` is empty: nothing human-authored is acted on.
    pub allowlist_empty: bool,
    /// The GitHub client has no token: reads go out anonymously, posts fail.
    pub anonymous: bool,
}

/// The warning shown while no token is available.
pub const NO_TOKEN_WARNING: &str = "no GitHub token (GH_TOKEN, GITHUB_TOKEN or `gh auth token`): polling anonymously (60 requests an hour; 304s are free), and give-up notices cannot be posted";

/// Sections whose changes only a restart applies: the GitHub client (API URL, token
/// identity in its ETag keys) and the tmux server are built once.
pub(crate) fn restart_warning(old: &Config, new: &Config) -> Option<String> {
    let mut changed = Vec::new();
    if old.github != new.github {
        changed.push("github");
    }
    if old.sessions.tmux.socket != new.sessions.tmux.socket {
        changed.push("sessions.tmux.socket");
    }
    // The connections to other hosts (and which repos use them) are set up at start.
    if old.hosts != new.hosts {
        changed.push("hosts");
    }
    // Repos on another host, by name: adding or editing a local repo stays live.
    let repo_hosts = |c: &Config| -> std::collections::BTreeMap<String, String> {
        c.repos
            .iter()
            .filter_map(|r| Some((r.name.to_ascii_lowercase(), r.host.clone()?)))
            .collect()
    };
    if repo_hosts(old) != repo_hosts(new) {
        changed.push("repos[].host");
    }
    // The tmux layer keeps the environment policy it started with.
    if old.child_env() != new.child_env() {
        changed.push("sessions.passEnv (or server.webhookSecretEnv, for new sessions)");
    }
    (!changed.is_empty()).then(|| {
        format!(
            "{} changed: restart the supervisor to apply it",
            changed.join(" and ")
        )
    })
}

/// Shared, cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct StatusCell {
    tx: watch::Sender<SupervisorStatus>,
}

/// The parts of the warnings that come from different places, recomputed together.
#[derive(Debug, Clone, Default)]
pub(crate) struct WarningSources {
    pub config: Vec<String>,
    pub server: Option<String>,
    /// Why there is no operator socket.
    pub operator: Option<String>,
    pub anonymous: bool,
    pub restart: Option<String>,
}

impl WarningSources {
    pub fn list(&self) -> Vec<String> {
        let mut out = self.config.clone();
        out.extend(self.server.clone());
        out.extend(self.operator.clone());
        if self.anonymous {
            out.push(NO_TOKEN_WARNING.to_string());
        }
        out.extend(self.restart.clone());
        out
    }
}

impl StatusCell {
    pub fn new(initial: SupervisorStatus) -> Self {
        Self {
            tx: watch::channel(initial).0,
        }
    }

    pub fn get(&self) -> SupervisorStatus {
        self.tx.borrow().clone()
    }

    pub fn subscribe(&self) -> watch::Receiver<SupervisorStatus> {
        self.tx.subscribe()
    }

    pub fn update(&self, f: impl FnOnce(&mut SupervisorStatus)) {
        self.tx.send_modify(f);
    }

    /// The config-derived parts, after a start or a reload.
    pub fn set_config(&self, loaded: &LoadedConfig) {
        let config = &loaded.config;
        self.update(|s| {
            s.repos = config.repos.iter().map(|r| r.name.clone()).collect();
            s.polling_enabled = config.polling.enabled;
            s.poll_interval = Duration::from_secs(config.polling.interval_seconds);
            s.allowlist_empty = config.routing.authorized_users.is_empty();
        });
    }

    pub fn set_warnings(&self, sources: &WarningSources) {
        let list = sources.list();
        self.update(|s| {
            s.warnings = list;
            s.anonymous = sources.anonymous;
        });
    }

    pub fn set_cycle(&self, report: &CycleReport, rate: RateInfo) {
        let summary = CycleSummary {
            at: OffsetDateTime::now_utc(),
            report: report.clone(),
        };
        self.update(|s| {
            s.last_cycle = Some(summary);
            s.rate = Some(rate);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restart_is_asked_only_for_what_cannot_change_live() {
        let old = Config::default();
        let mut new = old.clone();
        new.polling.interval_seconds = 60;
        new.sessions.tmux.submit_delay_ms = 10;
        assert_eq!(restart_warning(&old, &new), None);
        new.github.api_url = "http://127.0.0.1:1".into();
        new.sessions.tmux.socket = "other".into();
        let warning = restart_warning(&old, &new).unwrap();
        assert!(
            warning.starts_with("github and sessions.tmux.socket changed"),
            "{warning}"
        );
    }

    #[test]
    fn hosts_and_a_repos_host_need_a_restart() {
        let mut old = Config::default();
        old.repos
            .push(crate::config::RepoConfig::named("octo/repo"));
        let mut new = old.clone();
        new.hosts
            .push(crate::config::HostConfig::new("build", "dev@build-1"));
        assert_eq!(
            restart_warning(&old, &new).as_deref(),
            Some("hosts changed: restart the supervisor to apply it")
        );
        let old = new.clone();
        new.repos[0].host = Some("build".into());
        assert_eq!(
            restart_warning(&old, &new).as_deref(),
            Some("repos[].host changed: restart the supervisor to apply it")
        );
        // Another key of the repo, or another local repo, still applies live.
        let old = new.clone();
        new.repos[0].label = "agents".into();
        new.repos
            .push(crate::config::RepoConfig::named("octo/other"));
        assert_eq!(restart_warning(&old, &new), None);
    }

    #[test]
    fn warnings_keep_their_sources_apart() {
        let sources = WarningSources {
            config: vec!["routing.authorizedUsers: empty".into()],
            server: Some("the webhook route is off".into()),
            operator: None,
            anonymous: true,
            restart: None,
        };
        let cell = StatusCell::new(SupervisorStatus::default());
        cell.set_warnings(&sources);
        let status = cell.get();
        assert_eq!(status.warnings.len(), 3);
        assert_eq!(status.warnings[2], NO_TOKEN_WARNING);
        assert!(status.anonymous);
    }
}
