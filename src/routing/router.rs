//! The router (SPEC §3.3, §5.3): the one function every ingress path — poller and webhook
//! — feeds, so the gates exist once. For each event, in this order:
//!
//! event-kind filter → delivery-id dedupe → work-item extraction (a PR's links only on
//! a trusted author's word) → watched repository → marker check → actor check → action
//! filter (CI: deduplicated by run) → [`Outcome`].
//!
//! It reads the full payload by reference (never cloned, never the excerpt), keeps no
//! state but the [`DeliveryDedupe`] it is handed, and does no I/O.

use serde_json::Value;

use super::control::{ControlKeywords, ControlMatch};
use super::dedupe::{DeliveryDedupe, ci_dedupe_key};
use super::extract::{self, Links};
use super::outcome::{DropReason, Outcome};
use crate::config::{RoutingConfig, SpawnPolicy};
use crate::guard::{self, ActorCheck, Allowlist};
use crate::work_item::WorkItemRef;

/// One event as it reaches the router, from either ingress path.
#[derive(Debug, Clone, Copy)]
pub struct Inbound<'p> {
    /// The `X-GitHub-Event` name (`issue_comment`, `check_run`, …).
    pub gh_event: &'p str,
    /// The payload's `action` (`""` when the event has none, e.g. `status`).
    pub action: &'p str,
    /// `X-GitHub-Delivery`, or the poller's `poll-comment-<id>`; `""` is never deduped.
    pub delivery_id: &'p str,
    pub payload: &'p Value,
}

impl<'p> Inbound<'p> {
    pub fn new(
        gh_event: &'p str,
        action: &'p str,
        delivery_id: &'p str,
        payload: &'p Value,
    ) -> Self {
        Self {
            gh_event,
            action,
            delivery_id,
            payload,
        }
    }

    /// A webhook delivery: the action is read from the payload.
    pub fn from_webhook(gh_event: &'p str, delivery_id: &'p str, payload: &'p Value) -> Self {
        let action = payload["action"].as_str().unwrap_or("");
        Self::new(gh_event, action, delivery_id, payload)
    }
}

macro_rules! event_kinds {
    ($($variant:ident => $name:literal,)*) => {
        /// The GitHub event kinds the router understands; anything else is
        /// `disabled-event`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum EventKind { $($variant,)* }

        impl EventKind {
            pub const ALL: &'static [EventKind] = &[$(EventKind::$variant,)*];

            pub fn as_str(self) -> &'static str {
                match self { $(EventKind::$variant => $name,)* }
            }

            pub fn from_name(name: &str) -> Option<Self> {
                match name { $($name => Some(EventKind::$variant),)* _ => None }
            }
        }
    };
}

event_kinds! {
    IssueComment => "issue_comment",
    Issues => "issues",
    PullRequest => "pull_request",
    PullRequestReview => "pull_request_review",
    PullRequestReviewComment => "pull_request_review_comment",
    PullRequestReviewThread => "pull_request_review_thread",
    WorkflowRun => "workflow_run",
    CheckRun => "check_run",
    CheckSuite => "check_suite",
    Status => "status",
}

impl EventKind {
    fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

/// The set of enabled event kinds (a bit set: copying and testing it is free).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnabledEvents(u16);

impl EnabledEvents {
    pub fn all() -> Self {
        EventKind::ALL.iter().copied().collect()
    }

    pub fn none() -> Self {
        Self(0)
    }

    pub fn with(self, kind: EventKind) -> Self {
        Self(self.0 | kind.bit())
    }

    pub fn without(self, kind: EventKind) -> Self {
        Self(self.0 & !kind.bit())
    }

