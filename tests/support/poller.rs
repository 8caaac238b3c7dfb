//! Test support: a simulated GitHub with a seeded repo, a poller on a temp state root,
//! and a recording `Ingest` that decides with the real router (so marked, unauthorized
//! and edited comments are dropped exactly as in the product) and can be told to fail
//! or to hang on chosen deliveries.

use futures::future::BoxFuture;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use the_loop::config::{Config, GithubConfig, PollingConfig, RepoConfig, RoutingConfig};
use the_loop::events::{Event, EventLog, EventReader, EventType, Filter};
use the_loop::github::sim::{IssueSpec, PullSpec, SimGithub, SimHandle, SimStats};
use the_loop::github::{Client, RetryPolicy};
use the_loop::ingress::claims::Claims;
use the_loop::ingress::poller::{CycleReport, Poller};
use the_loop::ingress::{Disposition, InboundEvent, Ingest};
use the_loop::paths::StatePaths;
use the_loop::routing::{DeliveryDedupe, EnabledEvents, Outcome, RouterConfig, route};
use the_loop::work_item::WorkItemRef;

pub const REPO: &str = "octo/repo";
pub const TOKEN: &str = "ghp_pollertesttoken_0123456789abcdef";

/// Records every event it is fed and answers with the router's decision.
pub struct RecordingIngest {
    router: Mutex<(RouterConfig, DeliveryDedupe)>,
    fed: Mutex<Vec<(InboundEvent, Option<Disposition>)>>,
    /// Delivery id → failures still to answer (`u32::MAX`: always).
    failing: Mutex<HashMap<String, u32>>,
    /// Delivery ids whose future never resolves (a supervisor killed mid-delivery).
    hanging: Mutex<HashSet<String>>,
}

impl RecordingIngest {
    pub fn new(routing: &RoutingConfig) -> Arc<Self> {
        Arc::new(Self {
            router: Mutex::new((
                RouterConfig::new(routing, EnabledEvents::all()).watching(["octo/repo"]),
                DeliveryDedupe::new(),
            )),
            fed: Mutex::new(Vec::new()),
            failing: Mutex::new(HashMap::new()),
            hanging: Mutex::new(HashSet::new()),
        })
    }

    pub fn fail(&self, delivery_id: &str, times: u32) {
        self.failing
            .lock()
            .unwrap()
            .insert(delivery_id.to_string(), times);
    }

    pub fn hang(&self, delivery_id: &str) {
        self.hanging.lock().unwrap().insert(delivery_id.to_string());
    }

    /// Every event fed so far, with what was answered (`None`: still hanging).
    pub fn fed(&self) -> Vec<(InboundEvent, Option<Disposition>)> {
        self.fed.lock().unwrap().clone()
    }

    pub fn fed_ids(&self) -> Vec<String> {
        self.fed().into_iter().map(|(e, _)| e.delivery_id).collect()
    }

    /// Delivery ids answered `Delivered`, in order.
    pub fn delivered(&self) -> Vec<String> {
        self.fed()
            .into_iter()
            .filter(|(_, d)| d == &Some(Disposition::Delivered))
            .map(|(e, _)| e.delivery_id)
            .collect()
    }

    pub fn event(&self, delivery_id: &str) -> InboundEvent {
        self.fed()
            .into_iter()
            .find(|(e, _)| e.delivery_id == delivery_id)
            .map(|(e, _)| e)
            .unwrap_or_else(|| panic!("{delivery_id} was never fed: {:?}", self.fed_ids()))
    }

    pub fn disposition(&self, delivery_id: &str) -> Option<Disposition> {
        self.fed()
            .into_iter()
            .rev()
            .find(|(e, _)| e.delivery_id == delivery_id)
            .and_then(|(_, d)| d)
    }

    fn decide(&self, event: &InboundEvent) -> Disposition {
        let mut failing = self.failing.lock().unwrap();
        if let Some(left) = failing.get_mut(&event.delivery_id)
            && *left > 0
        {
            *left = left.saturating_sub(u32::from(*left != u32::MAX));
            return Disposition::Failed {
                error: "simulated paste failure".into(),
            };
        }
        drop(failing);
        let mut router = self.router.lock().unwrap();
        let (config, dedupe) = &mut *router;
        match route(&event.as_inbound(), config, dedupe) {
            Outcome::Dropped { reason, .. } => Disposition::Dropped {
                reason: reason.to_string(),
            },
            Outcome::Ambiguous { .. } | Outcome::SpawnCandidate { .. } => Disposition::Dropped {
                reason: "not-delivered".into(),
            },
            Outcome::Deliver { .. } | Outcome::Control { .. } | Outcome::Close { .. } => {
                Disposition::Delivered
            }
        }
    }
}

impl Ingest for RecordingIngest {
    fn ingest(&self, event: InboundEvent) -> BoxFuture<'static, Disposition> {
        if self.hanging.lock().unwrap().contains(&event.delivery_id) {
            self.fed.lock().unwrap().push((event, None));
            return Box::pin(futures::future::pending());
        }
        let d = self.decide(&event);
        if !d.is_settled() {
            // As the dispatcher does: a failed delivery's id is released for the retry.
            self.router.lock().unwrap().1.release(&event.delivery_id);
        }
        self.fed.lock().unwrap().push((event, Some(d.clone())));
        Box::pin(async move { d })
    }
}

