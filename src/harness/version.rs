//! Which release of a client runs (issue 30). Claude Code ships weekly and its screen
//! moves with it, so what the-loop reads of that screen is tied to the releases it was
//! recorded from. The version is asked of the binary itself (`claude --version`), once
//! per binary: the answer is kept by the binary's path, size and modification time, so
//! an upgrade in place is asked again and nothing else is.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, SystemTime};

/// How long `--version` may take (a cold `node` start is well under a second).
const TIMEOUT: Duration = Duration::from_secs(10);

/// The longest version string believed (`2.1.332` is 7).
const MAX_LEN: usize = 32;

/// Why a client's version is not known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error("cannot run `{program} --version`: {error}")]
    Run { program: String, error: String },
    #[error("`{program} --version` did not answer within {}s", TIMEOUT.as_secs())]
    Timeout { program: String },
    #[error("`{program} --version` printed no version the-loop can read: {printed:?}")]
    Unreadable { program: String, printed: String },
}

/// One binary as it is on disk now.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    path: PathBuf,
    len: u64,
    modified: Option<SystemTime>,
}

static CACHE: LazyLock<Mutex<HashMap<Key, Result<String, VersionError>>>> =
    LazyLock::new(Mutex::default);

/// How many times a binary was actually run for its version, in this process.
static RUNS: AtomicU64 = AtomicU64::new(0);

/// `--version` processes run so far by this process (a counter for tests and benches:
/// a second look-up of an unchanged binary runs none).
pub fn runs() -> u64 {
    RUNS.load(Ordering::Relaxed)
}

/// The version `program` (an absolute path, as `Harness::locate` gives it) reports:
/// `2.1.332` from Claude Code's `2.1.332 (Claude Code)`. Asked once per binary — a
/// failed answer too, so a held session looked at every 500 ms does not start a
/// process each time; replacing the binary asks again.
pub async fn of(program: &Path) -> Result<String, VersionError> {
    let key = key(program);
    if let Some(found) = key.as_ref().and_then(cached) {
        return found;
    }
    let answer = ask(program).await;
    if let Some(key) = key
        && let Ok(mut cache) = CACHE.lock()
    {
        cache.insert(key, answer.clone());
    }
    answer
}

fn key(program: &Path) -> Option<Key> {
    let path = std::fs::canonicalize(program).ok()?;
    let meta = std::fs::metadata(&path).ok()?;
    Some(Key {
        path,
        len: meta.len(),
        modified: meta.modified().ok(),
    })
}

fn cached(key: &Key) -> Option<Result<String, VersionError>> {
    CACHE.lock().ok()?.get(key).cloned()
}

async fn ask(program: &Path) -> Result<String, VersionError> {
    let name = program.display().to_string();
    let mut command = tokio::process::Command::new(program);
    command
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    // The client gets nothing secret for this either (SPEC §14.4).
    crate::secrets::ChildEnv::default().scrub(&mut command);
    RUNS.fetch_add(1, Ordering::Relaxed);
    let output = match tokio::time::timeout(TIMEOUT, command.output()).await {
        Err(_) => return Err(VersionError::Timeout { program: name }),
        Ok(Err(error)) => {
            return Err(VersionError::Run {
                program: name,
                error: error.to_string(),
            });
        }
        Ok(Ok(output)) => output,
    };
    let printed = String::from_utf8_lossy(&output.stdout);
    parse(&printed)
        .filter(|_| output.status.success())
        .ok_or_else(|| VersionError::Unreadable {
            program: name,
            printed: crate::guard::sanitize(printed.trim())
                .chars()
                .take(80)
                .collect(),
        })
}

/// The version in a `--version` answer: its first word when that is a dotted number
/// (`2.1.332 (Claude Code)` → `2.1.332`, `codex-cli 0.171.0` → `0.171.0`: a leading
/// word that is not one is passed over). Anything else is no version.
pub fn parse(printed: &str) -> Option<String> {
    let line = printed.lines().find(|l| !l.trim().is_empty())?;
    line.split_whitespace()
        .take(2)
        .find(|word| is_version(word))
        .map(str::to_string)
}

