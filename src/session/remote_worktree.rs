//! A worktree on another host (issue 32): a repo with `host:` and `workspace: worktree`
//! (or `auto` over a git repository there) gives each issue its own git worktree on
//! that host, `<stateDir>/worktrees/<owner>-<repo>/<N>`, on `the-loop/issue-N`, made
//! with the host's git over its SSH connection, and runs `repos[].setup` there. The
//! same rules as here: the operator's checkout is never touched, an existing directory
//! that is not the item's worktree is never written over, setup is argv only.
//!
//! Each is recorded in this machine's workspace store with its host
//! ([`WorkspaceRecord::host`]): the ending rule judges it there (removed when nothing
//! would be lost, kept with why otherwise or when the host cannot be asked), `sessions
//! reset --discard-workspace` removes it there, and a ship pushes from it there.

use super::sessions::SessionError;
use crate::config::{RepoConfig, WorkspaceMode};
use crate::events::{Event, EventLog, EventType, Level, Source};
use crate::tmux::RemoteHost;
use crate::work_item::WorkItemRef;
use crate::workspace::{Git, GitError, Kind, WorkspaceRecord, Workspaces, issue_branch};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

fn refused(reason: String) -> SessionError {
    SessionError::Remote(reason)
}

/// Whether `repo`'s sessions on `host` get worktrees: `worktree`, or `auto` when its
/// `path` there is a git repository.
pub(crate) async fn wants_worktree(host: &RemoteHost, repo: &RepoConfig, path: &str) -> bool {
    match repo.workspace {
        WorkspaceMode::Shared => false,
        WorkspaceMode::Worktree => true,
        WorkspaceMode::Auto => Git::default()
            .on(Arc::clone(&host.transport))
            .line(Path::new(path), &["rev-parse", "--show-toplevel"])
            .await
            .ok()
            .flatten()
            .is_some(),
    }
}

/// The item's worktree on `host`: the existing one, or a new one from the base, with
/// setup run in it; recorded here (`workspaces`' store, naming the host) so shipping,
/// the Sessions pane and the ending rule reach it there. Only issues: a pull request's
/// head is fetched here, not there.
pub(crate) async fn place(
    host: &RemoteHost,
    repo: &RepoConfig,
    repo_dir: &str,
    item: &WorkItemRef,
    workspaces: &Workspaces,
    source: Source,
) -> Result<WorkspaceRecord, SessionError> {
    let there = workspaces.on(Arc::clone(&host.transport));
    let _lock = there.lock(item).await?;
    let git = there.git().clone();
    let failed = |e: GitError| refused(e.to_string());
    let top = git
        .line(Path::new(repo_dir), &["rev-parse", "--show-toplevel"])
        .await
        .map_err(failed)?
        .ok_or_else(|| {
            refused(format!(
                "{repo_dir} on host `{}` is not a git repository: set repos[].workspace: shared to run sessions there without worktrees",
                host.name()
            ))
        })?;
    let top = PathBuf::from(top);
    let relative = format!("worktrees/{}/{}", item.repo_dir_name(), item.number);
    let dir = host
        .resolve(&host.in_state_dir(&relative))
        .ok_or_else(|| refused(format!("host `{}` did not say its HOME", host.name())))?;
    let dir = PathBuf::from(dir);
    let branch = issue_branch(item.number);
    let known = there
        .record(item)
        .map_err(crate::workspace::WorkspaceError::from)?
        .filter(|r| r.host.as_deref() == Some(host.name()) && r.dir == dir);
    if there.dir_exists(&dir).await? {
        let on = git
            .line(&dir, &["symbolic-ref", "--quiet", "--short", "HEAD"])
            .await
            .map_err(failed)?;
        if on.as_deref() != Some(branch.as_str()) {
            return Err(refused(format!(
                "{} on host `{}` exists but is not the worktree of {item} (on {}); the-loop never writes over it: move it away, then start again",
                dir.display(),
                host.name(),
                on.as_deref().unwrap_or("no branch")
            )));
        }
        there.emit(
            Event::new(source, EventType::WorkspaceReused)
                .with("work_item", item.to_string())
                .with("workspace", dir.display().to_string())
                .with("branch", branch.as_str())
                .with("host", host.name()),
        );
        // One without a record (state lost) is taken over: its branch is never deleted.
        let record = match known {
            Some(record) => record,
            None => describe(&there, host, repo, item, &top, &dir, &branch, false).await?,
        };
        // A setup that failed last time runs again.
        return set_up(&there, host, repo, record, source).await;
    }
    // A pull request works on its head branch, which is fetched on this machine only.
    let pull = format!("refs/pull/{}/head", item.number);
    let listed = git
        .capped(&top, &["ls-remote", "origin", &pull], 4096)
        .await
        .map_err(failed)?;
    if listed.success && listed.stdout.contains(&pull) {
        return Err(refused(format!(
            "{item} is a pull request, and worktrees on host `{}` are made for issues only: set repos[].workspace: shared for this repo",
            host.name()
        )));
    }
    let parent = dir.parent().unwrap_or(Path::new("/")).display().to_string();
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
            &top,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("refs/heads/{branch}"),
            ],
        )
        .await
        .map_err(failed)?
        .is_some();
    let record = describe(&there, host, repo, item, &top, &dir, &branch, !existed).await?;
    let dir_arg = dir.display().to_string();
    let add: Vec<&str> = if existed {
        vec!["worktree", "add", &dir_arg, &branch]
    } else {
        vec!["worktree", "add", "-b", &branch, &dir_arg, &record.base]
    };
    git.ok(&top, &add).await.map_err(failed)?;
    there.emit(
        Event::new(source, EventType::WorkspaceCreated)
            .with("work_item", item.to_string())
            .with("workspace", dir_arg.as_str())
            .with("branch", branch.as_str())
            .with("base", record.base_label())
            .with("kind", "issue")
            .with("repo", top.display().to_string())
            .with("branch_existed", existed)
            .with("host", host.name()),
    );
    set_up(&there, host, repo, record, source).await
}

