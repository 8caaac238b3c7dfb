//! The git side of a world: a bare origin with one commit on `main` and the operator's
//! clone of it, which the sessions' worktrees are made from.

use super::e2e::{Setup, World};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Repo {
    /// Holds origin and clone; removed on drop.
    _dir: tempfile::TempDir,
    pub origin: PathBuf,
    pub clone: PathBuf,
}

/// `git ARGS` in `dir` with a fixed identity, the user's own git config kept out.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn has_branch(dir: &Path, branch: &str) -> bool {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["rev-parse", "--verify", "--quiet"])
        .arg(format!("refs/heads/{branch}"))
        .output()
        .unwrap()
        .status
        .success()
}

impl Repo {
    pub fn new() -> Self {
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
        std::fs::write(seed.join("README.md"), "the repo\n").unwrap();
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
        Self {
            _dir: dir,
            origin,
            clone,
        }
    }

    /// A world whose repo `path` is this clone.
    pub async fn world(&self, setup: Setup) -> World {
        World::new(Setup {
            repo_path: Some(self.clone.clone()),
            ..setup
        })
        .await
    }

    /// What the operator's checkout looks like: branch, HEAD, `status --porcelain`.
    pub fn checkout_state(&self) -> (String, String, String) {
        (
            git(&self.clone, &["symbolic-ref", "--short", "HEAD"]),
            git(&self.clone, &["rev-parse", "HEAD"]),
            git(
                &self.clone,
                &["status", "--porcelain", "--untracked-files=all"],
            ),
        )
    }
}

/// The session row of `sessions list --json` for `#number`.
pub fn row(w: &World, number: u64) -> Value {
    w.session(number).expect("a session row")
}

/// The row's worktree directory.
pub fn workspace_of(w: &World, number: u64) -> PathBuf {
    PathBuf::from(
        row(w, number)["workspace"]
            .as_str()
            .expect("a worktree in sessions list --json"),
    )
}

/// The working directory the agent of `workspace` booted in, from its log.
pub fn agent_cwds(w: &World) -> Vec<String> {
    w.agent_lines()
        .into_iter()
        .filter(|l| l["boot"] == true)
        .filter_map(|l| l["cwd"].as_str().map(str::to_string))
        .collect()
}
