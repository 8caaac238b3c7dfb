//! A passed variable's value (`sessions.passEnv`, a token) reaches a new session without
//! crossing tmux's argv, where every local user can read it in the process table while
//! the tmux client runs (`/proc/<pid>/cmdline`).
//!
//! The spawner writes the values to a new private file (0600, in a 0700 directory of the
//! state root) and starts the session as `<the-loop> exec-env FILE -- ARGV…`; that shim
//! reads the file, removes it, and replaces itself (`exec`, the same process id) with the
//! harness, the values in its environment. Only the file's name is in argv. A file whose
//! shim never ran (the spawn failed after it was written, the binary vanished) is removed
//! by the spawner, or by the next spawn once it is [`STALE_AFTER`] old.
//!
//! The same shim gives a session in a worktree the-loop made its private umask
//! (`exec-env --private`, SPEC §18.5): the pane is the first process that can set it
//! without changing the tmux server's, which every other pane shares.

use crate::fsutil;
use serde::{Deserialize, Serialize};
use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The hidden subcommand that runs a harness with the handed-off values.
pub const SUBCOMMAND: &str = "exec-env";

/// Its flag for a harness whose files are to be private (umask 077).
pub const PRIVATE_FLAG: &str = "--private";

/// Its flag for values read from its stdin instead of a file: a process started on
/// another host over SSH (issue 32: a push's askpass and token), whose values travel in
/// the connection's stream and are never written there. See [`encode`] and [`read`].
pub const STDIN_FLAG: &str = "--stdin";

/// The most `exec-env --stdin` reads.
const MAX_STDIN: u64 = 64 * 1024;

/// A file older than this was never taken: its shim is not coming.
pub const STALE_AFTER: Duration = Duration::from_secs(600);

/// The file's only format.
const VERSION: u32 = 1;

/// Where hand-off files go, and the binary whose `exec-env` takes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvHandoff {
    bin: PathBuf,
    dir: PathBuf,
}

#[derive(Serialize, Deserialize)]
struct HandoffFile {
    version: u32,
    env: Vec<(String, String)>,
}

/// Why `exec-env` could not take its file.
#[derive(Debug, thiserror::Error)]
pub enum TakeError {
    #[error("cannot read the session's environment file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "the session's environment file {} is not a private file of this user; not using it",
        path.display()
    )]
    NotPrivate { path: PathBuf },
    #[error("the session's environment file {} is not one this the-loop writes", path.display())]
    Malformed { path: PathBuf },
    #[error(
        "the values on exec-env's stdin are not ones this the-loop writes (at most 64 KiB of its format); is the-loop here the same version as the one that sent them?"
    )]
    MalformedStdin,
    #[error("cannot read exec-env's stdin: {0}")]
    ReadStdin(std::io::Error),
}

impl EnvHandoff {
    /// `bin` is the running the-loop (it must have `exec-env`); `dir` is private state.
    pub fn new(bin: impl Into<PathBuf>, dir: impl Into<PathBuf>) -> Self {
        Self {
            bin: bin.into(),
            dir: dir.into(),
        }
    }

    /// The argv that starts `argv` as a session's first process: with `values` in its
    /// environment, written to a new private file (only its name goes into argv), and
    /// under umask 077 when `private` (SPEC §18.5). Returns the file too, when one was
    /// written: the caller removes it when the spawn fails.
    pub fn wrap(
        &self,
        values: &[(String, String)],
        private: bool,
        argv: &[String],
    ) -> std::io::Result<(Vec<String>, Option<PathBuf>)> {
        let mut wrapped = vec![
            self.bin.to_string_lossy().into_owned(),
            SUBCOMMAND.to_string(),
        ];
        if private {
            wrapped.push(PRIVATE_FLAG.to_string());
        }
        let file = if values.is_empty() {
            None
        } else {
            let path = self.write(values)?;
            wrapped.push(path.to_string_lossy().into_owned());
            Some(path)
        };
        wrapped.push("--".to_string());
        wrapped.extend(argv.iter().cloned());
        Ok((wrapped, file))
    }

