//! A worktree on another host (issue 32): a repo with `host:` and `workspace: worktree`
//! (or `auto` over a git repository there) gives each issue its own git worktree on
//! that host, `<stateDir>/worktrees/<owner>-<repo>/<N>`, on `the-loop/issue-N`, made
//! with the host's git over its SSH connection, and runs `repos[].setup` there. The
//! same rules as here: the operator's checkout is never touched, an existing directory
//! that is not the item's worktree is never written over, setup is argv only.
//!
//! A worktree on a host is kept when its session ends (nothing of it is judged from
//! here); `sessions reset --discard-workspace` does not reach it either.

use super::sessions::SessionError;
use crate::config::{RepoConfig, WorkspaceMode};
use crate::events::{Event, EventLog, EventType, Level, Source};
use crate::tmux::RemoteHost;
use crate::work_item::WorkItemRef;
use crate::workspace::{Git, issue_branch};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// A worktree made (or found) on the host.
pub(crate) struct RemoteWorktree {
    pub dir: String,
    pub branch: String,
}

fn refused(reason: String) -> SessionError {
    SessionError::Remote(reason)
}

/// Whether `repo`'s sessions on `host` get worktrees: `worktree`, or `auto` when its
/// `path` there is a git repository.
pub(crate) async fn wants_worktree(host: &RemoteHost, repo: &RepoConfig, path: &str) -> bool {
    match repo.workspace {
        WorkspaceMode::Shared => false,
        WorkspaceMode::Worktree => true,
        WorkspaceMode::Auto => git(host)
            .line(
                std::path::Path::new(path),
                &["rev-parse", "--show-toplevel"],
            )
            .await
            .ok()
            .flatten()
            .is_some(),
    }
}

fn git(host: &RemoteHost) -> Git {
    Git::default().on(Arc::clone(&host.transport))
}

/// The item's worktree on `host`: the existing one, or a new one from the base, with
/// setup run in it. Only issues: a pull request's head is fetched here, not there.
pub(crate) async fn place(
    host: &RemoteHost,
    repo: &RepoConfig,
    repo_dir: &str,
    item: &WorkItemRef,
    events: &EventLog,
    source: Source,
) -> Result<RemoteWorktree, SessionError> {
    let git = git(host);
    let at = |p: &str| PathBuf::from(p);
    let top = git
        .line(&at(repo_dir), &["rev-parse", "--show-toplevel"])
        .await
        .map_err(|e| refused(e.to_string()))?
        .ok_or_else(|| {
            refused(format!(
                "{repo_dir} on host `{}` is not a git repository: set repos[].workspace: shared to run sessions there without worktrees",
                host.name()
            ))
        })?;
    let relative = format!("worktrees/{}/{}", item.repo_dir_name(), item.number);
    let dir = host
        .resolve(&host.in_state_dir(&relative))
        .ok_or_else(|| refused(format!("host `{}` did not say its HOME", host.name())))?;
    let branch = issue_branch(item.number);
    let setup_done = format!("{dir}.setup-done");
    let exists = run(host, &["test", "-e", &dir], Duration::from_secs(15)).await?;
    if exists {
        let on = git
            .line(&at(&dir), &["symbolic-ref", "--quiet", "--short", "HEAD"])
            .await
            .map_err(|e| refused(e.to_string()))?;
        if on.as_deref() != Some(branch.as_str()) {
            return Err(refused(format!(
                "{dir} on host `{}` exists but is not the worktree of {item} (on {}); the-loop never writes over it: move it away, then start again",
                host.name(),
                on.as_deref().unwrap_or("no branch")
            )));
        }
        let _ = events.emit(
            Event::new(source, EventType::WorkspaceReused)
                .with("work_item", item.to_string())
                .with("workspace", dir.as_str())
                .with("branch", branch.as_str())
                .with("host", host.name()),
        );
        // A setup that failed last time runs again.
        if !run(host, &["test", "-e", &setup_done], Duration::from_secs(15)).await? {
            setup(host, repo, &top, &dir, &branch, item, events, source).await?;
            run(host, &["touch", &setup_done], Duration::from_secs(15)).await?;
        }
        return Ok(RemoteWorktree { dir, branch });
    }
    // A pull request works on its head branch, which is fetched on this machine only.
    let pull = format!("refs/pull/{}/head", item.number);
    let listed = git
        .capped(&at(&top), &["ls-remote", "origin", &pull], 4096)
        .await
        .map_err(|e| refused(e.to_string()))?;
    if listed.success && listed.stdout.contains(&pull) {
        return Err(refused(format!(
            "{item} is a pull request, and worktrees on host `{}` are made for issues only: set repos[].workspace: shared for this repo",
            host.name()
        )));
    }
    let base = base_of(&git, repo, &top).await?;
    let parent = dir.rsplit_once('/').map_or("/", |(p, _)| p).to_string();
    if !run(
        host,
        &["mkdir", "-p", "-m", "700", &parent],
        Duration::from_secs(15),
    )
    .await?
    {
        return Err(refused(format!(
            "cannot create {parent} on host `{}`",
            host.name()
        )));
    }
    let existed = git
        .line(
            &at(&top),
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("refs/heads/{branch}"),
            ],
        )
        .await
        .map_err(|e| refused(e.to_string()))?
        .is_some();
    let add: Vec<&str> = if existed {
        vec!["worktree", "add", &dir, &branch]
    } else {
        vec!["worktree", "add", "-b", &branch, &dir, &base]
    };
    git.ok(&at(&top), &add)
        .await
        .map_err(|e| refused(e.to_string()))?;
    let _ = events.emit(
        Event::new(source, EventType::WorkspaceCreated)
            .with("work_item", item.to_string())
            .with("workspace", dir.as_str())
            .with("branch", branch.as_str())
            .with("base", base.as_str())
            .with("kind", "issue")
            .with("repo", top.as_str())
            .with("branch_existed", existed)
            .with("host", host.name()),
    );
    setup(host, repo, &top, &dir, &branch, item, events, source).await?;
    run(host, &["touch", &setup_done], Duration::from_secs(15)).await?;
    Ok(RemoteWorktree { dir, branch })
}

