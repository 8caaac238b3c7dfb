//! Usage and cost per session (SPEC §20): what each agent's model responses cost, read
//! from what the harness writes down, priced from a table, held against budgets.
//!
//! - [`line`]: one Claude Code transcript line's usage; [`codex`]: codex's rollout,
//!   its running totals; [`reader`]: a log read incrementally, each response once;
//!   [`track`]: a session's logs (and sub-agents'), kept in its record;
//! - [`tally`]: counts by local day and model; [`tokens`]: the four kinds (cache
//!   writes by lifetime);
//! - [`pricing`]: the embedded price table and the config's entries;
//! - [`budget`]: where a cost stands against a budget, and the crossings to tell.

pub mod budget;
pub mod codex;
pub mod critics;
pub mod group;
pub mod line;
pub mod pricing;
pub mod reader;
pub mod tally;
pub mod tokens;
pub mod track;

pub use budget::{Budgets, Standing};
pub use pricing::{Costed, Prices};
pub use tally::Tally;
pub use tokens::Tokens;
pub use track::SessionUsage;

/// Today's local date, `YYYY-MM-DD`: the day of a daily budget.
pub fn today() -> String {
    line::day(time::OffsetDateTime::now_utc(), crate::time::local_offset())
}
