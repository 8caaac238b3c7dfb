//! What the-loop verified live of a client release nobody recorded (issue 40): per
//! release, when the two witnesses first agreed on an idle box, on a permission dialog
//! (read while the hooks had the request pending), and on an operator's draft. The
//! operator sees it (`config check`, the Sessions pane: `Claude Code 2.1.337 · read with
//! 2.1.332's rules · seen live: idle ✓ dialog –`), and a screen the witnesses disagreed
//! on is kept beside it, private, so it can become a fixture
//! (`scripts/record-screens`).
//!
//! Under the state root: `clients/<client>-<release>.json` (0600, written atomically
//! under a lock: the supervisor and the CLI both write) and `clients/screens/<client>-
//! <release>/<time>-<item>.ansi`, the newest [`KEPT_SCREENS`] of each release.

use super::screen::Reader;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};

/// Screens kept per release: enough to make fixtures of, bounded.
pub const KEPT_SCREENS: usize = 20;

/// What was seen live of one release, each the first time it was (RFC 3339).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SeenLive {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialog: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft: Option<String>,
}

/// One thing the witnesses agreed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Sight {
    /// An empty input box while the hooks said the turn ended.
    Idle,
    /// A permission dialog while the hooks had its request pending.
    Dialog,
    /// Text in the box while the hooks said the turn ended.
    Draft,
}

/// The first sight of each kind, as this process has already recorded it: the file is
/// not read again for each paste.
static MARKED: LazyLock<Mutex<HashSet<(PathBuf, Sight)>>> = LazyLock::new(Mutex::default);

/// The per-release records under `dir` (the state root's `clients/`).
#[derive(Debug, Clone)]
pub struct ClientReleases {
    dir: PathBuf,
}

