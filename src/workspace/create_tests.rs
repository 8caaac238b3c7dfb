//! Creating and reusing worktrees against real git: a bare origin and a clone. Every
//! git failure SPEC §16 names has its test: no remote, a failing fetch, a branch that
//! exists, a worktree directory that exists, a path that is not a repository.

use super::super::test_repo::{TestRepo, git, git_output, item};
use super::super::{Placement, WorkspaceError, Workspaces};
use crate::config::{RepoConfig, WorkspaceMode};
use crate::events::Source;
use std::path::Path;

async fn place(ws: &Workspaces, repo: &RepoConfig, n: u64) -> Result<Placement, WorkspaceError> {
    ws.place(&item(n), Some(repo), Source::Cli).await
}

async fn worktree(ws: &Workspaces, repo: &RepoConfig, n: u64) -> super::WorkspaceRecord {
    match place(ws, repo, n).await.unwrap() {
        Placement::Worktree(record) => *record,
        other => panic!("expected a worktree, got {other:?}"),
    }
}

fn head(dir: &Path) -> String {
    git(dir, &["rev-parse", "HEAD"]).trim().to_string()
}

/// Advances origin's `main` behind the clone's back.
fn advance_origin(repo: &TestRepo) -> String {
    let other = repo.dir.path().join("other");
    git(
        repo.dir.path(),
        &[
            "clone",
            "-q",
            repo.origin.to_str().unwrap(),
            other.to_str().unwrap(),
        ],
    );
    std::fs::write(other.join("NEW.md"), "new upstream\n").unwrap();
    git(&other, &["add", "-A"]);
    git(&other, &["commit", "-q", "-m", "upstream moved"]);
    git(&other, &["push", "-q", "origin", "main"]);
    head(&other)
}

#[tokio::test]
async fn an_issue_gets_its_own_branch_from_a_fresh_fetch_and_the_checkout_is_untouched() {
    let repo = TestRepo::new();
    let ws = repo.workspaces();
    let upstream = advance_origin(&repo);
    let before_status = git(&repo.clone, &["status", "--porcelain"]);
    let before_head = head(&repo.clone);

    let record = worktree(&ws, &repo.repo_config(), 15).await;
    assert_eq!(record.branch, "the-loop/issue-15");
    assert!(record.branch_created);
    assert_eq!(record.base, "refs/remotes/origin/main");
    assert_eq!(record.dir, ws.dir_for(&item(15)).canonicalize().unwrap());
    assert!(
        record.dir.ends_with("octo-repo/15"),
        "{}",
        record.dir.display()
    );
    assert_eq!(head(&record.dir), upstream, "started from the fetched base");
    assert!(record.dir.join("NEW.md").exists());
    let branch = git(&record.dir, &["symbolic-ref", "--short", "HEAD"]);
    assert_eq!(branch.trim(), "the-loop/issue-15");
    assert_eq!(
        git_output(&record.dir, &["rev-parse", "--abbrev-ref", "@{upstream}"])
            .status
            .code(),
        Some(128),
        "no upstream until the agent pushes"
    );

    // The operator's checkout: same branch, same commit, same (clean) status.
    assert_eq!(head(&repo.clone), before_head);
    assert_eq!(git(&repo.clone, &["status", "--porcelain"]), before_status);
    assert_eq!(
        git(&repo.clone, &["symbolic-ref", "--short", "HEAD"]).trim(),
        "main"
    );
    let created = repo.events_named("workspace.created");
    assert_eq!(created.len(), 1, "{created:?}");
    assert_eq!(created[0]["branch"], "the-loop/issue-15");
    assert_eq!(created[0]["base"], "origin/main");
    assert_eq!(created[0]["kind"], "issue");
    assert_eq!(created[0]["branch_existed"], false);
    assert!(repo.events_named("workspace.fetch_failed").is_empty());
}

#[tokio::test]
async fn two_items_get_two_worktrees_and_a_file_in_one_is_absent_in_the_other() {
    let repo = TestRepo::new();
    let ws = repo.workspaces();
    let one = worktree(&ws, &repo.repo_config(), 1).await;
    let two = worktree(&ws, &repo.repo_config(), 2).await;
    assert_ne!(one.dir, two.dir);
    std::fs::write(one.dir.join("only-one.txt"), "1").unwrap();
    assert!(!two.dir.join("only-one.txt").exists());
    assert!(!repo.clone.join("only-one.txt").exists());
}

