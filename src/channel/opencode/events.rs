//! What opencode's server tells on `GET /event` (server-sent events, one JSON object
//! `{type, properties}` per `data:` line), reduced to what a supervisor acts on.

use serde_json::Value;

/// The most of one event kept while its end has not come (a tool's output can be large).
const MAX_EVENT: usize = 8 << 20;

/// A session's status (`session.status`, `GET /session/status`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Idle,
    Busy,
    /// Waiting to try the model again (a rate limit, an error): `message` says why.
    Retry {
        message: String,
    },
}

impl Status {
    pub(super) fn parse(value: &Value) -> Option<Self> {
        match value["type"].as_str()? {
            "idle" => Some(Self::Idle),
            "busy" => Some(Self::Busy),
            "retry" => Some(Self::Retry {
                message: value["message"].as_str().unwrap_or_default().to_string(),
            }),
            _ => None,
        }
    }
}

/// A permission request (`permission.asked`, `GET /permission`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permission {
    /// `per_…`.
    pub id: String,
    /// `ses_…`.
    pub session: String,
    /// What is asked: `bash`, `edit`, `external_directory`, …
    pub permission: String,
    /// Exactly what (the command, the paths).
    pub patterns: Vec<String>,
    /// The tool call it stops, when it names one.
    pub call: Option<String>,
}

impl Permission {
    pub(super) fn parse(value: &Value) -> Option<Self> {
        Some(Self {
            id: value["id"].as_str()?.to_string(),
            session: value["sessionID"].as_str()?.to_string(),
            permission: value["permission"].as_str()?.to_string(),
            patterns: value["patterns"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p.as_str().map(str::to_string))
                .collect(),
            call: value["tool"]["callID"].as_str().map(str::to_string),
        })
    }
}

/// An answer to a permission request, as the server spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// Run it, this once.
    Once,
    /// Do not run it.
    Reject,
    /// Run it and never ask again for the pattern: only the TUI's operator gives it;
    /// the-loop never does.
    Always,
}

impl Reply {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Once => "once",
            Self::Reject => "reject",
            Self::Always => "always",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        match text {
            "once" => Some(Self::Once),
            "reject" => Some(Self::Reject),
            "always" => Some(Self::Always),
            _ => None,
        }
    }
}

/// An assistant message as `message.updated` tells it: the model's, its tokens and cost.
#[derive(Debug, Clone, PartialEq)]
pub struct AssistantMessage {
    pub session: String,
    /// `msg_…`.
    pub id: String,
    pub model: String,
    pub provider: String,
    pub input: u64,
    pub output: u64,
    pub reasoning: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    /// In USD, as opencode priced it (0 for a model it has no price for).
    pub cost: f64,
    /// The message is complete: its tokens are final.
    pub completed: bool,
}

impl AssistantMessage {
    fn parse(session: &str, info: &Value) -> Option<Self> {
        if info["role"] != "assistant" {
            return None;
        }
        let tokens = &info["tokens"];
        let n = |v: &Value| v.as_f64().map_or(0, |f| f.max(0.0) as u64);
        Some(Self {
            session: session.to_string(),
            id: info["id"].as_str()?.to_string(),
            model: info["modelID"].as_str().unwrap_or_default().to_string(),
            provider: info["providerID"].as_str().unwrap_or_default().to_string(),
            input: n(&tokens["input"]),
            output: n(&tokens["output"]),
            reasoning: n(&tokens["reasoning"]),
            cache_read: n(&tokens["cache"]["read"]),
            cache_write: n(&tokens["cache"]["write"]),
            cost: info["cost"].as_f64().unwrap_or(0.0),
            completed: info["time"]["completed"].is_number(),
        })
    }
}

/// One event of the server.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// `session.status` (and `session.idle`).
    Status { session: String, status: Status },
    /// `permission.asked`.
    PermissionAsked(Permission),
    /// `permission.replied`: by any client — the TUI, the-loop.
    PermissionReplied {
        session: String,
        request: String,
        reply: Option<Reply>,
    },
    /// `message.updated` of an assistant message.
    AssistantUpdated(AssistantMessage),
    /// Anything else (`server.connected`, parts, files, …).
    Other(String),
}

impl Event {
    /// The event in one `data:` payload.
    pub fn parse(data: &str) -> Option<Self> {
        let value: Value = serde_json::from_str(data).ok()?;
        let kind = value["type"].as_str()?.to_string();
        let props = &value["properties"];
        let session = || props["sessionID"].as_str().map(str::to_string);
        let event = match kind.as_str() {
            "session.status" => Self::Status {
                session: session()?,
                status: Status::parse(&props["status"])?,
            },
            "session.idle" => Self::Status {
                session: session()?,
                status: Status::Idle,
            },
            "permission.asked" => Self::PermissionAsked(Permission::parse(props)?),
            "permission.replied" => Self::PermissionReplied {
                session: session()?,
                request: props["requestID"].as_str()?.to_string(),
                reply: props["reply"].as_str().and_then(Reply::parse),
            },
            "message.updated" => match AssistantMessage::parse(&session()?, &props["info"]) {
                Some(message) => Self::AssistantUpdated(message),
                None => Self::Other(kind),
            },
            _ => Self::Other(kind),
        };
        Some(event)
    }

    /// The session it is about, when it names one.
    pub fn session(&self) -> Option<&str> {
        match self {
            Self::Status { session, .. } | Self::PermissionReplied { session, .. } => Some(session),
            Self::PermissionAsked(p) => Some(&p.session),
            Self::AssistantUpdated(m) => Some(&m.session),
            Self::Other(_) => None,
        }
    }
}

/// The `data:` payloads of the complete events at the front of `buffer`, taken out of it.
pub(super) fn take_events(buffer: &mut Vec<u8>) -> Vec<String> {
    let mut out = Vec::new();
    while let Some(end) = buffer.windows(2).position(|w| w == b"\n\n") {
        let block: Vec<u8> = buffer.drain(..end + 2).collect();
        let block = String::from_utf8_lossy(&block);
        let data: Vec<&str> = block
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        if !data.is_empty() {
            out.push(data.join("\n"));
        }
    }
    out
}

/// The events of one `GET /event`, in order; ends when the server closes it.
pub struct EventStream {
    response: reqwest::Response,
    buffer: Vec<u8>,
    ready: std::collections::VecDeque<Event>,
}

impl EventStream {
    pub(super) fn new(response: reqwest::Response) -> Self {
        Self {
            response,
            buffer: Vec::new(),
            ready: std::collections::VecDeque::new(),
        }
    }

    /// The next event; `None` once the stream ended (the server went away).
    pub async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(event);
            }
            let chunk = self.response.chunk().await.ok()??;
            self.buffer
                .extend(chunk.iter().copied().filter(|b| *b != b'\r'));
            for data in take_events(&mut self.buffer) {
                self.ready.extend(Event::parse(&data));
            }
            if self.buffer.len() > MAX_EVENT {
                self.buffer.clear();
            }
        }
    }
}
