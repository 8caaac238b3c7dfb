//! The one way the-loop runs git (SPEC §16.2): the `git` CLI from argv — never a shell,
//! never libgit2 — as `git -C <dir> …`, with a timeout, `GIT_TERMINAL_PROMPT=0`, and
//! what a repository can configure to run on our behalf switched off.
//!
//! The worktrees are agents' working trees and their shared `.git` is writable by the
//! agents, so a command the supervisor runs there must not execute anything the
//! repository configured: hooks (`core.hooksPath=/dev/null`), fsmonitor daemons,
//! external diff drivers and text conversion (the diff callers pass `--no-ext-diff
//! --no-textconv`). Variables that would point git elsewhere (`GIT_DIR`, …) are removed.
//! Each command leads its own process group, so a timeout kills git and whatever it
//! started (ssh, a credential helper) together.

use super::process;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a local git command may take (a checkout of a large tree on a slow disk).
pub const LOCAL_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a command that talks to a remote may take.
pub const NETWORK_TIMEOUT: Duration = Duration::from_secs(120);
/// How much of stderr an error quotes (its end, where git says what went wrong).
const STDERR_TAIL: usize = 600;
/// Output beyond this is not kept unless a caller asks for more.
const DEFAULT_CAP: usize = 4 * 1024 * 1024;

/// Variables that would make git act on another repository or index than `-C` names.
const REDIRECTING_VARS: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    "GIT_EXTERNAL_DIFF",
    "GIT_PAGER",
];

/// A git command that did not do its job. Every message names the command and quotes
/// the end of git's stderr, so the operator sees what git said.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GitError {
    #[error("git is not installed (not found on PATH): install git to use worktrees")]
    NotInstalled,
    #[error("`{command}` did not finish within {}s and was killed", .after.as_secs())]
    Timeout { command: String, after: Duration },
    #[error("`{command}` failed{}: {stderr}", code.map(|c| format!(" (exit {c})")).unwrap_or_default())]
    Failed {
        command: String,
        code: Option<i32>,
        /// The end of git's stderr, trimmed.
        stderr: String,
    },
    #[error("could not run `{command}`: {error}")]
    Io { command: String, error: String },
}

impl GitError {
    /// git's own words (the stderr tail), when it ran and failed.
    pub fn stderr(&self) -> &str {
        match self {
            Self::Failed { stderr, .. } => stderr,
            _ => "",
        }
    }
}

/// What one git command printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// Exit status 0.
    pub success: bool,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// stdout stopped at the cap (git was stopped; `success` is then true).
    pub cut: bool,
}

/// The git runner: which binary, and how long a local command may take.
#[derive(Debug, Clone)]
pub struct Git {
    program: PathBuf,
    timeout: Duration,
    /// Runs on this host instead (its git, over its SSH connection).
    remote: Option<std::sync::Arc<crate::ssh::Transport>>,
    /// the-loop installed on that host: what a command's own values go through there.
    relay: Option<String>,
}

impl Default for Git {
    fn default() -> Self {
        Self {
            program: PathBuf::from("git"),
            timeout: LOCAL_TIMEOUT,
            remote: None,
            relay: None,
        }
    }
}

impl Git {
    /// `program` instead of `git` from PATH (tests: a missing one).
    pub fn with_program(mut self, program: impl Into<PathBuf>) -> Self {
        self.program = program.into();
        self
    }

    /// git on another host, over its connection: `dir` is a path there. A command
    /// given values for itself alone (a push's askpass and token) is refused there
    /// unless [`Git::with_relay`] names the-loop installed on that host.
    pub fn on(mut self, transport: std::sync::Arc<crate::ssh::Transport>) -> Self {
        self.remote = Some(transport);
        self
    }

    /// On another host, a command's own values go to `bin` (the-loop installed there)
    /// on the connection's stdin: `bin exec-env --stdin -- env … git …` reads them and
    /// replaces itself with git, so they are in that one git's environment (and its
    /// askpass child's) and nowhere else there: never argv, never a file.
    pub fn with_relay(mut self, bin: impl Into<String>) -> Self {
        self.relay = Some(bin.into());
        self
    }

    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Runs `git -C dir ARGS`; `Ok` whatever the exit status (see [`Output::success`]).
    pub async fn run(&self, dir: &Path, args: &[&str]) -> Result<Output, GitError> {
        self.run_with(dir, args, self.timeout, DEFAULT_CAP).await
    }

    /// Runs it and requires exit 0; returns stdout.
    pub async fn ok(&self, dir: &Path, args: &[&str]) -> Result<String, GitError> {
        self.ok_within(dir, args, self.timeout).await
    }

