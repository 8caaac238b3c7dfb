//! The dispatcher (SPEC §5.3–5.4, §7): the supervisor's [`Ingest`]. Each event is
//! routed by the one router, the decision is logged, and the dispatcher acts on it:
//!
//! - **Deliver** → the first work item (in order) that has a session gets the event
//!   prompt; else the open session whose own pull request it is (its ship's
//!   `pullRequest`, `SessionRecord::own_pulls`); none → `dispatch.dropped`
//!   (`no-session`, or `session-closed`); a paused session → `session-paused`. Both
//!   settled, never replayed.
//! - **Control** → start (unless `routing.spawn: never`), pause, resume, stop. Control
//!   comments are never forwarded.
//! - **Close** → the item's session ends (status `closed`).
//! - **SpawnCandidate** → spawn for a watched item without a session.
//! - **Dropped** / **Ambiguous** → settled with the reason.
//!
//! Everything that touches a session runs in that session's FIFO lane (see `queue`),
//! so a pause written after a comment takes effect after that comment, and sessions
//! deliver concurrently. Routing itself happens synchronously in `ingest`, so events
//! are queued in the order they were submitted.

use super::dedupe_store::DedupeStore;
use super::delivery::LaneHolds;
use super::queue::Lanes;
use super::registry::same_item;
use super::sessions::{Origin, Sessions};
use super::spawn::PromptInputs;
use crate::config::{Config, SpawnPolicy};
use crate::events::{Event, EventType, Level, Source};
use crate::ingress::{Disposition, InboundEvent, Ingest};
use crate::paths::StatePaths;
use crate::routing::dedupe::ci_dedupe_key;
use crate::routing::excerpt::excerpt;
use crate::routing::{ControlCommand, EnabledEvents, Inbound, Outcome, RouterConfig, route};
use crate::work_item::WorkItemRef;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;
use tokio::runtime::Handle;
use tokio::sync::oneshot;

/// How long a session's worker waits for another job before it ends.
const LANE_IDLE: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum DispatcherError {
    #[error("the dispatcher must be created inside a tokio runtime")]
    NoRuntime,
}

/// The supervisor's [`Ingest`]. Cheap to clone.
#[derive(Clone)]
pub struct Dispatcher {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub sessions: Arc<Sessions>,
    router: RwLock<RouterState>,
    pub dedupe: Mutex<DedupeStore>,
    pub lanes: Lanes<Job>,
    /// Items whose spawn is queued: deliveries behind it go to the new session.
    pub pending_spawns: Mutex<HashSet<String>>,
    /// Which lanes wait on a held session, and which events wait in which lane.
    pub holds: Mutex<LaneHolds>,
    runtime: Handle,
}

impl Dispatcher {
    /// A dispatcher over `sessions`, with the dedupe persisted under `paths`. Must be
    /// called inside a tokio runtime (workers are spawned on it).
    pub fn new(
        sessions: Arc<Sessions>,
        config: &Config,
        paths: &StatePaths,
    ) -> Result<Self, DispatcherError> {
        let runtime = Handle::try_current().map_err(|_| DispatcherError::NoRuntime)?;
        let dedupe = DedupeStore::load(paths.root.join("dedupe.json"), &sessions.events);
        Ok(Self {
            inner: Arc::new(Inner {
                router: RwLock::new(RouterState::new(config, None)),
                dedupe: Mutex::new(dedupe),
                lanes: Lanes::new(LANE_IDLE),
                pending_spawns: Mutex::new(HashSet::new()),
                holds: Mutex::new(LaneHolds::default()),
                sessions,
                runtime,
            }),
        })
    }

    pub fn sessions(&self) -> &Arc<Sessions> {
        &self.inner.sessions
    }

    /// Applies a reloaded config to routing (the lifecycle's settings are replaced
    /// with [`Sessions::set_settings`]). The token's own login is kept.
    pub fn set_config(&self, config: &Config) {
        let mut router = self.router_lock();
        *router = RouterState::new(config, router.own_login.clone());
    }

    /// The login the GitHub token belongs to (SPEC §14.3: its PRs' links are followed
    /// like an authorized author's). Until it is known, only authorized authors' are.
    pub fn set_own_login(&self, login: Option<&str>) {
        let mut router = self.router_lock();
        router.own_login = login.map(str::to_string);
        router.config = router.config.clone().with_own_login(login);
    }

    fn router_lock(&self) -> std::sync::RwLockWriteGuard<'_, RouterState> {
        self.inner
            .router
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Forgets a delivery id in the router's dedupe, so an event that was routed but
    /// never settled (the process died in between) is routed again when it is fed
    /// again. The supervisor calls it at start for every event still pending in the
    /// poll ledger.
    pub fn release_delivery(&self, delivery_id: &str) {
        self.inner.dedupe().release(delivery_id);
    }

