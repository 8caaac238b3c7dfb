//! What a working tree holds (SPEC §16.4): its branch, how many files changed, how many
//! commits it is ahead of its base, and its diff against that base — the material the
//! diff view shows and critics review (§11.4).
//!
//! The diff runs with external diff drivers and text conversion off (`--no-ext-diff
//! --no-textconv`; the runner turns hooks and fsmonitor off): the tree is an agent's,
//! and reading it must not run anything it configured. Output is capped so the whole
//! review prompt fits in one argument (harness critics pass it inline).

use super::git::Git;
use super::store::{WorkspaceRecord, short_ref};
use std::path::Path;

/// The diff is cut here (a prompt must stay under Linux's 128 KiB per argument).
pub const MAX_DIFF_BYTES: usize = 96 * 1024;
const MAX_STAT_BYTES: usize = 8 * 1024;
const MAX_UNTRACKED_BYTES: usize = 4 * 1024;
/// git's well-known empty tree: the base of a repository without commits.
const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// A worktree's state for the Sessions pane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The checked-out branch; `None` when detached.
    pub branch: Option<String>,
    /// Uncommitted or untracked files.
    pub changed_files: usize,
    /// Commits on `HEAD` that are not in the base.
    pub ahead: usize,
}

/// `record`'s branch, changed-file count and commits ahead of its base.
pub async fn status(git: &Git, record: &WorkspaceRecord) -> Result<Status, String> {
    let dir = &record.dir;
    let branch = git
        .line(dir, &["symbolic-ref", "--quiet", "--short", "HEAD"])
        .await
        .map_err(|e| e.to_string())?;
    let porcelain = git
        .ok(dir, &["status", "--porcelain=v1", "--untracked-files=all"])
        .await
        .map_err(|e| e.to_string())?;
    let range = format!("{}..HEAD", record.base);
    let ahead = git
        .line(dir, &["rev-list", "--count", &range])
        .await
        .map_err(|e| e.to_string())?
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    Ok(Status {
        branch,
        changed_files: porcelain.lines().filter(|l| !l.trim().is_empty()).count(),
        ahead,
    })
}

/// What a range of commits changes: files, lines added and removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Numstat {
    pub files: usize,
    pub insertions: usize,
    pub deletions: usize,
}

/// `git diff --numstat base...head`: what `head` changes since it left `base` (binary
/// files count as files, with no lines).
pub async fn numstat(git: &Git, dir: &Path, base: &str, head: &str) -> Result<Numstat, String> {
    let range = format!("{base}...{head}");
    let out = git
        .capped(
            dir,
            &[
                "diff",
                "--no-ext-diff",
                "--no-textconv",
                "--numstat",
                &range,
                "--",
            ],
            1024 * 1024,
        )
        .await
        .map_err(|e| e.to_string())?;
    if !out.success {
        return Err(format!(
            "git diff --numstat {range} failed: {}",
            out.stderr.trim()
        ));
    }
    Ok(out.stdout.lines().filter(|l| !l.trim().is_empty()).fold(
        Numstat::default(),
        |mut sum, line| {
            let mut cols = line.split('\t');
            let mut count = || {
                cols.next()
                    .and_then(|n| n.parse::<usize>().ok())
                    .unwrap_or(0)
            };
            sum.insertions += count();
            sum.deletions += count();
            sum.files += 1;
            sum
        },
    ))
}

/// What a diff view or a review prompt is filled with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changes {
    /// What the diff is against, for the reader: `origin/main (merge base 1a2b3c4d5e6f)`.
    pub base: String,
    pub stat: String,
    pub untracked: String,
    pub diff: String,
}

