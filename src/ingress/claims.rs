//! Claims: the cross-path dedupe (SPEC §4.2) and the claim window (SPEC §15.4), in one
//! place — the key rule, the kinds, the claim record, its settlement and its recovery.
//!
//! The same comment, review comment or review reaches the supervisor twice, by webhook
//! and by poll, under different delivery ids; its own GitHub id ([`ClaimKey`]) tells the
//! two apart. Whichever path handles it first **claims** it in the repo's poll ledger;
//! the other path drops it (`duplicate-delivery`). The poll path's claim is its pending
//! entry (it stays pending until its paste settles or is given up). The webhook path's
//! claim is a [`Claim`] that stays **in flight** — with the event, so nothing depends on
//! the webhook being sent again — until its paste has settled:
//!
//! - succeeded (or was refused for good): the claim is settled; if the poller saw the
//!   same comment meanwhile, its entry (parked behind the claim) is dropped as the
//!   duplicate;
//! - failed: the claim is handed to the poller — the parked entry, or the claim's own
//!   event — which retries it up to `polling.maxRetries` and then gives it up with a
//!   notice (never silently);
//! - never settled (the process died, or shutdown ran out of time): at the next start
//!   [`recover`] hands every in-flight claim to the poller the same way.
//!
//! No window remains in which a comment is recorded as handled by a path whose paste
//! then fails: that was the gap of the first version (a poll cycle resolved the comment
//! as the webhook's duplicate, then the webhook's paste failed and the comment was lost).

use super::ledger::{Ledger, LedgerStore, Pending, Stamp};
use super::{Disposition, InboundEvent, Ingest};
use crate::events::{Event, EventLog};
use crate::github::models;
use crate::guard;
use crate::routing::{DropReason, Outcome, extract};
use crate::state_writer::Durable;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;

/// Claims kept per repo. In-flight claims are never evicted (there are only as many
/// as deliveries running); settled ones go oldest first.
pub const CLAIMS_CAPACITY: usize = 1024;

/// Which GitHub id space an id belongs to: a conversation comment, a review and an
/// inline review comment can share a numeric id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ItemKind {
    /// An issue or PR conversation comment (`issue_comment`).
    Comment,
    /// An inline review comment (`pull_request_review_comment`).
    ReviewComment,
    /// A PR review (`pull_request_review`).
    Review,
}

impl ItemKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Comment => "comment",
            Self::ReviewComment => "review-comment",
            Self::Review => "review",
        }
    }

    /// The payload key that holds the item (`comment` or `review`).
    fn container(self) -> &'static str {
        match self {
            Self::Comment | Self::ReviewComment => "comment",
            Self::Review => "review",
        }
    }
}

/// `(repo, kind, id)`: what a claim is taken on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimKey {
    /// `owner/name` as the payload spells it (compared case-insensitively).
    pub repo: String,
    pub kind: ItemKind,
    pub id: u64,
}

impl ClaimKey {
    /// The one key rule: only new text is deduplicated across paths — a `created`
    /// comment or review comment, a `submitted` review, the shapes the poller
    /// synthesises. An `edited` comment keeps its id; it must still reach the router
    /// (`routing.deliverEdits`). CI events are deduplicated by the router itself.
    pub fn of(event: &InboundEvent) -> Option<Self> {
        let kind = match (event.gh_event.as_str(), event.action.as_str()) {
            ("issue_comment", "created") => ItemKind::Comment,
            ("pull_request_review_comment", "created") => ItemKind::ReviewComment,
            ("pull_request_review", "submitted") => ItemKind::Review,
            _ => return None,
        };
        Some(Self {
            repo: event.payload["repository"]["full_name"]
                .as_str()?
                .to_string(),
            kind,
            id: event.payload[kind.container()]["id"].as_u64()?,
        })
    }
}

/// The `routing.dropped` (`duplicate-delivery`) of an event the other path handled,
/// shaped like the router's own drops. The one constructor both paths use.
pub fn duplicate_event(event: &InboundEvent) -> Event {
    Outcome::Dropped {
        reason: DropReason::DuplicateDelivery,
        work_items: extract::work_items(&event.gh_event, &event.payload),
        actor: guard::actor_of(&event.gh_event, &event.payload)
            .login()
            .map(str::to_string),
    }
    .to_event(&event.as_inbound(), event.source)
}

/// Where a claim is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClaimState {
    /// Its paste has settled: the other path drops the id for good.
    #[default]
    Settled,
    /// Its paste is running (or its process died before it settled).
    InFlight,
}