    /// Sessions with a running worker.
    pub fn busy_lanes(&self) -> usize {
        self.inner.lanes.active()
    }

    fn route(&self, inbound: &Inbound<'_>) -> (Outcome, SpawnPolicy) {
        let (config, policy) = match self.inner.router.read() {
            Ok(r) => (r.config.clone(), r.spawn),
            Err(poisoned) => {
                let r = poisoned.into_inner();
                (r.config.clone(), r.spawn)
            }
        };
        let mut store = self.inner.dedupe();
        // Saved when routing recorded an id or a CI run's key (each lands newest).
        let before = store.dedupe.fingerprint();
        let outcome = route(inbound, &config, &mut store.dedupe);
        if store.dedupe.fingerprint() != before {
            store.save();
        }
        (outcome, policy)
    }
}

impl Inner {
    pub fn dedupe(&self) -> MutexGuard<'_, DedupeStore> {
        self.dedupe
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn pending(&self) -> MutexGuard<'_, HashSet<String>> {
        self.pending_spawns
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn emit(&self, event: Event) {
        self.sessions.emit(event);
    }

    pub fn holds(&self) -> MutexGuard<'_, LaneHolds> {
        self.holds
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A stop or close ran: the lane is no longer ending.
    pub fn end_lane<T>(&self, item: &WorkItemRef, result: T) -> T {
        self.holds().ending.remove(&item.slug());
        result
    }
}

/// Where an event goes.
pub(crate) enum Target {
    /// An open session (or one being spawned).
    Session(WorkItemRef),
    /// Only a closed session.
    Closed(WorkItemRef),
    None,
}

pub(crate) struct Job {
    pub source: Source,
    pub delivery_id: String,
    pub gh_event: String,
    pub item: WorkItemRef,
    pub kind: JobKind,
    pub reply: oneshot::Sender<Disposition>,
}

pub(crate) enum JobKind {
    Deliver {
        inputs: PromptInputs,
        actor: Option<String>,
        /// A CI result's dedupe key (`routing::dedupe::ci_dedupe_key`), released with
        /// the delivery id when the paste fails for now, so a retry is not a duplicate.
        ci_key: Option<String>,
    },
    Start {
        inputs: PromptInputs,
        origin: Origin,
    },
    Pause {
        origin: Origin,
    },
    Resume {
        origin: Origin,
    },
    Stop {
        origin: Origin,
    },
    Close {
        merged: bool,
        origin: Origin,
    },
}

/// What routing reads, rebuilt on a config reload.
struct RouterState {
    config: RouterConfig,
    spawn: SpawnPolicy,
    /// Kept across reloads: it comes from GitHub, not the config.
    own_login: Option<String>,
}

impl RouterState {
    fn new(config: &Config, own_login: Option<String>) -> Self {
        Self {
            config: RouterConfig::new(&config.routing, EnabledEvents::all())
                .watching(config.repos.iter().map(|r| r.name.as_str()))
                .with_own_login(own_login.as_deref()),
            spawn: config.routing.spawn,
            own_login,
        }
    }
}

fn settled(disposition: Disposition) -> BoxFuture<'static, Disposition> {
    Box::pin(std::future::ready(disposition))
}

fn dropped(reason: &str) -> BoxFuture<'static, Disposition> {
    settled(Disposition::Dropped {
        reason: reason.to_string(),
    })
}

impl Ingest for Dispatcher {
    fn ingest(&self, event: InboundEvent) -> BoxFuture<'static, Disposition> {
        let inbound = event.as_inbound();
        let (outcome, policy) = self.route(&inbound);
        self.inner.emit(outcome.to_event(&inbound, event.source));
        match outcome {
            Outcome::Dropped { reason, .. } => dropped(reason.as_str()),
            Outcome::Ambiguous { .. } => dropped("ambiguous"),
            Outcome::Deliver {
                work_items,
                subject,
                actor,
            } => self.deliver(&event, &own_first(subject.as_ref(), &work_items), actor),
            Outcome::Control {
                command,
                item,
                work_items,
                actor,
            } => self.control(&event, command, item, &work_items, actor, policy),
            Outcome::Close {
                item,
                merged,
                actor,
                ..
            } => {
                let origin = Origin::comment(event.source, actor);
                self.enqueue(&event, item, JobKind::Close { merged, origin })
            }
            Outcome::SpawnCandidate { item, actor, .. } => {
                self.spawn_candidate(&event, item, actor, policy)
            }
        }
    }

    fn holding(&self, delivery_id: &str) -> bool {
        let holds = self.inner.holds();
        holds
            .queued
            .get(delivery_id)
            .is_some_and(|lane| holds.held.contains(lane))
    }
}

