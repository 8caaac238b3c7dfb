//! What holds a paste before anything is looked at: the session's budget (SPEC §20.4)
//! and its limit (issue 43), codex's read from its rollout first ([`Sessions::witness_rollout`]). Over budget or under a limit, nothing goes to the session —
//! not a paste, not a respawn (a fresh harness would fail on the same limit).

use super::hold::{Held, HoldReason};
use crate::events::Source;
use crate::session::limits::{self, Backoff, Standing};
use crate::session::registry::SessionRecord;
use crate::session::sessions::Sessions;
use crate::session::usage::held_for_budget;

impl Sessions {
    /// Why `record`'s session takes no paste now, if it does not: over budget (unless
    /// the operator confirmed), or under a limit that stands (or whose one try is out).
    pub(super) fn gate(&self, record: &SessionRecord, budget_confirmed: bool) -> Option<Held> {
        let settings = self.settings();
        let reason = if !budget_confirmed && held_for_budget(&self.registry, record, &settings) {
            Some(HoldReason::OverBudget)
        } else {
            limit_hold(record, &Backoff::from_config(&settings.sessions))
        };
        reason.map(|reason| Held {
            reason,
            pasted: false,
        })
    }
}

impl Sessions {
    /// Codex's witness of a failed turn, read before the gate decides (codex runs no
    /// hook and no `notify` on a turn that ends in an API error): the end of the
    /// rollout of a codex session on this machine. A failed turn not read before is
    /// recorded as Claude Code's `StopFailure` is (`session.limit_hit`, once per limit),
    /// at the time codex wrote it.
    pub(super) async fn witness_rollout(&self, record: SessionRecord) -> SessionRecord {
        let Some(path) = codex_rollout(&record) else {
            return record;
        };
        let read = tokio::task::spawn_blocking(move || limits::codex::read_tail(&path)).await;
        let Ok(Ok(tail)) = read else {
            return record;
        };
        let Some(turn) = limits::codex::last_turn(&tail, crate::time::local_offset()) else {
            return record;
        };
        if !limits::codex::is_news(&turn, record.limit.as_ref()) {
            return record;
        }
        let updated = self
            .registry
            .update_async(&record.work_item, move |r| {
                let change = limits::codex::is_news(&turn, r.limit.as_ref())
                    .then(|| {
                        let at = crate::time::format_ts(turn.at);
                        limits::observe(&mut r.limit, turn.failure, &at)
                    })
                    .flatten();
                (r.clone(), change)
            })
            .await;
        let Ok(Some((updated, change))) = updated else {
            return record;
        };
        let item = &updated.work_item;
        if let Some(event) = change.and_then(|c| limits::event(Source::Dispatch, item, &c)) {
            let _ = self.events.emit(event);
        }
        updated
    }
}

/// The rollout of `record`'s codex session, when it runs here and its rollout was found
/// and accepted (`record.usage.transcript`: the hook finds it in codex's home).
fn codex_rollout(record: &SessionRecord) -> Option<std::path::PathBuf> {
    let codex = record.reported.as_ref()?.harness == "codex";
    (codex && record.host.is_none())
        .then(|| record.usage.transcript.clone())
        .flatten()
}

/// Whether `record`'s limit holds its deliveries now.
pub(super) fn limit_hold(record: &SessionRecord, backoff: &Backoff) -> Option<HoldReason> {
    let limit = record.limit.as_ref()?;
    let reason = limit.kind.hold_reason();
    match limits::standing(limit, backoff, time::OffsetDateTime::now_utc()) {
        Standing::Try => None,
        Standing::Holds { .. } | Standing::Trying => Some(reason),
    }
}

/// The try after a limit, with `sessions.resumeAfterLimit`: one short framed note
/// before the text, once (the try is recorded with it: nothing after it gets one).
pub(super) fn with_resume_note(
    record: &SessionRecord,
    settings: &crate::session::Settings,
    text: String,
) -> String {
    let Some(limit) = record.limit.as_ref().filter(|l| l.released.is_none()) else {
        return text;
    };
    if !settings.sessions.resume_after_limit {
        return text;
    }
    let at = crate::time::parse_ts(&limit.at)
        .map(|t| t.to_offset(crate::time::local_offset()))
        .map(|t| format!(" at {:02}:{:02}", t.hour(), t.minute()))
        .unwrap_or_default();
    format!(
        "[the-loop] The previous turn ended with: {}{at}; continue.\n\n{text}",
        limit.kind.describe()
    )
}

/// The paste that went out under a limit that is over is its one try: recorded with
/// the delivery, so nothing else goes until that turn ends. `passed`: the limit on
/// record when the gate let the paste through — none, and the paste is no try (a limit
/// hit meanwhile, by the turn this very paste started, still stands whole).
pub(super) fn mark_try(record: &mut SessionRecord, passed: Option<&crate::session::limits::Limit>) {
    let Some(passed) = passed else {
        return;
    };
    if let Some(limit) = record.limit.as_mut().filter(|l| l.at == passed.at) {
        limit.released.get_or_insert_with(crate::time::now_ts);
    }
}

#[cfg(test)]
#[path = "gate_tests.rs"]
mod tests;
