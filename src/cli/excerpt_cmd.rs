//! `the-loop excerpt --event NAME [FILE|-]`.

use super::{CliResult, Ctx};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct ExcerptArgs {
    /// The GitHub event name (the `X-GitHub-Event` header), e.g. `issue_comment`.
    #[arg(long)]
    pub event: String,
    /// The payload file; `-` or nothing reads standard input.
    pub file: Option<PathBuf>,
}

pub fn run(_args: ExcerptArgs, _ctx: &Ctx) -> CliResult {
    Err(super::failed(anyhow::anyhow!("excerpt: not built yet")))
}
