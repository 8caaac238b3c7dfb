//! The status bar's data (SPEC §11.1) for either role: the supervisor's own status when
//! this process runs it, otherwise what the event log and the lock file tell a viewer.

use super::feed::Observed;
use crate::config::LoadedConfig;
use crate::paths::StatePaths;
use crate::supervisor::lock;
use crate::tui::backend::{RateLimit, Role, StatusView};
use std::sync::Arc;
use tokio::sync::watch;

/// Whether this screen runs the supervisor (SPEC §11.6).
pub enum Supervision {
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
        Supervision::Viewer { .. } => viewer(loaded, observed, paths),
    };
    if tmux_unknown {
        view.config_warnings.push(TMUX_UNKNOWN.into());
    }
    view
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
    }
}
