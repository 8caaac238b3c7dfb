//! `the-loop exec-env [--private] [FILE] -- ARGV…` (hidden): the first process of a
//! session that is handed passed values (`sessions.passEnv`), or whose files are to be
//! private. It takes the values from the private file the spawner wrote, so they never
//! appear in a process's argv; with `--private` it sets the umask to 077 (a session in
//! a worktree the-loop made, SPEC §18.5); then it replaces itself with the harness
//! (same process id). See `tmux::env_handoff`. With `--stdin` the values come from its
//! stdin instead: a git push the supervisor starts on another host over SSH (issue 32),
//! its token carried in the connection's stream and written nowhere there.

use super::{CliError, CliResult, failed};
use crate::tmux::env_handoff;
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct ExecEnvArgs {
    /// Run the program under umask 077: what it creates is the user's alone.
    #[arg(long)]
    pub private: bool,
    /// Take the values from stdin instead (a process started over SSH on another host:
    /// nothing is written there).
    #[arg(long, conflicts_with = "file")]
    pub stdin: bool,
    /// The hand-off file (removed once read), when values are passed.
    pub file: Option<PathBuf>,
    /// The harness and its arguments, after `--`.
    #[arg(last = true, required = true)]
    pub argv: Vec<OsString>,
}

pub fn run(args: ExecEnvArgs) -> CliResult {
    let env = match &args.file {
        Some(file) => env_handoff::take(file).map_err(failed)?,
        None if args.stdin => env_handoff::read(std::io::stdin().lock()).map_err(failed)?,
        None => Vec::new(),
    };
    let Some((program, rest)) = args.argv.split_first() else {
        return Err(failed(anyhow::anyhow!("no program to run")));
    };
    if args.private {
        crate::fsutil::use_private_umask();
    }
    let error = std::process::Command::new(program)
        .args(rest)
        .envs(env)
        .exec();
    // `exec` returns only when the program could not be started; 127/126 as `env` says.
    let code = if error.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    };
    Err(CliError {
        code,
        error: anyhow::anyhow!("cannot run {}: {error}", program.to_string_lossy()),
    })
}

#[cfg(test)]
mod tests {
    use super::super::{Cli, Command};
    use super::ExecEnvArgs;
    use crate::tmux::env_handoff::EnvHandoff;
    use clap::Parser;

    /// What `exec-env` makes of the argv `EnvHandoff::wrap` builds.
    fn parsed(values: &[(String, String)], private: bool, argv: &[&str]) -> ExecEnvArgs {
        let dir = tempfile::tempdir().unwrap();
        let handoff = EnvHandoff::new("/opt/the-loop", dir.path().join("spawn-env"));
        let argv: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
        let (wrapped, _) = handoff.wrap(values, private, &argv).unwrap();
        let cli = Cli::try_parse_from(
            std::iter::once("the-loop").chain(wrapped[1..].iter().map(String::as_str)),
        )
        .unwrap();
        let Command::ExecEnv(args) = cli.command else {
            panic!("not exec-env: {:?}", cli.command);
        };
        args
    }

    /// The harness's own flags, its `--` included, reach it intact.
    const HARNESS: [&str; 6] = ["claude", "--session-id", "x", "--", "-p", "--private"];

    #[test]
    fn the_wrapped_argv_parses_with_the_harness_flags_intact() {
        let values = [("A".to_string(), "1".to_string())];
        let args = parsed(&values, false, &HARNESS);
        let file = args.file.expect("the hand-off file");
        assert!(file.to_string_lossy().contains("spawn-env"), "{file:?}");
        assert_eq!(args.argv, HARNESS);
        assert!(!args.private);
    }

    /// A private session without values: the flag, and no file.
    #[test]
    fn the_private_argv_parses_with_and_without_a_file() {
        let args = parsed(&[], true, &HARNESS);
        assert!(args.private);
        assert_eq!(args.file, None);
        assert_eq!(args.argv, HARNESS);
        let args = parsed(&[("A".into(), "1".into())], true, &HARNESS);
        assert!(args.private && args.file.is_some());
        assert_eq!(args.argv, HARNESS);
    }

    /// What a git command on another host is started with (`Git::with_relay`): the
    /// values on stdin, so neither a file nor argv holds them; never both.
    #[test]
    fn the_stdin_argv_parses_and_a_file_with_it_is_refused() {
        use crate::tmux::env_handoff::{STDIN_FLAG, SUBCOMMAND};
        let cli = Cli::try_parse_from([
            "the-loop", SUBCOMMAND, STDIN_FLAG, "--", "env", "git", "push",
        ])
        .unwrap();
        let Command::ExecEnv(args) = cli.command else {
            panic!("not exec-env");
        };
        assert!(args.stdin && args.file.is_none());
        assert_eq!(args.argv, ["env", "git", "push"]);
        let both = Cli::try_parse_from(["the-loop", SUBCOMMAND, STDIN_FLAG, "/f", "--", "git"]);
        assert!(both.is_err());
    }
}
