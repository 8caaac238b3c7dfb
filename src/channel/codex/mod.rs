//! Codex's app server as a second client beside the TUI in the pane (measured on codex
//! 0.171.0; docs/decisions/2026-12-07-codex-app-server.md). `codex app-server --listen
//! unix://PATH` speaks JSON-RPC, one message per WebSocket text frame, over the Unix
//! socket; the TUI attaches with `codex --remote unix://PATH`.
//!
//! ```text
//!  connect ── initialize / initialized ── thread_of(cwd) (loaded, non-ephemeral, its cwd)
//!     ── subscribe (thread/resume: only then the thread's turn/*, item/*, approvals; it
//!        re-sends an approval already pending; refused until the thread's first turn)
//!     ── start_turn (idle) / steer (a turn runs) ── next(): Approval · TurnStarted ·
//!        TurnCompleted · Resolved · Other ── answer(approval, Decision)
//! ```

mod inbound;
mod rpc;

pub use inbound::{Approval, ApprovalKind, Inbound};
pub use rpc::{Client, Error};

use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

/// After an approval came, how long another is waited for ([`Client::pending_approvals`]).
const MORE_WITHIN: Duration = Duration::from_millis(200);

/// How the operator answered an approval request, as the protocol spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// `accept`: run it, this once.
    Accept,
    /// `decline`: do not run it; the agent goes on with its turn (what the TUI's "No"
    /// does). `cancel` would also interrupt the turn.
    Decline,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Accept => "accept",
            Self::Decline => "decline",
        }
    }
}

/// A thread as `thread/read` tells it: enough to pick the session's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadInfo {
    pub id: String,
    pub cwd: String,
    pub ephemeral: bool,
    /// Its status says an approval waits on a client's answer (`active`, flag
    /// `waitingOnApproval`).
    pub awaits_approval: bool,
}

impl ThreadInfo {
    fn from_read(value: &Value) -> Option<Self> {
        let thread = &value["thread"];
        Some(Self {
            id: thread["id"].as_str()?.to_string(),
            cwd: thread["cwd"].as_str().unwrap_or_default().to_string(),
            ephemeral: thread["ephemeral"].as_bool().unwrap_or(false),
            awaits_approval: thread["status"]["activeFlags"]
                .as_array()
                .is_some_and(|flags| flags.iter().any(|f| f == "waitingOnApproval")),
        })
    }
}

/// The session's thread among `threads`: the one not ephemeral (codex titles a session
/// on a thread of its own, ephemeral) whose cwd is the session's.
pub fn pick_thread<'a>(threads: &'a [ThreadInfo], cwd: &Path) -> Option<&'a ThreadInfo> {
    let cwd = cwd.to_string_lossy();
    threads
        .iter()
        .find(|t| !t.ephemeral && t.cwd.trim_end_matches('/') == cwd.trim_end_matches('/'))
}

fn text_input(text: &str) -> Value {
    json!([{"type": "text", "text": text, "text_elements": []}])
}

impl Client {
    /// The loaded threads, each read (`thread/loaded/list`, then `thread/read`).
    pub async fn loaded_threads(&self) -> Result<Vec<ThreadInfo>, Error> {
        let listed = self.request("thread/loaded/list", json!({})).await?;
        let mut threads = Vec::new();
        for id in listed["data"].as_array().into_iter().flatten() {
            let Some(id) = id.as_str() else { continue };
            let read = self.request("thread/read", json!({"threadId": id})).await?;
            threads.extend(ThreadInfo::from_read(&read));
        }
        Ok(threads)
    }

    /// The id of the session's thread ([`pick_thread`]), if the TUI made it yet.
    pub async fn thread_of(&self, cwd: &Path) -> Result<Option<String>, Error> {
        Ok(self.session_thread(cwd).await?.map(|t| t.id))
    }

    /// The session's thread ([`pick_thread`]), as read now, if the TUI made it yet.
    pub async fn session_thread(&self, cwd: &Path) -> Result<Option<ThreadInfo>, Error> {
        let threads = self.loaded_threads().await?;
        Ok(pick_thread(&threads, cwd).cloned())
    }

    /// The approvals pending on `thread`: subscribing makes codex send them again. Waits
    /// up to `within` for the first, then a moment for any other; none if nothing came.
    pub async fn pending_approvals(
        &mut self,
        thread: &str,
        within: Duration,
    ) -> Result<Vec<Approval>, Error> {
        self.subscribe(thread).await?;
        let mut found = Vec::new();
        let mut wait = within;
        while let Ok(Some(inbound)) = tokio::time::timeout(wait, self.next()).await {
            if let Inbound::Approval(approval) = inbound
                && approval.thread == thread
            {
                found.push(approval);
                wait = MORE_WITHIN;
            }
        }
        Ok(found)
    }

    /// Subscribes this connection to `thread`'s events (`thread/resume`, no turns sent
    /// back). Codex refuses it until the thread's first turn (`no rollout found`).
    pub async fn subscribe(&self, thread: &str) -> Result<(), Error> {
        self.request(
            "thread/resume",
            json!({"threadId": thread, "excludeTurns": true}),
        )
        .await
        .map(|_| ())
    }

    /// Starts a turn on `thread` with `text` as its user message; the turn's id. Into a
    /// running turn codex folds it as input of that turn.
    pub async fn start_turn(&self, thread: &str, text: &str) -> Result<String, Error> {
        let started = self
            .request(
                "turn/start",
                json!({"threadId": thread, "input": text_input(text)}),
            )
            .await?;
        Ok(started["turn"]["id"]
            .as_str()
            .unwrap_or_default()
            .to_string())
    }

    /// Adds `text` to the running turn `turn` of `thread` (`turn/steer`; a turn that is
    /// no longer the running one is refused, -32600).
    pub async fn steer(&self, thread: &str, turn: &str, text: &str) -> Result<(), Error> {
        self.request(
            "turn/steer",
            json!({"threadId": thread, "expectedTurnId": turn, "input": text_input(text)}),
        )
        .await
        .map(|_| ())
    }

    /// Answers `approval` with `decision` (`{"decision": "accept" | "decline"}`). The
    /// first answer from any client wins; the others see `serverRequest/resolved`.
    pub async fn answer(&self, approval: &Approval, decision: Decision) -> Result<(), Error> {
        self.respond(&approval.request_id, json!({"decision": decision.as_str()}))
            .await
    }
}

#[cfg(test)]
mod tests;
