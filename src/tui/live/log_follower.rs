//! The event log as the screen sees it, one path for both roles: a task reads the
//! backlog once (open questions and the status the log tells), then follows the file —
//! across rotations — and broadcasts what is appended. Following the file rather than
//! the supervisor's in-process broadcast is what shows events written by other
//! processes — an agent's `the-loop ask`, a `the-loop reply`, another screen — and it is
//! all a viewer has.
//!
//! The backlog is bounded (SPEC §15.5): the open questions come from the log's
//! checkpoint plus what was appended since, the status from the last few MiB before the
//! backend was built (back to the last `supervisor.started`), so a long history costs
//! the first frame nothing. Only events appended after the backend was built are
//! broadcast, so the Events pane gets them once (the screen loads its history
//! separately and drops what it already has).

use crate::events::{Event, EventType, Filter, Follower};
use crate::session::OpenQuestions;
use crate::tui::backend::{PollSummary, WebhookState};
use serde_json::Value;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;

/// How many live events may wait for a slow screen before it is told it lagged.
const CHANNEL: usize = 4096;

/// How far back the status the log tells is looked for.
const STATUS_WINDOW: u64 = 4 * 1024 * 1024;

/// What the log says about the supervisor, for a screen that does not run it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observed {
    pub last_poll: Option<PollSummary>,
    pub webhook: WebhookState,
    /// The last `config.reload_failed` error, until a `config.reloaded`.
    pub reload_error: Option<String>,
    /// Counts `config.reloaded` events: a viewer reloads its config when it changes.
    pub config_generation: u64,
    /// Items whose start waits on a limit (`session.spawn_held`), until it spawned,
    /// failed or was refused.
    pub waiting_starts: std::collections::BTreeSet<String>,
}

impl Observed {
    pub fn observe(&mut self, event: &Event) {
        match event.event {
            EventType::PollCycle => self.last_poll = PollSummary::from_event(event),
            EventType::SupervisorStarted => {
                // A new supervisor: what the last one said no longer holds.
                *self = Self {
                    config_generation: self.config_generation,
                    ..Self::default()
                };
            }
            EventType::ServerStarted => {
                self.webhook = WebhookState::Listening {
                    listen: event.str_field("listen").unwrap_or("?").to_string(),
                    signed: event
                        .fields
                        .get("signed")
                        .and_then(Value::as_bool)
                        .unwrap_or(true),
                };
            }
            EventType::ServerFailed => {
                let error = event.str_field("error").unwrap_or("the server stopped");
                self.webhook = WebhookState::Failed(error.to_string());
            }
            EventType::SessionSpawnHeld => {
                if let Some(item) = event.str_field("work_item") {
                    self.waiting_starts.insert(item.to_string());
                }
            }
            EventType::SessionSpawned | EventType::SessionSpawnFailed => self.start_ended(event),
            EventType::ControlRefused if event.str_field("keyword") == Some("start") => {
                self.start_ended(event);
            }
            EventType::ConfigReloaded => {
                self.reload_error = None;
                self.config_generation += 1;
            }
            EventType::ConfigReloadFailed => {
                let error = event
                    .str_field("error")
                    .unwrap_or("the new config is invalid");
                self.reload_error = Some(error.to_string());
            }
            _ => {}
        }
    }
}

impl Observed {
    fn start_ended(&mut self, event: &Event) {
        if let Some(item) = event.str_field("work_item") {
            self.waiting_starts.remove(item);
        }
    }
}

/// Everything derived from the log so far.
#[derive(Debug, Clone, Default)]
pub struct FeedState {
    pub questions: OpenQuestions,
    pub observed: Observed,
    /// Every recorded critic round, whichever process ran it (SPEC §17.7).
    pub rounds: super::rounds::RoundLog,
}

impl FeedState {
    fn observe(&mut self, event: &Event) {
        self.questions.observe(event);
        self.observed.observe(event);
        self.rounds.observe(event);
    }
}

/// The running follower. Dropping it stops the task.
pub struct LogFeed {
    path: PathBuf,
    tx: broadcast::Sender<Event>,
    state: Arc<Mutex<FeedState>>,
    ready: watch::Receiver<bool>,
    task: JoinHandle<()>,
}

