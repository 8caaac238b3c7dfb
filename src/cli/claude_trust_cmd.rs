//! `the-loop claude-trust DIR` (hidden): marks `DIR` trusted in Claude Code's config of
//! the machine it runs on (`workspace::trust`: under Claude Code's own lock, only that
//! key changed, written atomically). The supervisor runs it on another host over SSH
//! before it starts `claude` in a directory there that the-loop made or the operator
//! configured (issue 32), so the trust dialog does not swallow the session's first
//! prompt. Prints nothing; exit 1 with the reason when the config cannot be written.

use super::{CliResult, failed};
use anyhow::anyhow;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct ClaudeTrustArgs {
    /// The directory Claude Code is about to start in.
    pub dir: PathBuf,
}

pub fn run(args: ClaudeTrustArgs) -> CliResult {
    let file = crate::workspace::trust::config_file().ok_or_else(|| {
        failed(anyhow!(
            "no home directory: cannot find Claude Code's config"
        ))
    })?;
    crate::workspace::trust::trust(&file, &args.dir).map_err(failed)?;
    Ok(())
}
