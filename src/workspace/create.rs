//! Creating an item's worktree, or finding the one it has (SPEC §16.2).
//!
//! - An existing worktree for the item is reused — on respawn, restart or `sessions
//!   start` — never re-created over work. A directory at the worktree's place that is
//!   not a worktree of this repository is never written over.
//! - An issue gets `the-loop/issue-N` from a fresh fetch of the base when a remote
//!   exists; a failed fetch falls back to the local ref with a `workspace.fetch_failed`
//!   warning.
//! - A pull request is recognised by its `refs/pull/N/head` on the remote. When exactly
//!   one branch of the remote (other than the base) points at that head, the PR comes
//!   from the base repository: that branch is checked out as a local branch tracking
//!   it. Otherwise (a fork) the head is fetched into `refs/the-loop/pull/N` and checked
//!   out as `the-loop/pr-N`. The branch name thus comes from git's refs, never from
//!   GitHub text.

use super::git::{self, NETWORK_TIMEOUT};
use super::store::{Kind, WorkspaceRecord};
use super::{WorkspaceError, Workspaces, fork_pull_branch, fork_pull_ref, issue_branch};
use crate::config::RepoConfig;
use crate::events::{Event, EventType, Level, Source};
use crate::work_item::WorkItemRef;
use std::path::{Path, PathBuf};

/// What a new worktree checks out.
enum Plan {
    Issue,
    /// A same-repository PR's head branch.
    Pull(String),
    ForkPull,
}

/// One entry of `git worktree list --porcelain`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Listed {
    pub path: PathBuf,
    pub branch: Option<String>,
}

impl Workspaces {
    /// The item's worktree: reused when it exists, else created (and set up).
    pub(super) async fn prepare(
        &self,
        item: &WorkItemRef,
        repo: &RepoConfig,
        path: &Path,
        source: Source,
    ) -> Result<WorkspaceRecord, WorkspaceError> {
        let _lock = self.lock(item).await?;
        let (top, prefix) = self.toplevel(path).await?;
        let top = self.canonical(&top).await;
        let dir = self.canonical(&self.dir_for(item)).await;
        let previous = self
            .store
            .get(item)?
            .filter(|p| p.host.as_deref() == self.host() && self.names(&p.repo, &top));
        let listed = self.worktrees(&top).await?;
        let entry = listed.iter().find(|w| self.names(&w.path, &dir)).cloned();
        let mut record = if self.exists(&dir).await? {
            let Some(entry) = entry else {
                return Err(WorkspaceError::DirExists { dir, repo: top });
            };
            let record = match previous {
                Some(mut known) => {
                    known.kept = None;
                    known.dir = dir.clone();
                    known
                }
                None => self.adopt(item, repo, &top, &dir, &entry).await?,
            };
            self.store.put(&record)?;
            self.emit(
                Event::new(source, EventType::WorkspaceReused)
                    .with("work_item", item.to_string())
                    .with("workspace", record.dir.display().to_string())
                    .with("branch", record.branch.as_str()),
            );
            record
        } else {
            if entry.is_some() {
                // Registered, but its directory is gone (removed by hand): only such
                // entries are pruned, so git lets the worktree be added again.
                self.git.ok(&top, &["worktree", "prune"]).await?;
            }
            let record = self
                .create(item, repo, &top, &prefix, &dir, previous.as_ref(), source)
                .await?;
            self.store.put(&record)?;
            self.emit(
                Event::new(source, EventType::WorkspaceCreated)
                    .with("work_item", item.to_string())
                    .with("workspace", record.dir.display().to_string())
                    .with("branch", record.branch.as_str())
                    .with("base", record.base_label())
                    .with("kind", record.kind.as_str())
                    .with("repo", record.repo.display().to_string())
                    .with("branch_existed", !record.branch_created),
            );
            record
        };
        if !record.setup_done {
            let ran = self.run_setup(repo, path, &record, source).await;
            // Setup wrote in the worktree under our umask, whether or not it succeeded.
            self.make_private(&record.dir).await;
            ran?;
            record.setup_done = true;
            self.store.put(&record)?;
        }
        Ok(record)
    }