    /// Writes `values` to a new private file and returns its path.
    fn write(&self, values: &[(String, String)]) -> std::io::Result<PathBuf> {
        fsutil::create_private_dir_all(&self.dir)?;
        self.remove_stale();
        let path = self.dir.join(unique_name());
        let body = serde_json::to_vec(&HandoffFile {
            version: VERSION,
            env: values.to_vec(),
        })?;
        let mut options = OpenOptions::new();
        options
            .write(true)
            .create_new(true)
            .custom_flags(nix::libc::O_NOFOLLOW);
        let written = fsutil::open_private(&mut options, &path).and_then(|mut file| {
            file.write_all(&body)?;
            file.sync_all()
        });
        if let Err(error) = written {
            let _ = std::fs::remove_file(&path);
            return Err(error);
        }
        Ok(path)
    }

    /// Removes files no shim took within [`STALE_AFTER`] (best effort).
    fn remove_stale(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > STALE_AFTER);
            if old {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Reads the values at `path` and removes the file: it is taken once. Refuses a file
/// that is not a regular file (a symbolic link is not followed), not ours, or readable
/// by anyone else.
pub fn take(path: &Path) -> Result<Vec<(String, String)>, TakeError> {
    let read_error = |source| TakeError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
        .map_err(read_error)?;
    let meta = file.metadata().map_err(read_error)?;
    let ours = nix::unistd::getuid().as_raw();
    if !meta.is_file() || meta.uid() != ours || meta.mode() & 0o077 != 0 {
        return Err(TakeError::NotPrivate {
            path: path.to_path_buf(),
        });
    }
    let mut body = Vec::new();
    file.read_to_end(&mut body).map_err(read_error)?;
    std::fs::remove_file(path).map_err(read_error)?;
    parse(&body).ok_or_else(|| TakeError::Malformed {
        path: path.to_path_buf(),
    })
}

/// `values` as [`read`] takes them (`exec-env --stdin` on another host).
pub fn encode(values: &[(String, String)]) -> Vec<u8> {
    serde_json::to_vec(&HandoffFile {
        version: VERSION,
        env: values.to_vec(),
    })
    .unwrap_or_default()
}

/// The values [`encode`] wrote to `input` (at most [`MAX_STDIN`] bytes of it).
pub fn read(input: impl Read) -> Result<Vec<(String, String)>, TakeError> {
    let mut body = Vec::new();
    input
        .take(MAX_STDIN + 1)
        .read_to_end(&mut body)
        .map_err(TakeError::ReadStdin)?;
    if body.len() as u64 > MAX_STDIN {
        return Err(TakeError::MalformedStdin);
    }
    parse(&body).ok_or(TakeError::MalformedStdin)
}

fn parse(body: &[u8]) -> Option<Vec<(String, String)>> {
    serde_json::from_slice::<HandoffFile>(body)
        .ok()
        .filter(|handed| handed.version == VERSION && handed.env.iter().all(|(k, _)| valid(k)))
        .map(|handed| handed.env)
}

/// A name `Command::env` can set.
fn valid(name: &str) -> bool {
    !name.is_empty() && !name.contains(['=', '\0'])
}

/// Unique among this process's spawns and across processes.
fn unique_name() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{}-{n}-{nanos:09}.json", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn handoff(dir: &Path) -> EnvHandoff {
        EnvHandoff::new("/opt/the-loop", dir.join("spawn-env"))
    }

    #[test]
    fn values_go_to_a_private_file_and_only_its_name_to_argv() {
        let dir = tempfile::tempdir().unwrap();
        let values = vec![("GH_TOKEN".to_string(), "ghp_secret value".to_string())];
        let argv = vec!["claude".to_string(), "--flag".to_string()];
        let (wrapped, path) = handoff(dir.path()).wrap(&values, false, &argv).unwrap();
        let path = path.expect("a file for the values");
        assert_eq!(wrapped[..2], ["/opt/the-loop", SUBCOMMAND]);
        assert_eq!(wrapped[2], path.to_string_lossy());
        assert_eq!(wrapped[3..], ["--", "claude", "--flag"]);
        assert!(!wrapped.concat().contains("ghp_secret"), "{wrapped:?}");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        assert_eq!(take(&path).unwrap(), values);
        assert!(!path.exists(), "taken once");
        assert!(matches!(take(&path), Err(TakeError::Read { .. })));
    }

