//! The state a harness reports about itself (SPEC §17.3), kept in the session's record,
//! and the pure state machine that moves it.
//!
//! - `working` after a prompt was submitted or a tool started or finished;
//! - `awaiting-permission` from a permission request until it is resolved — by the
//!   operator through the-loop (`approved` / `denied`), or in the pane (`elsewhere`:
//!   a later report shows the dialog was answered there);
//! - `idle` after the turn ended (or Claude's idle reminder);
//! - `exited` after the harness said its session ended.
//!
//! [`apply`] takes the stored report and one [`Signal`] and returns the next report and
//! what the log should say ([`Outcome`]). Reports are written by the short-lived
//! `the-loop hook` processes, each under the record's lock, in the order the harness
//! sent them.

use serde::{Deserialize, Serialize};

/// How long a summary of a permission request may be (SPEC §17.3).
pub const SUMMARY_CHARS: usize = 200;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReportedState {
    Working,
    AwaitingPermission,
    Idle,
    Exited,
}

impl ReportedState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::AwaitingPermission => "awaiting-permission",
            Self::Idle => "idle",
            Self::Exited => "exited",
        }
    }
}

/// How a permission request was resolved (`session.permission_resolved`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Approved,
    Denied,
    /// Answered in the pane (or the dialog went away) without the-loop.
    Elsewhere,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approved => "approved",
            Self::Denied => "denied",
            Self::Elsewhere => "elsewhere",
        }
    }
}

/// A decision being sent to the pane: set before the key goes out, so a report that
/// races it (the approved tool finishing at once) resolves the request with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    pub decision: Decision,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    /// Where the answer was given (`tui`, `cli`): the resolution is logged as theirs
    /// when the tool's own report settles it first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<crate::events::Source>,
}

/// A tool call as the harness described it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The harness's id of the call (`tool_use_id`), when it sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub tool: String,
    /// One sanitized line: the Bash command, the file path, … (see [`summarize`]).
    pub summary: String,
}

/// An open permission request: the harness shows its dialog and waits for an answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRequest {
    /// Names this request (the tool call's id when known): an answer names the request
    /// it was given for, so it never lands on a newer dialog.
    pub id: String,
    pub tool: String,
    pub summary: String,
    pub requested_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answering: Option<Answer>,
}

/// What the harness last reported, in the session's record (`reported`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reported {
    /// Which harness reports (`claude`, `codex`): codex reports only turn ends.
    pub harness: String,
    pub state: ReportedState,
    /// When the last report arrived.
    pub at: String,
    /// The last report's name (`PreToolUse`, `agent-turn-complete`, …).
    pub event: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission: Option<PermissionRequest>,
    /// The last tool call started: a permission request that follows it is for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_tool: Option<ToolCall>,
    /// The harness's own conversation id, as it reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<String>,
    /// The model the harness said it runs (Claude Code's `SessionStart`), as it said
    /// it: reported by a process in the agent's pane, so shown only after
    /// `guard::attribution_for` cleaned it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// How many prompts the harness has reported submitted: a delivery that sees it
    /// grow after its Enter knows the Enter was taken (`deliver::confirm_submitted`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub prompts: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One report, reduced to what moves the state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signal {
    SessionStarted {
        conversation: Option<String>,
        model: Option<String>,
    },
    PromptSubmitted,
    ToolStarting(ToolCall),
    PermissionAsked {
        tool: String,
        summary: String,
    },
    ToolFinished {
        id: Option<String>,
    },
    /// Claude's reminder that a permission dialog is still waiting.
    PermissionReminder {
        message: String,
    },
    /// Claude's reminder that it has been idle.
    IdleReminder,
    /// Any other notification: nothing changes.
    Notified,
    TurnEnded,
    /// The turn ended on an API error (Claude's `StopFailure`): the limits read it
    /// (`session::limits`).
    TurnFailed {
        error: String,
        message: String,
    },
    SessionEnded,
}

/// What a report means for the event log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    PermissionRequested(PermissionRequest),
    PermissionResolved {
        request: PermissionRequest,
        decision: Decision,
        actor: Option<String>,
    },
    TurnEnded,
}

