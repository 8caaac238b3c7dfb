//! `the-loop excerpt --event NAME [FILE|-]`: shows exactly what an agent would be told
//! about a payload (SPEC §6), for checking the allow-list against real events.

use super::{CliResult, Ctx};
use crate::routing::excerpt::excerpt;
use anyhow::anyhow;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct ExcerptArgs {
    /// The GitHub event name (the `X-GitHub-Event` header), e.g. `issue_comment`.
    #[arg(long)]
    pub event: String,
    /// The payload file; `-` or nothing reads standard input.
    pub file: Option<PathBuf>,
}

pub fn run(args: ExcerptArgs, _ctx: &Ctx) -> CliResult {
    let (name, bytes) = match args.file.as_deref() {
        None => read_stdin()?,
        Some(path) if path == Path::new("-") => read_stdin()?,
        Some(path) => {
            let name = format!("`{}`", crate::paths::show(path));
            let bytes = std::fs::read(path).map_err(|e| {
                super::usage(anyhow!(
                    "cannot read the payload file {name}: {e}; pass a readable JSON file, or `-` for standard input"
                ))
            })?;
            (name, bytes)
        }
    };
    let payload: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
        super::usage(anyhow!(
            "the payload in {name} is not valid JSON: {e}; expected a webhook-shaped JSON object"
        ))
    })?;
    // Not `println!`: it panics when the reader has gone (`… | head`).
    writeln!(
        std::io::stdout().lock(),
        "{}",
        excerpt(&args.event, &payload)
    )
    .map_err(|e| super::failed(anyhow!("cannot write the excerpt to standard output: {e}")))
}

fn read_stdin() -> Result<(String, Vec<u8>), super::CliError> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .map_err(|e| super::failed(anyhow!("cannot read the payload from standard input: {e}")))?;
    Ok(("standard input".to_string(), bytes))
}
