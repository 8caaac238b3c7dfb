//! Critic rounds' own usage (SPEC §20.1): each round's envelope `usage`, as its
//! `critic.finished` event carries it, counted for its work item and shown apart from
//! the session's. Read from a bounded tail of the event log (the last [`MAX_ROUNDS`]
//! rounds, rotated files included).

use crate::events::{Filter, tail_retained};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// The most recent rounds read.
pub const MAX_ROUNDS: usize = 10_000;

/// What critics spent on one work item.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CriticSpend {
    pub rounds: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The cost the critics reported; rounds that reported none are not in it.
    pub cost_usd: f64,
    /// Rounds that reported no cost.
    pub rounds_without_cost: u64,
}

impl CriticSpend {
    pub fn add(&mut self, other: &CriticSpend) {
        self.rounds += other.rounds;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cost_usd += other.cost_usd;
        self.rounds_without_cost += other.rounds_without_cost;
    }
}

/// Critic spend by work item (as written in the events), from `since` (a local day,
/// `YYYY-MM-DD`) on.
pub fn by_item(log: &Path, since: Option<&str>) -> BTreeMap<String, CriticSpend> {
    let mut out: BTreeMap<String, CriticSpend> = BTreeMap::new();
    let Ok(filter) = Filter::parse(Some("critic.finished"), None, None, None) else {
        return out;
    };
    let Ok(tail) = tail_retained(log, MAX_ROUNDS, &filter) else {
        return out;
    };
    let offset = crate::time::local_offset();
    for record in tail.records {
        let event = record.event;
        let Some(item) = event.fields.get("work_item").and_then(|v| v.as_str()) else {
            continue;
        };
        let day = super::line::day_of(&event.ts, offset);
        if since.is_some_and(|s| day.as_deref().is_none_or(|d| d < s)) {
            continue;
        }
        let n = |k: &str| {
            event
                .fields
                .get(k)
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0)
        };
        let cost = event
            .fields
            .get("cost_usd")
            .and_then(serde_json::Value::as_f64);
        let spend = out.entry(item.to_string()).or_default();
        spend.rounds += 1;
        spend.input_tokens += n("input_tokens");
        spend.output_tokens += n("output_tokens");
        match cost {
            Some(c) => spend.cost_usd += c,
            None => spend.rounds_without_cost += 1,
        }
    }
    out
}
