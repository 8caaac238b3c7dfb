//! The in-process owner of every repository's ledger. The poller and the webhook path
//! share one [`LedgerStore`]: each change happens under its lock and is handed to the
//! state writer (serialized) before the lock is released, so writes land in the order
//! of the changes, neither path can overwrite the other's notes, and what is on disk is
//! always a state the process was in. The fsync runs on the writer's thread (SPEC
//! §15.6); a caller that must have the change on disk before going on awaits the
//! returned [`Durable`].

use super::{LEDGER_VERSION, Ledger, ledger_path, legacy_ledger_path, notes};
use crate::events::{Event, EventLog, EventType, Level, Source};
use crate::fsutil::{self, StateRead};
use crate::paths::StatePaths;
use crate::state_writer::{self, Durable};
use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

/// Shared, cheap to clone.
#[derive(Clone)]
pub struct LedgerStore {
    inner: Arc<Mutex<Inner>>,
}

impl std::fmt::Debug for LedgerStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LedgerStore").finish_non_exhaustive()
    }
}

struct Inner {
    paths: StatePaths,
    events: EventLog,
    /// Keyed by the lower-cased `owner/name`.
    repos: HashMap<String, Ledger>,
}

impl LedgerStore {
    pub fn new(paths: StatePaths, events: EventLog) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Inner {
                paths,
                events,
                repos: HashMap::new(),
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the repo's ledger (loaded from disk on first use) without saving.
    pub fn read<R>(&self, repo: &str, f: impl FnOnce(&Ledger) -> R) -> R {
        let mut inner = self.lock();
        f(inner.ledger(repo))
    }

    /// Runs `f` on the repo's ledger and hands the result to the state writer.
    pub fn update<R>(&self, repo: &str, f: impl FnOnce(&mut Ledger) -> R) -> (R, Durable) {
        let mut inner = self.lock();
        let result = f(inner.ledger(repo));
        let saved = inner.save(repo);
        (result, saved)
    }

    /// Runs `f` on the repo's ledger and hands the result to the state writer when `f`
    /// says the ledger changed (its second value).
    pub fn update_if<R>(
        &self,
        repo: &str,
        f: impl FnOnce(&mut Ledger) -> (R, bool),
    ) -> (R, Durable) {
        let mut inner = self.lock();
        let (result, changed) = f(inner.ledger(repo));
        let saved = if changed {
            inner.save(repo)
        } else {
            Durable::done()
        };
        (result, saved)
    }

    /// Runs `f` on the repo's ledger without writing it (see [`save`](Self::save)).
    pub fn modify<R>(&self, repo: &str, f: impl FnOnce(&mut Ledger) -> R) -> R {
        let mut inner = self.lock();
        f(inner.ledger(repo))
    }

    /// Hands the repo's ledger to the state writer.
    pub fn save(&self, repo: &str) -> Durable {
        self.lock().save(repo)
    }

    /// A copy of the repo's ledger (tests, the TUI).
    pub fn snapshot(&self, repo: &str) -> Ledger {
        self.read(repo, Ledger::clone)
    }

    /// Applies the `sessions reset` notes left for `repo` (see [`notes::forget_item`]) and
    /// deletes them once the ledger that reflects them is on disk. Returns the numbers.
    pub async fn apply_forget_notes(&self, repo: &str) -> io::Result<Vec<u64>> {
        let (notes, saved) = {
            let mut inner = self.lock();
            let notes = notes::pending_forgets(&inner.paths, repo);
            if notes.is_empty() {
                return Ok(Vec::new());
            }
            let ledger = inner.ledger(repo);
            for (number, _) in &notes {
                ledger.forget_item(*number);
            }
            (notes, inner.save(repo))
        };
        saved.wait().await?;
        for (_, path) in &notes {
            let _ = std::fs::remove_file(path);
        }
        Ok(notes.into_iter().map(|(n, _)| n).collect())
    }
}

fn key(repo: &str) -> String {
    repo.to_ascii_lowercase()
}

impl Inner {
    fn ledger(&mut self, repo: &str) -> &mut Ledger {
        let k = key(repo);
        if !self.repos.contains_key(&k) {
            let loaded = load(&self.paths, &self.events, repo);
            self.repos.insert(k.clone(), loaded);
        }
        self.repos.entry(k).or_insert_with(|| Ledger::fresh(repo))
    }

    fn save(&mut self, repo: &str) -> Durable {
        let path = ledger_path(&self.paths, repo);
        match self.repos.get(&key(repo)) {
            Some(ledger) => state_writer::write_json(&path, ledger),
            None => Durable::done(),
        }
    }
}

/// Reads a ledger; a missing one is fresh, a corrupt one (or one written by a newer
/// binary) is moved aside with a `state.corrupt` event, and the repo starts over as a
/// first cycle (which reads no history, so nothing old is delivered).
fn load(paths: &StatePaths, events: &EventLog, repo: &str) -> Ledger {
    adopt_legacy(paths, repo);
    let path = ledger_path(paths, repo);
    let corrupt = |moved_to: Option<std::path::PathBuf>, error: String| {
        let _ = events.emit(
            Event::new(Source::Poll, EventType::StateCorrupt)
                .level(Level::Warning)
                .with("path", path.display().to_string())
                .with_opt("moved_to", moved_to.map(|p| p.display().to_string()))
                .with("error", error),
        );
        Ledger::fresh(repo)
    };
    match fsutil::read_json_state::<Ledger>(&path) {
        Ok(StateRead::Missing) => Ledger::fresh(repo),
        Ok(StateRead::Ok(ledger)) if ledger.version > LEDGER_VERSION => {
            let error = format!(
                "ledger version {} is newer than this binary understands ({LEDGER_VERSION})",
                ledger.version
            );
            corrupt(fsutil::move_aside(&path).ok(), error)
        }
        Ok(StateRead::Ok(mut ledger)) => {
            ledger.repo = repo.to_string();
            ledger
        }
        Ok(StateRead::Corrupt { moved_to, error }) => corrupt(Some(moved_to), error),
        Err(e) => {
            // Unreadable (permissions): start fresh in memory; the next save reports
            // whether the file can be written at all.
            tracing::warn!(path = %path.display(), error = %e, "poll ledger unreadable");
            corrupt(None, format!("cannot read the ledger: {e}"))
        }
    }
}

/// Moves `repo`'s ledger from where an earlier release kept it ([`legacy_ledger_path`])
/// to its own name — only when the file says it is `repo`'s: two repositories could
/// share the old name, and the other one's ledger stays where it is (that repository
/// then starts as a first cycle, which delivers nothing old).
fn adopt_legacy(paths: &StatePaths, repo: &str) {
    let Some(legacy) = legacy_ledger_path(paths, repo) else {
        return;
    };
    let path = ledger_path(paths, repo);
    if path.exists() || !legacy.exists() {
        return;
    }
    match super::read_file(&legacy) {
        Ok(Some(ledger)) if ledger.repo.eq_ignore_ascii_case(repo) => {
            match std::fs::rename(&legacy, &path) {
                Ok(()) => {
                    tracing::info!(from = %legacy.display(), to = %path.display(), "poll ledger renamed")
                }
                Err(e) => {
                    tracing::warn!(from = %legacy.display(), error = %e, "poll ledger not renamed")
                }
            }
        }
        Ok(_) => {}
        Err(e) => {
            tracing::debug!(path = %legacy.display(), error = %e, "old poll ledger left as it is")
        }
    }
}
