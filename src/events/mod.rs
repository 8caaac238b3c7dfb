//! The event log (SPEC §10): one enum of event types, the record envelope, and the
//! JSONL writer, reader and follower.
//!
//! Every decision the product takes is one line in `<state>/events.jsonl`. The set of
//! event types is [`EventType::ALL`]; `docs/events.md` documents each and a test keeps the
//! two equal.
//!
//! - [`EventLog`] appends (any process, concurrently) and fans events out in-process.
//! - [`EventReader`] streams the file with a [`Filter`]; [`tail`] loads the last N
//!   matching events by reading backwards; [`Follower`] picks up appended lines.
//! - A line that is not valid JSON, lacks an envelope key, or names an event type this
//!   binary does not know is skipped by every reader and counted (see [`ReadStats`]).

pub mod checkpoint;
mod follow;
#[cfg(any(test, feature = "test-support"))]
pub mod lines;
mod log;
mod read;
mod record;
pub mod rotate;

pub use follow::Follower;
pub use log::{EmitError, EventLog, Refresh};
pub use read::{
    EventReader, Filter, FilterError, ReadStats, Record, Tail, parsed_lines, tail, tail_retained,
    tail_window,
};
use record::RESERVED_KEYS;
pub use record::{ParseError, parse_line};
pub use rotate::Rotation;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::str::FromStr;

macro_rules! event_types {
    ($($variant:ident => $name:literal,)*) => {
        /// Every event type the product emits. Adding one means documenting it in
        /// `docs/events.md` (a test checks).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum EventType { $($variant,)* }

        impl EventType {
            pub const ALL: &'static [EventType] = &[$(EventType::$variant,)*];

            /// The dotted name written to the log, e.g. `routing.dropped`.
            pub fn as_str(self) -> &'static str {
                match self { $(EventType::$variant => $name,)* }
            }

            pub fn from_name(name: &str) -> Option<Self> {
                match name { $($name => Some(EventType::$variant),)* _ => None }
            }
        }
    };
}

event_types! {
    SupervisorStarted => "supervisor.started",
    SupervisorStopped => "supervisor.stopped",
    ConfigReloaded => "config.reloaded",
    ConfigReloadFailed => "config.reload_failed",
    PollCycle => "poll.cycle",
    PollError => "poll.error",
    PollCommentFailed => "poll.comment_failed",
    WebhookReceived => "webhook.received",
    WebhookRejected => "webhook.rejected",
    RoutingRouted => "routing.routed",
    RoutingDropped => "routing.dropped",
    ControlStart => "control.start",
    ControlStop => "control.stop",
    ControlPause => "control.pause",
    ControlResume => "control.resume",
    ControlAmbiguous => "control.ambiguous",
    ControlRefused => "control.refused",
    DispatchQueued => "dispatch.queued",
    DispatchSucceeded => "dispatch.succeeded",
    DispatchFailed => "dispatch.failed",
    DispatchDropped => "dispatch.dropped",
    SessionSpawned => "session.spawned",
    SessionSpawnFailed => "session.spawn_failed",
    SessionSpawnHeld => "session.spawn_held",
    SessionRespawned => "session.respawned",
    SessionResumeFailed => "session.resume_failed",
    SessionPaused => "session.paused",
    SessionResumed => "session.resumed",
    SessionStopped => "session.stopped",
    SessionClosed => "session.closed",
    SessionReset => "session.reset",
    SessionAwaitingInput => "session.awaiting_input",
    SessionReplySent => "session.reply_sent",
    SessionReviewSent => "session.review_sent",
    SessionQuestionDismissed => "session.question_dismissed",
    SessionCommented => "session.commented",
    SessionPermissionRequested => "session.permission_requested",
    SessionPermissionResolved => "session.permission_resolved",
    SessionTurnEnded => "session.turn_ended",
    SessionDeliveryHeld => "session.delivery_held",
    SessionDeliveryReleased => "session.delivery_released",
    SessionUsage => "session.usage",
    SessionBudgetWarning => "session.budget_warning",
    SessionOverBudget => "session.over_budget",
    SessionLimitHit => "session.limit_hit",
    SessionLimitCleared => "session.limit_cleared",
    CriticStarted => "critic.started",
    CriticFinished => "critic.finished",
    CriticPosted => "critic.posted",
    ServerStarted => "server.started",
    ServerFailed => "server.failed",
    SessionReplyFailed => "session.reply_failed",
    StateCorrupt => "state.corrupt",
    WorkspaceCreated => "workspace.created",
    WorkspaceReused => "workspace.reused",
    WorkspaceFetchFailed => "workspace.fetch_failed",
    WorkspaceSetupFailed => "workspace.setup_failed",
    WorkspaceRemoved => "workspace.removed",
    WorkspaceKept => "workspace.kept",
    WorkspaceTrustFailed => "workspace.trust_failed",
    ShipRequested => "ship.requested",
    ShipRefused => "ship.refused",
    ShipPushed => "ship.pushed",
    ShipPrOpened => "ship.pr_opened",
    ShipFailed => "ship.failed",
    HostStateChanged => "host.state_changed",
}

impl std::fmt::Display for EventType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for EventType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for EventType {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        EventType::from_name(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown event type `{name}`")))
    }
}

