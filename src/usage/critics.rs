//! Critic rounds' own usage (SPEC §20.1): each round's envelope `usage` counts for its
//! work item, shown apart from the session's. Kept where usage is kept, as a tally per
//! work item and local day, added to as each round finishes:
//! `<state>/usage/critics/<slug>.json` (private, one writer at a time). Whoever shows it
//! — `sessions list`, `the-loop usage` — reads one small file per item, never the
//! event log, so showing it costs the same however long the log grew.
//!
//! A state directory from before the tally has it built once, from the rounds the kept
//! log still holds (the last [`MAX_ROUNDS`] `critic.finished` events).

use crate::events::{Filter, tail_retained};
use crate::paths::StatePaths;
use crate::work_item::WorkItemRef;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

/// The most recent rounds read when the tally is built from the log.
pub const MAX_ROUNDS: usize = 10_000;

/// What critics spent on one work item.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    /// One round that reported these figures (a figure not reported counts 0; a cost
    /// not reported is counted apart).
    pub fn round(input_tokens: Option<u64>, output_tokens: Option<u64>, cost: Option<f64>) -> Self {
        Self {
            rounds: 1,
            input_tokens: input_tokens.unwrap_or(0),
            output_tokens: output_tokens.unwrap_or(0),
            cost_usd: cost.unwrap_or(0.0),
            rounds_without_cost: u64::from(cost.is_none()),
        }
    }

    pub fn add(&mut self, other: &CriticSpend) {
        self.rounds += other.rounds;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cost_usd += other.cost_usd;
        self.rounds_without_cost += other.rounds_without_cost;
    }
}

/// One work item's file: its spend by local day (`YYYY-MM-DD`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct ItemSpend {
    /// The work item as the rounds named it.
    #[serde(rename = "ref")]
    work_item: String,
    days: BTreeMap<String, CriticSpend>,
}

impl ItemSpend {
    fn since(&self, since: Option<&str>) -> Option<CriticSpend> {
        let mut out: Option<CriticSpend> = None;
        for (_, spend) in self
            .days
            .iter()
            .filter(|(day, _)| since.is_none_or(|s| day.as_str() >= s))
        {
            out.get_or_insert_default().add(spend);
        }
        out
    }
}

/// The critics' tally of one state directory.
#[derive(Debug, Clone)]
pub struct CriticTally {
    dir: PathBuf,
    /// The event log, read once to build a tally that is not there yet.
    log: PathBuf,
}

impl CriticTally {
    pub fn new(paths: &StatePaths) -> Self {
        Self {
            dir: paths.usage_dir().join("critics"),
            log: paths.events(),
        }
    }

    fn file(&self, item: &WorkItemRef) -> PathBuf {
        item_file(&self.dir, item)
    }

    fn lock(&self) -> io::Result<nix::fcntl::Flock<std::fs::File>> {
        crate::fsutil::lock_exclusive(&self.dir.with_extension("lock"))
    }

    /// Adds one round on `item`, finished on local `day`. Called before the round's
    /// `critic.finished` is logged, so a tally built from the log meanwhile never holds
    /// it twice.
    pub fn add(&self, item: &WorkItemRef, day: &str, round: &CriticSpend) -> io::Result<()> {
        let _lock = self.lock()?;
        self.build_locked()?;
        let file = self.file(item);
        let mut spend = read(&file)?.unwrap_or_else(|| ItemSpend {
            work_item: item.to_string(),
            days: BTreeMap::new(),
        });
        spend.days.entry(day.to_string()).or_default().add(round);
        crate::fsutil::atomic_write_json(&file, &spend)
    }

    /// What critics spent on `item` from `since` (a local day) on; `None`: no round.
    pub fn of(&self, item: &WorkItemRef, since: Option<&str>) -> io::Result<Option<CriticSpend>> {
        self.build()?;
        Ok(read(&self.file(item))?.and_then(|s| s.since(since)))
    }

    /// Every work item's spend from `since` on, by the work item as the rounds named it.
    pub fn by_item(&self, since: Option<&str>) -> io::Result<BTreeMap<String, CriticSpend>> {
        self.build()?;
        let mut out: BTreeMap<String, CriticSpend> = BTreeMap::new();
        for entry in std::fs::read_dir(&self.dir)? {
            let path = entry?.path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            if let Some(spend) = read(&path)?
                && let Some(total) = spend.since(since)
            {
                out.entry(spend.work_item).or_default().add(&total);
            }
        }
        Ok(out)
    }

    /// Builds the tally from the log when there is none yet.
    fn build(&self) -> io::Result<()> {
        if self.dir.is_dir() {
            return Ok(());
        }
        let _lock = self.lock()?;
        self.build_locked()
    }

    /// [`build`](Self::build) under the lock: the items' files are written aside, then
    /// moved in at once, so a tally is never half there.
    fn build_locked(&self) -> io::Result<()> {
        if self.dir.is_dir() {
            return Ok(());
        }
        let building = self.dir.with_extension("building");
        if building.exists() {
            std::fs::remove_dir_all(&building)?; // a build that died midway
        }
        crate::fsutil::create_private_dir_all(&building)?;
        for (name, spend) in from_log(&self.log)? {
            crate::fsutil::atomic_write_json(&building.join(name), &spend)?;
        }
        std::fs::rename(&building, &self.dir)
    }
}

fn item_file(dir: &Path, item: &WorkItemRef) -> PathBuf {
    dir.join(file_name(item))
}

/// An item's file name: its slug, lowercased (GitHub names are case-insensitive).
fn file_name(item: &WorkItemRef) -> String {
    format!("{}.json", item.slug().to_ascii_lowercase())
}

/// An item's file; `None` when there is none (a file that does not parse is moved
/// aside: its rounds are lost, the next ones count).
fn read(file: &Path) -> io::Result<Option<ItemSpend>> {
    Ok(match crate::fsutil::read_json_state(file)? {
        crate::fsutil::StateRead::Ok(spend) => Some(spend),
        crate::fsutil::StateRead::Missing => None,
        crate::fsutil::StateRead::Corrupt { moved_to, error } => {
            tracing::warn!(path = %file.display(), moved_to = %moved_to.display(), %error, "critic spend not readable; moved aside");
            None
        }
    })
}

/// The spend of the last [`MAX_ROUNDS`] rounds the kept log holds, by item file name.
fn from_log(log: &Path) -> io::Result<BTreeMap<String, ItemSpend>> {
    let mut out: BTreeMap<String, ItemSpend> = BTreeMap::new();
    let filter = Filter::parse(Some("critic.finished"), None, None, None)
        .map_err(|e| io::Error::other(e.to_string()))?;
    let offset = crate::time::local_offset();
    for record in tail_retained(log, MAX_ROUNDS, &filter)?.records {
        let event = record.event;
        let Some(item) = event
            .str_field("work_item")
            .and_then(|v| v.parse::<WorkItemRef>().ok())
        else {
            continue;
        };
        let Some(day) = super::line::day_of(&event.ts, offset) else {
            continue;
        };
        let n = |k: &str| event.fields.get(k).and_then(serde_json::Value::as_u64);
        let cost = event
            .fields
            .get("cost_usd")
            .and_then(serde_json::Value::as_f64);
        let spend = out.entry(file_name(&item)).or_insert_with(|| ItemSpend {
            work_item: item.to_string(),
            days: BTreeMap::new(),
        });
        spend.days.entry(day).or_default().add(&CriticSpend::round(
            n("input_tokens"),
            n("output_tokens"),
            cost,
        ));
    }
    Ok(out)
}

#[cfg(test)]
#[path = "critics_tests.rs"]
mod tests;