impl LogFeed {
    /// Starts following `path` (must run inside a tokio runtime), checking for new lines
    /// every `every`. Events appended from now on are broadcast.
    pub fn start(path: PathBuf, every: Duration) -> Self {
        let broadcast_from = current_end(&path);
        let (tx, _) = broadcast::channel(CHANNEL);
        let state = Arc::new(Mutex::new(FeedState::default()));
        let (ready_tx, ready) = watch::channel(false);
        let task = tokio::spawn(follow(
            path.clone(),
            broadcast_from,
            every,
            tx.clone(),
            Arc::clone(&state),
            ready_tx,
        ));
        Self {
            path,
            tx,
            state,
            ready,
            task,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.tx.subscribe()
    }

    /// Waits until the backlog has been read (open questions are complete).
    pub async fn ready(&self) {
        let mut ready = self.ready.clone();
        // An error means the task ended; whatever it read is all there is.
        let _ = ready.wait_for(|r| *r).await;
    }

    pub fn state(&self) -> MutexGuard<'_, FeedState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for LogFeed {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The offset just past the last complete line now (0 for a missing or unreadable log).
fn current_end(path: &Path) -> u64 {
    Follower::from_end(path, Filter::default()).map_or(0, |f| f.position())
}

async fn follow(
    path: PathBuf,
    broadcast_from: u64,
    every: Duration,
    tx: broadcast::Sender<Event>,
    state: Arc<Mutex<FeedState>>,
    ready: watch::Sender<bool>,
) {
    let backlog = {
        let path = path.clone();
        tokio::task::spawn_blocking(move || read_backlog(&path, broadcast_from)).await
    };
    let position = match backlog {
        Ok(Ok(backlog)) => {
            *state.lock().unwrap_or_else(|e| e.into_inner()) = backlog.state;
            backlog.position
        }
        Ok(Err(e)) => {
            tracing::warn!(path = %path.display(), error = %e, "event log unreadable; following it from its end");
            broadcast_from
        }
        Err(e) => {
            tracing::error!(error = %e, "reading the event log failed");
            broadcast_from
        }
    };
    ready.send_replace(true);

    let mut follower = Follower::from_offset(&path, position, Filter::default());
    let mut ticker = tokio::time::interval(every);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_error = None;
    loop {
        ticker.tick().await;
        // One `open` + `fstat` when nothing changed: cheap enough to stay on the runtime.
        match follower.poll() {
            Ok(records) if records.is_empty() => {}
            Ok(records) => {
                last_error = None;
                let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
                for record in &records {
                    st.observe(&record.event);
                }
                drop(st);
                for record in records {
                    let _ = tx.send(record.event);
                }
            }
            Err(e) => {
                let text = e.to_string();
                if last_error.as_deref() != Some(text.as_str()) {
                    tracing::warn!(path = %path.display(), error = %text, "cannot follow the event log");
                    last_error = Some(text);
                }
            }
        }
    }
}

struct Backlog {
    state: FeedState,
    /// Where following continues.
    position: u64,
}

/// The state the backlog implies, read in bounded time: the open questions from the
/// checkpoint (and what came after it), the status from the window before
/// `broadcast_from`. Following continues at `broadcast_from`; the events from there on
/// are observed again as they are broadcast, which changes nothing (observing is
/// idempotent for questions, and the status window stops where following starts).
fn read_backlog(path: &Path, broadcast_from: u64) -> io::Result<Backlog> {
    let (questions, _) = OpenQuestions::catch_up(path, false)?;
    let window = crate::events::tail_window(
        path,
        Some(broadcast_from),
        usize::MAX,
        &Filter::default(),
        STATUS_WINDOW,
    )?;
    let mut observed = Observed::default();
    let since_start = window
        .records
        .iter()
        .rposition(|r| r.event.event == EventType::SupervisorStarted)
        .unwrap_or(0);
    for record in &window.records[since_start..] {
        observed.observe(&record.event);
    }
    // Critic rounds of other processes (SPEC §17.7), as far back as the bounded window.
    let mut rounds = super::rounds::RoundLog::default();
    for record in &window.records {
        rounds.observe(&record.event);
    }
    Ok(Backlog {
        state: FeedState {
            questions,
            observed,
            rounds,
        },
        position: broadcast_from,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{EventLog, Level, Source};

    fn asked(item: &str, question: &str) -> Event {
        Event::new(Source::Cli, EventType::SessionAwaitingInput)
            .with("work_item", item)
            .with("question", question)
    }

    #[tokio::test]
    async fn the_backlog_builds_state_and_only_new_events_are_broadcast() {
        let dir = tempfile::tempdir().unwrap();
        let log = EventLog::open_path(dir.path().join("events.jsonl"));
        log.emit(asked("github:o/r#1", "Which way?")).unwrap();
        log.emit(
            Event::new(Source::Poll, EventType::PollCycle)
                .with("requests", 3)
                .with("rate_remaining", 4990),
        )
        .unwrap();
        let feed = LogFeed::start(log.path().to_path_buf(), Duration::from_millis(10));
        let mut rx = feed.subscribe();
        feed.ready().await;
        {
            let st = feed.state();
            assert_eq!(st.questions.len(), 1);
            let poll = st.observed.last_poll.as_ref().unwrap();
            assert_eq!(poll.requests, 3);
            assert_eq!(poll.rate_remaining, Some(4990));
        }
        assert!(rx.try_recv().is_err(), "the backlog is not broadcast");

        log.emit(
            Event::new(Source::Cli, EventType::SessionReplySent).with("work_item", "github:o/r#1"),
        )
        .unwrap();
        let got = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got.event, EventType::SessionReplySent);
        assert!(feed.state().questions.is_empty(), "the reply closed it");
    }

    #[test]
    fn the_log_tells_server_and_reload_state() {
        let mut seen = Observed::default();
        seen.observe(
            &Event::new(Source::Webhook, EventType::ServerStarted)
                .with("listen", "127.0.0.1:8787")
                .with("signed", false),
        );
        assert_eq!(
            seen.webhook,
            WebhookState::Listening {
                listen: "127.0.0.1:8787".into(),
                signed: false
            }
        );
        seen.observe(
            &Event::new(Source::Cli, EventType::ConfigReloadFailed)
                .level(Level::Error)
                .with("error", "config.yaml:3:1: bad"),
        );
        assert_eq!(seen.reload_error.as_deref(), Some("config.yaml:3:1: bad"));
        seen.observe(&Event::new(Source::Cli, EventType::ConfigReloaded));
        assert_eq!(seen.reload_error, None);
        assert_eq!(seen.config_generation, 1);
        seen.observe(
            &Event::new(Source::Tui, EventType::SupervisorStarted)
                .with("warning", "empty allowlist"),
        );
        assert_eq!(
            seen.webhook,
            WebhookState::Off,
            "a new supervisor starts over"
        );
        assert_eq!(seen.config_generation, 1, "kept across supervisors");
    }
}
