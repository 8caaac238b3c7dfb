//! Live reload (SPEC §2): the supervisor watches its config file and applies a valid change
//! at once; an invalid one keeps the old config and says why until it is fixed.
//!
//! The file's *directory* is watched, not the file: editors save by writing a temp file
//! and renaming it over the original, which replaces the inode a file watch would follow.
//! Events are debounced (`notify-debouncer-full`) so one save is one reload; a reload
//! caught mid-write fails and the write's own closing event reloads again.
//!
//! Consumers read two `tokio::sync::watch` channels: the config in force, and the current
//! reload error (`None` once a good load follows) for the TUI status bar.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify_debouncer_full::notify::event::{AccessKind, AccessMode};
use notify_debouncer_full::notify::{EventKind, RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{
    DebounceEventResult, DebouncedEvent, Debouncer, RecommendedCache, new_debouncer,
};
use tokio::sync::watch;

use super::{Config, LoadedConfig};
use crate::events::{Event, EventLog, EventType, Level, Source};

/// Long enough to merge an editor's write-and-rename, short enough to feel immediate.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(300);

#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error(
        "no config file to watch (running on defaults); create one with `the-loop config init` and restart to have it reloaded live"
    )]
    NoFile,
    #[error("cannot watch {} for config changes: {source}", dir.display())]
    Watch {
        dir: PathBuf,
        source: notify_debouncer_full::notify::Error,
    },
}

/// A running watch. Dropping it stops watching; the channels keep their last values.
pub struct ConfigWatch {
    config: watch::Receiver<Arc<LoadedConfig>>,
    error: watch::Receiver<Option<String>>,
    _debouncer: Debouncer<RecommendedWatcher, RecommendedCache>,
}

impl std::fmt::Debug for ConfigWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigWatch")
            .field("path", &self.config.borrow().path)
            .field("error", &*self.error.borrow())
            .finish()
    }
}

impl ConfigWatch {
    /// Watches the file `initial` was loaded from. `source` is the supervisor's (`tui` or
    /// `cli`) for the `config.*` events.
    pub fn start(
        initial: LoadedConfig,
        events: EventLog,
        source: Source,
    ) -> Result<Self, WatchError> {
        Self::start_with(initial, events, source, DEFAULT_DEBOUNCE)
    }

    pub fn start_with(
        initial: LoadedConfig,
        events: EventLog,
        source: Source,
        debounce: Duration,
    ) -> Result<Self, WatchError> {
        let path = initial.path.clone().ok_or(WatchError::NoFile)?;
        let (reloader, (config, error)) = Reloader::new(path.clone(), initial, events, source);
        let dir = watched_dir(&path);
        let watch_err = |source| WatchError::Watch {
            dir: dir.clone(),
            source,
        };
        let mut debouncer = new_debouncer(debounce, None, move |result: DebounceEventResult| {
            reloader.on_events(result);
        })
        .map_err(watch_err)?;
        debouncer
            .watch(&dir, RecursiveMode::NonRecursive)
            .map_err(watch_err)?;
        Ok(Self {
            config,
            error,
            _debouncer: debouncer,
        })
    }

    /// The config in force; `changed()` wakes on every applied reload.
    pub fn config(&self) -> watch::Receiver<Arc<LoadedConfig>> {
        self.config.clone()
    }

    /// The last reload's error (file:line:col and message), `None` when the file is good.
    pub fn error(&self) -> watch::Receiver<Option<String>> {
        self.error.clone()
    }
}

fn watched_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The reload logic, apart from notify so it can be driven directly.
pub(crate) struct Reloader {
    path: PathBuf,
    file_name: Option<OsString>,
    config: watch::Sender<Arc<LoadedConfig>>,
    error: watch::Sender<Option<String>>,
    events: EventLog,
    source: Source,
}

/// The receiving ends a [`Reloader`] publishes to.
pub(crate) type Channels = (
    watch::Receiver<Arc<LoadedConfig>>,
    watch::Receiver<Option<String>>,
);

impl Reloader {
    pub(crate) fn new(
        path: PathBuf,
        initial: LoadedConfig,
        events: EventLog,
        source: Source,
    ) -> (Self, Channels) {
        let (config, config_rx) = watch::channel(Arc::new(initial));
        let (error, error_rx) = watch::channel(None);
        let reloader = Self {
            file_name: path.file_name().map(OsString::from),
            path,
            config,
            error,
            events,
            source,
        };
        (reloader, (config_rx, error_rx))
    }

