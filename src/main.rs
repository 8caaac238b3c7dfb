use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = the_loop::cli::Cli::parse();
    the_loop::cli::run(cli)
}
