//! Live reload (SPEC §2): the config watcher publishes each valid change (and each
//! failure); this task pushes a new config into every part that reads it — the poll
//! loop, the dispatcher's router, the session lifecycle — and restarts the HTTP server
//! when the `server` section changed.

use super::health::{StatusCell, WarningSources, restart_warning};
use super::http::HttpServer;
use super::polling::stopped;
use crate::config::watch::{ConfigWatch, changed_sections};
use crate::config::{Config, LoadedConfig};
use crate::events::Source;
use crate::paths::StatePaths;
use crate::session::{Dispatcher, Settings};
use crate::usage::Budgets;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// Everything a reload touches.
pub(crate) struct Targets {
    pub dispatcher: Dispatcher,
    pub paths: StatePaths,
    /// The poll loop reads the config in force from here.
    pub config: watch::Sender<Arc<Config>>,
    pub loaded: watch::Sender<Arc<LoadedConfig>>,
    /// The config the supervisor started with: what a restart-only change is against.
    pub started_with: Arc<Config>,
    pub http: Option<Arc<HttpServer>>,
    pub status: StatusCell,
    pub warnings: Arc<Mutex<WarningSources>>,
    /// Signs what a reload tells (a budget it crossed).
    pub source: Source,
}

impl Targets {
    /// Applies a config the watcher accepted.
    pub async fn apply(&self, new: Arc<LoadedConfig>) {
        let old = self.loaded.borrow().clone();
        let sections = changed_sections(&old.config, &new.config);
        self.dispatcher.set_config(&new.config);
        if sections.contains(&"events") {
            super::bound_log(&self.dispatcher.sessions().events, &new.config);
        }
        let template_warning = match Settings::new(&new.config, new.path.clone(), &self.paths) {
            Ok(settings) => {
                let sessions = self.dispatcher.sessions();
                let old_budgets = sessions.settings().budgets.clone();
                let new_budgets = settings.budgets.clone();
                sessions.set_settings(settings);
                self.tell_budgets(old_budgets, new_budgets).await;
                None
            }
            Err(e) => Some(format!(
                "{e}; the previous prompt templates stay in use until this is fixed"
            )),
        };
        self.config.send_replace(Arc::new(new.config.clone()));
        self.loaded.send_replace(new.clone());
        self.status.set_config(&new);

        let server_warning = match &self.http {
            Some(http) if sections.contains(&"server") => Some(http.apply(&new.config).await),
            _ => None,
        };
        let sources = {
            let mut w = self.warnings.lock().unwrap_or_else(|e| e.into_inner());
            w.config = new.warnings.clone();
            w.config.extend(template_warning);
            if let Some(server) = server_warning {
                w.server = server;
            }
            w.restart = restart_warning(&self.started_with, &new.config);
            w.clone()
        };
        self.status.set_warnings(&sources);
    }
}

impl Targets {
    /// A budget the reload lowered under what is spent (or a model it priced) is told
    /// now, as usage crossing it is: not only at the next delivery's hold (SPEC §20.4).
    async fn tell_budgets(&self, old: Budgets, new: Budgets) {
        if old == new {
            return;
        }
        let registry = self.dispatcher.sessions().registry().clone();
        let events = self.dispatcher.sessions().events().clone();
        let source = self.source;
        let told = tokio::task::spawn_blocking(move || {
            crate::session::usage::tell_budgets_changed(&registry, &events, source, &old, &new)
        })
        .await;
        match told {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "budgets changed: the sessions could not be read")
            }
            Err(e) => tracing::warn!(error = %e, "budgets changed: the check did not finish"),
        }
    }
}

/// Follows the watcher until `stop` turns true (or the watcher is gone).
pub(crate) async fn follow(targets: Targets, watch: ConfigWatch, mut stop: watch::Receiver<bool>) {
    let mut config = watch.config();
    let mut error = watch.error();
    loop {
        tokio::select! {
            _ = stopped(&mut stop) => return,
            changed = config.changed() => {
                if changed.is_err() {
                    return;
                }
                let new = config.borrow_and_update().clone();
                targets.apply(new).await;
            }
            changed = error.changed() => {
                if changed.is_err() {
                    return;
                }
                let current = error.borrow_and_update().clone();
                targets.status.update(|s| s.reload_error = current);
            }
        }
    }
}
