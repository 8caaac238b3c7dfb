//! What the harnesses send to `the-loop hook` (SPEC §17.2, §17.5), read into
//! [`Signal`]s.
//!
//! Claude Code 2.1.197 writes one JSON object on the hook's stdin; every payload has
//! `session_id`, `transcript_path`, `cwd` and `hook_event_name`. Codex 0.171.0 runs its
//! `notify` program with one JSON argument, `{"type": "agent-turn-complete", …}`, and
//! its hooks with the same JSON on stdin as Claude Code's (plus `turn_id`, `model`,
//! `permission_mode`).
//! Anything else — another event, a field missing — is not an error: the hook ignores
//! what it does not need, so a newer harness never breaks a turn.

use super::state::{Signal, ToolCall, summarize};
use serde_json::Value;

/// Which harness is reporting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reporter {
    Claude,
    Codex,
}

impl Reporter {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Claude => "claude",
            Self::Codex => "codex",
        }
    }
}

/// One report: its name and what it means, `None` for reports that change nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub event: String,
    pub signal: Signal,
    /// Where the session's usage is read from (SPEC §20.1), accepted only as the
    /// session's own log (`session::usage::accept`).
    pub log: Option<UsageLog>,
    /// The codex thread the report is about (issue 41): a hook's `session_id`, a
    /// notice's `thread-id`. Codex titles a session on the side, with a thread of its
    /// own, and notifies its end: only the session's own thread moves its state.
    pub thread: Option<Thread>,
}

/// A codex thread a report names, and how it named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thread {
    pub id: String,
    /// Named by a hook, which codex runs only for the session's own turns: the first
    /// such names the session's thread. A `notify` notice runs for any thread.
    pub by_hook: bool,
}

/// The log a report names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UsageLog {
    /// Claude Code's `transcript_path`.
    Transcript(std::path::PathBuf),
    /// Codex's `thread-id`: its rollout is found under codex's home
    /// (`usage::codex::find_rollout`). Only hex digits and dashes are taken.
    CodexThread(String),
}