    /// As [`Git::ok`], with its own time limit (fetches: [`NETWORK_TIMEOUT`]).
    pub async fn ok_within(
        &self,
        dir: &Path,
        args: &[&str],
        timeout: Duration,
    ) -> Result<String, GitError> {
        let out = self.run_with(dir, args, timeout, DEFAULT_CAP).await?;
        if out.success {
            Ok(out.stdout)
        } else {
            Err(GitError::Failed {
                command: describe(dir, args),
                code: out.code,
                stderr: tail(&out.stderr),
            })
        }
    }

    /// As [`Git::ok_within`], with `env` set for this one command (a push's askpass and
    /// token, `workspace::push`): nothing else ever sees them.
    pub(crate) async fn ok_with_env(
        &self,
        dir: &Path,
        args: &[&str],
        timeout: Duration,
        env: &[(String, String)],
    ) -> Result<String, GitError> {
        let out = self.run_env(dir, args, timeout, DEFAULT_CAP, env).await?;
        if out.success {
            Ok(out.stdout)
        } else {
            Err(GitError::Failed {
                command: describe(dir, args),
                code: out.code,
                stderr: tail(&out.stderr),
            })
        }
    }

    /// The first line of stdout when the command succeeds and prints one; `None` when it
    /// fails (a `rev-parse --verify --quiet` that finds nothing). Only a git that could
    /// not run is an error.
    pub async fn line(&self, dir: &Path, args: &[&str]) -> Result<Option<String>, GitError> {
        let out = self.run_with(dir, args, self.timeout, 64 * 1024).await?;
        Ok(out
            .success
            .then(|| out.stdout.lines().next().unwrap_or("").trim().to_string())
            .filter(|l| !l.is_empty()))
    }

    /// Runs it keeping at most `cap` bytes of stdout (cut at a line end); git is stopped
    /// once the cap is reached.
    pub async fn capped(&self, dir: &Path, args: &[&str], cap: usize) -> Result<Output, GitError> {
        self.run_with(dir, args, self.timeout, cap).await
    }

    async fn run_with(
        &self,
        dir: &Path,
        args: &[&str],
        timeout: Duration,
        cap: usize,
    ) -> Result<Output, GitError> {
        self.run_env(dir, args, timeout, cap, &[]).await
    }

    async fn run_env(
        &self,
        dir: &Path,
        args: &[&str],
        timeout: Duration,
        cap: usize,
        env: &[(String, String)],
    ) -> Result<Output, GitError> {
        let command = describe(dir, args);
        if let Some(transport) = &self.remote {
            let relay = self.relay.as_deref();
            return run_remote(transport, relay, &command, dir, args, timeout, cap, env).await;
        }
        let mut argv: Vec<OsString> = vec!["-C".into(), dir.as_os_str().to_owned()];
        for fixed in FIXED {
            argv.push(fixed.into());
        }
        argv.extend(args.iter().map(OsString::from));
        let spec = process::Spec {
            program: self.program.clone(),
            args: argv,
            cwd: None,
            set: [
                ("GIT_TERMINAL_PROMPT", "0"),
                ("GIT_OPTIONAL_LOCKS", "0"),
                ("LC_ALL", "C"),
            ]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into_iter()
            .chain(env.iter().cloned())
            .collect(),
            remove: REDIRECTING_VARS.to_vec(),
            child_env: crate::secrets::ChildEnv::default(),
            timeout,
            cap,
        };
        let ran = process::run(spec).await.map_err(|e| match e {
            process::RunError::NotFound => GitError::NotInstalled,
            process::RunError::Timeout => GitError::Timeout {
                command: command.clone(),
                after: timeout,
            },
            process::RunError::Io(error) => GitError::Io {
                command: command.clone(),
                error,
            },
        })?;
        let bytes = ran.stdout;
        Ok(Output {
            success: ran.status.success() || ran.cut,
            code: ran.status.code(),
            stdout: String::from_utf8_lossy(&bytes).into_owned(),
            stderr: ran.stderr,
            cut: ran.cut,
        })
    }
}

/// The fixed options of every git command: no hooks, no fsmonitor, paths unquoted,
/// no pager.
const FIXED: [&str; 7] = [
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.quotepath=off",
    "--no-pager",
];