impl Dispatcher {
    /// A prompt for the first item that has a session.
    fn deliver(
        &self,
        event: &InboundEvent,
        work_items: &[WorkItemRef],
        actor: Option<String>,
    ) -> BoxFuture<'static, Disposition> {
        match self.target(work_items) {
            Target::Session(item) => {
                let inputs = inputs(event, &item, excerpt(&event.gh_event, &event.payload));
                let ci_key = ci_dedupe_key(&event.gh_event, &event.payload);
                let kind = JobKind::Deliver {
                    inputs,
                    actor,
                    ci_key,
                };
                self.enqueue(event, item, kind)
            }
            Target::Closed(item) => self.no_session(event, &item, "session-closed"),
            Target::None => match work_items.first() {
                Some(item) => self.no_session(event, item, "no-session"),
                None => dropped("no-work-item"),
            },
        }
    }

    fn no_session(
        &self,
        event: &InboundEvent,
        item: &WorkItemRef,
        reason: &str,
    ) -> BoxFuture<'static, Disposition> {
        self.inner.emit(
            Event::new(Source::Dispatch, EventType::DispatchDropped)
                .with("work_item", item.to_string())
                .with("delivery_id", non_empty(&event.delivery_id))
                .with("gh_event", event.gh_event.as_str())
                .with("reason", reason),
        );
        dropped(reason)
    }

    fn control(
        &self,
        event: &InboundEvent,
        command: ControlCommand,
        item: WorkItemRef,
        work_items: &[WorkItemRef],
        actor: String,
        policy: SpawnPolicy,
    ) -> BoxFuture<'static, Disposition> {
        let origin = Origin::comment(event.source, Some(actor));
        // Stop/pause/resume act on the commented item's session, else on a linked
        // item's (§14.3).
        let target = match self.target(&own_first(Some(&item), work_items)) {
            Target::Session(found) => found,
            Target::Closed(_) | Target::None => item.clone(),
        };
        match command {
            ControlCommand::Start if policy == SpawnPolicy::Never => {
                self.inner
                    .refused(event.source, &item, command, "spawn-policy", None, &origin);
                dropped("spawn-policy")
            }
            ControlCommand::Start => {
                let excerpt = subject_excerpt(&event.payload);
                let inputs = inputs(event, &item, excerpt);
                self.spawn(event, item, inputs, origin)
            }
            ControlCommand::Pause => self.enqueue(event, target, JobKind::Pause { origin }),
            ControlCommand::Resume => self.enqueue(event, target, JobKind::Resume { origin }),
            ControlCommand::Stop => self.enqueue(event, target, JobKind::Stop { origin }),
        }
    }

    /// `routing.spawn: labeled`: spawn for a watched item that has no session.
    fn spawn_candidate(
        &self,
        event: &InboundEvent,
        item: WorkItemRef,
        actor: String,
        policy: SpawnPolicy,
    ) -> BoxFuture<'static, Disposition> {
        if policy != SpawnPolicy::Labeled {
            return dropped("spawn-policy");
        }
        if !self.is_watched(&item, &event.payload) {
            return dropped("not-watched");
        }
        if let Target::Session(_) = self.target(std::slice::from_ref(&item)) {
            return dropped("already-running");
        }
        let inputs = inputs(event, &item, excerpt(&event.gh_event, &event.payload));
        let origin = Origin::labeled(event.source, Some(actor));
        self.spawn(event, item, inputs, origin)
    }

    fn spawn(
        &self,
        event: &InboundEvent,
        item: WorkItemRef,
        inputs: PromptInputs,
        origin: Origin,
    ) -> BoxFuture<'static, Disposition> {
        self.inner.pending().insert(item.slug());
        self.enqueue(event, item, JobKind::Start { inputs, origin })
    }

    /// Whether the item's repo watches the event's `issue` — open, of a watched kind,
    /// carrying the label: the rule the poller lists with ([`RepoConfig::watches`]).
    ///
    /// [`RepoConfig::watches`]: crate::config::RepoConfig::watches
    fn is_watched(&self, item: &WorkItemRef, payload: &Value) -> bool {
        let settings = self.inner.sessions.settings();
        settings
            .repo(item)
            .is_some_and(|rc| rc.watches(&payload["issue"]))
    }

    /// The first item (in order) with an open session or a queued spawn; else the open
    /// session that owns one of them ([`Self::owner_of`]); else a closed session's item.
    fn target(&self, work_items: &[WorkItemRef]) -> Target {
        let mut closed = None;
        for item in work_items {
            if self.inner.pending().contains(&item.slug()) {
                return Target::Session(item.clone());
            }
            match self.inner.sessions.registry().get(item) {
                Ok(Some(record)) if record.status.is_open() => {
                    return Target::Session(record.work_item);
                }
                Ok(Some(record)) => {
                    closed.get_or_insert(record.work_item);
                }
                Ok(None) => {}
                Err(error) => tracing::warn!(%item, "session record unreadable: {error}"),
            }
        }
        match self.owner_of(work_items) {
            Some(owner) => Target::Session(owner),
            None => closed.map_or(Target::None, Target::Closed),
        }
    }

    /// The open session one of `work_items` (in order) is an own pull request of —
    /// [`SessionRecord::own_pulls`], the one rule: the pull request its ship opened or
    /// adopted (`pullRequest`, written only by an operator's ship), whatever that pull
    /// request's text links and whoever opened it (SPEC §19.4 step 6).
    ///
    /// Read only when no item has a session of its own, i.e. for an authorized (or CI)
    /// event that passed every gate: the registry is listed then, one small file per
    /// session, as the poller lists it once a cycle — no index to keep in step with
    /// the ships other processes record.
    ///
    /// [`SessionRecord::own_pulls`]: super::SessionRecord::own_pulls
    fn owner_of(&self, work_items: &[WorkItemRef]) -> Option<WorkItemRef> {
        let records = match self.inner.sessions.registry().list() {
            Ok(records) => records,
            Err(error) => {
                tracing::warn!(
                    "session registry unreadable; no session's own pull request found: {error}"
                );
                return None;
            }
        };
        let open: Vec<_> = records.into_iter().filter(|r| r.status.is_open()).collect();
        work_items.iter().find_map(|item| {
            open.iter()
                .find(|r| r.own_pulls().iter().any(|own| same_item(own, item)))
                .map(|r| r.work_item.clone())
        })
    }

    /// Queues a job in the item's lane and returns its settlement.
    fn enqueue(
        &self,
        event: &InboundEvent,
        item: WorkItemRef,
        kind: JobKind,
    ) -> BoxFuture<'static, Disposition> {
        let (reply, settled) = oneshot::channel();
        let job = Job {
            source: event.source,
            delivery_id: event.delivery_id.clone(),
            gh_event: event.gh_event.clone(),
            item: item.clone(),
            kind,
            reply,
        };
        {
            let mut holds = self.inner.holds();
            if matches!(job.kind, JobKind::Deliver { .. }) && !event.delivery_id.is_empty() {
                holds.queued.insert(event.delivery_id.clone(), item.slug());
            }
            if matches!(job.kind, JobKind::Stop { .. } | JobKind::Close { .. }) {
                holds.ending.insert(item.slug());
            }
        }
        let pushed = self.inner.lanes.push(&item.slug(), job);
        self.inner.emit(
            Event::new(Source::Dispatch, EventType::DispatchQueued)
                .level(Level::Debug)
                .with("work_item", item.to_string())
                .with("delivery_id", non_empty(&event.delivery_id))
                .with("gh_event", event.gh_event.as_str())
                .with("queue_len", pushed.depth),
        );
        if let Some(mut worker) = pushed.start_worker {
            let inner = Arc::clone(&self.inner);
            self.inner.runtime.spawn(async move {
                while let Some(job) = inner.lanes.next(&mut worker).await {
                    inner.run(job).await;
                }
            });
        }
        Box::pin(async move {
            // The dispatcher stopped (the supervisor is going down) with the job
            // queued or held: fed again on the next start, not counted as an attempt.
            settled.await.unwrap_or(Disposition::Interrupted)
        })
    }
}