/// The working tree's changes — committed and not — against `base` (a worktree's
/// recorded base), or, for a directory the-loop did not make, against what it can
/// find (`origin/HEAD`, the branch's upstream). `Err` is a note saying why there is no
/// diff (not a git repository, git failed).
pub async fn changes(git: &Git, cwd: &Path, base: Option<&str>) -> Result<Changes, String> {
    match git
        .capped(cwd, &["rev-parse", "--is-inside-work-tree"], 64)
        .await
    {
        Ok(out) if out.success && out.stdout.trim() == "true" => {}
        Ok(_) => {
            return Err(format!(
                "(no diff: {} is not inside a git repository; review the files there directly)",
                cwd.display()
            ));
        }
        Err(e) => return Err(format!("(no diff: {e})")),
    }
    let (base, label) = match base {
        Some(base) => against(git, cwd, base).await,
        None => discover(git, cwd).await,
    };
    let diff_args = |extra: &'static str| {
        vec![
            "diff",
            "--no-ext-diff",
            "--no-textconv",
            "--no-color",
            extra,
            base.as_str(),
            "--",
        ]
    };
    let stat = git
        .capped(cwd, &diff_args("--stat=160"), MAX_STAT_BYTES)
        .await
        .map_err(|e| e.to_string())?;
    let diff = git
        .capped(cwd, &diff_args("--patch"), MAX_DIFF_BYTES)
        .await
        .map_err(|e| e.to_string())?;
    let untracked = git
        .capped(
            cwd,
            &["ls-files", "--others", "--exclude-standard"],
            MAX_UNTRACKED_BYTES,
        )
        .await
        .map_err(|e| e.to_string())?;
    if !diff.success {
        return Err(format!(
            "(no diff: git diff failed: {})",
            diff.stderr.trim()
        ));
    }
    Ok(Changes {
        base: label,
        stat: shown(&stat, "the list"),
        untracked: shown(&untracked, "the list"),
        diff: shown(&diff, "the diff"),
    })
}

/// The output as prompt text: a NUL can never travel in an argument.
fn shown(out: &super::git::Output, what: &str) -> String {
    let text = out.stdout.replace('\0', "");
    if out.cut {
        format!(
            "{}\n… ({what} was cut at {} KiB; read the rest in the working tree)",
            text.trim_end(),
            text.len() / 1024
        )
    } else {
        text
    }
}

/// The merge base of `HEAD` and a known base ref.
async fn against(git: &Git, cwd: &Path, base: &str) -> (String, String) {
    if !has_head(git, cwd).await {
        return no_commits();
    }
    match git.line(cwd, &["merge-base", "HEAD", base]).await {
        Ok(Some(sha)) => {
            let label = format!("{} (merge base {})", short_ref(base), short(&sha));
            (sha, label)
        }
        _ => (
            "HEAD".into(),
            format!(
                "HEAD (uncommitted changes only: {} is not found)",
                short_ref(base)
            ),
        ),
    }
}

/// `git merge-base HEAD origin/HEAD`, else with the branch's upstream, else `HEAD`.
async fn discover(git: &Git, cwd: &Path) -> (String, String) {
    if !has_head(git, cwd).await {
        return no_commits();
    }
    if let Ok(Some(sha)) = git.line(cwd, &["merge-base", "HEAD", "origin/HEAD"]).await {
        return (
            sha.clone(),
            format!("origin/HEAD (merge base {})", short(&sha)),
        );
    }
    let upstream = git
        .line(
            cwd,
            &[
                "rev-parse",
                "--abbrev-ref",
                "--symbolic-full-name",
                "@{upstream}",
            ],
        )
        .await
        .ok()
        .flatten();
    if let Some(upstream) = upstream
        && let Ok(Some(sha)) = git.line(cwd, &["merge-base", "HEAD", &upstream]).await
    {
        return (
            sha.clone(),
            format!("{upstream} (merge base {})", short(&sha)),
        );
    }
    ("HEAD".into(), "HEAD (uncommitted changes only)".into())
}

async fn has_head(git: &Git, cwd: &Path) -> bool {
    matches!(
        git.line(cwd, &["rev-parse", "--verify", "--quiet", "HEAD"])
            .await,
        Ok(Some(_))
    )
}

fn no_commits() -> (String, String) {
    (
        EMPTY_TREE.into(),
        "nothing (the repository has no commits yet)".into(),
    )
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}
