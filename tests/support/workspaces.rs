//! The git side of a world: a bare origin with one commit on `main` and the operator's
//! clone of it, which the sessions' worktrees are made from.

use super::e2e::{Setup, World};
use serde_json::Value;
use std::path::PathBuf;
use the_loop::workspace::test_repo::TestRepo;
use the_loop::workspace::test_repo::git;

/// The one test-repo builder of the library ([`TestRepo`]: origin and clone, removed on
/// drop), plus what the end-to-end tests do with it.
pub struct Repo(TestRepo);

impl std::ops::Deref for Repo {
    type Target = TestRepo;
    fn deref(&self) -> &TestRepo {
        &self.0
    }
}

impl Repo {
    pub fn new() -> Self {
        Self(TestRepo::new())
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
