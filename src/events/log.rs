//! The writer: any process (the supervisor, the CLI, `the-loop ask` inside an agent's
//! pane) appends to the same file, so each line goes out in **one `write` call on an
//! `O_APPEND` file** — the kernel then places it whole at the end, never interleaved with
//! another writer's line. No lock file, no long-lived handle: the file is opened per
//! emit, which also follows a log that was deleted, replaced or rotated underneath us.
//!
//! The supervisor's log also rotates ([`EventLog::set_rotation`], SPEC §15.5): after a
//! line takes the file to `events.maxBytes` it is renamed to `events.jsonl.1`, and the
//! state derived from it (its checkpoint) is refreshed off the caller's thread as the
//! log grows.

use super::Event;
use super::rotate::{self, Rotation};
use crate::paths::StatePaths;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;

/// How many events a slow in-process subscriber may fall behind before it sees `Lagged`.
const CHANNEL_CAPACITY: usize = 1024;

/// An event could not be written. The event was still delivered to subscribers.
#[derive(Debug, thiserror::Error)]
pub enum EmitError {
    #[error("cannot create the event log directory {}: {source}; check the state directory (THE_LOOP_HOME) is writable", dir.display())]
    CreateDir { dir: PathBuf, source: io::Error },
    #[error("cannot append to the event log {}: {source}; check the file and disk space", path.display())]
    Write { path: PathBuf, source: io::Error },
    #[error("short write to the event log {} ({written} of {len} bytes); the torn line was terminated and will be skipped by readers", path.display())]
    ShortWrite {
        path: PathBuf,
        written: usize,
        len: usize,
    },
}

/// Appends events to `events.jsonl` and broadcasts them in-process (the TUI's feed).
/// Cheap to clone; every clone writes to the same file and the same channel.
#[derive(Debug, Clone)]
pub struct EventLog {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    path: PathBuf,
    tx: broadcast::Sender<Event>,
    /// Set in the supervisor only (one rotator per state root).
    rotation: Mutex<Option<Policy>>,
    /// A checkpoint refresh is running (at most one at a time).
    refreshing: Arc<AtomicBool>,
    /// The log's size when the checkpoint was last refreshed.
    refreshed_at: AtomicU64,
}

/// Brings the state derived from the log up to its end (e.g. the open-questions
/// checkpoint); runs on a thread of its own.
pub type Refresh = Arc<dyn Fn(&Path) + Send + Sync>;

struct Policy {
    rotation: Rotation,
    refresh: Option<Refresh>,
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("rotation", &self.rotation)
            .finish_non_exhaustive()
    }
}

/// How far the log may grow between two checkpoint refreshes (a quarter of the
/// rotation size when that is smaller), so no reader has much to catch up on.
const REFRESH_EVERY: u64 = 4 * 1024 * 1024;

impl EventLog {
    /// The log of a state root: `<state>/events.jsonl`.
    pub fn open(paths: &StatePaths) -> Self {
        Self::open_path(paths.events())
    }

    /// A log at an explicit path. Nothing is touched until the first emit.
    pub fn open_path(path: impl Into<PathBuf>) -> Self {
        let (tx, _) = broadcast::channel(CHANNEL_CAPACITY);
        Self {
            inner: Arc::new(Inner {
                path: path.into(),
                tx,
                rotation: Mutex::new(None),
                refreshing: Arc::new(AtomicBool::new(false)),
                refreshed_at: AtomicU64::new(0),
            }),
        }
    }

    /// Makes this log rotate at `rotation` (the supervisor's; `None`: never), with
    /// `refresh` run as it grows and before an oversized log is rotated at start.
    pub fn set_rotation(&self, rotation: Option<Rotation>, refresh: Option<Refresh>) {
        let mut policy = self
            .inner
            .rotation
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        *policy = rotation.map(|rotation| Policy { rotation, refresh });
    }

    /// Rotates the log now if it is at or over its bound (at start). The state derived
    /// from it is refreshed first, on this thread (start-up may block).
    pub fn rotate_if_oversized(&self) -> std::io::Result<bool> {
        let policy = self
            .inner
            .rotation
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let Some(policy) = policy.as_ref() else {
            return Ok(false);
        };
        let oversized =
            fs::metadata(&self.inner.path).is_ok_and(|m| m.len() >= policy.rotation.max_bytes);
        if oversized && let Some(refresh) = &policy.refresh {
            refresh(&self.inner.path);
        }
        let rotated = rotate::rotate_if_oversized(&self.inner.path, policy.rotation)?;
        if rotated && let Some(refresh) = &policy.refresh {
            // Moves the checkpoint onto the new file (nothing to read).
            refresh(&self.inner.path);
        }
        Ok(rotated)
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Events emitted through this log (or its clones) from now on, already redacted.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.inner.tx.subscribe()
    }

    /// Redacts secrets, appends the event as one line, and broadcasts it. Never panics;
    /// a failure is logged via `tracing` and returned for callers that care (most can
    /// ignore it: losing an audit line must not stop a delivery).
    pub fn emit(&self, mut event: Event) -> Result<(), EmitError> {
        for value in event.fields.values_mut() {
            crate::secrets::redact_json(value);
        }
        let mut line = crate::secrets::redact(&event.to_line()).into_owned();
        line.push('\n');
        // No subscriber is not an error: the CLI never has one.
        let _ = self.inner.tx.send(event);
        let result = append_line(&self.inner.path, line.as_bytes());
        match &result {
            Err(e) => tracing::warn!(error = %e, "event not written"),
            Ok(len) => self.after_append(*len),
        }
        result.map(drop)
    }