/// The next report after `signal` (named `event`) from `harness`, at `now`.
pub fn apply(
    previous: Option<&Reported>,
    harness: &str,
    event: &str,
    signal: Signal,
    now: &str,
) -> (Reported, Vec<Outcome>) {
    let mut next = previous.cloned().unwrap_or_else(|| Reported {
        harness: harness.to_string(),
        state: ReportedState::Idle,
        at: now.to_string(),
        event: String::new(),
        permission: None,
        last_tool: None,
        conversation: None,
        model: None,
        prompts: 0,
    });
    next.harness = harness.to_string();
    next.at = now.to_string();
    next.event = event.to_string();
    let mut out = Vec::new();
    let state = match signal {
        Signal::SessionStarted {
            conversation,
            model,
        } => {
            next.conversation = conversation.or(next.conversation);
            next.model = model.or(next.model);
            ReportedState::Idle
        }
        Signal::PromptSubmitted => {
            next.prompts += 1;
            // A new prompt: the dialog was answered (denied, with Esc) in the pane.
            resolve_pending(&mut next, &mut out);
            ReportedState::Working
        }
        Signal::ToolStarting(call) => {
            next.last_tool = Some(call);
            ReportedState::Working
        }
        Signal::ToolFinished { id } => {
            // Another call finishing (parallel tools) does not answer this dialog.
            let answers = next.permission.as_ref().is_some_and(|p| {
                id.is_none() || Some(&p.id) == id.as_ref() || p.id.starts_with(MINTED)
            });
            if answers {
                resolve_pending(&mut next, &mut out);
            }
            if next
                .last_tool
                .as_ref()
                .is_some_and(|c| id.is_none() || c.id == id)
            {
                next.last_tool = None;
            }
            ReportedState::Working
        }
        Signal::PermissionAsked { tool, summary } => {
            let same = next
                .permission
                .as_ref()
                .is_some_and(|p| p.tool == tool && p.summary == summary);
            if !same {
                resolve_pending(&mut next, &mut out);
                let id = next
                    .last_tool
                    .as_ref()
                    .filter(|c| c.tool == tool && c.summary == summary)
                    .and_then(|c| c.id.clone())
                    .unwrap_or_else(mint_id);
                let request = PermissionRequest {
                    id,
                    tool,
                    summary,
                    requested_at: now.to_string(),
                    answering: None,
                };
                out.push(Outcome::PermissionRequested(request.clone()));
                next.permission = Some(request);
            }
            ReportedState::AwaitingPermission
        }
        Signal::PermissionReminder { message } => {
            if next.permission.is_none() {
                // The request itself was not reported (its hook failed): the reminder
                // is the first word of it. Name the last tool started, if any.
                let (id, tool, summary) = match &next.last_tool {
                    Some(c) => (c.id.clone(), c.tool.clone(), c.summary.clone()),
                    None => (None, "unknown".into(), one_line(&message)),
                };
                let request = PermissionRequest {
                    id: id.unwrap_or_else(mint_id),
                    tool,
                    summary,
                    requested_at: now.to_string(),
                    answering: None,
                };
                out.push(Outcome::PermissionRequested(request.clone()));
                next.permission = Some(request);
            }
            ReportedState::AwaitingPermission
        }
        Signal::IdleReminder => {
            resolve_pending(&mut next, &mut out);
            ReportedState::Idle
        }
        Signal::Notified => previous.map_or(ReportedState::Idle, |p| p.state),
        Signal::TurnEnded | Signal::TurnFailed { .. } => {
            resolve_pending(&mut next, &mut out);
            out.push(Outcome::TurnEnded);
            ReportedState::Idle
        }
        Signal::SessionEnded => {
            resolve_pending(&mut next, &mut out);
            ReportedState::Exited
        }
    };
    next.state = if next.permission.is_some() {
        ReportedState::AwaitingPermission
    } else {
        state
    };
    (next, out)
}

/// The prefix of a request id the-loop made up (the harness sent no tool call id).
const MINTED: &str = "perm-";

fn mint_id() -> String {
    format!("{MINTED}{}", uuid::Uuid::new_v4().simple())
}

/// The open request is over: by the answer being sent, else it was answered in the
/// pane.
fn resolve_pending(next: &mut Reported, out: &mut Vec<Outcome>) {
    if let Some(request) = next.permission.take() {
        let (decision, actor) = match &request.answering {
            Some(a) => (a.decision, a.actor.clone()),
            None => (Decision::Elsewhere, None),
        };
        out.push(Outcome::PermissionResolved {
            request,
            decision,
            actor,
        });
    }
}

/// The operator's answer to request `id` took effect (its key was sent): the request
/// is resolved with `decision`, unless a report already did (then `None`).
pub fn answered(
    reported: &mut Reported,
    id: &str,
    decision: Decision,
    actor: Option<String>,
    now: &str,
) -> Option<Outcome> {
    let request = reported.permission.take_if(|p| p.id == id)?;
    reported.at = now.to_string();
    reported.event = "the-loop".to_string();
    reported.state = match decision {
        Decision::Approved => ReportedState::Working,
        Decision::Denied | Decision::Elsewhere => ReportedState::Idle,
    };
    Some(Outcome::PermissionResolved {
        request,
        decision,
        actor,
    })
}

/// The one-line summary of a tool call: the Bash command, the file path, the URL or
/// pattern, else the input as compact JSON — sanitized, on one line, at most
/// [`SUMMARY_CHARS`] characters.
pub fn summarize(tool: &str, input: &serde_json::Value) -> String {
    let field = |k: &str| input.get(k).and_then(serde_json::Value::as_str);
    let text = match tool {
        "Bash" => field("command"),
        _ => [
            "file_path",
            "notebook_path",
            "path",
            "url",
            "pattern",
            "command",
        ]
        .iter()
        .find_map(|k| field(k)),
    };
    let text = text.map_or_else(|| input.to_string(), str::to_string);
    one_line(&text)
}

/// Sanitized (as pastes are), newlines and tabs as spaces, runs of spaces kept as they
/// are, cut to [`SUMMARY_CHARS`] characters with `…`.
pub fn one_line(text: &str) -> String {
    let clean = crate::guard::sanitize(text).replace(['\n', '\t'], " ");
    let clean = clean.trim();
    if clean.chars().count() <= SUMMARY_CHARS {
        return clean.to_string();
    }
    let mut cut: String = clean.chars().take(SUMMARY_CHARS - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
