//! Diagnostics to a file, never to the terminal (SPEC §11.7: the TUI owns the screen).
//!
//! `tracing` goes to `<state>/logs/the-loop.YYYY-MM-DD.log` (daily rolling, two weeks
//! kept) through a non-blocking writer, so a slow disk never stalls the supervisor. The
//! level comes from `THE_LOOP_LOG` (an `EnvFilter` directive, default `info`). Every
//! formatted line passes through [`secrets::redact`](crate::secrets::redact) before it
//! reaches the file.

use crate::paths::StatePaths;
use std::io::{self, Write};
use tracing_appender::non_blocking::WorkerGuard;
use tracing_appender::rolling::{RollingFileAppender, Rotation};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;

/// The environment variable holding the log filter, e.g. `debug` or `the_loop=trace`.
pub const ENV_LOG: &str = "THE_LOOP_LOG";
const DEFAULT_LEVEL: &str = "info";
const FILE_PREFIX: &str = "the-loop";
const FILE_SUFFIX: &str = "log";
const KEEP_FILES: usize = 14;

/// Starts file logging. Keep the guard alive until exit: dropping it flushes the
/// buffered lines. Returns `None` (after one line on stderr) when the log directory
/// cannot be used; the program carries on without a log file.
pub fn init(paths: &StatePaths) -> Option<WorkerGuard> {
    let dir = paths.logs_dir();
    let appender = crate::fsutil::create_private_dir_all(&dir)
        .map_err(|e| e.to_string())
        .and_then(|()| {
            RollingFileAppender::builder()
                .rotation(Rotation::DAILY)
                .filename_prefix(FILE_PREFIX)
                .filename_suffix(FILE_SUFFIX)
                .max_log_files(KEEP_FILES)
                .build(&dir)
                .map_err(|e| e.to_string())
        });
    let appender = match appender {
        Ok(a) => a,
        Err(e) => {
            eprintln!(
                "the-loop: not logging to a file: cannot use {} ({e})",
                dir.display()
            );
            return None;
        }
    };
    // The appender opens its files with the default mode: a new day's file is made
    // private as soon as it exists (SPEC §14.5).
    crate::fsutil::tighten(&dir);
    let appender = PrivateFiles {
        inner: appender,
        dir: dir.clone(),
        day: utc_day(),
    };
    let (writer, guard) = tracing_appender::non_blocking(Redacting(appender));
    let filter = env_filter(std::env::var(ENV_LOG).ok().as_deref());
    // Fails only if a subscriber is already installed (tests); keep that one.
    let _ = tracing::subscriber::set_global_default(subscriber(filter, writer));
    Some(guard)
}

/// The filter for a `THE_LOOP_LOG` value; a bad value falls back to `info` with a note.
fn env_filter(value: Option<&str>) -> EnvFilter {
    let value = value.map(str::trim).filter(|v| !v.is_empty());
    match value.map(EnvFilter::try_new) {
        None => EnvFilter::new(DEFAULT_LEVEL),
        Some(Ok(filter)) => filter,
        Some(Err(e)) => {
            eprintln!(
                "the-loop: ignoring {ENV_LOG}: {e}; expected a level (error, warn, info, debug, trace) or a tracing directive such as `the_loop=debug`"
            );
            EnvFilter::new(DEFAULT_LEVEL)
        }
    }
}

/// The subscriber `init` installs, over any writer (tests pass a buffer).
fn subscriber<W>(filter: EnvFilter, writer: W) -> impl tracing::Subscriber + Send + Sync
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    tracing_subscriber::registry().with(filter).with(
        tracing_subscriber::fmt::layer()
            .with_writer(writer)
            .with_ansi(false)
            .with_target(true),
    )
}

/// Redacts registered secrets from everything written through it. The formatter hands
/// over one whole event per write, so a secret never straddles two calls.
#[derive(Debug)]
pub struct Redacting<W>(pub W);

impl<W: Write> Write for Redacting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match String::from_utf8_lossy(buf) {
            std::borrow::Cow::Borrowed(text) => match crate::secrets::redact(text) {
                std::borrow::Cow::Borrowed(_) => self.0.write_all(buf)?,
                std::borrow::Cow::Owned(clean) => self.0.write_all(clean.as_bytes())?,
            },
            std::borrow::Cow::Owned(text) => {
                self.0.write_all(crate::secrets::redact(&text).as_bytes())?;
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// Days since the epoch in UTC, the appender's rotation clock.
fn utc_day() -> i64 {
    time::OffsetDateTime::now_utc()
        .unix_timestamp()
        .div_euclid(86_400)
}

/// The rolling appender, with the files it creates made 0600: after the first write of
/// a new day (the appender has just opened that day's file), the log directory is
/// tightened. The check is one clock read per line.
struct PrivateFiles<W> {
    inner: W,
    dir: std::path::PathBuf,
    day: i64,
}

impl<W: Write> Write for PrivateFiles<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let written = self.inner.write(buf)?;
        let today = utc_day();
        if today != self.day {
            self.day = today;
            crate::fsutil::tighten(&self.dir);
        }
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Buffer {
        type Writer = Redacting<Buffer>;
        fn make_writer(&'a self) -> Self::Writer {
            Redacting(self.clone())
        }
    }

    #[test]
    fn log_lines_are_redacted_and_filtered_by_level() {
        let secret = "ghp_loggingsecret_abcdef123";
        crate::secrets::register(secret);
        let buffer = Buffer::default();
        let sub = subscriber(env_filter(Some("info")), buffer.clone());
        tracing::subscriber::with_default(sub, || {
            tracing::info!(token = secret, "calling GitHub with {secret}");
            tracing::debug!("hidden at info");
        });
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        assert!(!text.contains(secret), "{text}");
        assert!(text.contains("calling GitHub with [redacted]"), "{text}");
        assert_eq!(text.matches("[redacted]").count(), 2, "{text}");
        assert!(!text.contains("hidden at info"), "{text}");
        assert!(
            !text.contains('\u{1b}'),
            "no ANSI colours in a file: {text}"
        );
    }

    #[test]
    fn a_new_days_log_file_is_made_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("the-loop.2026-12-02.log");
        std::fs::write(&file, "").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let mut writer = PrivateFiles {
            inner: Vec::new(),
            dir: dir.path().to_path_buf(),
            day: utc_day() - 1,
        };
        writer.write_all(b"a line\n").unwrap();
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(writer.day, utc_day());
    }

    #[test]
    fn bad_filter_falls_back_to_info() {
        assert_eq!(env_filter(Some("=[nope")).to_string(), "info");
        assert_eq!(env_filter(None).to_string(), "info");
        assert_eq!(env_filter(Some(" debug ")).to_string(), "debug");
    }

    #[test]
    fn unusable_log_dir_is_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("logs"), "a file, not a dir").unwrap();
        assert!(init(&StatePaths::new(dir.path())).is_none());
    }
}
