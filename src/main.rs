use clap::Parser;
use std::process::ExitCode;
use the_loop::cli::{Cli, Command};

fn main() -> ExitCode {
    // git asking the running binary for the token of one push (SPEC §19.4): answered
    // before anything else, with no file touched and nothing logged.
    if let Some(code) = the_loop::workspace::push::answer_askpass() {
        return ExitCode::from(code);
    }
    // Parse first: `--help` and usage errors must stay instant and touch no files.
    let cli = Cli::parse();
    if matches!(cli.command, Command::Tui(_)) {
        // Before any thread exists (the log writer starts one): see `init_local_offset`.
        the_loop::time::init_local_offset();
    }
    the_loop::secrets::register_from_env();
    // Completions print to stdout for a shell to source, and the fake agent stands in
    // for a harness inside a pane: neither should write the operator's log. Nor should
    // the demo: its children log into its private state root, which the demo removes.
    // `exec-env` becomes the harness (`exec`), which would drop buffered log lines.
    // `claude-trust` runs on another host for the supervisor, whose log is here.
    let _log_guard = match cli.command {
        Command::Completions(_)
        | Command::ExecEnv(_)
        | Command::ClaudeTrust(_)
        | Command::FakeAgent(_)
        | Command::Demo(_)
        | Command::DemoCritic(_) => None,
        _ => the_loop::logging::init(&the_loop::paths::StatePaths::from_env()),
    };
    the_loop::cli::run(cli)
}