#[derive(Debug, thiserror::Error)]
pub enum PayloadError {
    #[error("the {0} hook payload is not a JSON object: {1}")]
    NotJson(&'static str, String),
}

/// Reads a payload of `reporter`.
pub fn parse(reporter: Reporter, payload: &[u8]) -> Result<Option<Report>, PayloadError> {
    let value: Value = serde_json::from_slice(payload)
        .map_err(|e| PayloadError::NotJson(reporter.as_str(), e.to_string()))?;
    if !value.is_object() {
        return Err(PayloadError::NotJson(
            reporter.as_str(),
            "expected an object".into(),
        ));
    }
    Ok(match reporter {
        Reporter::Claude => claude(&value),
        Reporter::Codex => codex(&value),
    })
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

fn claude(v: &Value) -> Option<Report> {
    let event = text(v, "hook_event_name")?;
    let tool = || text(v, "tool_name").unwrap_or_else(|| "unknown".into());
    let summary = || summarize(&tool(), v.get("tool_input").unwrap_or(&Value::Null));
    let signal = match event.as_str() {
        "SessionStart" => Signal::SessionStarted {
            conversation: text(v, "session_id"),
            // Claude Code 2.1.197 says which model the session runs.
            model: text(v, "model").filter(|m| !m.trim().is_empty()),
        },
        "UserPromptSubmit" => Signal::PromptSubmitted,
        "PreToolUse" => Signal::ToolStarting(ToolCall {
            id: text(v, "tool_use_id"),
            tool: tool(),
            summary: summary(),
        }),
        "PermissionRequest" => Signal::PermissionAsked {
            tool: tool(),
            summary: summary(),
        },
        "PostToolUse" => Signal::ToolFinished {
            id: text(v, "tool_use_id"),
        },
        "Notification" => match text(v, "notification_type").as_deref() {
            Some("permission_prompt") => Signal::PermissionReminder {
                message: text(v, "message").unwrap_or_default(),
            },
            Some("idle_prompt") => Signal::IdleReminder,
            _ => Signal::Notified,
        },
        "Stop" => Signal::TurnEnded,
        // Claude Code 2.1.197: `error` (`rate_limit`, `server_error`,
        // `authentication_failed`, …) and the text it showed, `last_assistant_message`.
        "StopFailure" => Signal::TurnFailed {
            error: text(v, "error").unwrap_or_default(),
            message: text(v, "last_assistant_message").unwrap_or_default(),
        },
        "SessionEnd" => Signal::SessionEnded,
        _ => return None,
    };
    let log = text(v, "transcript_path")
        .filter(|t| !t.is_empty())
        .map(|t| UsageLog::Transcript(t.into()));
    Some(Report {
        event,
        signal,
        log,
        thread: None,
    })
}

fn codex(v: &Value) -> Option<Report> {
    if v.get("hook_event_name").is_some() {
        // A hook's payload, Claude's shape (Codex 0.171.0: `PermissionRequest` has
        // `tool_name` `Bash` and `tool_input.command`). Its `transcript_path` is the
        // rollout, whose usage `notify`'s thread id leads to: not taken from here.
        return claude(v).map(|report| Report {
            log: None,
            thread: thread_id(v, "session_id").map(|id| Thread { id, by_hook: true }),
            ..report
        });
    }
    let event = text(v, "type")?;
    let thread = thread_id(v, "thread-id");
    (event == "agent-turn-complete").then_some(Report {
        event,
        signal: Signal::TurnEnded,
        log: thread.clone().map(UsageLog::CodexThread),
        thread: thread.map(|id| Thread { id, by_hook: false }),
    })
}

/// A codex thread id at `key`: hex digits and dashes only.
fn thread_id(v: &Value, key: &str) -> Option<String> {
    text(v, key).filter(|id| crate::usage::codex::is_thread_id(id))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claude_json(v: Value) -> Option<Report> {
        parse(Reporter::Claude, v.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn claude_payloads_as_the_real_client_sends_them() {
        let base = serde_json::json!({
            "session_id": "0fdc", "transcript_path": "/t.jsonl", "cwd": "/w",
        });
        let with = |extra: Value| {
            let mut v = base.clone();
            v.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            claude_json(v).map(|r| r.signal)
        };
        assert_eq!(
            with(serde_json::json!({"hook_event_name": "SessionStart", "source": "startup"})),
            Some(Signal::SessionStarted {
                conversation: Some("0fdc".into()),
                model: None,
            })
        );
        assert_eq!(
            with(
                serde_json::json!({"hook_event_name": "SessionStart", "source": "startup",
                "model": "claude-sonnet-4-5"})
            ),
            Some(Signal::SessionStarted {
                conversation: Some("0fdc".into()),
                model: Some("claude-sonnet-4-5".into()),
            })
        );
        let bash = serde_json::json!({"command": "echo hi\nrm -rf x", "description": "d"});
        assert_eq!(
            with(
                serde_json::json!({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                "tool_input": bash, "tool_use_id": "toolu_1"})
            ),
            Some(Signal::ToolStarting(ToolCall {
                id: Some("toolu_1".into()),
                tool: "Bash".into(),
                summary: "echo hi rm -rf x".into()
            }))
        );
        assert_eq!(
            with(
                serde_json::json!({"hook_event_name": "PermissionRequest", "tool_name": "Edit",
                "tool_input": {"file_path": "/w/src/a.rs", "old_string": "x"}})
            ),
            Some(Signal::PermissionAsked {
                tool: "Edit".into(),
                summary: "/w/src/a.rs".into()
            })
        );
        assert_eq!(
            with(serde_json::json!({"hook_event_name": "Notification",
                "message": "Claude needs your permission", "notification_type": "permission_prompt"})),
            Some(Signal::PermissionReminder {
                message: "Claude needs your permission".into()
            })
        );
        assert_eq!(
            with(
                serde_json::json!({"hook_event_name": "Notification", "notification_type": "idle_prompt"})
            ),
            Some(Signal::IdleReminder)
        );
        assert_eq!(
            with(serde_json::json!({"hook_event_name": "Stop", "last_assistant_message": "ok"})),
            Some(Signal::TurnEnded)
        );
        // As Claude Code 2.1.197 sent it, the fake model answering 429 at once.
        assert_eq!(
            with(
                serde_json::json!({"hook_event_name": "StopFailure", "prompt_id": "c4a4",
                "effort": {"level": "high"}, "error": "rate_limit",
                "last_assistant_message": "You've hit your session limit · resets 9:56pm (UTC)"})
            ),
            Some(Signal::TurnFailed {
                error: "rate_limit".into(),
                message: "You've hit your session limit · resets 9:56pm (UTC)".into()
            })
        );
        assert_eq!(
            with(serde_json::json!({"hook_event_name": "SessionEnd", "reason": "exit"})),
            Some(Signal::SessionEnded)
        );
        assert_eq!(
            with(serde_json::json!({"hook_event_name": "PreCompact"})),
            None
        );
        let stop = serde_json::json!({"hook_event_name": "Stop", "session_id": "0fdc",
            "transcript_path": "/h/.claude/projects/-w/0fdc.jsonl"});
        assert_eq!(
            claude_json(stop).unwrap().log,
            Some(UsageLog::Transcript(
                "/h/.claude/projects/-w/0fdc.jsonl".into()
            ))
        );
    }

    #[test]
    fn codex_hooks_as_the_real_client_sends_them() {
        // As codex 0.171.0 sends it (its rollout as `transcript_path`).
        let asked = serde_json::json!({
            "session_id": "01a241c2", "turn_id": "01a241c2-d55c",
            "transcript_path": "/h/.codex/sessions/rollout.jsonl", "cwd": "/w",
            "hook_event_name": "PermissionRequest", "model": "gpt-5-codex",
            "permission_mode": "default", "tool_name": "Bash",
            "tool_input": {"command": "touch ran2.txt", "description": "why"},
        });
        let report = parse(Reporter::Codex, asked.to_string().as_bytes())
            .unwrap()
            .unwrap();
        assert_eq!(
            report.signal,
            Signal::PermissionAsked {
                tool: "Bash".into(),
                summary: "touch ran2.txt".into()
            }
        );
        assert_eq!(report.log, None, "usage comes through notify");
        let prompt = serde_json::json!({"hook_event_name": "UserPromptSubmit", "prompt": "hi"});
        let report = parse(Reporter::Codex, prompt.to_string().as_bytes()).unwrap();
        assert_eq!(report.unwrap().signal, Signal::PromptSubmitted);
    }

    #[test]
    fn codex_turn_complete_and_bad_input() {
        // As codex 0.171.0 sends it.
        let turn = serde_json::json!({"type": "agent-turn-complete",
            "thread-id": "01a23d29-529b-73f3-9002-bfbaf9aebad0",
            "turn-id": "01a23d29-52f2-7bf3-84fa-26d967a1b246", "cwd": "/w",
            "client": "codex-tui", "input-messages": ["say hi"],
            "last-assistant-message": "done"});
        let report = parse(Reporter::Codex, turn.to_string().as_bytes())
            .unwrap()
            .unwrap();
        assert_eq!(report.signal, Signal::TurnEnded);
        assert_eq!(report.event, "agent-turn-complete");
        assert_eq!(
            report.log,
            Some(UsageLog::CodexThread(
                "01a23d29-529b-73f3-9002-bfbaf9aebad0".into()
            ))
        );
        // A thread id is never a path.
        for bad in ["../../etc/passwd", "a/b", "", "x\u{1b}[2J"] {
            let turn = serde_json::json!({"type": "agent-turn-complete", "thread-id": bad});
            let report = parse(Reporter::Codex, turn.to_string().as_bytes()).unwrap();
            assert_eq!(report.unwrap().log, None, "{bad:?}");
        }
        assert!(
            parse(Reporter::Codex, br#"{"type":"other"}"#)
                .unwrap()
                .is_none()
        );
        assert!(parse(Reporter::Claude, b"not json").is_err());
        assert!(parse(Reporter::Claude, b"[1]").is_err());
        assert!(parse(Reporter::Claude, b"{}").unwrap().is_none());
    }
}
