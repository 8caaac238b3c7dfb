//! The real [`Backend`]: the screen over the running product (SPEC §11).
//!
//! One implementation serves both roles of §11.6. The supervisor role gets its status
//! from the in-process supervisor; a viewer reads it from the event log and the lock
//! file. Everything else is the same for both and goes through the modules every other
//! entry point uses: sessions from the registry and `session::activity`, watched items
//! from the poller's ledgers through `ingress::ledger::read` ([`session_rows`]), events
//! and open questions by following `events.jsonl` ([`log_follower`]), the status bar's
//! data for either role ([`supervision`]), replies through the one [`Replier`], lifecycle changes
//! through [`Sessions`], dismissals through `questions::dismiss`, critic rounds through
//! the [`CriticRunner`] ([`critic_runs`], [`review`], [`rounds`]), attach plans and URLs as argv
//! ([`attach`]), ship requests and ships through the one [`Shipper`] ([`ships`]). The
//! replier, the critic runner and the shipper are handed in built (with the GitHub
//! client, or the reason there is none): this view holds no client of its own.

mod actions;
pub mod attach;
pub mod critic_runs;
mod diff_review;
pub mod log_follower;
pub mod review;
pub mod rounds;
pub mod session_rows;
pub mod ships;
mod supervision;

use super::backend::{
    ActionError, ActionResult, AttachPlan, Backend, CriticSpecView, HostView, LimitView,
    QuestionView, RunId, Snapshot,
};
use crate::config::LoadedConfig;
use crate::critic::CriticRunner;
use crate::events::{Event, EventLog, Filter};
use crate::paths::StatePaths;
use crate::session::delivery::ByHandError;
use crate::session::ship::Shipper;
use crate::session::{Replier, Sessions};
use crate::tmux::Socket;
use crate::work_item::WorkItemRef;
use critic_runs::CriticRuns;
use futures::future::BoxFuture;
use log_follower::LogFeed;
use session_rows::SessionRows;
use ships::ShipPreviews;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{broadcast, watch};

pub use supervision::Supervision;
use supervision::status_view;

/// How often the event log is checked for new lines.
pub const FOLLOW_EVERY: Duration = Duration::from_millis(200);

/// What the backend is built from; `the-loop tui` assembles it for either role.
pub struct LiveParts {
    pub paths: StatePaths,
    /// The global `--config` flag (a viewer reloads from it).
    pub config_flag: Option<PathBuf>,
    /// The config in force.
    pub config: watch::Receiver<Arc<LoadedConfig>>,
    pub sessions: Arc<Sessions>,
    /// Replies (and their delivery reports) go through it.
    pub replier: Replier,
    /// Critic rounds run and are posted through it.
    pub critics: CriticRunner,
    /// Sessions' work ships through it (SPEC §19.4), or why it cannot (no GitHub).
    pub shipper: Result<Shipper, String>,
    pub events: EventLog,
    pub supervision: Supervision,
}

pub struct LiveBackend {
    paths: StatePaths,
    config_flag: Option<PathBuf>,
    config: watch::Receiver<Arc<LoadedConfig>>,
    sessions: Arc<Sessions>,
    replier: Replier,
    critic_runner: CriticRunner,
    shipper: Result<Shipper, String>,
    ship_looks: ShipPreviews,
    events: EventLog,
    supervision: Supervision,
    socket: Socket,
    feed: LogFeed,
    rows: SessionRows,
    runs: CriticRuns,
    /// The picker's list, for the config it was built from.
    critic_specs: Mutex<Option<(Arc<LoadedConfig>, Vec<CriticSpecView>)>>,
    /// The log's `config_generation` this screen's config matches (viewers); `None`
    /// until the first snapshot, whose config was loaded at start.
    config_seen: Mutex<Option<u64>>,
}

impl LiveBackend {
    /// Starts following the event log; must run inside a tokio runtime.
    pub fn start(parts: LiveParts) -> Arc<Self> {
        let socket = Socket::from_config(&parts.config.borrow().config.sessions.tmux.socket);
        let feed = LogFeed::start(parts.events.path().to_path_buf(), FOLLOW_EVERY);
        Arc::new(Self {
            paths: parts.paths,
            config_flag: parts.config_flag,
            config: parts.config,
            sessions: parts.sessions,
            replier: parts.replier,
            critic_runner: parts.critics,
            shipper: parts.shipper,
            ship_looks: ShipPreviews::default(),
            events: parts.events,
            supervision: parts.supervision,
            socket,
            feed,
            rows: SessionRows::default(),
            runs: CriticRuns::default(),
            critic_specs: Mutex::new(None),
            config_seen: Mutex::new(None),
        })
    }