/// The record of `item`'s worktree `dir` on `host`: its base (`repos[].baseBranch`,
/// else the remote's default branch, else the current one, as a full ref) and the
/// remote's URL as it is now, before any agent ran there — a ship pushes there only.
#[allow(clippy::too_many_arguments)]
async fn describe(
    there: &Workspaces,
    host: &RemoteHost,
    repo: &RepoConfig,
    item: &WorkItemRef,
    top: &Path,
    dir: &Path,
    branch: &str,
    branch_created: bool,
) -> Result<WorkspaceRecord, SessionError> {
    let remote = there.remote(top).await?;
    let base_name = there.base_name(top, remote.as_deref(), repo).await?;
    let base = there.base_ref(top, remote.as_deref(), &base_name).await?;
    Ok(WorkspaceRecord {
        work_item: item.clone(),
        kind: Kind::Issue,
        dir: dir.to_path_buf(),
        cwd: dir.to_path_buf(),
        repo: top.to_path_buf(),
        branch: branch.to_string(),
        branch_created,
        base,
        upstream: None,
        remote_url: there.remote_url(top, remote.as_deref()).await,
        remote,
        setup_done: false,
        created_at: crate::time::now_ts(),
        kept: None,
        host: Some(host.name().to_string()),
        extra: Default::default(),
    })
}

/// Keeps `record` (before setup: a failing setup leaves it known), runs setup in its
/// worktree unless it finished before, and keeps the outcome.
async fn set_up(
    there: &Workspaces,
    host: &RemoteHost,
    repo: &RepoConfig,
    mut record: WorkspaceRecord,
    source: Source,
) -> Result<WorkspaceRecord, SessionError> {
    if !record.setup_done {
        there.keep(&record)?;
        setup(host, repo, &record, there.events(), source).await?;
        record.setup_done = true;
    }
    there.keep(&record)?;
    Ok(record)
}

/// `repos[].setup` in the worktree on the host: each an argv, placeholders replaced
/// inside their argument, run there under `timeout`. The first failure stops the start.
async fn setup(
    host: &RemoteHost,
    repo: &RepoConfig,
    record: &WorkspaceRecord,
    events: &EventLog,
    source: Source,
) -> Result<(), SessionError> {
    let (dir, repo_dir) = (
        record.dir.display().to_string(),
        record.repo.display().to_string(),
    );
    let (dir, item, branch) = (dir.as_str(), &record.work_item, record.branch.as_str());
    let table = [
        ("{worktree}", Some(dir)),
        ("{repoPath}", Some(repo_dir.as_str())),
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
