//! The event log (SPEC §10): one enum of event types, the record envelope, and the
//! JSONL writer and reader.
//!
//! Every decision the product takes is one line in `<state>/events.jsonl`. The set of
//! event types is [`EventType::ALL`]; `docs/events.md` documents each and a test keeps the
//! two equal.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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
    SessionRespawned => "session.respawned",
    SessionResumeFailed => "session.resume_failed",
    SessionPaused => "session.paused",
    SessionResumed => "session.resumed",
    SessionStopped => "session.stopped",
    SessionClosed => "session.closed",
    SessionReset => "session.reset",
    SessionAwaitingInput => "session.awaiting_input",
    SessionReplySent => "session.reply_sent",
    SessionQuestionDismissed => "session.question_dismissed",
    CriticStarted => "critic.started",
    CriticFinished => "critic.finished",
    CriticPosted => "critic.posted",
    StateCorrupt => "state.corrupt",
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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Debug,
    Info,
    Warning,
    Error,
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

    /// Adds a field; `null` values are dropped (SPEC §10: null fields are omitted).
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        let value = value.into();
        if !value.is_null() {
            self.fields.insert(key.to_string(), value);
        }
        self
    }

    /// The `work_item` field, if any.
    pub fn work_item(&self) -> Option<&str> {
        self.fields.get("work_item").and_then(Value::as_str)
    }
}