/// The items to look for a session in: the one the event was written on first (its own
/// session wins, SPEC §14.3), then the linked ones in §5.2 order.
fn own_first(subject: Option<&WorkItemRef>, work_items: &[WorkItemRef]) -> Vec<WorkItemRef> {
    let mut out: Vec<WorkItemRef> = subject.into_iter().cloned().collect();
    out.extend(
        work_items
            .iter()
            .filter(|w| subject.is_none_or(|s| !same_item(s, w)))
            .cloned(),
    );
    out
}

/// The prompt inputs of an event for `item`.
fn inputs(event: &InboundEvent, item: &WorkItemRef, excerpt: String) -> PromptInputs {
    PromptInputs {
        event: event.gh_event.clone(),
        action: event.action.clone(),
        delivery_id: event.delivery_id.clone(),
        repository: event.payload["repository"]["full_name"]
            .as_str()
            .map_or_else(|| item.repo_full_name(), str::to_string),
        excerpt,
    }
}

/// The excerpt of the issue or PR a control comment was written on — never of the
/// comment itself: control comments are not forwarded to the agent.
fn subject_excerpt(payload: &Value) -> String {
    if payload["issue"].is_object() {
        excerpt("issues", &json!({ "issue": payload["issue"] }))
    } else if payload["pull_request"].is_object() {
        excerpt(
            "pull_request",
            &json!({ "pull_request": payload["pull_request"] }),
        )
    } else {
        "{}".into()
    }
}

pub(crate) fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

#[cfg(test)]
#[path = "dispatcher_tests.rs"]
mod tests;