/// An id the webhook path handled first (or is handling).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Claim {
    pub kind: ItemKind,
    pub id: u64,
    #[serde(default)]
    pub state: ClaimState,
    /// While in flight: the event, trimmed to what the router and the excerpt read, so
    /// the poller can retry it if the paste fails or never settles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<ClaimedEvent>,
}

/// The event an in-flight claim carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimedEvent {
    pub gh_event: String,
    pub action: String,
    pub payload: Value,
}

/// The payload keys anything downstream reads (router, excerpt, prompt); the rest of a
/// webhook body is not kept in the ledger.
const KEPT_KEYS: &[&str] = &[
    "action",
    "comment",
    "review",
    "issue",
    "pull_request",
    "repository",
    "sender",
];

impl ClaimedEvent {
    fn of(event: &InboundEvent) -> Self {
        let payload = match &event.payload {
            Value::Object(map) => Value::Object(
                map.iter()
                    .filter(|(k, _)| KEPT_KEYS.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect::<Map<_, _>>(),
            ),
            other => other.clone(),
        };
        Self {
            gh_event: event.gh_event.clone(),
            action: event.action.clone(),
            payload,
        }
    }

    /// The event as the poller will feed it: a pending entry under the poll delivery id
    /// of its kind, with the webhook's failure counted as its first attempt.
    fn into_pending(self, kind: ItemKind, id: u64, error: &str) -> Pending {
        let item = &self.payload[kind.container()];
        let number = extract::subject(&self.gh_event, &self.payload).map_or(0, |r| r.number);
        let at = match kind {
            ItemKind::Review => models::submitted_at(item),
            _ => models::updated_at(item),
        };
        Pending {
            kind: kind.into(),
            id,
            number,
            updated_at: Stamp(at.unwrap_or(time::OffsetDateTime::UNIX_EPOCH)),
            url: models::html_url(item).unwrap_or("").to_string(),
            attempts: 1,
            last_error: Some(error.to_string()),
            parked: false,
            gh_event: self.gh_event,
            action: self.action,
            delivery_id: super::shape::delivery_id(kind, id, None),
            payload: self.payload,
        }
    }
}

/// What settling a webhook claim did.
#[derive(Debug, Clone, PartialEq)]
pub enum ClaimSettled {
    /// Settled; `parked` is the poller's entry for the same id, dropped as the duplicate.
    Kept { parked: Option<Box<Pending>> },
    /// Failed: the poller retries it now.
    HandedOver,
    /// Failed before the poller saw it and without an event to hand over (a claim of
    /// an older binary): released, so the poller's stream delivers it.
    Released,
    /// No such claim (forgotten meanwhile).
    Unknown,
}

impl Ledger {
    fn claim_index(&self, kind: ItemKind, id: u64) -> Option<usize> {
        self.claims
            .iter()
            .position(|c| c.kind == kind && c.id == id)
    }

    /// The state of the webhook's claim on `(kind, id)`, if it has one.
    pub fn claim_state(&self, kind: ItemKind, id: u64) -> Option<ClaimState> {
        self.claim_index(kind, id).map(|i| self.claims[i].state)
    }

    /// Whether either ingress path has handled (or is handling) this id: claimed by the
    /// webhook, resolved or pending (parked too) here.
    pub fn is_handled(&self, kind: ItemKind, id: u64) -> bool {
        self.claim_index(kind, id).is_some()
            || self
                .pending
                .iter()
                .any(|p| p.kind.item_kind() == Some(kind) && p.id == id)
            || self.items.values().any(|e| e.resolved(kind, id).is_some())
    }

    /// The webhook path's check-and-claim: true the first time an id is handled by
    /// either path (the claim is then in flight, carrying `event`), false afterwards.
    pub fn claim(&mut self, kind: ItemKind, id: u64, event: Option<ClaimedEvent>) -> bool {
        if self.is_handled(kind, id) {
            return false;
        }
        self.claims.push_back(Claim {
            kind,
            id,
            state: ClaimState::InFlight,
            event,
        });
        while self.claims.len() > CLAIMS_CAPACITY {
            match self
                .claims
                .iter()
                .position(|c| c.state == ClaimState::Settled)
            {
                Some(oldest) => self.claims.remove(oldest),
                None => break,
            };
        }
        true
    }

