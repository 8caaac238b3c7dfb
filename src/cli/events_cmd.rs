//! `the-loop events [--follow] [--type GLOB] [--work-item REF] [--since TS] [--level L] [--json]`.

use super::{CliResult, Ctx};

#[derive(Debug, clap::Args)]
pub struct EventsArgs {
    /// Keep printing new events as they are appended.
    #[arg(long)]
    pub follow: bool,
    /// Only event types matching this glob, e.g. `routing.*`.
    #[arg(long = "type", value_name = "GLOB")]
    pub event_type: Option<String>,
    /// Only events about this work item.
    #[arg(long, value_name = "REF")]
    pub work_item: Option<String>,
    /// Only events at or after this RFC 3339 timestamp.
    #[arg(long, value_name = "TS")]
    pub since: Option<String>,
    /// Only events at this level or above (debug, info, warning, error).
    #[arg(long)]
    pub level: Option<String>,
    /// Print the raw JSON lines.
    #[arg(long)]
    pub json: bool,
}

pub fn run(_args: EventsArgs, _ctx: &Ctx) -> CliResult {
    Err(super::failed(anyhow::anyhow!("events: not built yet")))
}