    fn on_events(&self, result: DebounceEventResult) {
        match result {
            Ok(events) => {
                if events.iter().any(|e| self.concerns(e)) {
                    self.reload();
                }
            }
            Err(errors) => {
                for e in errors {
                    tracing::warn!(path = %self.path.display(), error = %e, "config watch error");
                }
            }
        }
    }

    /// A change to our file (its name in the watched directory). Reads — ours included —
    /// are not changes; a writer closing the file is (it has finished writing).
    fn concerns(&self, event: &DebouncedEvent) -> bool {
        let changes = match event.kind {
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
            EventKind::Access(_) => false,
            _ => true,
        };
        changes
            && event
                .paths
                .iter()
                .any(|p| p.file_name().map(OsString::from) == self.file_name)
    }

    /// Loads the file again and publishes or reports the result.
    pub(crate) fn reload(&self) {
        if !self.path.exists() {
            self.fail(format!(
                "{}: the config file was removed; keeping the last good config until it is back",
                self.path.display()
            ));
            return;
        }
        match super::load_file(&self.path).and_then(|new| new.check_placeholders().map(|()| new)) {
            Ok(new) => match self.emptied(&new.config) {
                Some(why) => self.fail(why),
                None => self.apply(new),
            },
            Err(e) => self.fail(e.to_string()),
        }
    }

    /// Why `new` is not taken although it is valid: it watches no repo, or trusts no one,
    /// where the running config does. Such a file is nearly always one caught mid-write
    /// (truncated first), and taking it would stop the supervisor watching and trusting
    /// anyone. (Starting with such a file is refused, or warned of, as before.)
    fn emptied(&self, new: &Config) -> Option<String> {
        let old = self.config.borrow().clone();
        let old = &old.config;
        let path = self.path.display();
        let mid_write = "(a file caught mid-write is reloaded when its write ends)";
        if new.repos.is_empty() && !old.repos.is_empty() {
            return Some(format!(
                "{path}: the new config has no repos, so nothing would be watched; the running config ({} repos) stays in force until the file has them again {mid_write}",
                old.repos.len()
            ));
        }
        if new.routing.authorized_users.is_empty() && !old.routing.authorized_users.is_empty() {
            return Some(format!(
                "{path}: the new config's routing.authorizedUsers is empty, so no one would be trusted to steer the agents; the running config ({} users) stays in force until the file names them again {mid_write}",
                old.routing.authorized_users.len()
            ));
        }
        None
    }

    fn apply(&self, new: LoadedConfig) {
        let old = self.config.borrow().clone();
        let sections = changed_sections(&old.config, &new.config);
        let had_error = self.error.borrow().is_some();
        if sections.is_empty() && new.warnings == old.warnings && !had_error {
            return; // saved without a change (or touched): nothing to announce
        }
        let event = Event::new(self.source, EventType::ConfigReloaded)
            .with("path", self.path.display().to_string())
            .with("sections", sections)
            .with("repos", new.config.repos.len())
            .with(
                "authorized_users",
                new.config.routing.authorized_users.len(),
            )
            .with_opt(
                "warnings",
                (!new.warnings.is_empty()).then(|| new.warnings.clone()),
            );
        self.config.send_replace(Arc::new(new));
        self.error.send_replace(None);
        let _ = self.events.emit(event);
    }

    fn fail(&self, error: String) {
        tracing::warn!(path = %self.path.display(), %error, "config reload failed; keeping the old config");
        let event = Event::new(self.source, EventType::ConfigReloadFailed)
            .level(Level::Error)
            .with("path", self.path.display().to_string())
            .with("error", error.as_str());
        // State first, then the event: whoever reacts to the event sees the new state.
        self.error.send_replace(Some(error));
        let _ = self.events.emit(event);
    }
}