    #[test]
    fn a_private_session_gets_the_flag_and_a_file_only_for_values() {
        let dir = tempfile::tempdir().unwrap();
        let handoff = handoff(dir.path());
        let argv = vec!["claude".to_string(), "--".to_string(), "-p".to_string()];
        let (wrapped, file) = handoff.wrap(&[], true, &argv).unwrap();
        assert_eq!(file, None);
        assert_eq!(
            wrapped,
            [
                "/opt/the-loop",
                SUBCOMMAND,
                PRIVATE_FLAG,
                "--",
                "claude",
                "--",
                "-p"
            ]
        );
        assert!(
            !dir.path().join("spawn-env").exists(),
            "no values, no file (nor its directory)"
        );
        let values = [("A".to_string(), "1".to_string())];
        let (wrapped, file) = handoff.wrap(&values, true, &argv).unwrap();
        let file = file.unwrap();
        assert_eq!(wrapped[..3], ["/opt/the-loop", SUBCOMMAND, PRIVATE_FLAG]);
        assert_eq!(wrapped[3], file.to_string_lossy());
        assert_eq!(wrapped[4..], ["--", "claude", "--", "-p"]);
    }

    #[test]
    fn a_file_others_can_read_a_link_or_a_foreign_format_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (_, path) = handoff(dir.path())
            .wrap(
                &[("A".into(), "1".into())],
                false,
                &["x".into(), "y".into()],
            )
            .unwrap();
        let path = path.unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(take(&path), Err(TakeError::NotPrivate { .. })));
        assert!(
            path.exists(),
            "a refused file is left for the operator to see"
        );

        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert!(matches!(take(&link), Err(TakeError::Read { .. })));

        let other = dir.path().join("other.json");
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        let mut file = fsutil::open_private(&mut options, &other).unwrap();
        file.write_all(br#"{"version":1,"env":[["A=B","x"]]}"#)
            .unwrap();
        assert!(matches!(take(&other), Err(TakeError::Malformed { .. })));
    }

    #[test]
    fn names_are_unique_and_stale_files_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let handoff = handoff(dir.path());
        let values = [("A".to_string(), "1".to_string())];
        let argv = ["x".to_string(), "y".to_string()];
        let wrap = || handoff.wrap(&values, false, &argv).unwrap().1.unwrap();
        let (first, second) = (wrap(), wrap());
        assert_ne!(first, second);
        let old = std::time::SystemTime::now() - STALE_AFTER - Duration::from_secs(1);
        std::fs::File::options()
            .write(true)
            .open(&first)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let third = wrap();
        assert!(!first.exists(), "the stale file is removed");
        assert!(second.exists() && third.exists());
    }

    #[test]
    fn values_on_stdin_read_back_and_anything_else_is_refused() {
        let values = vec![
            ("THE_LOOP_PUSH_TOKEN".to_string(), "ghp_x\n y=z".to_string()),
            ("GIT_ASKPASS".to_string(), "/h/.tl/bin/the-loop".to_string()),
        ];
        assert_eq!(read(&encode(&values)[..]).unwrap(), values);
        assert_eq!(read(&encode(&[])[..]).unwrap(), Vec::new());
        for bad in [
            &b""[..],
            b"A=B",
            br#"{"version":2,"env":[]}"#,
            br#"{"version":1,"env":[["A=B","x"]]}"#,
            br#"{"version":1,"env":[["","x"]]}"#,
        ] {
            assert!(
                matches!(read(bad), Err(TakeError::MalformedStdin)),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        // More than the cap is refused whole, not cut into a shorter value.
        let long = vec![("A".to_string(), "x".repeat(MAX_STDIN as usize))];
        assert!(matches!(
            read(&encode(&long)[..]),
            Err(TakeError::MalformedStdin)
        ));
    }
}