    /// Makes a worktree private (SPEC §18.5): git checked it out, and setup wrote in it,
    /// under the-loop's umask. The chmods change the files' ctime, which git's index
    /// compares, so the index is refreshed once; otherwise every `status` would read
    /// every file again. Best effort: a worktree left looser is tightened at the next
    /// supervisor start (here), and its parent directory is 0700 meanwhile.
    async fn make_private(&self, dir: &Path) {
        let changed = match self.tighten(dir).await {
            Ok(changed) => changed,
            Err(error) => {
                tracing::warn!(dir = %dir.display(), %error, "the worktree was not made private");
                return;
            }
        };
        if changed
            && let Err(error) = self
                .git
                .run(dir, &["update-index", "-q", "--refresh"])
                .await
        {
            tracing::warn!(dir = %dir.display(), %error, "the worktree's index was not refreshed");
        }
    }

    /// `git worktree list --porcelain` of the repository at `top`.
    pub(super) async fn worktrees(&self, top: &Path) -> Result<Vec<Listed>, WorkspaceError> {
        let out = self
            .git
            .ok(top, &["worktree", "list", "--porcelain"])
            .await?;
        let mut listed = Vec::new();
        for block in out.split("\n\n") {
            let mut path = None;
            let mut branch = None;
            for line in block.lines() {
                if let Some(p) = line.strip_prefix("worktree ") {
                    path = Some(PathBuf::from(p));
                } else if let Some(b) = line.strip_prefix("branch refs/heads/") {
                    branch = Some(b.to_string());
                }
            }
            if let Some(path) = path {
                listed.push(Listed { path, branch });
            }
        }
        Ok(listed)
    }

    /// A worktree at the item's place that has no record (state lost, an older
    /// version): taken over as it is. Its branch is never deleted (the-loop cannot tell
    /// it made it) and setup is not run again over it.
    async fn adopt(
        &self,
        item: &WorkItemRef,
        repo: &RepoConfig,
        top: &Path,
        dir: &Path,
        entry: &Listed,
    ) -> Result<WorkspaceRecord, WorkspaceError> {
        let remote = self.remote(top).await?;
        let base_name = self.base_name(top, remote.as_deref(), repo).await?;
        let base = self.base_ref(top, remote.as_deref(), &base_name).await?;
        let branch = entry.branch.clone().unwrap_or_else(|| "HEAD".into());
        let kind = if branch == fork_pull_branch(item.number) {
            Kind::ForkPull
        } else {
            Kind::Issue
        };
        Ok(WorkspaceRecord {
            work_item: item.clone(),
            kind,
            dir: dir.to_path_buf(),
            cwd: dir.to_path_buf(),
            repo: top.to_path_buf(),
            branch,
            branch_created: false,
            base,
            upstream: None,
            remote_url: self.remote_url(top, remote.as_deref()).await,
            remote,
            setup_done: true,
            created_at: crate::time::now_ts(),
            kept: None,
            host: self.host().map(str::to_string),
            extra: Default::default(),
        })
    }