    pub fn contains(self, kind: EventKind) -> bool {
        self.0 & kind.bit() != 0
    }
}

impl Default for EnabledEvents {
    fn default() -> Self {
        Self::all()
    }
}

impl FromIterator<EventKind> for EnabledEvents {
    fn from_iter<I: IntoIterator<Item = EventKind>>(kinds: I) -> Self {
        kinds.into_iter().fold(Self::none(), Self::with)
    }
}

/// What the router needs from the config, prepared once (allowlist normalized, keywords
/// lowercased). Rebuild it when the config reloads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouterConfig {
    allowlist: Allowlist,
    keywords: ControlKeywords,
    spawn: SpawnPolicy,
    deliver_edits: bool,
    enabled: EnabledEvents,
    /// `repos[].name`, lowercased: events about any other repository are dropped
    /// (`unwatched-repo`, SPEC §14.3). Empty watches nothing (fail closed).
    watched: Vec<String>,
    /// The login the GitHub token belongs to, once known: its PRs' links are followed
    /// like an authorized author's (§14.3).
    own_login: Option<String>,
}

impl RouterConfig {
    /// Watches no repository until [`RouterConfig::watching`] says which.
    pub fn new(routing: &RoutingConfig, enabled: EnabledEvents) -> Self {
        Self {
            allowlist: Allowlist::new(&routing.authorized_users),
            keywords: ControlKeywords::new(&routing.keywords),
            spawn: routing.spawn,
            deliver_edits: routing.deliver_edits,
            enabled,
            watched: Vec::new(),
            own_login: None,
        }
    }

    /// The watched repositories (`owner/name`, compared case-insensitively).
    pub fn watching<'a>(mut self, repos: impl IntoIterator<Item = &'a str>) -> Self {
        self.watched = repos.into_iter().map(str::to_ascii_lowercase).collect();
        self
    }

    /// The token's own login (`GET /user`); blank is none.
    pub fn with_own_login(mut self, login: Option<&str>) -> Self {
        self.own_login = login
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string);
        self
    }

    /// Whether the item's repository is one of `repos[]`.
    pub fn watches(&self, item: &WorkItemRef) -> bool {
        self.watches_repo(&item.owner, &item.repo)
    }

    /// Whether `owner/name` is one of `repos[]`.
    pub fn watches_repo(&self, owner: &str, name: &str) -> bool {
        self.watched.iter().any(|w| {
            w.split_once('/')
                .is_some_and(|(o, n)| o.eq_ignore_ascii_case(owner) && n.eq_ignore_ascii_case(name))
        })
    }

    /// Whether a PR by `author` may link other items (§14.3): an authorized login or the
    /// token's own.
    fn trusts_links_of(&self, author: Option<&str>) -> bool {
        author.is_some_and(|a| {
            self.allowlist.allows(a)
                || self
                    .own_login
                    .as_deref()
                    .is_some_and(|own| own.eq_ignore_ascii_case(a))
        })
    }

    /// The supervisor warns when this is empty (every human-authored event is refused).
    pub fn allowlist(&self) -> &Allowlist {
        &self.allowlist
    }
}

/// CI conclusions worth an agent's attention (§5.3). A commit `status` reports `state`
/// instead; its `error` means the same as `failure`.
const CI_FAILURES: [&str; 4] = ["failure", "timed_out", "action_required", "startup_failure"];
const STATUS_FAILURES: [&str; 2] = ["failure", "error"];