/// Which part of the product wrote an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Poll,
    Webhook,
    Tui,
    Cli,
    Dispatch,
    Critic,
    /// `the-loop hook`, run by a harness to report its state (SPEC §17).
    Hook,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Poll => "poll",
            Source::Webhook => "webhook",
            Source::Tui => "tui",
            Source::Cli => "cli",
            Source::Dispatch => "dispatch",
            Source::Critic => "critic",
            Source::Hook => "hook",
        }
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How much an event matters; ordered so `--level warning` means "warning or worse".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Debug,
    Info,
    Warning,
    Error,
}

impl Level {
    pub const ALL: [Level; 4] = [Level::Debug, Level::Info, Level::Warning, Level::Error];

    pub fn as_str(self) -> &'static str {
        match self {
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Warning => "warning",
            Level::Error => "error",
        }
    }
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A level name that is not one of `debug`, `info`, `warning`, `error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown level `{0}`: expected one of debug, info, warning, error")]
pub struct LevelError(pub String);

impl FromStr for Level {
    type Err = LevelError;

    /// Case-insensitive; `warn` is accepted for `warning` because people type it.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "debug" => Ok(Level::Debug),
            "info" => Ok(Level::Info),
            "warning" | "warn" => Ok(Level::Warning),
            "error" => Ok(Level::Error),
            _ => Err(LevelError(s.to_string())),
        }
    }
}

/// One event-log record. `fields` follow the envelope keys; null fields are omitted.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub ts: String,
    pub source: Source,
    pub event: EventType,
    pub level: Level,
    pub pid: u32,
    pub fields: Map<String, Value>,
}

impl Event {
    /// A new `info` event stamped now with this process's pid.
    pub fn new(source: Source, event: EventType) -> Self {
        Self {
            ts: crate::time::now_ts(),
            source,
            event,
            level: Level::Info,
            pid: std::process::id(),
            fields: Map::new(),
        }
    }

    pub fn level(mut self, level: Level) -> Self {
        self.level = level;
        self
    }

    /// Adds a field (fields keep insertion order in the log line); `null` values are
    /// dropped (SPEC §10: null fields are omitted). An envelope key (`ts`, `event`, …)
    /// cannot be a field: it is ignored with a warning rather than forging the envelope.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        if RESERVED_KEYS.contains(&key) {
            tracing::warn!(key, event = %self.event, "event field uses an envelope key; ignored");
            return self;
        }
        let value = value.into();
        if !value.is_null() {
            self.fields.insert(key.to_string(), value);
        }
        self
    }

    /// Adds a field only when there is a value (`Option` reads better than `null`).
    pub fn with_opt(self, key: &str, value: Option<impl Into<Value>>) -> Self {
        match value {
            Some(v) => self.with(key, v),
            None => self,
        }
    }

    /// The `work_item` field, if any.
    pub fn work_item(&self) -> Option<&str> {
        self.fields.get("work_item").and_then(Value::as_str)
    }

    /// Every work item the event concerns: `work_item`, then the `work_items` array.
    pub fn work_items(&self) -> impl Iterator<Item = &str> {
        let list = self
            .fields
            .get("work_items")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str);
        self.work_item().into_iter().chain(list)
    }

    /// A string field, if present and a string.
    pub fn str_field(&self, key: &str) -> Option<&str> {
        self.fields.get(key).and_then(Value::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for t in EventType::ALL {
            assert_eq!(EventType::from_name(t.as_str()), Some(*t));
            assert!(seen.insert(t.as_str()), "duplicate name {t}");
            let (area, what) = t.as_str().split_once('.').unwrap();
            assert!(!area.is_empty() && !what.is_empty() && !what.contains('.'));
        }
        assert_eq!(EventType::from_name("routing.nope"), None);
    }

    #[test]
    fn levels_parse_and_order() {
        assert_eq!("WARN".parse::<Level>(), Ok(Level::Warning));
        assert_eq!("error".parse::<Level>(), Ok(Level::Error));
        let err = "loud".parse::<Level>().unwrap_err().to_string();
        assert!(
            err.contains("expected one of debug, info, warning, error"),
            "{err}"
        );
        assert!(Level::Debug < Level::Info && Level::Info < Level::Warning);
        assert!(Level::Warning < Level::Error);
    }

    #[test]
    fn with_drops_nulls_and_envelope_keys() {
        let e = Event::new(Source::Cli, EventType::SessionReset)
            .with("work_item", "github:o/r#1")
            .with("gone", Value::Null)
            .with("ts", "forged")
            .with_opt("none", None::<String>)
            .with_opt("some", Some(3));
        let keys: Vec<&str> = e.fields.keys().map(String::as_str).collect();
        assert_eq!(keys, ["work_item", "some"]);
        assert_ne!(e.ts, "forged");
    }

    #[test]
    fn work_items_lists_single_then_array() {
        let e = Event::new(Source::Poll, EventType::RoutingDropped)
            .with("work_item", "github:o/r#1")
            .with("work_items", vec!["github:o/r#2", "github:o/r#3"]);
        let all: Vec<&str> = e.work_items().collect();
        assert_eq!(all, ["github:o/r#1", "github:o/r#2", "github:o/r#3"]);
    }
}
