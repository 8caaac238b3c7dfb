//! `the-loop config check | init | path`.

use super::{CliResult, Ctx};
use std::path::PathBuf;

#[derive(Debug, clap::Subcommand)]
pub enum ConfigCommand {
    /// Validate the config and print the effective result.
    Check,
    /// Write a commented starter config.
    Init {
        /// Where to write it (default: the resolved config path).
        #[arg(long)]
        path: Option<PathBuf>,
    },
    /// Show which config file is used.
    Path,
}

pub fn run(_cmd: ConfigCommand, _ctx: &Ctx) -> CliResult {
    Err(super::failed(anyhow::anyhow!("config: not built yet")))
}