/// `git -C dir ARGS` on another host: the same options and environment, stdout cut at
/// a line end after `cap` bytes; `env` through `relay` (see [`Git::with_relay`]).
#[allow(clippy::too_many_arguments)]
async fn run_remote(
    transport: &crate::ssh::Transport,
    relay: Option<&str>,
    command: &str,
    dir: &Path,
    args: &[&str],
    timeout: Duration,
    cap: usize,
    env: &[(String, String)],
) -> Result<Output, GitError> {
    let mut argv: Vec<String> = Vec::new();
    let mut stdin = None;
    if !env.is_empty() {
        let Some(relay) = relay else {
            return Err(GitError::Io {
                command: command.to_string(),
                error: format!(
                    "host `{}`: this git command needs values passed to it alone (a token), and no the-loop there to take them",
                    transport.name()
                ),
            });
        };
        use crate::tmux::env_handoff;
        argv.extend([
            relay.to_string(),
            env_handoff::SUBCOMMAND.into(),
            env_handoff::STDIN_FLAG.into(),
            "--".into(),
        ]);
        stdin = Some(env_handoff::encode(env));
    }
    argv.extend(
        [
            "env",
            "GIT_TERMINAL_PROMPT=0",
            "GIT_OPTIONAL_LOCKS=0",
            "LC_ALL=C",
            "git",
            "-C",
        ]
        .map(str::to_string),
    );
    argv.push(dir.to_string_lossy().into_owned());
    argv.extend(FIXED.map(str::to_string));
    argv.extend(args.iter().map(|a| a.to_string()));
    let out = transport
        .run(&argv, stdin.as_deref(), timeout)
        .await
        .map_err(|e| match e {
            crate::ssh::SshError::Timeout { after, .. } => GitError::Timeout {
                command: command.to_string(),
                after,
            },
            e => GitError::Io {
                command: command.to_string(),
                error: e.to_string(),
            },
        })?;
    let mut stdout = out.stdout;
    let cut = stdout.len() > cap;
    if cut {
        stdout.truncate(cap);
        let end = stdout
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |at| at + 1);
        stdout.truncate(end);
    }
    Ok(Output {
        success: out.success || cut,
        code: out.code,
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: out.stderr,
        cut,
    })
}

/// `git -C <dir> <args>` as the operator would type it (for messages).
pub fn describe(dir: &Path, args: &[&str]) -> String {
    format!("git -C {} {}", dir.display(), args.join(" "))
}

/// The end of `stderr`: its last lines, at most [`STDERR_TAIL`] characters.
pub fn tail(stderr: &str) -> String {
    let text = stderr.trim();
    let count = text.chars().count();
    let cut: String = if count > STDERR_TAIL {
        let skipped: String = text.chars().skip(count - STDERR_TAIL).collect();
        format!("…{skipped}")
    } else {
        text.to_string()
    };
    if cut.is_empty() {
        "(git printed nothing on stderr)".into()
    } else {
        cut.replace('\n', " / ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_missing_git_is_named() {
        let git = Git::default().with_program("/nonexistent/git-for-the-loop");
        let err = git.ok(Path::new("/"), &["status"]).await.unwrap_err();
        assert_eq!(err, GitError::NotInstalled);
        assert!(err.to_string().contains("install git"), "{err}");
    }

    #[tokio::test]
    async fn a_failure_names_the_command_and_quotes_stderr() {
        let dir = tempfile::tempdir().unwrap();
        let err = Git::default()
            .ok(dir.path(), &["rev-parse", "--show-toplevel"])
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("rev-parse --show-toplevel"), "{text}");
        assert!(text.contains("not a git repository"), "{text}");
        assert!(matches!(
            err,
            GitError::Failed {
                code: Some(128),
                ..
            }
        ));
    }

    #[tokio::test]
    async fn a_slow_command_is_killed_at_its_timeout() {
        // `git -c alias.x=!sleep` would need a shell; a hung credential prompt is the
        // real case. A fake `git` that sleeps stands in for it.
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("git");
        std::fs::write(&fake, "#!/bin/sh\nsleep 30\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let git = Git::default()
            .with_program(&fake)
            .with_timeout(Duration::from_millis(300));
        let err = git.ok(dir.path(), &["fetch"]).await.unwrap_err();
        assert!(matches!(err, GitError::Timeout { .. }), "{err}");
        assert!(err.to_string().contains("git -C"), "{err}");
    }

    #[test]
    fn the_tail_keeps_the_end_on_one_line() {
        assert_eq!(tail("  fatal: a\nhint: b\n"), "fatal: a / hint: b");
        assert_eq!(tail(""), "(git printed nothing on stderr)");
        let long = format!("{}END", "x".repeat(2000));
        let t = tail(&long);
        assert!(t.starts_with('…') && t.ends_with("END"), "{t}");
        assert!(t.chars().count() <= STDERR_TAIL + 1);
    }
}
