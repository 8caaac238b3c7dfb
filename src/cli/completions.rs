//! `the-loop completions SHELL`.

use super::{Cli, CliResult};
use clap::CommandFactory;

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to generate completions for.
    pub shell: clap_complete::Shell,
}

pub fn run(args: CompletionsArgs) -> CliResult {
    let mut cmd = Cli::command();
    clap_complete::generate(args.shell, &mut cmd, "the-loop", &mut std::io::stdout());
    Ok(())
}
