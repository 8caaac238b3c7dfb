//! `the-loop usage [--since DATE] [--by item|repo|day|model] [--json]` (SPEC §20.3):
//! what the sessions' model responses used and cost, critics' rounds apart.
//!
//! Each session's transcripts are read first from their kept offsets (only what was
//! appended since the last read; the first read of a session is whole), bounded like
//! every read of a file from outside: lines over `usage::reader::MAX_LINE` are skipped
//! and counted. Prices: the embedded table (its as-of date and source are printed)
//! under `pricing.models`.

use super::{CliResult, Ctx, failed, usage};
use crate::config;
use crate::events::{EventLog, Source};
use crate::paths::StatePaths;
use crate::session::Registry;
use crate::usage::critics::{self, CriticSpend};
use crate::usage::group::{By, group};
use crate::usage::{Prices, Tally, pricing};
use crate::work_item::WorkItemRef;
use anyhow::anyhow;
use serde_json::{Value, json};

#[derive(Debug, clap::Args)]
pub struct UsageArgs {
    /// Only usage on or after this local day, `YYYY-MM-DD`.
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// What a row is: a work item, a repository, a day or a model.
    #[arg(long, value_enum, default_value_t = By::Item)]
    pub by: By,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: UsageArgs, ctx: &Ctx) -> CliResult {
    if let Some(since) = &args.since
        && !is_day(since)
    {
        return Err(usage(anyhow!(
            "invalid --since `{since}`: expected a day such as 2026-12-01"
        )));
    }
    let loaded = config::load(ctx.config_flag.as_deref()).map_err(usage)?;
    let prices = Prices::new(&loaded.config.pricing.models);
    let budgets = crate::usage::Budgets::from_config(&loaded.config);
    let paths = StatePaths::from_env();
    let events = EventLog::open(&paths);
    let registry = Registry::new(&paths, events.clone(), Source::Cli);
    let records = registry.list().map_err(failed)?;
    let mut sessions: Vec<(WorkItemRef, Tally)> = Vec::new();
    let mut unknown: Vec<String> = Vec::new();
    let mut bytes_read = 0u64;
    for record in &records {
        if !record.usage.is_known() {
            unknown.push(record.work_item.to_string());
            continue;
        }
        // Read through the one path that moves a session's figures and tells what moved
        // (`session.usage`, a budget crossed), so nothing it finds goes untold.
        let read = crate::session::usage::read_and_tell(
            &registry,
            &events,
            &record.work_item,
            None,
            &budgets,
        );
        let tally = match read {
            Ok(Some(found)) => {
                bytes_read += found.stats.bytes;
                found.after
            }
            Ok(None) => record.usage.tally(),
            Err(e) => return Err(failed(e)),
        };
        sessions.push((record.work_item.clone(), tally));
    }
    let since = args.since.as_deref();
    let rows = group(&sessions, args.by, since);
    let critics = critics::CriticTally::new(&paths)
        .by_item(since)
        .map_err(|e| failed(anyhow!("cannot read the critics' spend: {e}")))?;
    let mut total = Tally::default();
    for (_, t) in &rows {
        total.merge(t);
    }
    let mut critics_total = CriticSpend::default();
    for spend in critics.values() {
        critics_total.add(spend);
    }
    if args.json {
        let rows: Vec<Value> = rows
            .iter()
            .map(|(key, tally)| {
                let mut row = prices.cost(tally).to_json();
                row["key"] = json!(key);
                if args.by == By::Item {
                    row["critics"] = json!(critics.get(key));
                }
                row
            })
            .collect();
        let out = json!({
            "by": args.by.as_str(),
            "since": since,
            "rows": rows,
            "total": prices.cost(&total).to_json(),
            "critics": critics_total,
            "unknown": unknown,
            "bytesRead": bytes_read,
            "prices": {"asOf": pricing::AS_OF, "source": pricing::SOURCE},
        });
        println!("{out}");
        return Ok(());
    }
    println!(
        "{:<32} {:>10} {:>10} {:>12}",
        args.by.as_str(),
        "tokens",
        "cost",
        "critics"
    );
    for (key, tally) in &rows {
        let costed = prices.cost(tally);
        let critic = critics
            .get(key)
            .filter(|_| args.by == By::Item)
            .map_or_else(String::new, |c| format!("${:.2}", c.cost_usd));
        println!(
            "{:<32} {:>10} {:>10} {:>12}",
            key,
            crate::usage::tokens::short(costed.tokens.total()),
            cost(&costed),
            critic
        );
    }
    let costed = prices.cost(&total);
    println!(
        "{:<32} {:>10} {:>10} {:>12}",
        "total",
        crate::usage::tokens::short(costed.tokens.total()),
        cost(&costed),
        format!("${:.2}", critics_total.cost_usd)
    );
    for model in costed.unpriced() {
        println!("no price for {model}: its cost is unknown (add pricing.models.{model})");
    }
    if !unknown.is_empty() {
        println!(
            "usage unknown (the harness reports none): {}",
            unknown.join(", ")
        );
    }
    println!("prices as of {}: {}", pricing::AS_OF, pricing::SOURCE);
    Ok(())
}

fn cost(costed: &crate::usage::Costed) -> String {
    match costed.cost_usd() {
        Some(c) => format!("${c:.2}"),
        None => "?".into(),
    }
}

fn is_day(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}
