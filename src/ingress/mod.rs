//! Ingress: the two ways GitHub events reach the router — the poller and the webhook
//! receiver — and the one contract both feed.
//!
//! Both paths hand every event to an [`Ingest`] (the supervisor's implementation routes
//! it through `routing::route` and acts on the outcome). The returned [`Disposition`]
//! tells the poller whether the event is settled (recorded in its ledger, never looked at
//! again) or must be retried on a later cycle.
//!
//! The same comment can arrive by both paths under different delivery ids; the claims
//! ([`claims`], kept in the poller's ledger) let whichever path comes second drop it
//! (SPEC §4.2) without ever losing it (SPEC §15.4).

pub mod webhook;

pub mod claims;
pub mod ledger;
pub mod poller;
pub mod shape;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::events::Source;

pub use claims::{ClaimKey, ItemKind};

/// One GitHub event, owned, as either ingress path received or synthesised it.
#[derive(Debug, Clone, PartialEq)]
pub struct InboundEvent {
    /// Which path it came by (`Source::Poll` or `Source::Webhook`).
    pub source: Source,
    /// The `X-GitHub-Event` name.
    pub gh_event: String,
    /// The payload's `action`, `""` when it has none.
    pub action: String,
    /// `X-GitHub-Delivery`, or `poll-comment-<id>` / `poll-review-<id>` /
    /// `poll-review-comment-<id>`.
    pub delivery_id: String,
    /// The full webhook-shaped payload; gates read it, the excerpt distils it.
    pub payload: Value,
}

impl InboundEvent {
    /// A webhook delivery: the action is read from the payload.
    pub fn from_webhook(gh_event: &str, delivery_id: &str, payload: Value) -> Self {
        let action = payload["action"].as_str().unwrap_or("").to_string();
        Self {
            source: Source::Webhook,
            gh_event: gh_event.to_string(),
            action,
            delivery_id: delivery_id.to_string(),
            payload,
        }
    }

    /// The borrowed view the router takes.
    pub fn as_inbound(&self) -> crate::routing::router::Inbound<'_> {
        crate::routing::router::Inbound::new(
            &self.gh_event,
            &self.action,
            &self.delivery_id,
            &self.payload,
        )
    }
}

/// What became of one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Disposition {
    /// Pasted into a session (or a control command carried out).
    Delivered,
    /// Settled without a paste: refused by a gate, not actionable, no session, paused…
    /// The reason is the one logged (`routing.dropped` / `dispatch.dropped`).
    Dropped { reason: String },
    /// Not settled: a transient failure (tmux did not answer, a paste failed). The
    /// poller retries it on a later cycle, up to `polling.maxRetries`.
    Failed { error: String },
    /// Not settled, and not a failure: the process stopped before the event was
    /// handled (a delivery held on a session, SPEC §18.3, when the supervisor stops).
    /// Fed again on the next start; no attempt is counted.
    Interrupted,
}

impl Disposition {
    /// Settled events are recorded and never evaluated again.
    pub fn is_settled(&self) -> bool {
        !matches!(self, Disposition::Failed { .. } | Disposition::Interrupted)
    }
}

/// The one entry point both ingress paths feed.
///
/// `ingest` routes synchronously when called — so events submitted one after another are
/// queued in that order — and the returned future resolves when the event is settled or
/// has failed. Callers may submit a batch and await the futures together.
pub trait Ingest: Send + Sync {
    fn ingest(&self, event: InboundEvent) -> BoxFuture<'static, Disposition>;

    /// Whether the event `delivery_id` waits on a held session (SPEC §18.3: a permission
    /// dialog, the operator's draft): its settlement may be far off, so a caller that
    /// awaits a batch stops waiting for it (it settles when the hold clears).
    fn holding(&self, delivery_id: &str) -> bool {
        let _ = delivery_id;
        false
    }
}

/// The record of comments, reviews and review comments already handled (or being
/// handled) by either ingress path, keyed by their own GitHub id (delivery ids differ
/// between the paths). [`claims::Claims`] is the product's (the poll ledgers); the
/// webhook asks before ingesting.
pub trait HandledIds: Send + Sync {
    /// Claims `key` for the webhook path and returns the claim's write (await it
    /// before pasting) if no path had it; `None` means the other path (or an earlier
    /// delivery) has it, so drop this one. The claim stays in flight until the delivery
    /// settles ([`claims::ClaimingIngest`]).
    fn first_handling(
        &self,
        key: &ClaimKey,
        event: &InboundEvent,
    ) -> Option<crate::state_writer::Durable>;
}
