//! The writer: any process (the supervisor, the CLI, `the-loop ask` inside an agent's
//! pane) appends to the same file, so each line goes out in **one `write` call on an
//! `O_APPEND` file** — the kernel then places it whole at the end, never interleaved with
//! another writer's line. No lock file, no long-lived handle: the file is opened per
//! emit, which also follows a log that was deleted or replaced underneath us.

use super::Event;
use crate::paths::StatePaths;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
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
}

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
            }),
        }
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
        if let Err(e) = &result {
            tracing::warn!(error = %e, "event not written");
        }
        result
    }
}

fn append_line(path: &Path, line: &[u8]) -> Result<(), EmitError> {
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
    Ok(())
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
