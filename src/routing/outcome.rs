//! What the router decided about one event, and the log record that says so. The router
//! does no I/O: its caller acts on the [`Outcome`] and writes [`Outcome::to_event`].

use serde_json::Value;

use super::control::ControlCommand;
use super::excerpt;
use super::router::Inbound;
use crate::events::{Event, EventType, Source};
use crate::work_item::WorkItemRef;

/// Why an event was refused (the `reason` of `routing.dropped`, SPEC §3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropReason {
    DisabledEvent,
    DuplicateDelivery,
    NoWorkItem,
    SelfAuthored,
    UnauthorizedActor,
    UnknownActor,
    NotActionable,
    UnwatchedRepo,
}

impl DropReason {
    pub const ALL: [DropReason; 8] = [
        Self::DisabledEvent,
        Self::DuplicateDelivery,
        Self::NoWorkItem,
        Self::SelfAuthored,
        Self::UnauthorizedActor,
        Self::UnknownActor,
        Self::NotActionable,
        Self::UnwatchedRepo,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::DisabledEvent => "disabled-event",
            Self::DuplicateDelivery => "duplicate-delivery",
            Self::NoWorkItem => "no-work-item",
            Self::SelfAuthored => "self-authored",
            Self::UnauthorizedActor => "unauthorized-actor",
            Self::UnknownActor => "unknown-actor",
            Self::NotActionable => "not-actionable",
            Self::UnwatchedRepo => "unwatched-repo",
        }
    }
}

impl std::fmt::Display for DropReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The router's decision. Every variant carries what the caller needs to act and to log;
/// the event name, action and delivery id stay on the [`Inbound`] the caller already has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Build the excerpt and deliver it: to `subject`'s session when it has one (the
    /// item the comment or review was written on, §14.3), else to the first work item
    /// with a session (§5.2: the issue a PR closes before the PR). `subject` is `None`
    /// for CI events, `actor` too.
    Deliver {
        work_items: Vec<WorkItemRef>,
        subject: Option<WorkItemRef>,
        actor: Option<String>,
    },
    /// An authorized control comment (§5.4): act on it, never forward it. `item` is the
    /// issue or PR the comment was written on (`start` spawns for it; `stop`/`pause`/
    /// `resume` act on its session when it has one, §14.3); `work_items` is the full
    /// §5.2 list, to find a linked item's session when it has none.
    /// Whether `start` may spawn under the spawn policy is the dispatcher's call.
    Control {
        command: ControlCommand,
        item: WorkItemRef,
        work_items: Vec<WorkItemRef>,
        actor: String,
    },
    /// An authorized comment naming two or more different keywords: ignored, logged as
    /// `control.ambiguous`, never forwarded.
    Ambiguous {
        commands: Vec<ControlCommand>,
        work_items: Vec<WorkItemRef>,
        actor: String,
    },
    /// An issue or PR closed (§7.5): end the session that owns `item`. `linked` are the
    /// issues a closed PR names; they are informational only: a merge closes them on
    /// GitHub, which sends their own close, and a PR closed unmerged leaves them open.
    /// Closes bypass the actor gate (they only end sessions), so `actor` is not trusted.
    Close {
        item: WorkItemRef,
        linked: Vec<WorkItemRef>,
        merged: bool,
        actor: Option<String>,
    },
    /// Under `routing.spawn: labeled`: an issue opened or labeled by an authorized sender
    /// whose author is authorized too (§5.4: "a watched item whose author is
    /// authorized"). The caller still checks that the item is watched (`label` against
    /// the repo's label) and has no session, then spawns.
    SpawnCandidate {
        item: WorkItemRef,
        author: String,
        actor: String,
        label: Option<String>,
    },
    /// Refused; log `routing.dropped` with the reason. `work_items` and `actor` are
    /// filled as far as the router got before refusing.
    Dropped {
        reason: DropReason,
        work_items: Vec<WorkItemRef>,
        actor: Option<String>,
    },
}

impl Outcome {
    /// The event type the caller logs for this decision.
    pub fn event_type(&self) -> EventType {
        match self {
            Self::Deliver { .. } | Self::Close { .. } | Self::SpawnCandidate { .. } => {
                EventType::RoutingRouted
            }
            Self::Control { command, .. } => command.event_type(),
            Self::Ambiguous { .. } => EventType::ControlAmbiguous,
            Self::Dropped { .. } => EventType::RoutingDropped,
        }
    }

    /// The login behind the event, when known.
    pub fn actor(&self) -> Option<&str> {
        match self {
            Self::Deliver { actor, .. }
            | Self::Close { actor, .. }
            | Self::Dropped { actor, .. } => actor.as_deref(),
            Self::Control { actor, .. }
            | Self::Ambiguous { actor, .. }
            | Self::SpawnCandidate { actor, .. } => Some(actor),
        }
    }

    /// Every work item the event concerns (for `Close`: the closed item, then `linked`).
    pub fn work_items(&self) -> Vec<&WorkItemRef> {
        match self {
            Self::Deliver { work_items, .. }
            | Self::Control { work_items, .. }
            | Self::Ambiguous { work_items, .. }
            | Self::Dropped { work_items, .. } => work_items.iter().collect(),
            Self::Close { item, linked, .. } => std::iter::once(item).chain(linked).collect(),
            Self::SpawnCandidate { item, .. } => vec![item],
        }
    }

    pub fn is_dropped(&self) -> bool {
        matches!(self, Self::Dropped { .. })
    }

    /// The event-log record of this decision: `gh_event`, `action`, `delivery_id`,
    /// `work_items`, `actor`, plus `reason` (dropped), `outcome` (routed: `deliver`,
    /// `close`, `spawn-candidate`), `work_item` (the item a control, close or spawn acts
    /// on), `commands` (ambiguous), `merged` (close), and `hidden_removed` when the
    /// excerpt a deliver or spawn-candidate goes on with loses hidden text (SPEC §18.4:
    /// the operator learns someone tried; the gates above read the raw payload).
    pub fn to_event(&self, inbound: &Inbound<'_>, source: Source) -> Event {
        let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_string());
        let refs = |items: Vec<&WorkItemRef>| {
            Value::from(items.iter().map(|r| r.to_string()).collect::<Vec<_>>())
        };
        let event = Event::new(source, self.event_type())
            .with("gh_event", inbound.gh_event)
            .with("action", non_empty(inbound.action))
            .with("delivery_id", non_empty(inbound.delivery_id))
            .with("work_items", refs(self.work_items()))
            .with("actor", self.actor());
        let hidden = || {
            let removed = excerpt::hidden_removed(inbound.gh_event, inbound.payload);
            (removed > 0).then_some(removed)
        };
        match self {
            Self::Deliver { .. } => event
                .with("outcome", "deliver")
                .with_opt("hidden_removed", hidden()),
            Self::Control { item, .. } => event.with("work_item", item.to_string()),
            Self::Ambiguous { commands, .. } => event.with(
                "commands",
                commands.iter().map(|c| c.as_str()).collect::<Vec<_>>(),
            ),
            Self::Close { item, merged, .. } => event
                .with("outcome", "close")
                .with("work_item", item.to_string())
                .with("merged", *merged),
            Self::SpawnCandidate { item, label, .. } => event
                .with("outcome", "spawn-candidate")
                .with("work_item", item.to_string())
                .with("label", label.clone())
                .with_opt("hidden_removed", hidden()),
            Self::Dropped { reason, .. } => event.with("reason", reason.as_str()),
        }
    }
}