/// The webhook delivery of comment `id` by alice on #`number` (what claims read).
pub fn webhook_comment(number: u64, id: u64) -> InboundEvent {
    InboundEvent::from_webhook(
        "issue_comment",
        &format!("gh-delivery-{id}"),
        serde_json::json!({
            "action": "created",
            "repository": {"full_name": REPO},
            "issue": {"number": number},
            "comment": {"id": id, "body": "Seen by webhook.", "user": {"login": "alice"}},
            "sender": {"login": "alice"},
        }),
    )
}

pub fn config(api_url: &str) -> Config {
    Config {
        github: GithubConfig {
            api_url: api_url.to_string(),
        },
        repos: vec![RepoConfig {
            name: REPO.into(),
            path: None,
            label: "the-loop".into(),
            issues: true,
            pull_requests: true,
            ..RepoConfig::named("")
        }],
        routing: RoutingConfig {
            authorized_users: vec!["alice".into()],
            ..RoutingConfig::default()
        },
        polling: PollingConfig {
            enabled: true,
            interval_seconds: 5,
            max_retries: 2,
        },
        ..Config::default()
    }
}

pub fn client(api_url: &str) -> Arc<Client> {
    Arc::new(
        Client::builder(api_url)
            .token(Some(TOKEN))
            .retry_policy(RetryPolicy {
                max_retries: 3,
                base_delay: Duration::from_millis(5),
                max_delay: Duration::from_secs(2),
                max_total_delay: Duration::from_secs(5),
            })
            .timeout(Duration::from_millis(800))
            .build()
            .unwrap(),
    )
}

/// Issue #15 (carol, labeled), PR #16 (alice, labeled, closes #15 from
/// `issue-15-backoff`), and unlabeled #17.
pub async fn seeded_sim() -> SimHandle {
    let sim = SimGithub::start().await.unwrap();
    sim.add_issue(
        REPO,
        IssueSpec::new("Flaky test in CI")
            .number(15)
            .author("carol")
            .body("It fails on Tuesdays.")
            .labels(&["the-loop", "bug"]),
    )
    .unwrap();
    sim.add_pull(
        REPO,
        PullSpec::new("Make backoff deterministic", "issue-15-backoff")
            .number(16)
            .author("alice")
            .body("Closes #15")
            .labels(&["the-loop"]),
    )
    .unwrap();
    sim.add_issue(REPO, IssueSpec::new("Unwatched").number(17).author("bob"))
        .unwrap();
    sim
}

pub struct Harness {
    pub sim: SimHandle,
    /// Kept for its lifetime: the state root is deleted with it.
    pub _dir: tempfile::TempDir,
    pub paths: StatePaths,
    pub events: EventLog,
    pub ingest: Arc<RecordingIngest>,
    pub config: Config,
    /// The items with a session (the poller follows them for closure).
    pub sessions: Arc<Mutex<Vec<WorkItemRef>>>,
    pub poller: Poller,
}

impl Harness {
    pub async fn new(sim: SimHandle) -> Self {
        Self::with_config(sim, |_| {}).await
    }

    pub async fn with_config(sim: SimHandle, edit: impl FnOnce(&mut Config)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        let events = EventLog::open(&paths);
        let mut config = config(&sim.base_url());
        edit(&mut config);
        let ingest = RecordingIngest::new(&config.routing);
        let sessions = Arc::new(Mutex::new(Vec::new()));
        let poller = Self::build(&sim, &paths, &events, &config, ingest.clone(), &sessions);
        Self {
            sim,
            _dir: dir,
            paths,
            events,
            ingest,
            config,
            sessions,
            poller,
        }
    }

    fn build(
        sim: &SimHandle,
        paths: &StatePaths,
        events: &EventLog,
        config: &Config,
        ingest: Arc<RecordingIngest>,
        sessions: &Arc<Mutex<Vec<WorkItemRef>>>,
    ) -> Poller {
        let sessions = sessions.clone();
        Poller::new(
            client(&sim.base_url()),
            Arc::new(config.clone()),
            paths.clone(),
            events.clone(),
            ingest,
        )
        .with_sessions(Arc::new(move || sessions.lock().unwrap().clone().into()))
    }

    pub fn add_session(&self, number: u64) {
        self.sessions
            .lock()
            .unwrap()
            .push(WorkItemRef::new("octo", "repo", number));
    }

    /// A new poller, client and ingest on the same state root: a restarted supervisor.
    pub fn restart(&mut self) {
        self.ingest = RecordingIngest::new(&self.config.routing);
        self.poller = Self::build(
            &self.sim,
            &self.paths,
            &self.events,
            &self.config,
            self.ingest.clone(),
            &self.sessions,
        );
    }

    pub async fn cycle(&mut self) -> CycleReport {
        self.poller.cycle().await
    }

    /// One cycle, returning the simulator's request counts for it.
    pub async fn measured_cycle(&mut self) -> (CycleReport, SimStats) {
        self.sim.clear_requests();
        let report = self.cycle().await;
        (report, self.sim.stats())
    }

    /// The webhook path's claims on this state root.
    pub fn claims(&self) -> Claims {
        Claims::new(self.poller.ledgers().clone(), self.events.clone())
    }

    pub fn events_of(&self, ty: EventType) -> Vec<Event> {
        EventReader::open(&self.paths.events(), Filter::default())
            .unwrap()
            .map(|r| r.unwrap().event)
            .filter(|e| e.event == ty)
            .collect()
    }
}