    /// Records how the webhook's delivery of `(kind, id)` ended (see the module docs).
    pub fn settle_claim(
        &mut self,
        kind: ItemKind,
        id: u64,
        disposition: &Disposition,
    ) -> ClaimSettled {
        let Some(at) = self.claim_index(kind, id) else {
            return ClaimSettled::Unknown;
        };
        let parked = self
            .pending
            .iter()
            .position(|p| p.parked && p.kind.item_kind() == Some(kind) && p.id == id);
        let interrupted = Disposition::Failed {
            error: UNSETTLED.to_string(),
        };
        let disposition = match disposition {
            Disposition::Interrupted => &interrupted,
            other => other,
        };
        match disposition {
            Disposition::Failed { error } => {
                let claim = self.claims.remove(at).unwrap_or_else(|| Claim {
                    kind,
                    id,
                    state: ClaimState::InFlight,
                    event: None,
                });
                if let Some(i) = parked {
                    let p = &mut self.pending[i];
                    p.parked = false;
                    p.attempts += 1;
                    p.last_error = Some(error.clone());
                    ClaimSettled::HandedOver
                } else if let Some(event) = claim.event {
                    let pending = event.into_pending(kind, id, error);
                    if !self.is_pending(&pending.delivery_id) {
                        self.pending.push(pending);
                    }
                    ClaimSettled::HandedOver
                } else {
                    ClaimSettled::Released
                }
            }
            _ => {
                let claim = &mut self.claims[at];
                claim.state = ClaimState::Settled;
                claim.event = None;
                let parked = parked.map(|i| {
                    let p = self.pending.remove(i);
                    if let Some(entry) = self.items.get_mut(&p.number) {
                        entry.resolve(kind, id, p.updated_at);
                    }
                    Box::new(p)
                });
                ClaimSettled::Kept { parked }
            }
        }
    }

    /// The claims still in flight, oldest first.
    pub fn in_flight_claims(&self) -> Vec<(ItemKind, u64)> {
        self.claims
            .iter()
            .filter(|c| c.state == ClaimState::InFlight)
            .map(|c| (c.kind, c.id))
            .collect()
    }

    /// Hands every in-flight claim to the poller, as if its paste had failed: what a
    /// process that died (or a shutdown that ran out of time) left unsettled. Returns
    /// how many.
    pub fn recover_claims(&mut self, why: &str) -> usize {
        let open = self.in_flight_claims();
        let failed = Disposition::Failed {
            error: why.to_string(),
        };
        for (kind, id) in &open {
            self.settle_claim(*kind, *id, &failed);
        }
        open.len()
    }
}

/// Why a claim left in flight is retried.
pub const UNSETTLED: &str = "the supervisor stopped before this webhook delivery settled";

/// At start, before anything is fed: every claim a previous supervisor left in flight
/// goes to the poller of its repo. Returns how many.
pub async fn recover(ledgers: &LedgerStore, repos: &[String]) -> usize {
    let mut total = 0;
    for repo in repos {
        let (n, saved) = ledgers.update_if(repo, |l| {
            let n = l.recover_claims(UNSETTLED);
            (n, n > 0)
        });
        if let Err(e) = saved.wait().await {
            tracing::warn!(repo, error = %e, "poll ledger not written after recovering claims");
        }
        total += n;
    }
    total
}

/// The poll ledgers as the webhook receiver's claim record (SPEC §4.2), plus the log
/// for the duplicates settling reveals.
#[derive(Clone)]
pub struct Claims {
    ledgers: LedgerStore,
    events: EventLog,
}

impl Claims {
    pub fn new(ledgers: LedgerStore, events: EventLog) -> Self {
        Self { ledgers, events }
    }

    /// Claims `key` for the webhook path (in flight, carrying `event`); `None` when the
    /// poller or an earlier webhook delivery has it. The claim is in force (in memory,
    /// for the poller) at once; await the returned write before pasting, so it is on
    /// disk too.
    pub fn take(&self, key: &ClaimKey, event: &InboundEvent) -> Option<Durable> {
        let claimed = Some(ClaimedEvent::of(event));
        let (first, saved) = self.ledgers.update_if(&key.repo, |l| {
            let first = l.claim(key.kind, key.id, claimed);
            (first, first)
        });
        first.then_some(saved)
    }

