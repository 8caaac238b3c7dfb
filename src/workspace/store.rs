//! One record per workspace the-loop made, `<state>/workspaces/<slug>.json`: where the
//! worktree is, its branch, what it started from, and whether setup finished. It outlives
//! the session record on purpose — a session can be reset while its worktree is kept,
//! and a later start must find that worktree, its base and its branch again.
//!
//! Writes are atomic (`fsutil`); every change to an item's workspace happens under an
//! exclusive `flock` on `<slug>.lock`, so a `sessions start` in a terminal and the
//! supervisor never create or remove the same worktree at once.

use crate::fsutil::{self, StateRead};
use crate::work_item::WorkItemRef;
use nix::fcntl::Flock;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

/// What kind of work item the worktree was made for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A branch `the-loop/issue-N` from the base.
    Issue,
    /// A pull request from a branch of the base repository: that branch.
    Pull,
    /// A pull request from a fork: `refs/pull/N/head` as `the-loop/pr-N`.
    ForkPull,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Issue => "issue",
            Self::Pull => "pull",
            Self::ForkPull => "fork-pull",
        }
    }
}

/// One worktree the-loop made for a work item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceRecord {
    #[serde(rename = "ref")]
    pub work_item: WorkItemRef,
    pub kind: Kind,
    /// The worktree's top directory, `<root>/<owner>-<repo>/<N>`.
    pub dir: PathBuf,
    /// Where the session runs: `dir`, or the subdirectory `repos[].path` names inside
    /// its repository.
    pub cwd: PathBuf,
    /// The top directory of the operator's checkout.
    pub repo: PathBuf,
    pub branch: String,
    /// the-loop created the branch, so it goes with the worktree.
    pub branch_created: bool,
    /// The ref the branch started from, which "ahead" and the diff are measured
    /// against: `refs/remotes/origin/main`, or `refs/heads/main` without a remote.
    pub base: String,
    /// A ref whose commits also count as pushed: a pull request's head
    /// (`refs/remotes/origin/<head>`, `refs/the-loop/pull/N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
    /// The remote's URL when the worktree was made, before any agent ran in it: a
    /// push goes there and nowhere else (SPEC §19.4; `push`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_url: Option<String>,
    /// Every `repos[].setup` command succeeded (a new start runs them again until then).
    pub setup_done: bool,
    pub created_at: String,
    /// Why the worktree was kept when its session ended (`2 changed files, …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<String>,
    /// The host (`hosts[].name`) the worktree is on; `dir`, `cwd` and `repo` are paths
    /// there, and its git runs there. `None`: this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Fields written by another version, kept untouched.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl WorkspaceRecord {
    /// The base as the operator reads it: `origin/main`.
    pub fn base_label(&self) -> &str {
        short_ref(&self.base)
    }
}

/// `refs/heads/x` → `x`, `refs/remotes/origin/x` → `origin/x`; anything else as it is.
pub fn short_ref(full: &str) -> &str {
    full.strip_prefix("refs/heads/")
        .or_else(|| full.strip_prefix("refs/remotes/"))
        .unwrap_or(full)
}

#[derive(Debug, thiserror::Error)]
#[error(
    "cannot {action} the workspace record {}: {source}; check that the state directory (THE_LOOP_HOME) is writable",
    path.display()
)]
pub struct StoreError {
    action: &'static str,
    path: PathBuf,
    #[source]
    source: io::Error,
}