/// Whether `version` is `floor` or later, both `MAJOR.MINOR.PATCH` (anything else is
/// not).
pub fn at_least(version: &str, floor: &str) -> bool {
    let parts = |v: &str| -> Option<Vec<u64>> {
        is_version(v).then(|| v.split('.').filter_map(|p| p.parse().ok()).collect())
    };
    matches!((parts(version), parts(floor)), (Some(v), Some(f)) if v >= f)
}

/// `MAJOR.MINOR.PATCH`, each part one to six digits.
fn is_version(word: &str) -> bool {
    let parts: Vec<&str> = word.split('.').collect();
    word.len() <= MAX_LEN
        && parts.len() == 3
        && parts
            .iter()
            .all(|p| (1..=6).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_release_is_at_least_another_by_its_numbers() {
        assert!(at_least("0.171.0", "0.171.0"));
        assert!(at_least("0.171.10", "0.171.9"));
        assert!(at_least("1.0.0", "0.171.0"));
        assert!(!at_least("0.170.99", "0.171.0"));
        assert!(!at_least("0.99", "0.171.0"));
        assert!(!at_least("dev", "0.171.0"));
    }

    #[test]
    fn reads_what_the_clients_print() {
        assert_eq!(parse("2.1.197 (Claude Code)\n").as_deref(), Some("2.1.197"));
        assert_eq!(parse("2.1.332 (Claude Code)").as_deref(), Some("2.1.332"));
        assert_eq!(parse("codex-cli 0.171.0\n").as_deref(), Some("0.171.0"));
        assert_eq!(
            parse("\n  2.1.400 (Claude Code)\n").as_deref(),
            Some("2.1.400")
        );
    }

    #[test]
    fn anything_else_is_no_version() {
        for printed in [
            "",
            "Claude Code",
            "2.1",
            "2.1.x",
            "v2.1.332",
            "2.1.332-beta.1",
            "1.2.3.4",
            "\u{1b}[31m2.1.332",
            "../../2.1.3",
            "99999999999999999999999999.1.1",
            "error: unknown option --version",
        ] {
            assert_eq!(parse(printed), None, "{printed:?}");
        }
    }

    /// A stand-in client that counts how often it is asked.
    fn client(dir: &Path, printed: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let bin = dir.join("claude");
        let count = dir.join("asked");
        let script = format!(
            "#!/bin/sh\necho x >> '{}'\necho '{printed}'\n",
            count.display()
        );
        std::fs::write(&bin, script).unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        bin
    }

    fn asked(dir: &Path) -> usize {
        std::fs::read_to_string(dir.join("asked"))
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    #[tokio::test]
    async fn a_binary_is_asked_once_and_again_when_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let bin = client(dir.path(), "2.1.332 (Claude Code)");
        assert_eq!(of(&bin).await.unwrap(), "2.1.332");
        assert_eq!(of(&bin).await.unwrap(), "2.1.332");
        assert_eq!(asked(dir.path()), 1, "the second look-up is the cache's");
        // Upgraded in place: a different file at the same path.
        std::fs::remove_file(&bin).unwrap();
        client(dir.path(), "2.1.400 (Claude Code) ");
        assert_eq!(of(&bin).await.unwrap(), "2.1.400");
        assert_eq!(asked(dir.path()), 2);
    }

    #[tokio::test]
    async fn a_client_that_prints_no_version_is_an_error_not_a_guess() {
        let dir = tempfile::tempdir().unwrap();
        let bin = client(dir.path(), "\\033[2Jnot a version");
        let error = of(&bin).await.unwrap_err();
        assert!(matches!(error, VersionError::Unreadable { .. }), "{error}");
        assert_eq!(of(&bin).await.unwrap_err(), error);
        assert_eq!(asked(dir.path()), 1, "a failed answer is kept too");
        assert!(!error.to_string().contains('\u{1b}'), "{error}");
        let missing = of(&dir.path().join("nope")).await.unwrap_err();
        assert!(matches!(missing, VersionError::Run { .. }), "{missing}");
    }
}