/// Routes one event. See the module docs for the order of the gates.
pub fn route(inbound: &Inbound<'_>, config: &RouterConfig, dedupe: &mut DeliveryDedupe) -> Outcome {
    let dropped = |reason, work_items, actor: Option<&str>| Outcome::Dropped {
        reason,
        work_items,
        actor: actor.map(str::to_string),
    };
    let Inbound {
        gh_event,
        action,
        delivery_id,
        payload,
    } = *inbound;

    let Some(kind) = EventKind::from_name(gh_event).filter(|k| config.enabled.contains(*k)) else {
        return dropped(DropReason::DisabledEvent, Vec::new(), None);
    };
    if !delivery_id.is_empty() && !dedupe.first_sighting(delivery_id) {
        return dropped(DropReason::DuplicateDelivery, Vec::new(), None);
    }
    let links = if config.trusts_links_of(extract::pr_author(gh_event, payload)) {
        Links::Follow
    } else {
        Links::Ignore
    };
    let mut work_items = extract::work_items_with(gh_event, payload, links);
    let actor = guard::actor_of(gh_event, payload);
    if work_items.is_empty() {
        return dropped(DropReason::NoWorkItem, work_items, actor.login());
    }
    // The event's own repository (every item but a qualified closing reference is in
    // it), then each linked item's: nothing about an unwatched repository goes on.
    let own_repo_watched =
        extract::RepoId::of_payload(payload).is_some_and(|r| config.watches_repo(r.owner, r.name));
    if !own_repo_watched {
        return dropped(DropReason::UnwatchedRepo, work_items, actor.login());
    }
    work_items.retain(|w| config.watches(w));
    if work_items.is_empty() {
        return dropped(DropReason::UnwatchedRepo, work_items, actor.login());
    }
    let text = authored_text(kind, payload);
    if carries_marker(payload) {
        return dropped(DropReason::SelfAuthored, work_items, actor.login());
    }
    let is_close = matches!(kind, EventKind::Issues | EventKind::PullRequest) && action == "closed";
    if !is_close {
        match config.allowlist.check(actor) {
            ActorCheck::Authorized(_) | ActorCheck::Ci => {}
            ActorCheck::Unauthorized(login) => {
                return dropped(DropReason::UnauthorizedActor, work_items, Some(login));
            }
            ActorCheck::Unknown => return dropped(DropReason::UnknownActor, work_items, None),
        }
    }

    let actor = actor.login();
    let not_actionable = |work_items| dropped(DropReason::NotActionable, work_items, actor);
    match kind {
        EventKind::IssueComment | EventKind::PullRequestReviewComment => match action {
            "created" => text_outcome(gh_event, payload, text, work_items, actor, config),
            // An edit is delivered only on request, and never acts as a command: editing
            // or deleting an old comment must not re-run `the-loop stop`.
            "edited" | "deleted"
                if config.deliver_edits
                    && config.keywords.find(text.unwrap_or("")) == ControlMatch::None =>
            {
                deliver(work_items, extract::subject(gh_event, payload), actor)
            }
            _ => not_actionable(work_items),
        },
        EventKind::PullRequestReview => {
            if action == "submitted" && text.is_some_and(|t| !t.trim().is_empty()) {
                text_outcome(gh_event, payload, text, work_items, actor, config)
            } else {
                not_actionable(work_items)
            }
        }
        EventKind::Issues | EventKind::PullRequest if is_close => {
            match extract::subject(gh_event, payload) {
                Some(item) => Outcome::Close {
                    linked: work_items
                        .into_iter()
                        .filter(|w| !same_item(w, &item))
                        .collect(),
                    merged: payload["pull_request"]["merged"].as_bool().unwrap_or(false),
                    item,
                    actor: actor.map(str::to_string),
                },
                None => not_actionable(work_items),
            }
        }
        EventKind::Issues if matches!(action, "opened" | "labeled") => {
            spawn_candidate(gh_event, payload, actor, config)
                .unwrap_or_else(|| not_actionable(work_items))
        }
        EventKind::WorkflowRun | EventKind::CheckRun | EventKind::CheckSuite => {
            let conclusion = payload[gh_event]["conclusion"].as_str().unwrap_or("");
            if action == "completed" && CI_FAILURES.contains(&conclusion) {
                ci_failure(gh_event, payload, work_items, dedupe)
            } else {
                not_actionable(work_items)
            }
        }
        EventKind::Status => {
            let state = payload["state"].as_str().unwrap_or("");
            if STATUS_FAILURES.contains(&state) {
                ci_failure(gh_event, payload, work_items, dedupe)
            } else {
                not_actionable(work_items)
            }
        }
        EventKind::Issues | EventKind::PullRequest | EventKind::PullRequestReviewThread => {
            not_actionable(work_items)
        }
    }
}

