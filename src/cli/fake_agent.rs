//! `the-loop fake-agent` (hidden): a small interactive program standing in for a
//! harness TUI in tests and the demo.

use super::CliResult;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct FakeAgentArgs {
    /// Append one JSON line per submitted paste to this file.
    #[arg(long)]
    pub log: Option<PathBuf>,
}

pub fn run(_args: FakeAgentArgs) -> CliResult {
    Err(super::failed(anyhow::anyhow!("fake-agent: not built yet")))
}