    fn loaded(&self) -> Arc<LoadedConfig> {
        Arc::clone(&self.config.borrow())
    }

    async fn take_snapshot(&self) -> Snapshot {
        self.feed.ready().await;
        let (questions, observed, rounds) = {
            let st = self.feed.state();
            (st.questions.clone(), st.observed.clone(), st.rounds.clone())
        };
        self.follow_reloads(observed.config_generation);
        let loaded = self.loaded();
        let rows = self
            .rows
            .rows(&self.sessions, &loaded.config, &self.paths, &questions)
            .await;
        let mut status = status_view(
            &self.supervision,
            &loaded,
            &observed,
            &self.paths,
            rows.tmux_unknown,
        );
        status.limit = rows.limit.clone().map(|limit| LimitView {
            starts: observed.waiting_starts.len(),
            ..limit
        });
        let now = time::OffsetDateTime::now_utc();
        let runs_of_listed = self.runs.views_with(&rounds, |item| {
            rows.sessions.iter().any(|s| &s.work_item == item)
        });
        Snapshot {
            sessions: rows.sessions,
            questions: questions
                .list()
                .iter()
                .map(|q| QuestionView {
                    work_item: q.work_item.clone(),
                    question: q.text.clone(),
                    asked_at: crate::time::parse_ts(&q.asked_at).unwrap_or(now),
                    comment_url: q.comment_url.clone(),
                })
                .collect(),
            permissions: rows.permissions,
            ships: self.ship_looks.views(&rows.ship_requests, &self.shipper),
            status,
            critics: self.critic_specs(&loaded),
            // This screen's rounds, and every other recorded round of a listed item.
            runs: runs_of_listed,
        }
    }

    /// A viewer reloads its config when the supervisor logged that it did.
    fn follow_reloads(&self, generation: u64) {
        let Supervision::Viewer { config } = &self.supervision else {
            return;
        };
        let mut seen = self.config_seen.lock().unwrap_or_else(|e| e.into_inner());
        let first = seen.is_none();
        if seen.replace(generation) == Some(generation) || first {
            return;
        }
        match crate::config::load(self.config_flag.as_deref()) {
            Ok(loaded) => {
                match crate::session::Settings::new(
                    &loaded.config,
                    loaded.path.clone(),
                    &self.paths,
                ) {
                    Ok(settings) => self.sessions.set_settings(settings),
                    Err(e) => tracing::warn!(error = %e, "templates not reloaded"),
                }
                config.send_replace(Arc::new(loaded));
            }
            Err(e) => {
                tracing::warn!(error = %e, "the config the supervisor reloaded does not load here")
            }
        }
    }

    fn critic_specs(&self, loaded: &Arc<LoadedConfig>) -> Vec<CriticSpecView> {
        let mut cache = self.critic_specs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((for_config, specs)) = cache.as_ref()
            && Arc::ptr_eq(for_config, loaded)
        {
            return specs.clone();
        }
        let entries = crate::critic::entries(&loaded.config);
        let specs: Vec<CriticSpecView> = crate::critic::listing(&entries)
            .into_iter()
            .map(|l| CriticSpecView {
                name: l.name.unwrap_or_else(|| format!("critics[{}]", l.index)),
                harness: l.harness,
                model: l.model,
                problem: l.error,
            })
            .collect();
        *cache = Some((Arc::clone(loaded), specs.clone()));
        specs
    }
}