/// The human-written text the marker check and the keyword scan read: the comment body
/// for comments, the review body for reviews, nothing otherwise.
fn authored_text(kind: EventKind, payload: &Value) -> Option<&str> {
    match kind {
        EventKind::IssueComment | EventKind::PullRequestReviewComment => {
            payload["comment"]["body"].as_str()
        }
        EventKind::PullRequestReview => payload["review"]["body"].as_str(),
        _ => None,
    }
}

/// The marker check (§3.1). SPEC names the comment body for comment events and the review
/// body for reviews; both are read whatever the event, so a marked comment smuggled into
/// any payload is never acted on (real payloads carry only their own).
fn carries_marker(payload: &Value) -> bool {
    guard::is_self_authored(payload["comment"]["body"].as_str())
        || guard::is_self_authored(payload["review"]["body"].as_str())
}

fn deliver(
    work_items: Vec<WorkItemRef>,
    subject: Option<WorkItemRef>,
    actor: Option<&str>,
) -> Outcome {
    Outcome::Deliver {
        work_items,
        subject,
        actor: actor.map(str::to_string),
    }
}

/// A CI failure worth delivering, once per run (§14.3): a replay of the same run's
/// result under a new delivery id — or its polled twin — is a `duplicate-delivery`.
fn ci_failure(
    gh_event: &str,
    payload: &Value,
    work_items: Vec<WorkItemRef>,
    dedupe: &mut DeliveryDedupe,
) -> Outcome {
    if let Some(key) = ci_dedupe_key(gh_event, payload)
        && !dedupe.first_sighting(&key)
    {
        return Outcome::Dropped {
            reason: DropReason::DuplicateDelivery,
            work_items,
            actor: None,
        };
    }
    deliver(work_items, None, None)
}

/// A new comment or review from an authorized human: a control command, an ambiguous one,
/// or a prompt to deliver.
fn text_outcome(
    gh_event: &str,
    payload: &Value,
    text: Option<&str>,
    work_items: Vec<WorkItemRef>,
    actor: Option<&str>,
    config: &RouterConfig,
) -> Outcome {
    let actor_login = || actor.unwrap_or_default().to_string();
    match config.keywords.find(text.unwrap_or("")) {
        ControlMatch::None => deliver(work_items, extract::subject(gh_event, payload), actor),
        ControlMatch::Command(command) => {
            // The item the comment was written on; a PR's own ref is last in the list.
            match extract::subject(gh_event, payload).or_else(|| work_items.last().cloned()) {
                Some(item) => Outcome::Control {
                    command,
                    item,
                    work_items,
                    actor: actor_login(),
                },
                None => Outcome::Dropped {
                    reason: DropReason::NoWorkItem,
                    work_items,
                    actor: actor.map(str::to_string),
                },
            }
        }
        ControlMatch::Ambiguous(commands) => Outcome::Ambiguous {
            commands,
            work_items,
            actor: actor_login(),
        },
    }
}

/// `labeled` spawn policy (§5.4): the sender passed the actor gate; the issue's author
/// must be authorized as well.
fn spawn_candidate(
    gh_event: &str,
    payload: &Value,
    actor: Option<&str>,
    config: &RouterConfig,
) -> Option<Outcome> {
    if config.spawn != SpawnPolicy::Labeled {
        return None;
    }
    let author = payload["issue"]["user"]["login"]
        .as_str()
        .filter(|a| config.allowlist.allows(a))?;
    Some(Outcome::SpawnCandidate {
        item: extract::subject(gh_event, payload)?,
        author: author.to_string(),
        actor: actor?.to_string(),
        label: payload["label"]["name"].as_str().map(str::to_string),
    })
}

fn same_item(a: &WorkItemRef, b: &WorkItemRef) -> bool {
    a.number == b.number && a.same_repo(b)
}