impl ClientReleases {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// What was seen live of `reader`'s client at `version`; nothing when unreadable.
    pub fn seen(&self, reader: Reader, version: &str) -> SeenLive {
        let Some(path) = self.file(reader, version) else {
            return SeenLive::default();
        };
        std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// Records `sight` of `version`, the first time only. A failure is a warning: it
    /// changes nothing of what is delivered.
    pub fn mark(&self, reader: Reader, version: &str, sight: Sight) {
        let Some(path) = self.file(reader, version) else {
            return;
        };
        let key = (path.clone(), sight);
        if lock(&MARKED).contains(&key) {
            return;
        }
        match self.write_once(&path, sight) {
            Ok(()) => {
                lock(&MARKED).insert(key);
            }
            Err(error) => tracing::warn!(
                "{} {version}: what was seen live not recorded: {error}",
                reader.client()
            ),
        }
    }

    fn write_once(&self, path: &Path, sight: Sight) -> std::io::Result<()> {
        let _lock = crate::fsutil::lock_exclusive(&path.with_extension("lock"))?;
        let mut seen = match crate::fsutil::read_json_state::<SeenLive>(path)? {
            crate::fsutil::StateRead::Ok(seen) => seen,
            _ => SeenLive::default(),
        };
        let slot = match sight {
            Sight::Idle => &mut seen.idle,
            Sight::Dialog => &mut seen.dialog,
            Sight::Draft => &mut seen.draft,
        };
        if slot.is_some() {
            return Ok(());
        }
        *slot = Some(crate::time::now_ts());
        crate::fsutil::atomic_write_json(path, &seen)
    }

    /// Keeps `screen` (a `capture-pane -e` capture) of `version`, which the witnesses
    /// disagreed on, for `slug`'s session; the oldest beyond [`KEPT_SCREENS`] go.
    /// Returns where it was kept.
    pub fn keep_screen(
        &self,
        reader: Reader,
        version: &str,
        slug: &str,
        screen: &str,
    ) -> Option<PathBuf> {
        let dir = self
            .dir
            .join("screens")
            .join(name(reader, version)?.as_str());
        let path = dir.join(format!("{}-{slug}.ansi", crate::time::compact_now()));
        let kept = crate::fsutil::create_private_dir_all(&dir)
            .and_then(|()| crate::fsutil::atomic_write(&path, screen.as_bytes()));
        if let Err(error) = kept {
            tracing::warn!("{} {version}: screen not kept: {error}", reader.client());
            return None;
        }
        prune(&dir);
        Some(path)
    }

    fn file(&self, reader: Reader, version: &str) -> Option<PathBuf> {
        Some(self.dir.join(format!("{}.json", name(reader, version)?)))
    }
}

/// `claude-2.1.337`: only a version of digits and dots names a file.
fn name(reader: Reader, version: &str) -> Option<String> {
    let plain = !version.is_empty()
        && version.len() <= 32
        && version.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && !version.contains("..");
    plain.then(|| format!("{}-{version}", reader.key()))
}

/// Removes all but the newest [`KEPT_SCREENS`] screens in `dir` (their names start
/// with the time they were kept).
fn prune(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut names: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "ansi"))
        .collect();
    names.sort();
    let excess = names.len().saturating_sub(KEPT_SCREENS);
    for old in &names[..excess] {
        let _ = std::fs::remove_file(old);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// How the-loop reads `version` of `reader`'s client, for people: `recorded`, or
/// `read with 2.1.332's rules · seen live: idle ✓ dialog – draft –` (`not seen yet`).
pub fn describe(reader: Reader, version: &str, seen: &SeenLive) -> String {
    if reader.recorded(version) {
        return "recorded".into();
    }
    let rules = format!("read with {}'s rules", reader.newest_recorded());
    if *seen == SeenLive::default() {
        return format!("{rules} · seen live: not seen yet");
    }
    let mark = |at: &Option<String>| if at.is_some() { "✓" } else { "–" };
    format!(
        "{rules} · seen live: idle {} dialog {} draft {}",
        mark(&seen.idle),
        mark(&seen.dialog),
        mark(&seen.draft)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn each_sight_is_recorded_once_and_privately() {
        let dir = tempfile::tempdir().unwrap();
        let releases = ClientReleases::new(dir.path().join("clients"));
        let reader = Reader::Claude;
        assert_eq!(releases.seen(reader, "2.1.999"), SeenLive::default());
        assert_eq!(
            describe(reader, "2.1.999", &SeenLive::default()),
            format!(
                "read with {}'s rules · seen live: not seen yet",
                reader.newest_recorded()
            )
        );
        releases.mark(reader, "2.1.999", Sight::Idle);
        let first = releases.seen(reader, "2.1.999").idle.unwrap();
        releases.mark(reader, "2.1.999", Sight::Idle);
        releases.mark(reader, "2.1.999", Sight::Dialog);
        let seen = releases.seen(reader, "2.1.999");
        assert_eq!(seen.idle.as_deref(), Some(first.as_str()));
        assert!(seen.dialog.is_some() && seen.draft.is_none());
        assert!(describe(reader, "2.1.999", &seen).ends_with("seen live: idle ✓ dialog ✓ draft –"));
        assert_eq!(
            describe(reader, reader.newest_recorded(), &seen),
            "recorded"
        );
        let file = dir.path().join("clients/claude-2.1.999.json");
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
        // Another release is its own.
        assert_eq!(releases.seen(reader, "2.1.998"), SeenLive::default());
    }

    #[test]
    fn a_version_that_is_not_plain_names_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let releases = ClientReleases::new(dir.path());
        for bad in ["../../x", "2.1/3", "", "2..1", "2.1.3\n"] {
            releases.mark(Reader::Claude, bad, Sight::Idle);
            assert!(
                releases
                    .keep_screen(Reader::Claude, bad, "o-r-1", "x")
                    .is_none()
            );
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn kept_screens_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let releases = ClientReleases::new(dir.path());
        let mut last = None;
        for i in 0..KEPT_SCREENS + 5 {
            last = releases.keep_screen(Reader::Codex, "0.999.0", &format!("o-r-{i:02}"), "s");
        }
        let kept = dir.path().join("screens/codex-0.999.0");
        assert_eq!(std::fs::read_dir(&kept).unwrap().count(), KEPT_SCREENS);
        assert!(last.unwrap().exists(), "the newest stays");
    }
}