#[tokio::test]
async fn an_existing_worktree_is_reused_with_its_work() {
    let repo = TestRepo::new();
    let ws = repo.workspaces();
    let first = worktree(&ws, &repo.repo_config(), 3).await;
    std::fs::write(first.dir.join("work.txt"), "in progress").unwrap();
    let again = worktree(&ws, &repo.repo_config(), 3).await;
    assert_eq!(again.dir, first.dir);
    assert_eq!(
        std::fs::read_to_string(again.dir.join("work.txt")).unwrap(),
        "in progress"
    );
    assert_eq!(repo.events_named("workspace.created").len(), 1);
    let reused = repo.events_named("workspace.reused");
    assert_eq!(reused.len(), 1);
    assert_eq!(reused[0]["branch"], "the-loop/issue-3");
}

#[tokio::test]
async fn without_a_remote_the_base_is_the_local_branch_and_nothing_is_fetched() {
    let repo = TestRepo::local_only();
    let ws = repo.workspaces();
    let record = worktree(&ws, &repo.repo_config(), 4).await;
    assert_eq!(record.remote, None);
    assert_eq!(record.base, "refs/heads/main");
    assert_eq!(head(&record.dir), head(&repo.clone));
    assert!(repo.events_named("workspace.fetch_failed").is_empty());
}

#[tokio::test]
async fn a_failed_fetch_falls_back_to_the_local_ref_with_a_warning() {
    let repo = TestRepo::new();
    let ws = repo.workspaces();
    let known = head(&repo.clone);
    let gone = repo.dir.path().join("no-such-origin.git");
    git(
        &repo.clone,
        &["remote", "set-url", "origin", gone.to_str().unwrap()],
    );
    let record = worktree(&ws, &repo.repo_config(), 5).await;
    assert_eq!(head(&record.dir), known, "the last fetched origin/main");
    assert_eq!(record.base, "refs/remotes/origin/main");
    let warnings = repo.events_named("workspace.fetch_failed");
    assert!(!warnings.is_empty(), "a warning event");
    assert_eq!(warnings[0]["level"], "warning");
    assert!(
        warnings
            .iter()
            .any(|w| w["error"].as_str().unwrap().contains("git -C")),
        "{warnings:?}"
    );
}

#[tokio::test]
async fn an_existing_branch_is_checked_out_as_it_is_never_reset() {
    let repo = TestRepo::new();
    let ws = repo.workspaces();
    git(&repo.clone, &["branch", "the-loop/issue-6"]);
    git(&repo.clone, &["checkout", "-q", "the-loop/issue-6"]);
    std::fs::write(repo.clone.join("earlier.txt"), "earlier work").unwrap();
    git(&repo.clone, &["add", "-A"]);
    git(&repo.clone, &["commit", "-q", "-m", "earlier work"]);
    let earlier = head(&repo.clone);
    git(&repo.clone, &["checkout", "-q", "main"]);

    let record = worktree(&ws, &repo.repo_config(), 6).await;
    assert_eq!(head(&record.dir), earlier, "the branch's own commit");
    assert!(!record.branch_created, "not ours to delete");
    assert_eq!(
        repo.events_named("workspace.created")[0]["branch_existed"],
        true
    );
}

#[tokio::test]
async fn a_branch_checked_out_in_the_operators_checkout_is_a_clear_git_error() {
    let repo = TestRepo::new();
    let ws = repo.workspaces();
    git(&repo.clone, &["checkout", "-q", "-b", "the-loop/issue-7"]);
    let err = place(&ws, &repo.repo_config(), 7).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, WorkspaceError::Git(_)), "{err:?}");
    assert!(text.contains("worktree add"), "names the command: {text}");
    assert!(text.contains("the-loop/issue-7"), "{text}");
    assert!(
        text.contains("already") || text.contains("used by worktree"),
        "quotes git: {text}"
    );
    assert!(!ws.dir_for(&item(7)).exists());
}

