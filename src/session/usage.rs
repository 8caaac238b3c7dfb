//! A session's usage kept current (SPEC §20): the hook names the transcript, each turn
//! end reads what it gained (from the kept offsets, under the record's lock), tells it
//! once (`session.usage`), and tells a budget crossed (`session.budget_warning`,
//! `session.over_budget`). Holding deliveries over budget is `budget_hold`, asked by
//! the paste path before every paste.

use super::registry::{Registry, RegistryError, SessionRecord};
use crate::events::{Event, EventLog, EventType, Level, Source};
use crate::usage::budget::{Crossing, Scope};
use crate::usage::codex::{self, RolloutError};
use crate::usage::reader::{Format, ReadStats};
use crate::usage::track::{self, SessionUsage, TranscriptError};
use crate::usage::{Budgets, Standing, Tally};
use crate::work_item::WorkItemRef;
use std::path::{Path, PathBuf};

/// What one refresh of a session found.
#[derive(Debug, Clone, Default)]
pub struct Refreshed {
    pub before: Tally,
    pub after: Tally,
    pub stats: ReadStats,
}

/// A log a harness named, and where that harness keeps its logs in the harness's
/// environment.
#[derive(Debug, Clone, Copy)]
pub struct Named<'a> {
    pub transcript: &'a Path,
    pub root: Root<'a>,
}