/// The top-level sections (config key names) that differ, in file order.
pub fn changed_sections(old: &Config, new: &Config) -> Vec<&'static str> {
    let mut out = Vec::new();
    let mut check = |name, differs: bool| {
        if differs {
            out.push(name);
        }
    };
    check("github", old.github != new.github);
    check("repos", old.repos != new.repos);
    check("hosts", old.hosts != new.hosts);
    check("routing", old.routing != new.routing);
    check("polling", old.polling != new.polling);
    check("events", old.events != new.events);
    check("sessions", old.sessions != new.sessions);
    check("server", old.server != new.server);
    check("tui", old.tui != new.tui);
    check("budgets", old.budgets != new.budgets);
    check("pricing", old.pricing != new.pricing);
    check("critics", old.critics != new.critics);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::EventReader;

    fn load(path: &Path) -> LoadedConfig {
        super::super::load_file(path).unwrap()
    }

    const FAILED_TWICE_THEN_RELOADED: [&str; 3] = [
        "config.reload_failed",
        "config.reload_failed",
        "config.reloaded",
    ];

    /// The types of the events logged, in order.
    fn names(events: &EventLog) -> Vec<String> {
        EventReader::open(events.path(), Default::default())
            .unwrap()
            .map(|r| r.unwrap().event.event.as_str().to_string())
            .collect()
    }

    #[test]
    fn sections_name_what_differs() {
        let old = Config::default();
        let mut new = old.clone();
        assert!(changed_sections(&old, &new).is_empty());
        new.polling.interval_seconds = 60;
        new.routing.authorized_users.push("alice".into());
        new.tui.theme = "light".into();
        assert_eq!(changed_sections(&old, &new), ["routing", "polling", "tui"]);

        let mut remote = old.clone();
        remote
            .hosts
            .push(super::super::HostConfig::new("build", "dev@build-1"));
        assert_eq!(changed_sections(&old, &remote), ["hosts"]);
    }

    #[test]
    fn a_reload_to_no_repos_or_no_one_trusted_keeps_the_running_config() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        let good = "repos:\n  - name: octo/repo\nrouting:\n  authorizedUsers: [alice]\n";
        std::fs::write(&path, good).unwrap();
        let events = EventLog::open_path(dir.path().join("events.jsonl"));
        let (reloader, (config, error)) =
            Reloader::new(path.clone(), load(&path), events.clone(), Source::Cli);

        // Truncated first, as a write in place does: the empty file is caught.
        std::fs::write(&path, "").unwrap();
        reloader.reload();
        let err = error.borrow().clone().expect("refused");
        assert!(err.contains("no repos"), "{err}");
        assert!(
            err.contains("the running config (1 repos) stays in force"),
            "{err}"
        );
        assert!(!config.has_changed().unwrap(), "nothing published");
        assert_eq!(config.borrow().config.repos.len(), 1);

        std::fs::write(&path, "repos:\n  - name: octo/repo\n").unwrap();
        reloader.reload();
        let err = error.borrow().clone().expect("refused");
        assert!(err.contains("authorizedUsers"), "{err}");
        assert_eq!(config.borrow().config.routing.authorized_users, ["alice"]);

        // Written whole again: taken, the error cleared.
        std::fs::write(&path, good.replace("alice", "bob")).unwrap();
        reloader.reload();
        assert_eq!(*error.borrow(), None);
        assert_eq!(config.borrow().config.routing.authorized_users, ["bob"]);

        assert_eq!(names(&events), FAILED_TWICE_THEN_RELOADED);
        let failed = crate::events::lines::named(events.path(), "config.reload_failed");
        assert!(failed[0]["error"].as_str().unwrap().contains("no repos"));

        // A supervisor that runs without them already (a warning at start) reloads as
        // before: only losing them is refused.
        let bare = dir.path().join("bare.yaml");
        std::fs::write(&bare, "polling:\n  intervalSeconds: 30\n").unwrap();
        let (reloader, (config, error)) =
            Reloader::new(bare.clone(), load(&bare), events, Source::Cli);
        std::fs::write(&bare, "polling:\n  intervalSeconds: 45\n").unwrap();
        reloader.reload();
        assert_eq!(*error.borrow(), None);
        assert_eq!(config.borrow().config.polling.interval_seconds, 45);
    }

    #[test]
    fn reload_publishes_reports_and_clears() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        std::fs::write(&path, "polling:\n  intervalSeconds: 30\n").unwrap();
        let events = EventLog::open_path(dir.path().join("events.jsonl"));
        let (reloader, (config, error)) =
            Reloader::new(path.clone(), load(&path), events.clone(), Source::Cli);

        // Unchanged: nothing published, nothing logged.
        reloader.reload();
        assert!(!config.has_changed().unwrap());

        std::fs::write(&path, "polling:\n  intervalSeconds: 2\n").unwrap();
        reloader.reload();
        let err = error.borrow().clone().unwrap();
        assert!(err.contains("config.yaml:2:"), "{err}");
        assert_eq!(config.borrow().config.polling.interval_seconds, 30);

        std::fs::remove_file(&path).unwrap();
        reloader.reload();
        assert!(error.borrow().as_deref().unwrap().contains("removed"));

        std::fs::write(&path, "polling:\n  intervalSeconds: 45\n").unwrap();
        reloader.reload();
        assert_eq!(*error.borrow(), None);
        assert_eq!(config.borrow().config.polling.interval_seconds, 45);

        assert_eq!(names(&events), FAILED_TWICE_THEN_RELOADED);
    }
}
