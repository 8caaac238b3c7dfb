//! `repos[].setup` (SPEC §16.1): the operator's commands, run in a new worktree before
//! the agent starts — each an argv list from the config, never a shell, with
//! `{worktree}`, `{repoPath}` and `{branch}` substituted inside the argument that
//! mentions them (a value never splits or adds arguments), each within
//! `setupTimeoutSeconds`. Setup runs the repository's own code (`npm ci` runs its
//! scripts), so the GitHub token variables are not passed to it.

use super::process::{self, RunError};
use super::store::WorkspaceRecord;
use super::{WorkspaceError, Workspaces};
use crate::config::RepoConfig;
use crate::events::{Event, EventType, Level, Source};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// The end of a failed command's output that the event and the error quote.
const OUTPUT_TAIL: usize = 1500;

/// `arg` with the placeholders replaced, by the one substitution
/// ([`crate::substitute`]): in one pass, inside this one argument.
pub(super) fn substitute(arg: &str, record: &WorkspaceRecord, repo_path: &str) -> String {
    let worktree = record.dir.display().to_string();
    let table = [
        ("{worktree}", Some(worktree.as_str())),
        ("{repoPath}", Some(repo_path)),
        ("{branch}", Some(record.branch.as_str())),
    ];
    crate::substitute::element(arg, &table, crate::substitute::Missing::Empty).unwrap_or_default()
}

impl Workspaces {
    /// Runs every setup command of `repo` in the worktree; the first failure stops them
    /// and is reported (`workspace.setup_failed`).
    pub(super) async fn run_setup(
        &self,
        repo: &RepoConfig,
        record: &WorkspaceRecord,
        source: Source,
    ) -> Result<(), WorkspaceError> {
        let repo_path = repo
            .working_dir()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| record.repo.display().to_string());
        let timeout = Duration::from_secs(repo.setup_timeout_seconds.max(1));
        for (index, argv) in repo.setup.iter().enumerate() {
            let argv: Vec<String> = argv
                .iter()
                .map(|a| substitute(a, record, &repo_path))
                .collect();
            let Some((program, args)) = argv.split_first() else {
                continue; // validation refuses empty commands; nothing to run anyway
            };
            let spec = process::Spec {
                program: PathBuf::from(program),
                args: args.iter().map(OsString::from).collect(),
                cwd: Some(record.dir.clone()),
                set: vec![(
                    crate::paths::ENV_WORK_ITEM.to_string(),
                    record.work_item.to_string(),
                )],
                remove: Vec::new(),
                child_env: self.child_env.clone(),
                timeout,
                cap: 64 * 1024,
            };
            let outcome = match process::run(spec).await {
                Ok(ran) if ran.status.success() => continue,
                Ok(ran) => {
                    let code = ran.status.code().map_or_else(
                        || "was killed by a signal".to_string(),
                        |c| format!("exited with {c}"),
                    );
                    let output = format!(
                        "{}\n{}",
                        String::from_utf8_lossy(&ran.stdout).trim_end(),
                        ran.stderr.trim_end()
                    );
                    (code, Some(ran.status.code()), tail(&output))
                }
                Err(RunError::NotFound) => (
                    format!(
                        "could not start: `{program}` was not found (give its full path, or install it)"
                    ),
                    None,
                    String::new(),
                ),
                Err(RunError::Timeout) => (
                    format!("timed out after {}s and was killed", timeout.as_secs()),
                    None,
                    String::new(),
                ),
                Err(RunError::Io(e)) => (format!("could not start: {e}"), None, String::new()),
            };
            let (what, code, output) = outcome;
            let command = argv.join(" ");
            self.emit(
                Event::new(source, EventType::WorkspaceSetupFailed)
                    .level(Level::Error)
                    .with("work_item", record.work_item.to_string())
                    .with("workspace", record.dir.display().to_string())
                    .with("command", command.as_str())
                    .with("index", index)
                    .with_opt("exit_code", code.flatten())
                    .with("error", what.as_str())
                    .with_opt("output", (!output.is_empty()).then_some(output.as_str())),
            );
            let outcome = if output.is_empty() {
                what
            } else {
                format!("{what}: {output}")
            };
            return Err(WorkspaceError::SetupFailed {
                command,
                outcome,
                dir: record.dir.clone(),
            });
        }
        Ok(())
    }
}

/// The last [`OUTPUT_TAIL`] characters of `text`, trimmed.
fn tail(text: &str) -> String {
    let text = text.trim();
    let count = text.chars().count();
    if count > OUTPUT_TAIL {
        let kept: String = text.chars().skip(count - OUTPUT_TAIL).collect();
        format!("…{kept}")
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::work_item::WorkItemRef;

    #[test]
    fn placeholders_are_replaced_inside_one_argument() {
        let record = WorkspaceRecord {
            work_item: WorkItemRef::new("octo", "repo", 3),
            kind: super::super::Kind::Issue,
            dir: "/w/octo-repo/3".into(),
            cwd: "/w/octo-repo/3".into(),
            repo: "/src/repo".into(),
            branch: "the-loop/issue-3".into(),
            branch_created: true,
            base: "refs/heads/main".into(),
            upstream: None,
            remote: None,
            remote_url: None,
            setup_done: false,
            created_at: String::new(),
            kept: None,
            host: None,
            extra: Default::default(),
        };
        assert_eq!(
            substitute("--dir={worktree}/x", &record, "/src/repo"),
            "--dir=/w/octo-repo/3/x"
        );
        assert_eq!(
            substitute("{repoPath}:{branch}", &record, "/src/repo"),
            "/src/repo:the-loop/issue-3"
        );
        assert_eq!(substitute("{other} {", &record, "/r"), "{other} {");
        let hostile = WorkspaceRecord {
            branch: "{worktree}".into(),
            ..record
        };
        assert_eq!(
            substitute("{branch}", &hostile, "/r"),
            "{worktree}",
            "a value is never scanned again"
        );
    }
}
