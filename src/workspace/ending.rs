//! Ending a workspace (SPEC §16.3). When a session stops or its item closes, a worktree
//! with no uncommitted or untracked changes whose commits are all in its base or pushed
//! (its upstream, the remote's copy of its branch, a pull request's head) is removed
//! with its branch. Anything else — or anything the-loop cannot check — is kept, and
//! `workspace.kept` says why. Only [`Workspaces::discard`] removes work, on request.
//!
//! Removal itself is `git worktree remove` without `--force`, so git refuses a tree that
//! changed between the check and the removal; the branch goes only when the-loop made it.

use super::git::GitError;
use super::store::{Kind, WorkspaceRecord};
use super::{WorkspaceError, Workspaces, fork_pull_ref};
use crate::events::{Event, EventType, Level, Source};
use crate::work_item::WorkItemRef;

/// What a worktree holds that is not safe elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Assessment {
    /// Uncommitted or untracked files (ignored files do not count).
    pub changed_files: usize,
    /// Commits in neither the base nor anything pushed.
    pub unpushed_commits: usize,
}

impl Assessment {
    pub fn is_clean(&self) -> bool {
        self.changed_files == 0 && self.unpushed_commits == 0
    }

    /// `2 changed files, 1 unpushed commit`.
    pub fn reason(&self) -> String {
        let plural =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let mut parts = Vec::new();
        if self.changed_files > 0 {
            parts.push(plural(self.changed_files, "changed file", "changed files"));
        }
        if self.unpushed_commits > 0 {
            parts.push(plural(
                self.unpushed_commits,
                "unpushed commit",
                "unpushed commits",
            ));
        }
        if parts.is_empty() {
            "nothing left to lose".into()
        } else {
            parts.join(", ")
        }
    }
}

/// What ending a session did to its workspace.
#[derive(Debug, Clone, PartialEq)]
pub enum Finished {
    /// The item has no worktree (a shared repo, or already removed).
    NoWorkspace,
    Removed {
        record: WorkspaceRecord,
        branch_deleted: bool,
    },
    Kept {
        record: WorkspaceRecord,
        reason: String,
    },
}

impl Workspaces {
    /// What `record`'s worktree holds that would be lost with it.
    pub async fn assess(&self, record: &WorkspaceRecord) -> Result<Assessment, WorkspaceError> {
        let dir = &record.dir;
        let status = self
            .git
            .ok(
                dir,
                &["status", "--porcelain=v1", "-z", "--untracked-files=all"],
            )
            .await?;
        let changed_files = count_status_entries(&status);
        let mut tips = vec!["HEAD".to_string()];
        let branch = format!("refs/heads/{}", record.branch);
        if self.has_ref(dir, &branch).await? {
            tips.push(branch);
        }
        let mut args: Vec<String> = vec!["rev-list".into(), "--count".into()];
        args.extend(tips);
        args.push("--not".into());
        args.extend(self.pushed_refs(record).await?);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let count = self.git.ok(dir, &args).await?;
        let unpushed_commits = count.trim().parse().unwrap_or(usize::MAX);
        Ok(Assessment {
            changed_files,
            unpushed_commits,
        })
    }

    /// The refs whose commits are safe: the base, the recorded upstream, the branch's
    /// configured upstream and the remote's copy of the branch — those that exist.
    async fn pushed_refs(&self, record: &WorkspaceRecord) -> Result<Vec<String>, WorkspaceError> {
        let dir = &record.dir;
        let mut candidates = vec![record.base.clone()];
        candidates.extend(record.upstream.clone());
        let configured = format!("{}@{{upstream}}", record.branch);
        if let Some(up) = self
            .git
            .line(dir, &["rev-parse", "--symbolic-full-name", &configured])
            .await?
        {
            candidates.push(up);
        }
        if let Some(remote) = &record.remote {
            candidates.push(format!("refs/remotes/{remote}/{}", record.branch));
        }
        let mut found = Vec::new();
        for candidate in candidates {
            if !found.contains(&candidate) && self.has_ref(dir, &candidate).await? {
                found.push(candidate);
            }
        }
        Ok(found)
    }

