//! The status bar's data (SPEC §11.1) for either role: the supervisor's own status when
//! this process runs it, otherwise what the event log and the lock file tell a viewer.

use super::log_follower::Observed;
use crate::config::LoadedConfig;
use crate::ingress::webhook::WebhookStatus;
use crate::paths::StatePaths;
use crate::session::SessionRecord;
use crate::session::limits::{self, Backoff, LimitKind, Standing};
use crate::supervisor::{ServerState, SupervisorStatus, lock};
use crate::tui::backend::{
    LimitView, PollSummary, RateLimit, Role, SessionView, StatusView, WebhookState,
};
use std::sync::Arc;
use time::OffsetDateTime;
use tokio::sync::watch;

/// Whether this screen runs the supervisor (SPEC §11.6).
pub enum Supervision {
    /// This process holds the lock: the status comes from the supervisor itself.
    Supervisor {
        status: watch::Receiver<SupervisorStatus>,
    },
    /// Another process holds the lock: this screen follows the log and never polls.
    /// It owns its copy of the config and reloads it when the supervisor logs a reload.
    Viewer {
        config: watch::Sender<Arc<LoadedConfig>>,
    },
}

/// The warning while tmux does not answer.
pub const TMUX_UNKNOWN: &str =
    "tmux is not answering: session states are unknown (nothing is treated as dead)";

/// The warning for a viewer whose supervisor has gone.
pub const NO_SUPERVISOR: &str = "no supervisor is running: nothing polls or delivers; quit and start `the-loop tui` again to supervise";

pub fn status_view(
    supervision: &Supervision,
    loaded: &LoadedConfig,
    observed: &Observed,
    paths: &StatePaths,
    tmux_unknown: bool,
) -> StatusView {
    let mut view = match supervision {
        Supervision::Supervisor { status } => supervisor(&status.borrow()),
        Supervision::Viewer { .. } => viewer(loaded, observed, paths),
    };
    if tmux_unknown {
        view.config_warnings.push(TMUX_UNKNOWN.into());
    }
    view
}

fn supervisor(s: &SupervisorStatus) -> StatusView {
    StatusView {
        role: Role::Supervisor,
        repos: s.repos.clone(),
        polling_enabled: s.polling_enabled,
        last_poll: s.last_cycle.as_ref().map(|c| PollSummary {
            at: c.at,
            items: c.report.items as u64,
            requests: c.report.requests,
            not_modified: c.report.not_modified,
            delivered: c.report.delivered as u64,
            dropped: c.report.dropped as u64,
            errors: c.report.errors as u64,
            rate_remaining: c.report.rate_remaining,
            duration_ms: u64::try_from(c.report.duration.as_millis()).unwrap_or(u64::MAX),
        }),
        rate: s.rate.as_ref().and_then(|r| {
            Some(RateLimit {
                remaining: r.remaining?,
                limit: r.limit,
            })
        }),
        webhook: match &s.server {
            ServerState::Off => WebhookState::Off,
            ServerState::Listening { addr, webhook, .. } => WebhookState::Listening {
                listen: addr.to_string(),
                signed: *webhook != WebhookStatus::Unsigned,
            },
            ServerState::Failed { error } => WebhookState::Failed(error.clone()),
        },
        config_warnings: s.warnings.clone(),
        reload_error: s.reload_error.clone(),
        allowlist_empty: s.allowlist_empty,
        // The screen's loop reads them beside each snapshot (`Backend::hosts`).
        hosts: Vec::new(),
        // From the records, beside the rows (`limit_view`).
        limit: None,
    }
}

fn viewer(loaded: &LoadedConfig, observed: &Observed, paths: &StatePaths) -> StatusView {
    let config = &loaded.config;
    let holder = lock::read_holder(paths);
    let mut warnings = loaded.warnings.clone();
    if holder.is_none() {
        warnings.push(NO_SUPERVISOR.into());
    }
    StatusView {
        role: Role::Viewer {
            pid: holder.map(|h| h.pid),
        },
        repos: config.repos.iter().map(|r| r.name.clone()).collect(),
        polling_enabled: config.polling.enabled,
        last_poll: observed.last_poll.clone(),
        rate: observed
            .last_poll
            .as_ref()
            .and_then(|p| p.rate_remaining)
            .map(|remaining| RateLimit {
                remaining,
                limit: None,
            }),
        webhook: observed.webhook.clone(),
        config_warnings: warnings,
        reload_error: observed.reload_error.clone(),
        allowlist_empty: config.routing.authorized_users.is_empty(),
        hosts: Vec::new(),
        // From the records, beside the rows (`limit_view`).
        limit: None,
    }
}

/// The status bar's limit (issue 43): the open sessions' limits that hold deliveries at
/// `now` — the longest one's end, whether a login expired — and the deliveries held on
/// them (the rows' counts); `None` while no limit holds. The waiting starts come from
/// the log, and are added by the caller.
pub fn limit_view(
    records: &[SessionRecord],
    rows: &[SessionView],
    backoff: &Backoff,
    now: OffsetDateTime,
) -> Option<LimitView> {
    let standing: Vec<_> = records
        .iter()
        .filter(|r| r.status.is_open())
        .filter_map(|r| {
            let limit = r.limit.as_ref()?;
            match limits::standing(limit, backoff, now) {
                Standing::Try => None,
                standing => Some((limit.kind, standing)),
            }
        })
        .collect();
    if standing.is_empty() {
        return None;
    }
    let login = standing
        .iter()
        .any(|(kind, _)| *kind == LimitKind::Authentication);
    let until = standing
        .iter()
        .filter_map(|(_, s)| match s {
            Standing::Holds { until } => *until,
            _ => None,
        })
        .max();
    let deliveries = rows
        .iter()
        .filter_map(|s| s.held.as_ref())
        .filter(|h| {
            matches!(
                h.reason,
                crate::session::delivery::HoldReason::Limit
                    | crate::session::delivery::HoldReason::Login
                    | crate::session::delivery::HoldReason::LimitMenu
            )
        })
        .map(|h| h.count)
        .sum();
    Some(LimitView {
        login,
        until: until.filter(|_| !login),
        deliveries,
        starts: 0,
    })
}

#[cfg(test)]
#[path = "supervision_tests.rs"]
mod tests;