/// The records under `<state>/workspaces`.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// `<slug>.json`, lowercased: GitHub names are case-insensitive.
    fn path_of(&self, item: &WorkItemRef) -> PathBuf {
        self.dir
            .join(format!("{}.json", item.slug().to_ascii_lowercase()))
    }

    pub fn get(&self, item: &WorkItemRef) -> Result<Option<WorkspaceRecord>, StoreError> {
        let path = self.path_of(item);
        match fsutil::read_json_state(&path).map_err(|e| error("read", &path, e))? {
            StateRead::Missing => Ok(None),
            StateRead::Ok(record) => Ok(Some(record)),
            StateRead::Corrupt { moved_to, error } => {
                tracing::warn!(path = %path.display(), moved_to = %moved_to.display(), "corrupt workspace record moved aside: {error}");
                Ok(None)
            }
        }
    }

    pub fn put(&self, record: &WorkspaceRecord) -> Result<(), StoreError> {
        let path = self.path_of(&record.work_item);
        fsutil::atomic_write_json(&path, record).map_err(|e| error("write", &path, e))
    }

    pub fn remove(&self, item: &WorkItemRef) -> Result<(), StoreError> {
        let path = self.path_of(item);
        match fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(error("remove", &path, e)),
        }
    }

    /// Every record (for listings); unreadable ones are skipped.
    pub fn list(&self) -> Vec<WorkspaceRecord> {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut out: Vec<WorkspaceRecord> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .filter_map(|p| match fsutil::read_json_state(&p) {
                Ok(StateRead::Ok(record)) => Some(record),
                _ => None,
            })
            .collect();
        out.sort_by_key(|r: &WorkspaceRecord| r.work_item.to_string());
        out
    }

    /// Holds `item`'s workspace lock until dropped (blocks while another process
    /// creates or removes that worktree).
    pub fn lock(&self, item: &WorkItemRef) -> Result<Flock<File>, StoreError> {
        let path = self
            .dir
            .join(format!("{}.lock", item.slug().to_ascii_lowercase()));
        fsutil::lock_exclusive(&path).map_err(|e| error("lock", &path, e))
    }
}

fn error(action: &'static str, path: &Path, source: io::Error) -> StoreError {
    StoreError {
        action,
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(n: u64) -> WorkspaceRecord {
        WorkspaceRecord {
            work_item: WorkItemRef::new("Octo", "repo", n),
            kind: Kind::Issue,
            dir: "/w/octo-repo/1".into(),
            cwd: "/w/octo-repo/1".into(),
            repo: "/src/repo".into(),
            branch: format!("the-loop/issue-{n}"),
            branch_created: true,
            base: "refs/remotes/origin/main".into(),
            upstream: None,
            remote: Some("origin".into()),
            remote_url: None,
            setup_done: false,
            created_at: "2026-12-01T00:00:00.000Z".into(),
            kept: None,
            host: None,
            extra: Map::new(),
        }
    }

    #[test]
    fn records_round_trip_case_insensitively_and_keep_unknown_fields() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().join("workspaces"));
        let mut r = record(1);
        r.extra.insert("future".into(), Value::from(7));
        store.put(&r).unwrap();
        let found = store.get(&WorkItemRef::new("octo", "REPO", 1)).unwrap();
        assert_eq!(found.as_ref(), Some(&r));
        assert_eq!(found.unwrap().base_label(), "origin/main");
        assert_eq!(store.list().len(), 1);
        store.remove(&r.work_item).unwrap();
        assert_eq!(store.get(&r.work_item).unwrap(), None);
        store.remove(&r.work_item).unwrap();
    }

    #[test]
    fn the_directory_its_locks_and_records_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().join("workspaces"));
        let item = WorkItemRef::new("octo", "repo", 3);
        let lock = store.lock(&item).unwrap();
        store.put(&record(3)).unwrap();
        drop(lock);
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir.path().join("workspaces")), 0o700);
        let mut files: Vec<(String, u32)> = fs::read_dir(dir.path().join("workspaces"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| {
                (
                    p.file_name().unwrap().to_string_lossy().into_owned(),
                    mode(&p),
                )
            })
            .collect();
        files.sort();
        assert_eq!(
            files,
            [
                ("github-octo-repo-3.json".to_string(), 0o600),
                ("github-octo-repo-3.lock".to_string(), 0o600),
            ]
        );
    }

    #[test]
    fn a_corrupt_record_reads_as_absent() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().to_path_buf());
        let item = WorkItemRef::new("octo", "repo", 2);
        std::fs::write(store.path_of(&item), b"{nope").unwrap();
        assert_eq!(store.get(&item).unwrap(), None);
    }
}