/// `repos[].baseBranch`, else the remote's default branch, else the current branch.
async fn base_of(git: &Git, repo: &RepoConfig, top: &str) -> Result<String, SessionError> {
    if !repo.base_branch.is_empty() {
        return Ok(repo.base_branch.clone());
    }
    let top = std::path::Path::new(top);
    let remote_head = git
        .line(
            top,
            &[
                "symbolic-ref",
                "--quiet",
                "--short",
                "refs/remotes/origin/HEAD",
            ],
        )
        .await
        .map_err(|e| refused(e.to_string()))?;
    if let Some(head) = remote_head {
        return Ok(head);
    }
    git.line(top, &["symbolic-ref", "--quiet", "--short", "HEAD"])
        .await
        .map_err(|e| refused(e.to_string()))?
        .ok_or_else(|| {
            refused("cannot tell which branch new work starts from (no origin/HEAD, and the checkout is on no branch): set repos[].baseBranch".into())
        })
}

/// `repos[].setup` in the worktree on the host: each an argv, placeholders replaced
/// inside their argument, run there under `timeout`. The first failure stops the start.
#[allow(clippy::too_many_arguments)]
async fn setup(
    host: &RemoteHost,
    repo: &RepoConfig,
    repo_dir: &str,
    dir: &str,
    branch: &str,
    item: &WorkItemRef,
    events: &EventLog,
    source: Source,
) -> Result<(), SessionError> {
    let table = [
        ("{worktree}", Some(dir)),
        ("{repoPath}", Some(repo_dir)),
        ("{branch}", Some(branch)),
    ];
    let limit = Duration::from_secs(repo.setup_timeout_seconds.max(1));
    for (index, command) in repo.setup.iter().enumerate() {
        let argv = crate::substitute::argv(command, &table, crate::substitute::Missing::Empty);
        let mut remote = vec![
            "env".to_string(),
            "-C".into(),
            dir.to_string(),
            "timeout".into(),
            format!("{}s", limit.as_secs()),
        ];
        remote.extend(argv.iter().cloned());
        let out = host
            .transport
            .run(&remote, None, limit + Duration::from_secs(10))
            .await;
        let failure = match out {
            Ok(out) if out.success => continue,
            Ok(out) => format!(
                "exited with {}: {}",
                out.code.unwrap_or(-1),
                crate::workspace::git::tail(&out.stderr)
            ),
            Err(e) => e.to_string(),
        };
        let _ = events.emit(
            Event::new(source, EventType::WorkspaceSetupFailed)
                .level(Level::Error)
                .with("work_item", item.to_string())
                .with("workspace", dir)
                .with("command", argv.join(" "))
                .with("index", index)
                .with("error", failure.as_str())
                .with("host", host.name()),
        );
        return Err(refused(format!(
            "setup command `{}` on host `{}` {failure}; the worktree {dir} is kept, and a new start runs setup again",
            argv.join(" "),
            host.name()
        )));
    }
    Ok(())
}

/// Runs `argv` on the host: whether it succeeded.
async fn run(host: &RemoteHost, argv: &[&str], limit: Duration) -> Result<bool, SessionError> {
    let argv: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
    host.transport
        .run(&argv, None, limit)
        .await
        .map(|out| out.success)
        .map_err(|e| refused(e.to_string()))
}
