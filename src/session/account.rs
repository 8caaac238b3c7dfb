//! The account (issue 43): the sessions of one harness on this machine share its
//! login and its plan, so a limit one of them hit holds a new one too — a session
//! started now would fail its first turn the same way. While such a limit stands, a
//! start (a labeled issue, a `start` command) waits at the head of its lane
//! (`session.spawn_held`), pending like a held delivery, and starts once when the limit
//! clears or its reset or back-off passes.

use super::dispatcher::Inner;
use super::limits::{self, Backoff, LimitKind, Standing};
use super::registry::SessionRecord;
use super::sessions::{Origin, Sessions};
use crate::events::{Event, EventType, Level, Source};
use crate::ingress::Disposition;
use crate::routing::ControlCommand;
use crate::work_item::WorkItemRef;
use std::time::Instant;
use time::OffsetDateTime;

/// The limit a new session of the harness would meet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountLimit {
    /// The session under it.
    pub session: WorkItemRef,
    pub kind: LimitKind,
    /// When it stops holding; `None`: until a turn succeeds (an expired login).
    pub until: Option<OffsetDateTime>,
}

impl AccountLimit {
    /// `limit`, or `login` for an expired login: the hold reasons' words.
    pub fn reason(&self) -> &'static str {
        self.kind.hold_reason().as_str()
    }
}

/// The limit that stands longest among the open sessions of `harness` on this machine
/// at `now`; `None` when none holds (a limit whose reset passed no longer does).
pub fn account_limit(
    records: &[SessionRecord],
    harness: &str,
    backoff: &Backoff,
    now: OffsetDateTime,
) -> Option<AccountLimit> {
    records
        .iter()
        .filter(|r| r.status.is_open() && r.host.is_none() && r.harness == harness)
        .filter_map(|r| {
            let limit = r.limit.as_ref()?;
            match limits::standing(limit, backoff, now) {
                Standing::Holds { until } => Some(AccountLimit {
                    session: r.work_item.clone(),
                    kind: limit.kind,
                    until,
                }),
                Standing::Try | Standing::Trying => None,
            }
        })
        // `None` (until a turn succeeds) outlasts any time.
        .max_by_key(|l| l.until.map_or((1, OffsetDateTime::UNIX_EPOCH), |u| (0, u)))
}

impl Sessions {
    /// The limit a new session of `item` (of its repo's harness, else the configured
    /// one) would meet now, if any.
    pub fn account_limit(&self, item: &WorkItemRef) -> Option<AccountLimit> {
        let settings = self.settings();
        let records = match self.registry.list() {
            Ok(records) => records,
            Err(error) => {
                tracing::warn!("session registry unreadable; no account limit read: {error}");
                return None;
            }
        };
        account_limit(
            &records,
            settings.harness_for(item),
            &Backoff::from_config(&settings.sessions),
            OffsetDateTime::now_utc(),
        )
    }
}

impl Inner {
    /// Waits, at the head of `item`'s lane, while the account is under a limit; the
    /// lane counts as held meanwhile (the poller does not wait for it). `Err`: a stop
    /// or close queued behind ended the wait, and nothing starts.
    pub async fn wait_for_account(
        &self,
        item: &WorkItemRef,
        delivery_id: &str,
        origin: &Origin,
    ) -> Result<(), Disposition> {
        let lane = item.slug();
        let mut held: Option<Instant> = None;
        let result = loop {
            let Some(limit) = self.sessions.account_limit(item) else {
                break Ok(());
            };
            if held.is_none() {
                held = Some(Instant::now());
                let mut holds = self.holds();
                holds.held.insert(lane.clone());
                if !delivery_id.is_empty() {
                    holds.queued.insert(delivery_id.to_string(), lane.clone());
                }
                drop(holds);
                self.emit(spawn_held(item, &limit, delivery_id, origin));
            }
            if self.holds().ending.contains(&lane) {
                let command = ControlCommand::Start;
                self.refused(origin.source, item, command, "session-ended", None, origin);
                break Err(Disposition::Dropped {
                    reason: "session-ended".into(),
                });
            }
            tokio::time::sleep(self.sessions.settings().timings.hold_check).await;
        };
        if held.is_some() {
            let mut holds = self.holds();
            holds.held.remove(&lane);
            holds.queued.remove(delivery_id);
        }
        result
    }
}

/// `session.spawn_held`.
fn spawn_held(
    item: &WorkItemRef,
    limit: &AccountLimit,
    delivery_id: &str,
    origin: &Origin,
) -> Event {
    Event::new(Source::Dispatch, EventType::SessionSpawnHeld)
        .level(Level::Warning)
        .with("work_item", item.to_string())
        .with("reason", limit.reason())
        .with("kind", limit.kind.as_str())
        .with("limited", limit.session.to_string())
        .with_opt("until", limit.until.map(crate::time::format_ts))
        .with_opt(
            "delivery_id",
            (!delivery_id.is_empty()).then(|| delivery_id.to_string()),
        )
        .with("trigger", origin.trigger)
}

#[cfg(test)]
#[path = "account_tests.rs"]
mod tests;