/// Where a harness keeps its logs.
#[derive(Debug, Clone, Copy)]
pub enum Root<'a> {
    /// Claude Code's config dir (`CLAUDE_CONFIG_DIR`, else `~/.claude`:
    /// `track::claude_config_dir`).
    Claude(&'a Path),
    /// Codex's home (`CODEX_HOME`, else `~/.codex`: `codex::codex_home`).
    Codex(&'a Path),
}

#[derive(Debug, thiserror::Error)]
pub enum NotAccepted {
    #[error(transparent)]
    Transcript(#[from] TranscriptError),
    #[error(transparent)]
    Rollout(#[from] RolloutError),
}

/// The log named, with how it is read, if it is that of a session in `cwd`: a Claude
/// transcript in its project directory (`<claude dir>/projects/<encoded cwd>`), a codex
/// rollout under `<codex home>/sessions` of a session in that directory; else why not.
pub fn accept(cwd: &Path, named: Named<'_>) -> Result<(PathBuf, Format), NotAccepted> {
    let transcript = named.transcript;
    let cwds: Vec<PathBuf> = [Some(cwd.to_path_buf()), cwd.canonicalize().ok()]
        .into_iter()
        .flatten()
        .collect();
    match named.root {
        Root::Codex(home) => Ok((
            codex::accept_rollout(transcript, home, &cwds)?,
            Format::Codex,
        )),
        Root::Claude(config_dir) => {
            let mut last = None;
            for cwd in &cwds {
                let dir = track::claude_project_dir(config_dir, cwd);
                match track::accept_transcript(transcript, &dir) {
                    Ok(path) => return Ok((path, Format::Claude)),
                    Err(e) => last = Some(e),
                }
            }
            let shown = transcript.display().to_string();
            Err(last.unwrap_or(TranscriptError::NotJsonl(shown)).into())
        }
    }
}

/// Follows `transcript` (when given and accepted) and reads what `item`'s transcripts
/// gained, under the record's lock. `None`: no record. A session on another host is
/// never read here (its logs are files there): its figures are what the-loop there
/// sent ([`take_from_host`]).
pub fn refresh(
    registry: &Registry,
    item: &WorkItemRef,
    transcript: Option<Named<'_>>,
) -> Result<Option<Refreshed>, RegistryError> {
    registry.update(item, |record| {
        if record.host.is_some() {
            let now = record.usage.tally();
            return Refreshed {
                before: now.clone(),
                after: now,
                stats: ReadStats::default(),
            };
        }
        let cwd = record.cwd.clone();
        read_more(&mut record.usage, &cwd, transcript, item)
    })
}

/// Follows `transcript` (when given and accepted for a session in `cwd`) and reads what
/// `usage`'s logs gained: the one reading, whoever keeps `usage` (a record here, or
/// the-loop on another host for a session there).
pub fn read_more(
    usage: &mut SessionUsage,
    cwd: &Path,
    transcript: Option<Named<'_>>,
    item: &WorkItemRef,
) -> Refreshed {
    if let Some(named) = transcript {
        match accept(cwd, named) {
            Ok((path, format)) => usage.follow(path, format),
            Err(e) => tracing::warn!(%item, "usage: {e}; not read"),
        }
    }
    let before = usage.tally();
    let stats = if usage.transcript.is_some() {
        usage.refresh(&crate::usage::today(), crate::time::local_offset())
    } else {
        ReadStats::default()
    };
    Refreshed {
        before,
        after: usage.tally(),
        stats,
    }
}

/// A session on another host: `usage` as the-loop there keeps it (sent back over the
/// host's connection after each turn, whole, so a report lost on the way is made good
/// by the next) becomes the record's, and what changed is told as a turn's end here
/// tells it. `None`: no record.
pub fn take_from_host(
    registry: &Registry,
    events: &EventLog,
    item: &WorkItemRef,
    usage: SessionUsage,
    budgets: &Budgets,
) -> Result<Option<Refreshed>, RegistryError> {
    let Some(found) = registry.update(item, |record| {
        let before = record.usage.tally();
        record.usage = usage;
        Refreshed {
            before,
            after: record.usage.tally(),
            stats: ReadStats::default(),
        }
    })?
    else {
        return Ok(None);
    };
    tell(registry, events, item, &found, budgets)?;
    Ok(Some(found))
}

/// Every session's usage today except `except`'s.
pub fn others_today(records: &[SessionRecord], except: &WorkItemRef, today: &str) -> Tally {
    let mut out = Tally::default();
    for r in records.iter().filter(|r| &r.work_item != except) {
        out.merge(&r.usage.tally().day(today));
    }
    out
}

/// Every session's usage today.
pub fn day_total(records: &[SessionRecord], today: &str) -> Tally {
    let mut out = Tally::default();
    for r in records {
        out.merge(&r.usage.tally().day(today));
    }
    out
}

/// Refreshes, then tells what it found (`session.usage`, only when something new was
/// counted) and any budget crossed: the one way a session's figures move, so whoever
/// reads first — a turn's end, `the-loop usage` — tells it, once.
pub fn read_and_tell(
    registry: &Registry,
    events: &EventLog,
    item: &WorkItemRef,
    transcript: Option<Named<'_>>,
    budgets: &Budgets,
) -> Result<Option<Refreshed>, RegistryError> {
    let Some(found) = refresh(registry, item, transcript)? else {
        return Ok(None);
    };
    tell(registry, events, item, &found, budgets)?;
    Ok(Some(found))
}

/// Counts one message's figures as its harness reported them (opencode's server, issue
/// 44; `id` names the message, so a message told again is counted once), then tells it
/// as a refresh is told.
pub fn count_reported(
    registry: &Registry,
    events: &EventLog,
    item: &WorkItemRef,
    id: &str,
    reported: crate::usage::track::Reported,
    budgets: &Budgets,
) -> Result<(), RegistryError> {
    let found = registry.update(item, |record| {
        let before = record.usage.tally();
        record.usage.messages.insert(id.to_string(), reported);
        Refreshed {
            before,
            after: record.usage.tally(),
            stats: ReadStats::default(),
        }
    })?;
    match found {
        Some(found) => tell(registry, events, item, &found, budgets),
        None => Ok(()),
    }
}

/// Tells what a refresh found: `session.usage` when something new was counted, and any
/// budget it crossed.
fn tell(
    registry: &Registry,
    events: &EventLog,
    item: &WorkItemRef,
    found: &Refreshed,
    budgets: &Budgets,
) -> Result<(), RegistryError> {
    if found.after != found.before {
        let costed = budgets.prices.cost(&found.after);
        let tokens = costed.tokens;
        let unpriced: Vec<&str> = costed.unpriced().collect();
        let _ = events.emit(
            Event::new(Source::Hook, EventType::SessionUsage)
                .with("work_item", item.to_string())
                .with("tokens", tokens.total())
                .with("input", tokens.input)
                .with("output", tokens.output)
                .with("cache_write_5m", tokens.cache_write5m)
                .with("cache_write_1h", tokens.cache_write1h)
                .with("cache_read", tokens.cache_read)
                .with("cost_usd", costed.cost_usd())
                .with(
                    "unpriced",
                    (!unpriced.is_empty()).then(|| unpriced.join(",")),
                )
                .with("bytes_read", found.stats.bytes),
        );
    }
    if budgets.session_usd.is_some() || budgets.daily_usd.is_some() {
        let today = crate::usage::today();
        let records = registry.list()?;
        let others = others_today(&records, item, &today);
        let mut day_before = others.clone();
        day_before.merge(&found.before.day(&today));
        let mut day_after = others;
        day_after.merge(&found.after.day(&today));
        for crossing in budgets.crossings((&found.before, &found.after), (&day_before, &day_after))
        {
            let _ = events.emit(crossing_event(Source::Hook, item, &crossing));
        }
    }
    Ok(())
}

/// Tells what a change of the budgets in force crossed — a reload that lowered a budget
/// under what is spent, or priced a model — as usage growing across it is told: each
/// session (not closed) whose own budget it now reaches, and the day's budget once,
/// named after the session that spent the most today. `source` is the reloading
/// supervisor's.
pub fn tell_budgets_changed(
    registry: &Registry,
    events: &EventLog,
    source: Source,
    old: &Budgets,
    new: &Budgets,
) -> Result<(), RegistryError> {
    if old == new || (new.session_usd.is_none() && new.daily_usd.is_none()) {
        return Ok(());
    }
    let today = crate::usage::today();
    let records = registry.list()?;
    let open: Vec<&SessionRecord> = records
        .iter()
        .filter(|r| r.status != super::registry::Status::Closed)
        .collect();
    for record in &open {
        if let Some(crossing) = new.crossed_by_change(old, Scope::Session, &record.usage.tally()) {
            let _ = events.emit(crossing_event(source, &record.work_item, &crossing));
        }
    }
    let spent_today = |r: &&&SessionRecord| new.priced_cost(&r.usage.tally().day(&today));
    if let Some(crossing) = new.crossed_by_change(old, Scope::Daily, &day_total(&records, &today))
        && let Some(most) = open
            .iter()
            .max_by(|a, b| spent_today(a).total_cmp(&spent_today(b)))
    {
        let _ = events.emit(crossing_event(source, &most.work_item, &crossing));
    }
    Ok(())
}

fn crossing_event(source: Source, item: &WorkItemRef, crossing: &Crossing) -> Event {
    let kind = match crossing.standing {
        Standing::Over => EventType::SessionOverBudget,
        _ => EventType::SessionBudgetWarning,
    };
    Event::new(source, kind)
        .level(Level::Warning)
        .with("work_item", item.to_string())
        .with("scope", crossing.scope.as_str())
        .with("cost_usd", crossing.cost_usd)
        .with("budget_usd", crossing.budget_usd)
}

/// Whether `record`'s session is at or over a budget in force (SPEC §20.4), as the
/// paste path asks before every paste. Every record is read only when a daily budget
/// is set.
pub fn held_for_budget(
    registry: &Registry,
    record: &SessionRecord,
    settings: &super::Settings,
) -> bool {
    let budgets = &settings.budgets;
    if budgets.session_usd.is_none() && budgets.daily_usd.is_none() {
        return false;
    }
    let records = match budgets.daily_usd {
        Some(_) => registry.list().unwrap_or_default(),
        None => Vec::new(),
    };
    over_budget(record, &records, budgets).is_some()
}

/// Whether `record`'s deliveries are held for its budget: its own cost, or every
/// session's today (`records`), at or over the budget in force.
pub fn over_budget(
    record: &SessionRecord,
    records: &[SessionRecord],
    budgets: &Budgets,
) -> Option<Scope> {
    let day = day_total(records, &crate::usage::today());
    budgets.over(&record.usage.tally(), &day)
}

#[cfg(test)]
#[path = "usage_tests.rs"]
mod tests;