#[tokio::test]
async fn a_directory_in_the_worktrees_place_is_never_written_over() {
    let repo = TestRepo::new();
    let ws = repo.workspaces();
    let dir = ws.dir_for(&item(8));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("precious.txt"), "mine").unwrap();
    let err = place(&ws, &repo.repo_config(), 8).await.unwrap_err();
    assert!(matches!(err, WorkspaceError::DirExists { .. }), "{err:?}");
    assert!(err.to_string().contains("never writes over it"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.join("precious.txt")).unwrap(),
        "mine"
    );
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
}

#[tokio::test]
async fn a_path_that_is_not_a_repository_is_shared_unless_worktrees_are_asked_for() {
    let repo = TestRepo::new();
    let ws = repo.workspaces();
    let plain = repo.dir.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let mut config = RepoConfig {
        path: Some(plain.display().to_string()),
        ..RepoConfig::named("octo/repo")
    };
    assert_eq!(
        place(&ws, &config, 9).await.unwrap(),
        Placement::Shared(plain.clone())
    );
    config.workspace = WorkspaceMode::Worktree;
    let err = place(&ws, &config, 9).await.unwrap_err();
    assert!(
        matches!(err, WorkspaceError::NotARepository { .. }),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(text.contains(&plain.display().to_string()), "{text}");
    assert!(text.contains("not a git repository"), "{text}");
    assert!(
        text.contains("workspace: shared"),
        "says what to do: {text}"
    );

    // A git repository that asks to be shared runs in place.
    let shared = RepoConfig {
        workspace: WorkspaceMode::Shared,
        ..repo.repo_config()
    };
    assert_eq!(
        place(&ws, &shared, 9).await.unwrap(),
        Placement::Shared(repo.clone.clone())
    );
}

#[tokio::test]
async fn a_missing_git_is_a_clear_error_not_a_shared_fallback() {
    let repo = TestRepo::new();
    let ws = repo
        .workspaces()
        .with_git(super::super::Git::default().with_program("/nonexistent/git"));
    let config = RepoConfig {
        workspace: WorkspaceMode::Worktree,
        ..repo.repo_config()
    };
    let err = place(&ws, &config, 1).await.unwrap_err();
    assert!(err.to_string().contains("git is not installed"), "{err}");
}

#[tokio::test]
async fn a_pull_request_from_the_base_repo_checks_out_its_head_branch() {
    let repo = TestRepo::new();
    let ws = repo.workspaces();
    repo.pull_request(10, "feature/cap", "cap.txt", "capped\n");
    let record = worktree(&ws, &repo.repo_config(), 10).await;
    assert_eq!(record.kind, super::Kind::Pull);
    assert_eq!(record.branch, "feature/cap");
    assert!(record.dir.join("cap.txt").exists());
    let upstream = git(&record.dir, &["rev-parse", "--abbrev-ref", "@{upstream}"]);
    assert_eq!(
        upstream.trim(),
        "origin/feature/cap",
        "the agent pushes to it"
    );
    assert_eq!(
        record.upstream.as_deref(),
        Some("refs/remotes/origin/feature/cap")
    );
}

#[tokio::test]
async fn a_pull_request_from_a_fork_is_fetched_into_its_own_branch() {
    let repo = TestRepo::new();
    let ws = repo.workspaces();
    repo.fork_pull_request(11, "fork.txt", "from afar\n");
    let record = worktree(&ws, &repo.repo_config(), 11).await;
    assert_eq!(record.kind, super::Kind::ForkPull);
    assert_eq!(record.branch, "the-loop/pr-11");
    assert_eq!(
        std::fs::read_to_string(record.dir.join("fork.txt")).unwrap(),
        "from afar\n"
    );
    assert_eq!(record.upstream.as_deref(), Some("refs/the-loop/pull/11"));
}

#[tokio::test]
async fn a_subdirectory_path_runs_the_session_in_the_same_subdirectory() {
    let repo = TestRepo::new();
    let sub = repo.clone.join("pkg/app");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(sub.join("main.txt"), "x").unwrap();
    git(&repo.clone, &["add", "-A"]);
    git(&repo.clone, &["commit", "-q", "-m", "app"]);
    git(&repo.clone, &["push", "-q", "origin", "main"]);
    let ws = repo.workspaces();
    let config = RepoConfig {
        path: Some(sub.display().to_string()),
        ..RepoConfig::named("octo/repo")
    };
    let record = worktree(&ws, &config, 12).await;
    assert_eq!(record.cwd, record.dir.join("pkg/app"));
    assert!(record.cwd.join("main.txt").exists());
}

#[tokio::test]
async fn a_bad_base_branch_is_refused_before_git_touches_anything() {
    let repo = TestRepo::new();
    let ws = repo.workspaces();
    for bad in ["-x", "a..b", "no such"] {
        let config = RepoConfig {
            base_branch: bad.into(),
            ..repo.repo_config()
        };
        let err = place(&ws, &config, 13).await.unwrap_err();
        assert!(
            matches!(err, WorkspaceError::InvalidBranch { .. }),
            "{bad}: {err:?}"
        );
    }
    let missing = RepoConfig {
        base_branch: "release".into(),
        ..repo.repo_config()
    };
    let err = place(&ws, &missing, 13).await.unwrap_err();
    assert!(matches!(err, WorkspaceError::BaseMissing { .. }), "{err:?}");
    assert!(!ws.dir_for(&item(13)).exists());
}

#[tokio::test]
async fn setup_runs_in_the_new_worktree_and_a_failure_is_reported_then_retried() {
    let repo = TestRepo::new();
    let ws = repo.workspaces();
    let marker = repo.dir.path().join("setup-ran");
    let mut config = repo.repo_config();
    config.setup = vec![
        vec![
            "touch".into(),
            "{worktree}/from-setup".into(),
            marker.display().to_string(),
        ],
        vec!["git".into(), "definitely-not-a-git-command".into()],
    ];
    let err = place(&ws, &config, 14).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, WorkspaceError::SetupFailed { .. }), "{err:?}");
    assert!(text.contains("git definitely-not-a-git-command"), "{text}");
    assert!(text.contains("exited with 1"), "{text}");
    let dir = ws.dir_for(&item(14));
    assert!(
        dir.join("from-setup").exists(),
        "the first command ran there"
    );
    assert!(marker.exists());
    let failed = repo.events_named("workspace.setup_failed");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["level"], "error");
    assert_eq!(failed[0]["index"], 1);
    assert_eq!(failed[0]["exit_code"], 1);
    assert!(
        failed[0]["output"]
            .as_str()
            .unwrap()
            .contains("not a git command"),
        "{failed:?}"
    );

    // Fixed: the next start reuses the worktree and runs setup again.
    config.setup.pop();
    std::fs::remove_file(&marker).unwrap();
    let record = worktree(&ws, &config, 14).await;
    assert!(record.setup_done);
    assert!(marker.exists(), "setup ran again");
    std::fs::remove_file(&marker).unwrap();
    worktree(&ws, &config, 14).await;
    assert!(!marker.exists(), "and not a third time");
}