    /// Records how the webhook's delivery of `key` ended.
    pub async fn settle(&self, key: &ClaimKey, disposition: &Disposition) -> ClaimSettled {
        let (settled, saved) = self
            .ledgers
            .update(&key.repo, |l| l.settle_claim(key.kind, key.id, disposition));
        if let Err(e) = saved.wait().await {
            tracing::warn!(repo = key.repo, error = %e, "poll ledger not written after a webhook settled");
        }
        if let ClaimSettled::Kept { parked: Some(p) } = &settled {
            let _ = self.events.emit(duplicate_event(&p.to_event()));
        }
        settled
    }
}

impl super::HandledIds for Claims {
    fn first_handling(&self, key: &ClaimKey, event: &InboundEvent) -> Option<Durable> {
        self.take(key, event)
    }
}

/// Webhook deliveries not settled yet (for shutdown to wait on).
#[derive(Default)]
pub struct InFlight {
    next: AtomicU64,
    open: Mutex<HashMap<u64, Option<ClaimKey>>>,
    idle: Notify,
}

impl InFlight {
    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Option<ClaimKey>>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn enter(&self, key: Option<ClaimKey>) -> u64 {
        let token = self.next.fetch_add(1, Ordering::SeqCst);
        self.lock().insert(token, key);
        token
    }

    fn leave(&self, token: u64) {
        let mut open = self.lock();
        open.remove(&token);
        if open.is_empty() {
            self.idle.notify_waiters();
        }
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Resolves once nothing is in flight.
    pub async fn wait_idle(&self) {
        loop {
            let notified = self.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_empty() {
                return;
            }
            notified.await;
        }
    }

    /// Takes what is still open (shutdown gave up waiting for it).
    fn drain(&self) -> Vec<Option<ClaimKey>> {
        self.lock().drain().map(|(_, key)| key).collect()
    }
}

/// The webhook receiver's `Ingest`: the dispatcher, with each claim settled by the
/// outcome of its delivery.
pub struct ClaimingIngest {
    inner: Arc<dyn Ingest>,
    claims: Option<Claims>,
    in_flight: Arc<InFlight>,
}

impl ClaimingIngest {
    /// `claims`: `None` when polling is off (only the router's delivery-id dedupe then).
    pub fn new(inner: Arc<dyn Ingest>, claims: Option<Claims>) -> Self {
        Self {
            inner,
            claims,
            in_flight: Arc::new(InFlight::default()),
        }
    }

    pub fn in_flight(&self) -> &Arc<InFlight> {
        &self.in_flight
    }

    /// Shutdown ran out of time: the deliveries still open are handed to the poller of
    /// the next start, as a crash would leave them. Returns how many were open.
    pub async fn hand_over_unsettled(&self) -> usize {
        let open = self.in_flight.drain();
        if let Some(claims) = &self.claims {
            let failed = Disposition::Failed {
                error: UNSETTLED.to_string(),
            };
            for key in open.iter().flatten() {
                claims.settle(key, &failed).await;
            }
        }
        open.len()
    }
}

impl Ingest for ClaimingIngest {
    fn ingest(&self, event: InboundEvent) -> BoxFuture<'static, Disposition> {
        let key = ClaimKey::of(&event);
        let token = self.in_flight.enter(key.clone());
        let settled = self.inner.ingest(event);
        let claims = self.claims.clone();
        let in_flight = Arc::clone(&self.in_flight);
        Box::pin(async move {
            let disposition = settled.await;
            if let (Some(claims), Some(key)) = (&claims, &key) {
                claims.settle(key, &disposition).await;
            }
            in_flight.leave(token);
            disposition
        })
    }

    fn holding(&self, delivery_id: &str) -> bool {
        self.inner.holding(delivery_id)
    }
}

/// The claim record a supervisor of an older version left (`webhook-inflight.json`):
/// its keys are released so the poller delivers them, and the file goes.
pub async fn recover_legacy(paths: &crate::paths::StatePaths, ledgers: &LedgerStore) -> usize {
    let path = paths.root.join("webhook-inflight.json");
    let Ok(bytes) = std::fs::read(&path) else {
        return 0;
    };
    let keys: Vec<ClaimKey> = serde_json::from_slice(&bytes).unwrap_or_default();
    for key in &keys {
        let (_, saved) = ledgers.update(&key.repo, |l| {
            if let Some(i) = l.claim_index(key.kind, key.id) {
                l.claims.remove(i);
            }
        });
        if let Err(e) = saved.wait().await {
            tracing::warn!(repo = key.repo, error = %e, "poll ledger not written");
        }
    }
    let _ = std::fs::remove_file(&path);
    keys.len()
}

#[cfg(test)]
#[path = "claims_tests.rs"]
mod tests;
