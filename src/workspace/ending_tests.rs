//! The ending rule against real git: clean and fully merged or pushed → removed with
//! its branch; changed files or unpushed commits → kept, saying why; discard on request.

use super::super::test_repo::{TestRepo, git, git_output, item};
use super::super::{Placement, Workspaces};
use super::*;
use crate::events::Source;

async fn worktree(repo: &TestRepo, ws: &Workspaces, n: u64) -> WorkspaceRecord {
    match ws
        .place(&item(n), Some(&repo.repo_config()), Source::Cli)
        .await
        .unwrap()
    {
        Placement::Worktree(record) => *record,
        other => panic!("expected a worktree, got {other:?}"),
    }
}

fn commit(dir: &std::path::Path, file: &str) {
    std::fs::write(dir.join(file), file).unwrap();
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", file]);
}

fn has_branch(repo: &TestRepo, branch: &str) -> bool {
    let full = format!("refs/heads/{branch}");
    git_output(&repo.clone, &["rev-parse", "--verify", "--quiet", &full])
        .status
        .success()
}

#[tokio::test]
async fn a_clean_worktree_is_removed_with_its_branch() {
    let repo = TestRepo::new();
    let ws = repo.workspaces();
    let record = worktree(&repo, &ws, 1).await;
    let finished = ws.finish(&item(1), Source::Cli).await.unwrap();
    assert!(
        matches!(
            finished,
            Finished::Removed {
                branch_deleted: true,
                ..
            }
        ),
        "{finished:?}"
    );
    assert!(!record.dir.exists());
    assert!(!has_branch(&repo, "the-loop/issue-1"));
    assert_eq!(ws.record(&item(1)).unwrap(), None);
    let removed = repo.events_named("workspace.removed");
    assert_eq!(removed.len(), 1);
    assert_eq!(removed[0]["branch_deleted"], true);
    assert_eq!(removed[0]["discarded"], false);
    assert!(!git(&repo.clone, &["worktree", "list"]).contains("octo-repo"));
    // Nothing left to finish.
    assert_eq!(
        ws.finish(&item(1), Source::Cli).await.unwrap(),
        Finished::NoWorkspace
    );
}

#[tokio::test]
async fn changed_and_untracked_files_keep_the_worktree_and_say_how_many() {
    let repo = TestRepo::new();
    let ws = repo.workspaces();
    let record = worktree(&repo, &ws, 2).await;
    std::fs::write(record.dir.join("README.md"), "edited\n").unwrap();
    std::fs::write(record.dir.join("new.txt"), "untracked\n").unwrap();
    let finished = ws.finish(&item(2), Source::Cli).await.unwrap();
    let Finished::Kept { reason, .. } = &finished else {
        panic!("kept expected: {finished:?}");
    };
    assert_eq!(reason, "2 changed files");
    assert!(record.dir.join("new.txt").exists());
    assert!(has_branch(&repo, "the-loop/issue-2"));
    let kept = repo.events_named("workspace.kept");
    assert_eq!(kept[0]["changed_files"], 2);
    assert_eq!(kept[0]["unpushed_commits"], 0);
    assert_eq!(kept[0]["reason"], "2 changed files");
    assert_eq!(
        ws.record(&item(2)).unwrap().unwrap().kept.as_deref(),
        Some("2 changed files")
    );
    // An ignored file alone does not keep a tree.
    let other = worktree(&repo, &ws, 20).await;
    std::fs::write(repo.clone.join(".git/info/exclude"), "build-output\n").unwrap();
    std::fs::write(other.dir.join("build-output"), "x").unwrap();
    let finished = ws.finish(&item(20), Source::Cli).await.unwrap();
    assert!(matches!(finished, Finished::Removed { .. }), "{finished:?}");
}

#[tokio::test]
async fn unpushed_commits_keep_the_worktree_and_pushed_ones_do_not() {
    let repo = TestRepo::new();
    let ws = repo.workspaces();
    let record = worktree(&repo, &ws, 3).await;
    commit(&record.dir, "a.txt");
    commit(&record.dir, "b.txt");
    let finished = ws.finish(&item(3), Source::Cli).await.unwrap();
    assert!(
        matches!(&finished, Finished::Kept { reason, .. } if reason == "2 unpushed commits"),
        "{finished:?}"
    );
    assert!(record.dir.exists());

    // Pushed (the agent's `git push -u origin HEAD`): now nothing would be lost.
    git(
        &record.dir,
        &["push", "-q", "-u", "origin", "the-loop/issue-3"],
    );
    let finished = ws.finish(&item(3), Source::Cli).await.unwrap();
    assert!(matches!(finished, Finished::Removed { .. }), "{finished:?}");
    assert!(!record.dir.exists());
    assert!(!has_branch(&repo, "the-loop/issue-3"), "the local branch");
    let remote = git(&repo.origin, &["branch", "--list", "the-loop/issue-3"]);
    assert!(
        remote.contains("the-loop/issue-3"),
        "the pushed branch stays"
    );
}