    /// Rotates a log that reached its bound, and refreshes its checkpoint as it grows.
    fn after_append(&self, len: u64) {
        let policy = self
            .inner
            .rotation
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let Some(policy) = policy.as_ref() else {
            return;
        };
        let every = REFRESH_EVERY.min(policy.rotation.max_bytes / 4).max(1);
        let last = self.inner.refreshed_at.load(Ordering::Relaxed);
        if len.saturating_sub(last) >= every || len < last {
            self.inner.refreshed_at.store(len, Ordering::Relaxed);
            self.spawn_refresh(policy.refresh.clone());
        }
        if len < policy.rotation.max_bytes {
            return;
        }
        // Under the lock: another thread of this process may have rotated meanwhile.
        let current = fs::metadata(&self.inner.path).map_or(0, |m| m.len());
        if current >= policy.rotation.max_bytes {
            match rotate::rotate(&self.inner.path, policy.rotation.keep_files) {
                Ok(_) => {
                    self.inner.refreshed_at.store(0, Ordering::Relaxed);
                    self.spawn_refresh(policy.refresh.clone());
                }
                Err(e) => tracing::warn!(error = %e, "event log not rotated"),
            }
        }
    }

    fn spawn_refresh(&self, refresh: Option<Refresh>) {
        let Some(refresh) = refresh else {
            return;
        };
        if self.inner.refreshing.swap(true, Ordering::AcqRel) {
            return;
        }
        let path = self.inner.path.clone();
        let running = Arc::clone(&self.inner.refreshing);
        let spawned = std::thread::Builder::new()
            .name("event-log-checkpoint".into())
            .spawn(move || {
                refresh(&path);
                running.store(false, Ordering::Release);
            });
        if let Err(e) = spawned {
            self.inner.refreshing.store(false, Ordering::Release);
            tracing::warn!(error = %e, "event log checkpoint not refreshed");
        }
    }
}

/// Appends one line; returns the file's size after it (one `fstat`).
fn append_line(path: &Path, line: &[u8]) -> Result<u64, EmitError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::fsutil::create_private_dir_all(dir).map_err(|source| EmitError::CreateDir {
            dir: dir.to_path_buf(),
            source,
        })?;
    }
    let write_err = |source| EmitError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut file = open_append(path).map_err(write_err)?;
    let written = loop {
        match file.write(line) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => break other.map_err(write_err)?,
        }
    };
    if written < line.len() {
        // Finishing the line with a second write could land after another process's
        // line; terminating the fragment keeps the damage to this one line.
        let _ = file.write(b"\n");
        return Err(EmitError::ShortWrite {
            path: path.to_path_buf(),
            written,
            len: line.len(),
        });
    }
    Ok(file.metadata().map_or(0, |m| m.len()))
}

/// The log holds questions and other operator data: private to the user.
fn open_append(path: &Path) -> io::Result<fs::File> {
    crate::fsutil::open_private(OpenOptions::new().append(true).create(true), path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{EventType, Source, parse_line};

    #[test]
    fn emit_creates_dirs_appends_and_broadcasts() {
        let dir = tempfile::tempdir().unwrap();
        let log = EventLog::open(&StatePaths::new(dir.path().join("a/b")));
        let mut rx = log.clone().subscribe();
        for n in 0..3 {
            log.emit(Event::new(Source::Cli, EventType::SessionReset).with("n", n))
                .unwrap();
        }
        let text = fs::read_to_string(dir.path().join("a/b/events.jsonl")).unwrap();
        let ns: Vec<i64> = text
            .lines()
            .map(|l| parse_line(l).unwrap().fields["n"].as_i64().unwrap())
            .collect();
        assert_eq!(ns, [0, 1, 2]);
        assert!(text.ends_with('\n'));
        assert_eq!(rx.try_recv().unwrap().fields["n"], 0);
    }

    #[test]
    fn unwritable_log_returns_an_error_and_still_broadcasts() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        fs::write(&blocker, "").unwrap();
        let log = EventLog::open_path(blocker.join("events.jsonl"));
        let mut rx = log.subscribe();
        let err = log
            .emit(Event::new(Source::Cli, EventType::SessionReset))
            .unwrap_err();
        assert!(matches!(err, EmitError::CreateDir { .. }), "{err}");
        assert!(rx.try_recv().is_ok());
    }

    #[test]
    fn secrets_are_redacted_in_file_and_broadcast() {
        let secret = "ghp_eventlogsecret_0123456789";
        let quoted = "hook\"secret\\with-escapes";
        crate::secrets::register(secret);
        crate::secrets::register(quoted);
        let dir = tempfile::tempdir().unwrap();
        let log = EventLog::open_path(dir.path().join("events.jsonl"));
        let mut rx = log.subscribe();
        log.emit(
            Event::new(Source::Cli, EventType::PollError)
                .with("error", format!("401 for token {secret}"))
                .with(
                    "nested",
                    serde_json::json!({"list": [format!("x{quoted}y")]}),
                ),
        )
        .unwrap();
        let text = fs::read_to_string(log.path()).unwrap();
        assert!(
            !text.contains(secret) && !text.contains("with-escapes"),
            "{text}"
        );
        assert!(text.contains("401 for token [redacted]"), "{text}");
        assert!(text.contains("x[redacted]y"), "{text}");
        let seen = rx.try_recv().unwrap();
        assert_eq!(seen.str_field("error"), Some("401 for token [redacted]"));
    }

    #[cfg(unix)]
    #[test]
    fn the_log_file_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let log = EventLog::open_path(dir.path().join("events.jsonl"));
        log.emit(Event::new(Source::Cli, EventType::SessionReset))
            .unwrap();
        let mode = fs::metadata(log.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "mode {mode:o}");
    }
}
