//! Real git repositories for tests and benchmarks: a bare "origin" and the operator's
//! clone of it, in a temp dir, with the user's and the system's git config kept out.
//! The one builder of test repositories — the unit tests here, the end-to-end
//! workspace tests (`tests/support/workspaces.rs`) and `benches/workspace.rs` use it.
//! Compiled only for tests (`cfg(test)` or the `test-support` feature).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::Workspaces;
use crate::config::RepoConfig;
use crate::events::EventLog;
use crate::paths::StatePaths;
use crate::work_item::WorkItemRef;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

pub struct TestRepo {
    pub dir: tempfile::TempDir,
    /// The bare origin.
    pub origin: PathBuf,
    /// The operator's checkout.
    pub clone: PathBuf,
    pub state: StatePaths,
}

/// `git ARGS` in `dir` with a fixed identity; panics on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_output(dir, args);
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn git_output(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap()
}

/// Whether `dir`'s repository has the local branch `branch`.
pub fn has_branch(dir: &Path, branch: &str) -> bool {
    let name = format!("refs/heads/{branch}");
    git_output(dir, &["rev-parse", "--verify", "--quiet", &name])
        .status
        .success()
}

impl Default for TestRepo {
    fn default() -> Self {
        Self::new()
    }
}

impl TestRepo {
    /// origin with one commit on `main` (a `README.md`), cloned.
    pub fn new() -> Self {
        Self::seeded(|seed| std::fs::write(seed.join("README.md"), "hello\n").unwrap())
    }

    /// origin whose one commit on `main` holds what `files` writes into the empty work
    /// tree it is given, cloned.
    pub fn seeded(files: impl FnOnce(&Path)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let origin = dir.path().join("origin.git");
        let seed = dir.path().join("seed");
        let clone = dir.path().join("clone");
        std::fs::create_dir_all(&seed).unwrap();
        git(
            dir.path(),
            &["init", "-q", "--bare", origin.to_str().unwrap()],
        );
        git(&seed, &["init", "-q"]);
        files(&seed);
        git(&seed, &["add", "-A"]);
        git(&seed, &["commit", "-q", "-m", "first"]);
        git(
            &seed,
            &["remote", "add", "origin", origin.to_str().unwrap()],
        );
        git(&seed, &["push", "-q", "origin", "main"]);
        git(
            dir.path(),
            &[
                "clone",
                "-q",
                origin.to_str().unwrap(),
                clone.to_str().unwrap(),
            ],
        );
        let state = StatePaths::new(dir.path().join("state"));
        Self {
            dir,
            origin,
            clone,
            state,
        }
    }

    /// A plain repository with one commit and no remote.
    pub fn local_only() -> Self {
        let repo = Self::new();
        git(&repo.clone, &["remote", "remove", "origin"]);
        repo
    }

    pub fn workspaces(&self) -> Workspaces {
        Workspaces::at(
            self.dir.path().join("worktrees"),
            &self.state,
            EventLog::open(&self.state),
        )
    }

    pub fn repo_config(&self) -> RepoConfig {
        RepoConfig {
            path: Some(self.clone.display().to_string()),
            ..RepoConfig::named("octo/repo")
        }
    }

    /// Every event written so far.
    pub fn events(&self) -> Vec<Value> {
        crate::events::lines::all(&self.state.events())
    }

    pub fn events_named(&self, name: &str) -> Vec<Value> {
        crate::events::lines::named(&self.state.events(), name)
    }

    /// Commits `file` with `text` on a new branch of origin (through a second clone),
    /// and opens "pull request" `number` from it: `refs/pull/N/head` on origin.
    pub fn pull_request(&self, number: u64, branch: &str, file: &str, text: &str) {
        let work = self.dir.path().join(format!("pr-{number}"));
        git(
            self.dir.path(),
            &[
                "clone",
                "-q",
                self.origin.to_str().unwrap(),
                work.to_str().unwrap(),
            ],
        );
        git(&work, &["checkout", "-q", "-b", branch]);
        std::fs::write(work.join(file), text).unwrap();
        git(&work, &["add", "-A"]);
        git(&work, &["commit", "-q", "-m", "change"]);
        git(&work, &["push", "-q", "origin", branch]);
        let pull = format!("HEAD:refs/pull/{number}/head");
        git(&work, &["push", "-q", "origin", &pull]);
    }

    /// A fork's pull request: only `refs/pull/N/head` exists on origin.
    pub fn fork_pull_request(&self, number: u64, file: &str, text: &str) {
        let work = self.dir.path().join(format!("fork-{number}"));
        git(
            self.dir.path(),
            &[
                "clone",
                "-q",
                self.origin.to_str().unwrap(),
                work.to_str().unwrap(),
            ],
        );
        std::fs::write(work.join(file), text).unwrap();
        git(&work, &["add", "-A"]);
        git(&work, &["commit", "-q", "-m", "from a fork"]);
        let pull = format!("HEAD:refs/pull/{number}/head");
        git(&work, &["push", "-q", "origin", &pull]);
    }
}

pub fn item(n: u64) -> WorkItemRef {
    WorkItemRef::new("octo", "repo", n)
}