impl Backend for LiveBackend {
    fn snapshot(&self) -> BoxFuture<'_, Snapshot> {
        Box::pin(self.take_snapshot())
    }

    fn recent_events(&self, limit: usize) -> BoxFuture<'_, Vec<Event>> {
        let path = self.feed.path().to_path_buf();
        Box::pin(async move {
            let read = tokio::task::spawn_blocking(move || {
                crate::events::tail_retained(&path, limit, &Filter::default())
            })
            .await;
            match read {
                Ok(Ok(tail)) => tail.records.into_iter().map(|r| r.event).collect(),
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "event log history unreadable");
                    Vec::new()
                }
                Err(e) => {
                    tracing::error!(error = %e, "reading the event log history failed");
                    Vec::new()
                }
            }
        })
    }

    fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.feed.subscribe()
    }

    fn capture_pane<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
    ) -> BoxFuture<'a, Result<String, ActionError>> {
        Box::pin(self.capture(work_item))
    }

    fn reply<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
        text: &'a str,
        over_budget: bool,
    ) -> BoxFuture<'a, ActionResult> {
        Box::pin(self.do_reply(work_item, text, over_budget))
    }

    fn start<'a>(&'a self, work_item: &'a WorkItemRef) -> BoxFuture<'a, ActionResult> {
        Box::pin(self.do_start(work_item))
    }

    fn pause<'a>(&'a self, work_item: &'a WorkItemRef) -> BoxFuture<'a, ActionResult> {
        Box::pin(async move { self.toggle(work_item, true) })
    }

    fn resume<'a>(&'a self, work_item: &'a WorkItemRef) -> BoxFuture<'a, ActionResult> {
        Box::pin(async move { self.toggle(work_item, false) })
    }

    fn stop<'a>(&'a self, work_item: &'a WorkItemRef) -> BoxFuture<'a, ActionResult> {
        Box::pin(self.do_stop(work_item))
    }

    fn deliver_held<'a>(&'a self, work_item: &'a WorkItemRef) -> BoxFuture<'a, ActionResult> {
        Box::pin(async move {
            let left = self
                .sessions
                .deliver_by_hand(work_item, std::time::Duration::from_secs(10))
                .await
                .map_err(|e| match e {
                    ByHandError::Registry(_) | ByHandError::NotTaken(_) => {
                        ActionError::Failed(e.to_string())
                    }
                    _ => ActionError::Refused(e.to_string()),
                })?;
            Ok(format!(
                "Delivered one held delivery to {}; {left} still held",
                crate::tui::text::short_ref(work_item)
            ))
        })
    }

    fn answer_permission<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
        request_id: &'a str,
        approve: bool,
    ) -> BoxFuture<'a, ActionResult> {
        Box::pin(self.answer(work_item, request_id, approve))
    }

    fn dismiss_question<'a>(&'a self, work_item: &'a WorkItemRef) -> BoxFuture<'a, ActionResult> {
        Box::pin(async move { self.dismiss(work_item) })
    }

    fn run_critic<'a>(
        &'a self,
        critic: &'a str,
        work_item: &'a WorkItemRef,
    ) -> BoxFuture<'a, ActionResult> {
        Box::pin(async move { self.start_critic(critic, work_item) })
    }

    fn post_critic<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, ActionResult> {
        Box::pin(self.runs.post(run, &self.critic_runner))
    }

    fn open_url<'a>(&'a self, url: &'a str) -> BoxFuture<'a, ActionResult> {
        Box::pin(async move { attach::open_url(url) })
    }

    fn diff<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
    ) -> BoxFuture<'a, Result<String, super::backend::ActionError>> {
        Box::pin(self.diff_text(work_item))
    }

    fn review_material<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
    ) -> BoxFuture<'a, crate::tui::diff_view::ReviewMaterial> {
        Box::pin(self.material(work_item))
    }

    fn save_comment<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
        comment: &'a crate::session::review::ReviewComment,
    ) -> BoxFuture<'a, ActionResult> {
        Box::pin(self.keep_comment(work_item, comment))
    }

    fn send_review<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
        comments: &'a [crate::session::review::ReviewComment],
        over_budget: bool,
    ) -> BoxFuture<'a, ActionResult> {
        Box::pin(self.send_comments(work_item, comments, over_budget))
    }

    fn discard_review<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
        ids: &'a [String],
    ) -> BoxFuture<'a, ActionResult> {
        Box::pin(self.drop_comments(work_item, ids))
    }

    fn attach<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
        read_only: bool,
    ) -> BoxFuture<'a, Result<AttachPlan, ActionError>> {
        Box::pin(async move { self.attach_plan(work_item, read_only) })
    }

    fn hosts(&self) -> Vec<HostView> {
        let hosts = self.sessions.hosts().iter();
        hosts
            .map(|h| HostView {
                name: h.name().to_string(),
                state: h.transport.state(),
            })
            .collect()
    }

    fn ship_preview<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
    ) -> BoxFuture<'a, Result<crate::session::ship::Preview, ActionError>> {
        Box::pin(self.ship_look(work_item))
    }

    fn ship<'a>(
        &'a self,
        work_item: &'a WorkItemRef,
        seen_head: &'a str,
    ) -> BoxFuture<'a, ActionResult> {
        Box::pin(self.do_ship(work_item, seen_head))
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
