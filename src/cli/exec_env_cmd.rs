//! `the-loop exec-env FILE -- ARGV…` (hidden): the first process of a session that is
//! handed passed values (`sessions.passEnv`). It takes them from the private file the
//! spawner wrote, so they never appear in a process's argv, and replaces itself with
//! the harness (same process id). See `tmux::env_handoff`.

use super::{CliError, CliResult, failed};
use crate::tmux::env_handoff;
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct ExecEnvArgs {
    /// The hand-off file (removed once read).
    pub file: PathBuf,
    /// The harness and its arguments, after `--`.
    #[arg(last = true, required = true)]
    pub argv: Vec<OsString>,
}

pub fn run(args: ExecEnvArgs) -> CliResult {
    let env = env_handoff::take(&args.file).map_err(failed)?;
    let Some((program, rest)) = args.argv.split_first() else {
        return Err(failed(anyhow::anyhow!("no program to run")));
    };
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
    use crate::tmux::env_handoff::SUBCOMMAND;
    use clap::Parser;

    /// The argv `EnvHandoff::wrap` builds is the one this command parses.
    #[test]
    fn the_wrapped_argv_parses_with_the_harness_flags_intact() {
        let cli = Cli::try_parse_from([
            "the-loop",
            SUBCOMMAND,
            "/state/spawn-env/1.json",
            "--",
            "claude",
            "--session-id",
            "x",
            "--",
            "-p",
        ])
        .unwrap();
        let Command::ExecEnv(args) = cli.command else {
            panic!("not exec-env: {:?}", cli.command);
        };
        assert_eq!(args.file.to_str(), Some("/state/spawn-env/1.json"));
        assert_eq!(args.argv, ["claude", "--session-id", "x", "--", "-p"]);
    }
}