    /// The session of `item` ended: remove its worktree if nothing would be lost, else
    /// keep it and say why. A git failure keeps it too (never delete on a guess).
    pub async fn finish(
        &self,
        item: &WorkItemRef,
        source: Source,
    ) -> Result<Finished, WorkspaceError> {
        let _lock = self.lock(item).await?;
        let Some(mut record) = self.store.get(item)? else {
            return Ok(Finished::NoWorkspace);
        };
        // A worktree on a host is judged there; a host that cannot be asked keeps it.
        let assessed = match self.reaching(&record) {
            Ok(there) => match there.dir_exists(&record.dir).await {
                Ok(true) => there.assess(&record).await.map(|a| (there, a)),
                Ok(false) => {
                    // Removed by hand: forget it, and keep its branch (it may hold the work).
                    let _ = there.git.ok(&record.repo, &["worktree", "prune"]).await;
                    self.store.remove(item)?;
                    self.emit_removed(&record, false, false, source, None);
                    return Ok(Finished::Removed {
                        record,
                        branch_deleted: false,
                    });
                }
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        let reason = match assessed {
            Ok((there, a)) if a.is_clean() => match there.remove(&record, false).await {
                Ok(branch_deleted) => {
                    self.emit_removed(&record, branch_deleted, false, source, None);
                    return Ok(Finished::Removed {
                        record,
                        branch_deleted,
                    });
                }
                Err(e) => (format!("git refused to remove it: {}", stderr_or(&e)), None),
            },
            Ok((_, a)) => (a.reason(), Some(a)),
            Err(e) => (format!("could not check it: {e}"), None),
        };
        let (reason, assessment) = reason;
        record.kept = Some(reason.clone());
        self.store.put(&record)?;
        self.emit(
            Event::new(source, EventType::WorkspaceKept)
                .level(Level::Warning)
                .with("work_item", item.to_string())
                .with("workspace", record.dir.display().to_string())
                .with("branch", record.branch.as_str())
                .with_opt("changed_files", assessment.map(|a| a.changed_files))
                .with_opt("unpushed_commits", assessment.map(|a| a.unpushed_commits))
                .with("reason", reason.as_str())
                .with_opt("host", record.host.as_deref()),
        );
        Ok(Finished::Kept { record, reason })
    }

    /// Removes `item`'s worktree and branch whatever they hold (`sessions reset
    /// --discard-workspace`). What was thrown away is in the event.
    pub async fn discard(
        &self,
        item: &WorkItemRef,
        source: Source,
    ) -> Result<Finished, WorkspaceError> {
        let _lock = self.lock(item).await?;
        let Some(record) = self.store.get(item)? else {
            return Ok(Finished::NoWorkspace);
        };
        let there = self.reaching(&record)?;
        let lost = if there.dir_exists(&record.dir).await? {
            there.assess(&record).await.ok()
        } else {
            None
        };
        let branch_deleted = there.remove(&record, true).await?;
        self.emit_removed(&record, branch_deleted, true, source, lost);
        Ok(Finished::Removed {
            record,
            branch_deleted,
        })
    }

    /// `git worktree remove` (forced when discarding), the branch the-loop made, a fork
    /// PR's head ref, the record. True when the branch was deleted.
    async fn remove(&self, record: &WorkspaceRecord, force: bool) -> Result<bool, WorkspaceError> {
        let top = &record.repo;
        let dir = record.dir.display().to_string();
        if self.dir_exists(&record.dir).await? {
            let mut args = vec!["worktree", "remove"];
            if force {
                args.extend(["--force", "--force"]);
            }
            args.push(&dir);
            self.git.ok(top, &args).await?;
        } else {
            self.git.ok(top, &["worktree", "prune"]).await?;
        }
        let branch = format!("refs/heads/{}", record.branch);
        let mut branch_deleted = false;
        if record.branch_created && self.has_ref(top, &branch).await? {
            match self.git.ok(top, &["branch", "-D", &record.branch]).await {
                Ok(_) => branch_deleted = true,
                Err(e) => tracing::warn!(branch = %record.branch, "branch not deleted: {e}"),
            }
        }
        if record.kind == Kind::ForkPull {
            let _ = self
                .git
                .ok(
                    top,
                    &["update-ref", "-d", &fork_pull_ref(record.work_item.number)],
                )
                .await;
        }
        self.store.remove(&record.work_item)?;
        if let Some(parent) = record.dir.parent() {
            self.remove_empty_dir(parent).await;
        }
        Ok(branch_deleted)
    }

    fn emit_removed(
        &self,
        record: &WorkspaceRecord,
        branch_deleted: bool,
        discarded: bool,
        source: Source,
        lost: Option<Assessment>,
    ) {
        self.emit(
            Event::new(source, EventType::WorkspaceRemoved)
                .level(if discarded && lost.is_some_and(|a| !a.is_clean()) {
                    Level::Warning
                } else {
                    Level::Info
                })
                .with("work_item", record.work_item.to_string())
                .with("workspace", record.dir.display().to_string())
                .with("branch", record.branch.as_str())
                .with("branch_deleted", branch_deleted)
                .with("discarded", discarded)
                .with_opt("discarded_changes", lost.map(|a| a.reason()))
                .with_opt("host", record.host.as_deref()),
        );
    }

    /// Holds `item`'s workspace lock (taken off the runtime: it blocks while another
    /// process works on the same worktree).
    pub(crate) async fn lock(
        &self,
        item: &WorkItemRef,
    ) -> Result<nix::fcntl::Flock<std::fs::File>, WorkspaceError> {
        let store = self.store.clone();
        let key = item.clone();
        tokio::task::spawn_blocking(move || store.lock(&key))
            .await
            .map_err(|e| WorkspaceError::Refused(format!("workspace lock: {e}")))?
            .map_err(WorkspaceError::from)
    }
}

fn stderr_or(error: &WorkspaceError) -> String {
    match error {
        WorkspaceError::Git(GitError::Failed { stderr, .. }) => stderr.clone(),
        other => other.to_string(),
    }
}

/// Entries of `git status --porcelain=v1 -z`: a rename or copy carries its source path
/// as one more NUL-terminated field.
fn count_status_entries(out: &str) -> usize {
    let mut fields = out.split('\0').filter(|f| !f.is_empty());
    let mut count = 0;
    while let Some(entry) = fields.next() {
        count += 1;
        if matches!(entry.as_bytes().first(), Some(b'R' | b'C')) {
            fields.next();
        }
    }
    count
}

#[cfg(test)]
#[path = "ending_tests.rs"]
mod tests;
