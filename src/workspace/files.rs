//! A workspace's files, wherever its worktrees are: this machine's filesystem, or a
//! host's over its connection (issue 32) — `test`, `realpath`, `mkdir`, `chmod`,
//! `rmdir` there, argv only. Everything the workspace code does to a directory other
//! than through git goes through here, so one `prepare` and one ending rule serve both.

use super::{WorkspaceError, Workspaces, git};
use crate::ssh::Transport;
use std::path::{Path, PathBuf};

impl Workspaces {
    /// Whether anything is at `path`.
    pub(super) async fn exists(&self, path: &Path) -> Result<bool, WorkspaceError> {
        match &self.host {
            None => Ok(path.exists()),
            Some(host) => on_host(host, &["test", "-e"], path).await,
        }
    }

    /// Whether directory `dir` exists.
    pub(crate) async fn dir_exists(&self, dir: &Path) -> Result<bool, WorkspaceError> {
        match &self.host {
            None => Ok(dir.is_dir()),
            Some(host) => on_host(host, &["test", "-d"], dir).await,
        }
    }

    /// `path` with symbolic links resolved, as git names a worktree's path; `path` as it
    /// is when that cannot be told (it does not exist here; `realpath` failed there).
    pub(super) async fn canonical(&self, path: &Path) -> PathBuf {
        let Some(host) = &self.host else {
            return canonical(path);
        };
        let argv = ["realpath", "-m", "--"]
            .map(str::to_string)
            .into_iter()
            .chain([path.to_string_lossy().into_owned()])
            .collect::<Vec<_>>();
        match host.run(&argv, None, git::LOCAL_TIMEOUT).await {
            Ok(out) if out.success => {
                let said = String::from_utf8_lossy(&out.stdout).trim_end().to_string();
                if said.starts_with('/') {
                    PathBuf::from(said)
                } else {
                    path.to_path_buf()
                }
            }
            _ => path.to_path_buf(),
        }
    }

    /// Whether `a` names `canonical_b` (itself already canonical, from
    /// [`Workspaces::canonical`] or git). Here `a` is resolved too; on a host it is
    /// compared as git wrote it (git resolves the paths it lists), without a round trip
    /// per path.
    pub(super) fn names(&self, a: &Path, canonical_b: &Path) -> bool {
        match &self.host {
            None => canonical(a) == canonical(canonical_b),
            Some(_) => a == canonical_b,
        }
    }

    /// Creates `dir` and its missing parents, `dir` itself 0700 (what is checked out
    /// under it is out of reach of others from the start).
    pub(super) async fn private_dir_all(&self, dir: &Path) -> Result<(), WorkspaceError> {
        let io = |error: std::io::Error| WorkspaceError::Io {
            dir: dir.to_path_buf(),
            error,
        };
        match &self.host {
            None => crate::fsutil::create_private_dir_all(dir).map_err(io),
            Some(host) => {
                let made = on_host(host, &["mkdir", "-p", "--"], dir).await?;
                if made && on_host(host, &["chmod", "700", "--"], dir).await? {
                    Ok(())
                } else {
                    Err(io(std::io::Error::other(format!(
                        "mkdir or chmod failed on host `{}`",
                        host.name()
                    ))))
                }
            }
        }
    }

    /// Takes every group and other bit off `dir` and what is under it (symbolic links
    /// not followed; the owner's bits kept, as git records them): whether anything may
    /// have changed. Best effort; see `create::make_private`.
    pub(super) async fn tighten(&self, dir: &Path) -> Result<bool, String> {
        let Some(host) = &self.host else {
            let target = dir.to_path_buf();
            let report = tokio::task::spawn_blocking(move || crate::fsutil::tighten(&target))
                .await
                .map_err(|e| e.to_string())?;
            if !report.errors.is_empty() {
                tracing::warn!(dir = %dir.display(), errors = ?report.errors, "parts of the worktree could not be made private");
            }
            return Ok(report.files > 0);
        };
        match on_host(host, &["chmod", "-R", "go-rwx", "--"], dir).await {
            Ok(true) => Ok(true),
            Ok(false) => Err(format!("chmod failed on host `{}`", host.name())),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Removes directory `dir` if it is empty (best effort: a parent left behind is
    /// harmless).
    pub(super) async fn remove_empty_dir(&self, dir: &Path) {
        match &self.host {
            None => {
                let _ = std::fs::remove_dir(dir);
            }
            Some(host) => {
                let _ = on_host(host, &["rmdir", "--"], dir).await;
            }
        }
    }
}

/// `argv… path` on `host`: whether it succeeded.
async fn on_host(host: &Transport, argv: &[&str], path: &Path) -> Result<bool, WorkspaceError> {
    let mut words: Vec<String> = argv.iter().map(|w| w.to_string()).collect();
    words.push(path.to_string_lossy().into_owned());
    host.run(&words, None, git::LOCAL_TIMEOUT)
        .await
        .map(|out| out.success)
        .map_err(|e| WorkspaceError::Refused(e.to_string()))
}

/// The path with symlinks resolved, when it exists here.
pub(super) fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}
