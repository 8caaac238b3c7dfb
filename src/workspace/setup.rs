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
use crate::ssh::Transport;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
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

/// How one setup command went, when it failed.
struct Failed {
    /// `exited with 1`, `timed out after 600s and was killed`, …
    what: String,
    code: Option<i32>,
    output: String,
}

impl Workspaces {
    /// Runs every setup command of `repo` (at `repo_path`) in the worktree; the first
    /// failure stops them and is reported (`workspace.setup_failed`).
    pub(super) async fn run_setup(
        &self,
        repo: &RepoConfig,
        repo_path: &Path,
        record: &WorkspaceRecord,
        source: Source,
    ) -> Result<(), WorkspaceError> {
        let repo_path = repo_path.display().to_string();
        let timeout = Duration::from_secs(repo.setup_timeout_seconds.max(1));
        for (index, argv) in repo.setup.iter().enumerate() {
            let argv: Vec<String> = argv
                .iter()
                .map(|a| substitute(a, record, &repo_path))
                .collect();
            if argv.is_empty() {
                continue; // validation refuses empty commands; nothing to run anyway
            }
            let ran = match &self.host {
                None => self.run_here(&argv, record, timeout).await,
                Some(host) => run_there(host, &argv, record, timeout).await,
            };
            let Err(Failed { what, code, output }) = ran else {
                continue;
            };
            let command = argv.join(" ");
            self.emit(
                Event::new(source, EventType::WorkspaceSetupFailed)
                    .level(Level::Error)
                    .with("work_item", record.work_item.to_string())
                    .with("workspace", record.dir.display().to_string())
                    .with("command", command.as_str())
                    .with("index", index)
                    .with_opt("exit_code", code)
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

    /// One setup command on this machine, in the worktree, with the environment policy
    /// (SPEC §14.4) and the item named.
    async fn run_here(
        &self,
        argv: &[String],
        record: &WorkspaceRecord,
        timeout: Duration,
    ) -> Result<(), Failed> {
        let Some((program, args)) = argv.split_first() else {
            return Ok(());
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
        let failed = |what: String| Failed {
            what,
            code: None,
            output: String::new(),
        };
        match process::run(spec).await {
            Ok(ran) if ran.status.success() => Ok(()),
            Ok(ran) => Err(Failed {
                what: ran.status.code().map_or_else(
                    || "was killed by a signal".to_string(),
                    |c| format!("exited with {c}"),
                ),
                code: ran.status.code(),
                output: tail(&format!(
                    "{}\n{}",
                    String::from_utf8_lossy(&ran.stdout).trim_end(),
                    ran.stderr.trim_end()
                )),
            }),
            Err(RunError::NotFound) => Err(failed(not_found(program))),
            Err(RunError::Timeout) => Err(failed(timed_out(timeout))),
            Err(RunError::Io(e)) => Err(failed(format!("could not start: {e}"))),
        }
    }
}

/// One setup command on `host`, in the worktree there, the item named, under
/// `timeout` there: `env -C DIR THE_LOOP_WORK_ITEM=… timeout Ns ARGV…`. The host's own
/// environment: nothing of this machine's reaches it.
async fn run_there(
    host: &Transport,
    argv: &[String],
    record: &WorkspaceRecord,
    timeout: Duration,
) -> Result<(), Failed> {
    let mut remote = vec![
        "env".to_string(),
        "-C".into(),
        record.dir.display().to_string(),
        format!("{}={}", crate::paths::ENV_WORK_ITEM, record.work_item),
        "timeout".into(),
        format!("{}s", timeout.as_secs()),
    ];
    remote.extend(argv.iter().cloned());
    // The connection's own limit leaves `timeout` there the time to stop the command.
    let out = host
        .run(&remote, None, timeout + Duration::from_secs(10))
        .await
        .map_err(|e| Failed {
            what: format!("could not run on host `{}`: {e}", host.name()),
            code: None,
            output: String::new(),
        })?;
    if out.success {
        return Ok(());
    }
    let (what, code) = match out.code {
        // `timeout`'s own codes: the command ran too long; it was not found.
        Some(124) => (timed_out(timeout), None),
        Some(127) => (not_found(&argv[0]), None),
        Some(c) => (format!("exited with {c}"), Some(c)),
        None => ("was killed by a signal".to_string(), None),
    };
    Err(Failed {
        what,
        code,
        output: tail(&format!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout).trim_end(),
            out.stderr.trim_end()
        )),
    })
}

fn not_found(program: &str) -> String {
    format!("could not start: `{program}` was not found (give its full path, or install it)")
}

fn timed_out(timeout: Duration) -> String {
    format!("timed out after {}s and was killed", timeout.as_secs())
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
