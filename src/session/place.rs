//! Where a work item's work is (SPEC §9.3, §11.4, §16.4): its session's directory — its
//! worktree, whose diff is against the base it started from — else the repo's `path`.
//! The one rule for everything that looks at the work: the diff view, the TUI's
//! critics, `critic run --work-item`.

use super::registry::RegistryError;
use super::sessions::Sessions;
use crate::work_item::WorkItemRef;
use std::path::PathBuf;

/// A work item's working directory, and what its diff is against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkPlace {
    /// A path on `host` when there is one. Not checked to exist.
    pub cwd: PathBuf,
    /// The base its worktree started from; `None`: what git finds.
    pub base: Option<String>,
    /// The host it is on (`hosts[].name`); `None`: this machine.
    pub host: Option<String>,
}

impl Sessions {
    /// Where `item`'s work is: its session's directory (a directory that went away falls
    /// back to its worktree's), else its repo's `path` (here, or on the repo's host);
    /// `None` when it has neither session nor worktree and its repo has no `path`.
    pub fn work_place(&self, item: &WorkItemRef) -> Result<Option<WorkPlace>, RegistryError> {
        let record = self.registry().get(item)?;
        let worktree = self.workspaces().record(item).ok().flatten();
        // A session on another host: its directory and git are there.
        if let Some(record) = &record
            && let Some(host) = &record.host
        {
            let base = worktree
                .filter(|ws| ws.host.as_ref() == Some(host) && record.cwd.starts_with(&ws.dir))
                .map(|ws| ws.base);
            return Ok(Some(WorkPlace {
                cwd: record.cwd.clone(),
                base,
                host: Some(host.clone()),
            }));
        }
        let worktree = worktree.filter(|ws| ws.host.is_none());
        let cwd = match (record, &worktree) {
            (Some(record), _) if record.cwd.is_dir() => record.cwd,
            (_, Some(ws)) => ws.cwd.clone(),
            (Some(record), None) => record.cwd,
            (None, None) => {
                let settings = self.settings();
                let Some(repo) = settings
                    .repos
                    .iter()
                    .find(|r| r.name.eq_ignore_ascii_case(&item.repo_full_name()))
                else {
                    return Ok(None);
                };
                // A repo on another host: its `path` is a path there.
                if let (Some(host), Some(path)) = (&repo.host, &repo.path) {
                    return Ok(Some(WorkPlace {
                        cwd: PathBuf::from(path),
                        base: None,
                        host: Some(host.clone()),
                    }));
                }
                match repo.working_dir() {
                    Some(dir) => dir,
                    None => return Ok(None),
                }
            }
        };
        let base = worktree
            .filter(|ws| cwd.starts_with(&ws.dir))
            .map(|ws| ws.base);
        Ok(Some(WorkPlace {
            cwd,
            base,
            host: None,
        }))
    }
}
