//! What the app server sends a client unasked, typed as far as the-loop acts on it:
//! approval requests (server→client requests awaiting an answer), the turn's start and
//! end, a request resolved elsewhere, a thread started. The rest passes as `Other`.

use serde_json::Value;

/// What an approval request asks about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalKind {
    /// `item/commandExecution/requestApproval`: run a command.
    Command,
    /// `item/fileChange/requestApproval`: apply a file change.
    FileChange,
}

/// An approval the server waits on: the request to answer, and what it asks.
#[derive(Debug, Clone, PartialEq)]
pub struct Approval {
    /// The JSON-RPC id to answer (a number or a string, as the server sent it).
    pub request_id: Value,
    pub kind: ApprovalKind,
    pub thread: String,
    pub turn: String,
    pub item: String,
    /// The exact command (a command approval).
    pub command: Option<String>,
    pub cwd: Option<String>,
    pub reason: Option<String>,
    /// The decisions the server offers (`accept`, `decline`, …), as sent.
    pub available: Vec<Value>,
}

/// One message the server sent unasked.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    Approval(Approval),
    /// Another server request (user input, MCP elicitation, …): the-loop does not answer
    /// it; the TUI in the pane does.
    OtherRequest {
        method: String,
        params: Value,
    },
    TurnStarted {
        thread: String,
        turn: String,
    },
    /// `status`: `completed`, `interrupted` or `failed`.
    TurnCompleted {
        thread: String,
        turn: String,
        status: String,
    },
    /// A server request answered (by any client) or withdrawn.
    Resolved {
        thread: String,
        request_id: Value,
    },
    ThreadStarted {
        thread: String,
        ephemeral: bool,
        cwd: String,
    },
    Other {
        method: String,
        params: Value,
    },
}

fn text(value: &Value, key: &str) -> String {
    value[key].as_str().unwrap_or_default().to_string()
}

fn optional(value: &Value, key: &str) -> Option<String> {
    value[key].as_str().map(str::to_string)
}

impl Inbound {
    /// A server request (`id` and `method`).
    pub fn request(id: Value, method: &str, params: Value) -> Self {
        let kind = match method {
            "item/commandExecution/requestApproval" => ApprovalKind::Command,
            "item/fileChange/requestApproval" => ApprovalKind::FileChange,
            _ => {
                return Self::OtherRequest {
                    method: method.to_string(),
                    params,
                };
            }
        };
        Self::Approval(Approval {
            request_id: id,
            kind,
            thread: text(&params, "threadId"),
            turn: text(&params, "turnId"),
            item: text(&params, "itemId"),
            command: optional(&params, "command"),
            cwd: optional(&params, "cwd"),
            reason: optional(&params, "reason"),
            available: params["availableDecisions"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
        })
    }

    /// A notification (`method`, no `id`).
    pub fn notification(method: &str, params: Value) -> Self {
        match method {
            "turn/started" => Self::TurnStarted {
                thread: text(&params, "threadId"),
                turn: text(&params["turn"], "id"),
            },
            "turn/completed" => Self::TurnCompleted {
                thread: text(&params, "threadId"),
                turn: text(&params["turn"], "id"),
                status: text(&params["turn"], "status"),
            },
            "serverRequest/resolved" => Self::Resolved {
                thread: text(&params, "threadId"),
                request_id: params["requestId"].clone(),
            },
            "thread/started" => Self::ThreadStarted {
                thread: text(&params["thread"], "id"),
                ephemeral: params["thread"]["ephemeral"].as_bool().unwrap_or(false),
                cwd: text(&params["thread"], "cwd"),
            },
            _ => Self::Other {
                method: method.to_string(),
                params,
            },
        }
    }

    /// The thread it concerns, when it names one.
    pub fn thread(&self) -> Option<&str> {
        match self {
            Self::Approval(a) => Some(&a.thread),
            Self::TurnStarted { thread, .. }
            | Self::TurnCompleted { thread, .. }
            | Self::Resolved { thread, .. }
            | Self::ThreadStarted { thread, .. } => Some(thread),
            Self::OtherRequest { .. } | Self::Other { .. } => None,
        }
    }
}