#[tokio::test]
async fn setup_timeouts_and_missing_programs_are_named() {
    let repo = TestRepo::new();
    let ws = repo.workspaces();
    let mut config = repo.repo_config();
    config.setup = vec![vec!["sleep".into(), "30".into()]];
    config.setup_timeout_seconds = 1;
    let err = place(&ws, &config, 16).await.unwrap_err().to_string();
    assert!(err.contains("timed out after 1s"), "{err}");
    config.setup = vec![vec!["/nonexistent/setup-tool".into()]];
    let err = place(&ws, &config, 16).await.unwrap_err().to_string();
    assert!(err.contains("was not found"), "{err}");
}

#[test]
fn the_branches_the_loop_creates_route_back_to_their_item() {
    use crate::routing::extract::branch_issue;
    assert_eq!(branch_issue(&super::super::issue_branch(15)), Some(15));
    assert_eq!(branch_issue(&super::super::fork_pull_branch(7)), Some(7));
}

#[tokio::test]
async fn what_a_repository_configures_to_run_is_never_run_by_the_loop() {
    // An agent can write the shared .git/config and hooks; the supervisor's git calls
    // (create, status, diff, remove) must not execute any of it.
    let repo = TestRepo::new();
    let ws = repo.workspaces();
    let marker = repo.dir.path().join("PWNED");
    let script = repo.dir.path().join("evil.sh");
    std::fs::write(&script, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let hooks = repo.clone.join(".git/hooks");
    for hook in [
        "post-checkout",
        "reference-transaction",
        "post-index-change",
    ] {
        std::fs::copy(&script, hooks.join(hook)).unwrap();
    }
    let s = script.display().to_string();
    git(&repo.clone, &["config", "core.fsmonitor", &s]);
    git(&repo.clone, &["config", "diff.external", &s]);
    git(&repo.clone, &["config", "core.pager", &s]);
    let record = worktree(&ws, &repo.repo_config(), 30).await;
    std::fs::write(record.dir.join("README.md"), "changed\n").unwrap();
    super::super::status::status(ws.git(), &record)
        .await
        .unwrap();
    super::super::status::changes(ws.git(), &record.dir, Some(&record.base))
        .await
        .unwrap();
    ws.finish(&item(30), Source::Cli).await.unwrap();
    assert!(!marker.exists(), "a hook, fsmonitor or diff driver ran");
}

#[tokio::test]
async fn a_hostile_branch_name_on_the_remote_is_only_ever_an_argument() {
    let repo = TestRepo::new();
    let ws = repo.workspaces();
    // git accepts it as a branch name; a shell would run three commands.
    let branch = "feat/$(touch${IFS}PWNED-a)`touch${IFS}PWNED-b`;touch${IFS}PWNED-c";
    repo.pull_request(31, branch, "p.txt", "x");
    let record = worktree(&ws, &repo.repo_config(), 31).await;
    assert_eq!(record.branch, branch, "taken from git's refs, as it is");
    ws.finish(&item(31), Source::Cli).await.unwrap();
    let here = std::env::current_dir().unwrap();
    for dir in [
        here.as_path(),
        repo.clone.as_path(),
        repo.dir.path(),
        record.dir.as_path(),
    ] {
        for m in ["PWNED-a", "PWNED-b", "PWNED-c"] {
            assert!(!dir.join(m).exists(), "{m} in {}", dir.display());
        }
    }
}

/// SPEC §18.5: git checks out, and setup writes, under the-loop's umask; the worktree
/// ends up the user's alone — its scripts still executable, and git none the wiser.
#[tokio::test]
async fn a_new_worktree_and_what_setup_wrote_are_private_and_git_sees_no_change() {
    use std::os::unix::fs::PermissionsExt;
    let repo = TestRepo::seeded(|seed| {
        std::fs::create_dir(seed.join("bin")).unwrap();
        std::fs::write(seed.join("bin/run.sh"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(
            seed.join("bin/run.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        std::fs::write(seed.join("README.md"), "hello\n").unwrap();
    });
    let mut config = repo.repo_config();
    config.setup = vec![vec![
        "sh".into(),
        "-c".into(),
        "mkdir made && echo x > made/by-setup && chmod 0644 made/by-setup".into(),
    ]];
    let ws = repo.workspaces();
    let record = worktree(&ws, &config, 21).await;

    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let dir = &record.dir;
    for d in [
        dir.parent().unwrap(),
        dir,
        &dir.join("bin"),
        &dir.join("made"),
    ] {
        assert_eq!(mode(d), 0o700, "{}", d.display());
    }
    assert_eq!(mode(&dir.join("bin/run.sh")), 0o700, "still executable");
    assert_eq!(mode(&dir.join("README.md")), 0o600);
    assert_eq!(mode(&dir.join(".git")), 0o600);
    assert_eq!(mode(&dir.join("made/by-setup")), 0o600);
    assert_eq!(
        git(dir, &["status", "--porcelain", "--untracked-files=no"]),
        "",
        "no tracked file looks changed"
    );
    // The index took the new ctimes: a read-only status has nothing to re-read.
    let diff = git_output(dir, &["diff-files", "--quiet"]);
    assert!(diff.status.success(), "{diff:?}");
}