#[tokio::test]
async fn commits_merged_into_the_base_count_as_safe() {
    let repo = TestRepo::new();
    let ws = repo.workspaces();
    let record = worktree(&repo, &ws, 4).await;
    commit(&record.dir, "fix.txt");
    git(&record.dir, &["push", "-q", "origin", "HEAD:main"]);
    git(&repo.clone, &["fetch", "-q", "origin"]);
    let finished = ws.finish(&item(4), Source::Cli).await.unwrap();
    assert!(matches!(finished, Finished::Removed { .. }), "{finished:?}");
}

#[tokio::test]
async fn a_commit_on_another_branch_in_the_worktree_keeps_it() {
    let repo = TestRepo::new();
    let ws = repo.workspaces();
    let record = worktree(&repo, &ws, 5).await;
    git(&record.dir, &["checkout", "-q", "-b", "agent-side-branch"]);
    commit(&record.dir, "side.txt");
    let finished = ws.finish(&item(5), Source::Cli).await.unwrap();
    assert!(
        matches!(&finished, Finished::Kept { reason, .. } if reason == "1 unpushed commit"),
        "{finished:?}"
    );
}

#[tokio::test]
async fn a_worktree_git_refuses_to_remove_is_kept_with_gits_words() {
    let repo = TestRepo::new();
    let ws = repo.workspaces();
    let record = worktree(&repo, &ws, 6).await;
    let dir = record.dir.display().to_string();
    git(&repo.clone, &["worktree", "lock", "--reason", "mine", &dir]);
    let finished = ws.finish(&item(6), Source::Cli).await.unwrap();
    let Finished::Kept { reason, .. } = &finished else {
        panic!("kept expected: {finished:?}");
    };
    assert!(reason.starts_with("git refused to remove it"), "{reason}");
    assert!(reason.contains("locked"), "{reason}");
    assert!(record.dir.exists());
}

#[tokio::test]
async fn discard_removes_work_and_says_what_was_thrown_away() {
    let repo = TestRepo::new();
    let ws = repo.workspaces();
    let record = worktree(&repo, &ws, 7).await;
    commit(&record.dir, "a.txt");
    std::fs::write(record.dir.join("dirty.txt"), "x").unwrap();
    let finished = ws.discard(&item(7), Source::Cli).await.unwrap();
    assert!(
        matches!(
            finished,
            Finished::Removed {
                branch_deleted: true,
                ..
            }
        ),
        "{finished:?}"
    );
    assert!(!record.dir.exists());
    assert!(!has_branch(&repo, "the-loop/issue-7"));
    let removed = &repo.events_named("workspace.removed")[0];
    assert_eq!(removed["discarded"], true);
    assert_eq!(removed["level"], "warning");
    assert_eq!(
        removed["discarded_changes"],
        "1 changed file, 1 unpushed commit"
    );
}

#[tokio::test]
async fn a_branch_that_existed_before_is_never_deleted() {
    let repo = TestRepo::new();
    let ws = repo.workspaces();
    git(&repo.clone, &["branch", "the-loop/issue-8"]);
    let record = worktree(&repo, &ws, 8).await;
    assert!(!record.branch_created);
    let finished = ws.finish(&item(8), Source::Cli).await.unwrap();
    assert!(
        matches!(
            finished,
            Finished::Removed {
                branch_deleted: false,
                ..
            }
        ),
        "{finished:?}"
    );
    assert!(has_branch(&repo, "the-loop/issue-8"));
}

#[tokio::test]
async fn a_worktree_removed_by_hand_is_forgotten_and_its_branch_kept() {
    let repo = TestRepo::new();
    let ws = repo.workspaces();
    let record = worktree(&repo, &ws, 9).await;
    commit(&record.dir, "a.txt");
    std::fs::remove_dir_all(&record.dir).unwrap();
    let finished = ws.finish(&item(9), Source::Cli).await.unwrap();
    assert!(matches!(finished, Finished::Removed { .. }), "{finished:?}");
    assert!(has_branch(&repo, "the-loop/issue-9"), "its commit is there");
    // A new start re-creates the worktree on that branch, with the commit.
    let again = worktree(&repo, &ws, 9).await;
    assert!(again.dir.join("a.txt").exists());
}

#[tokio::test]
async fn a_fork_pull_requests_head_ref_goes_with_its_worktree() {
    let repo = TestRepo::new();
    let ws = repo.workspaces();
    repo.fork_pull_request(10, "f.txt", "x");
    let record = worktree(&repo, &ws, 10).await;
    let finished = ws.finish(&item(10), Source::Cli).await.unwrap();
    assert!(
        matches!(finished, Finished::Removed { .. }),
        "the fork's commits are in its head: {finished:?}"
    );
    assert!(!record.dir.exists());
    let left = git_output(
        &repo.clone,
        &["rev-parse", "--verify", "--quiet", "refs/the-loop/pull/10"],
    );
    assert!(!left.status.success());
}

#[test]
fn reasons_read_naturally() {
    let a = |c, u| Assessment {
        changed_files: c,
        unpushed_commits: u,
    };
    assert_eq!(a(1, 0).reason(), "1 changed file");
    assert_eq!(a(3, 1).reason(), "3 changed files, 1 unpushed commit");
    assert_eq!(a(0, 2).reason(), "2 unpushed commits");
    assert!(a(0, 0).is_clean());
    assert_eq!(
        count_status_entries("R  new\0old\0 M a\0?? b\0"),
        3,
        "a rename is one entry"
    );
}