    #[allow(clippy::too_many_arguments)]
    async fn create(
        &self,
        item: &WorkItemRef,
        repo: &RepoConfig,
        top: &Path,
        prefix: &Path,
        dir: &Path,
        previous: Option<&WorkspaceRecord>,
        source: Source,
    ) -> Result<WorkspaceRecord, WorkspaceError> {
        let remote = self.remote(top).await?;
        let base_name = self.base_name(top, remote.as_deref(), repo).await?;
        let plan = match &remote {
            Some(r) => self.plan(item, top, r, &base_name, source).await,
            None => Plan::Issue,
        };
        if let Some(r) = &remote {
            let mut refspecs = vec![format!(
                "+refs/heads/{base_name}:refs/remotes/{r}/{base_name}"
            )];
            match &plan {
                Plan::Issue => {}
                Plan::Pull(head) => {
                    refspecs.push(format!("+refs/heads/{head}:refs/remotes/{r}/{head}"))
                }
                Plan::ForkPull => refspecs.push(format!(
                    "+refs/pull/{}/head:{}",
                    item.number,
                    fork_pull_ref(item.number)
                )),
            }
            let mut args = vec![
                "fetch",
                "--quiet",
                "--no-tags",
                "--no-write-fetch-head",
                r.as_str(),
            ];
            args.extend(refspecs.iter().map(String::as_str));
            if let Err(error) = self.git.ok_within(top, &args, NETWORK_TIMEOUT).await {
                self.emit(
                    Event::new(source, EventType::WorkspaceFetchFailed)
                        .level(Level::Warning)
                        .with("work_item", item.to_string())
                        .with("remote", r.as_str())
                        .with("error", error.to_string())
                        .with("fallback", "the local refs"),
                );
            }
        }
        let base = self.base_ref(top, remote.as_deref(), &base_name).await?;
        // 0700 before git runs: what it checks out under our umask is out of reach
        // until `make_private` has tightened it.
        let parent = dir.parent().unwrap_or(dir);
        self.private_dir_all(parent).await?;
        let dir = self
            .canonical(parent)
            .await
            .join(dir.file_name().unwrap_or_default());
        let dir_arg = dir.display().to_string();
        let (kind, branch, start, upstream, track) = match plan {
            Plan::Issue => (
                Kind::Issue,
                issue_branch(item.number),
                base.clone(),
                None,
                false,
            ),
            Plan::Pull(head) => {
                let upstream = format!(
                    "refs/remotes/{}/{head}",
                    remote.as_deref().unwrap_or("origin")
                );
                (Kind::Pull, head, upstream.clone(), Some(upstream), true)
            }
            Plan::ForkPull => {
                let head = fork_pull_ref(item.number);
                (
                    Kind::ForkPull,
                    fork_pull_branch(item.number),
                    head.clone(),
                    Some(head),
                    false,
                )
            }
        };
        let existed = self.has_ref(top, &format!("refs/heads/{branch}")).await?;
        if existed {
            self.git
                .ok(top, &["worktree", "add", &dir_arg, &branch])
                .await?;
        } else {
            if !self.has_ref(top, &start).await? {
                return Err(WorkspaceError::BaseMissing {
                    base: super::store::short_ref(&start).to_string(),
                    repo: top.to_path_buf(),
                });
            }
            let track = if track { "--track" } else { "--no-track" };
            self.git
                .ok(
                    top,
                    &["worktree", "add", track, "-b", &branch, &dir_arg, &start],
                )
                .await?;
        }
        self.make_private(&dir).await;
        let inside = dir.join(prefix);
        let cwd = if !prefix.as_os_str().is_empty() && self.dir_exists(&inside).await? {
            inside
        } else {
            dir.clone()
        };
        let branch_created =
            !existed || previous.is_some_and(|p| p.branch == branch && p.branch_created);
        Ok(WorkspaceRecord {
            work_item: item.clone(),
            kind,
            dir,
            cwd,
            repo: top.to_path_buf(),
            branch,
            branch_created,
            base,
            upstream,
            remote_url: self.remote_url(top, remote.as_deref()).await,
            remote,
            setup_done: false,
            created_at: crate::time::now_ts(),
            kept: None,
            host: self.host().map(str::to_string),
            extra: Default::default(),
        })
    }

    /// Issue or pull request, from the remote's `refs/pull/N/head` (one `ls-remote`;
    /// when the remote cannot be asked, an issue, with a warning).
    async fn plan(
        &self,
        item: &WorkItemRef,
        top: &Path,
        remote: &str,
        base_name: &str,
        source: Source,
    ) -> Plan {
        let pull = format!("refs/pull/{}/head", item.number);
        let asked = self
            .git
            .ok_within(
                top,
                &["ls-remote", "--quiet", remote, &pull],
                NETWORK_TIMEOUT,
            )
            .await;
        let head = match asked {
            Ok(out) => out.lines().find_map(|l| {
                l.split_once('\t')
                    .filter(|(_, r)| *r == pull)
                    .map(|(s, _)| s.to_string())
            }),
            Err(error) => {
                self.emit(
                    Event::new(source, EventType::WorkspaceFetchFailed)
                        .level(Level::Warning)
                        .with("work_item", item.to_string())
                        .with("remote", remote)
                        .with("error", error.to_string())
                        .with("fallback", "treated as an issue"),
                );
                None
            }
        };
        let Some(head) = head else {
            return Plan::Issue;
        };
        let heads = self
            .git
            .ok_within(
                top,
                &["ls-remote", "--quiet", "--heads", remote],
                NETWORK_TIMEOUT,
            )
            .await
            .unwrap_or_default();
        let candidates: Vec<&str> = heads
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .filter(|(sha, _)| *sha == head)
            .filter_map(|(_, r)| r.strip_prefix("refs/heads/"))
            .filter(|b| *b != base_name)
            .collect();
        match candidates.as_slice() {
            [one] if self.valid_branch(top, one).await.is_ok() => Plan::Pull((*one).to_string()),
            _ => Plan::ForkPull,
        }
    }

    /// `remote`'s URL as configured (`None` without a remote, or when git cannot say).
    pub(super) async fn remote_url(&self, top: &Path, remote: Option<&str>) -> Option<String> {
        self.git
            .line(top, &["remote", "get-url", "--push", remote?])
            .await
            .ok()
            .flatten()
    }

    /// `origin` when the repository has it, else its only remote.
    pub(super) async fn remote(&self, top: &Path) -> Result<Option<String>, WorkspaceError> {
        let out = self.git.ok(top, &["remote"]).await?;
        let remotes: Vec<&str> = out
            .lines()
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .collect();
        Ok(if remotes.contains(&"origin") {
            Some("origin".into())
        } else if let [one] = remotes.as_slice() {
            Some((*one).to_string())
        } else {
            None
        })
    }

    /// `repos[].baseBranch`, else the remote's default branch, else the current one.
    pub(super) async fn base_name(
        &self,
        top: &Path,
        remote: Option<&str>,
        repo: &RepoConfig,
    ) -> Result<String, WorkspaceError> {
        let configured = repo.base_branch.trim();
        if !configured.is_empty() {
            self.valid_branch(top, configured).await?;
            return Ok(configured.to_string());
        }
        if let Some(r) = remote {
            let head = format!("refs/remotes/{r}/HEAD");
            if let Some(short) = self
                .git
                .line(top, &["symbolic-ref", "--quiet", "--short", &head])
                .await?
                && let Some(name) = short.strip_prefix(&format!("{r}/"))
            {
                return Ok(name.to_string());
            }
        }
        match self
            .git
            .line(top, &["symbolic-ref", "--quiet", "--short", "HEAD"])
            .await?
        {
            Some(current) => Ok(current),
            None => Err(WorkspaceError::NoBase {
                repo: top.to_path_buf(),
            }),
        }
    }

    /// The full ref of the base: the remote's copy when there is one, else the local
    /// branch.
    pub(super) async fn base_ref(
        &self,
        top: &Path,
        remote: Option<&str>,
        base_name: &str,
    ) -> Result<String, WorkspaceError> {
        let mut candidates = Vec::new();
        if let Some(r) = remote {
            candidates.push(format!("refs/remotes/{r}/{base_name}"));
        }
        candidates.push(format!("refs/heads/{base_name}"));
        for candidate in candidates {
            if self.has_ref(top, &candidate).await? {
                return Ok(candidate);
            }
        }
        Err(WorkspaceError::BaseMissing {
            base: base_name.to_string(),
            repo: top.to_path_buf(),
        })
    }

    pub(super) async fn has_ref(&self, top: &Path, full: &str) -> Result<bool, WorkspaceError> {
        let commit = format!("{full}^{{commit}}");
        Ok(self
            .git
            .line(top, &["rev-parse", "--verify", "--quiet", &commit])
            .await?
            .is_some())
    }

    async fn valid_branch(&self, top: &Path, name: &str) -> Result<(), WorkspaceError> {
        let invalid = |why: String| WorkspaceError::InvalidBranch {
            name: name.to_string(),
            why,
        };
        if name.starts_with('-') {
            return Err(invalid("it may not start with `-`".into()));
        }
        let out = self
            .git
            .run(top, &["check-ref-format", "--branch", name])
            .await?;
        if out.success {
            Ok(())
        } else {
            Err(invalid(git::tail(&out.stderr)))
        }
    }
}

#[cfg(test)]
#[path = "create_tests.rs"]
mod tests;
