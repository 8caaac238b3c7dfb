//! The operator answers into a session (SPEC §8.2) — the one implementation behind
//! `the-loop reply` (in-process, or through the running supervisor), `POST
//! /api/v1/sessions/reply` on the operator socket (the `operator` module) and the TUI's
//! reply box.
//!
//! Fail closed, in this order: a bad ref or empty text (usage: 400 / exit 2); no
//! session, or a closed one (404 / exit 1: a reply never spawns a session); a paused
//! session (400 / exit 1); no live pane (404 / exit 1: a reply never respawns — the
//! agent that asked is gone, and a fresh one would not know the question). Otherwise
//! the framed text goes through the one paste into a session (`Sessions::paste_into`,
//! under the reply's policy) while holding the session's paste lock
//! ([`super::delivery::lock_session`]), so it never lands between another delivery's paste and its
//! submit. Then, unless disabled, a marked delivery report
//! quoting the reply is posted on the work item; a failed report does not undo the
//! delivery. `session.reply_sent` records who (the claimed actor, for audit only — it
//! authorizes nothing: whoever can run this already controls the machine) and how it
//! went, never the text.

use super::delivery::{
    Delivered, Held, HeldReply, HoldReason, PasteError, PasteLockError, PastePolicy, Pasted,
};
use super::registry::RegistryError;
use super::sessions::Sessions;
use crate::events::{Event, EventType, Level, Source};
use crate::github::Client;
use crate::guard::sanitize;
use crate::tmux::PaneId;
use crate::work_item::RefError;
use crate::work_item::WorkItemRef;
use std::sync::Arc;
use std::time::Duration;

/// How long a reply waits for a delivery in progress to that session to finish.
pub const LOCK_WAIT: Duration = Duration::from_secs(30);

/// The report quotes at most this much of the reply (GitHub's limit is 65,536).
pub const MAX_QUOTED_CHARS: usize = 60_000;

/// The framing line the agent sees before the operator's text.
pub fn framed(item: &WorkItemRef, text: &str) -> String {
    format!("Reply from the operator via the-loop to your question on {item}:\n\n{text}")
}

/// Which entry point a reply came by (the `via` of its events).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Tui,
    Cli,
    Api,
}

impl Via {
    /// As written by [`Via::as_str`]; anything else reads as the API.
    pub fn parse(via: &str) -> Self {
        match via {
            "tui" => Self::Tui,
            "cli" => Self::Cli,
            _ => Self::Api,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tui => "tui",
            Self::Cli => "cli",
            Self::Api => "api",
        }
    }

    /// The event source: the API is the operator's own socket, scripted from a shell.
    pub fn source(self) -> Source {
        match self {
            Self::Tui => Source::Tui,
            Self::Cli | Self::Api => Source::Cli,
        }
    }
}

/// One reply, as an entry point received it (checked here, so every entry point
/// refuses the same things the same way).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyRequest {
    /// The work item as written, e.g. `github:octo/repo#15`.
    pub work_item: String,
    pub text: String,
    /// Who claims to reply; the local user when `None`. Recorded, never trusted.
    pub actor: Option<String>,
    /// Post the delivery report on the work item.
    pub comment: bool,
    pub via: Via,
    /// The operator confirmed delivering to a session over its budget (SPEC §20.4):
    /// without it such a reply is refused ([`ReplyError::OverBudget`]), never queued.
    pub over_budget: bool,
}

/// A reply that reached the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replied {
    /// The session's item (as its record spells it).
    pub work_item: WorkItemRef,
    pub pane: PaneId,
    /// Bytes pasted, framing included.
    pub bytes: usize,
    pub actor: String,
    pub report: Report,
}

/// What became of the delivery report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    Posted {
        url: String,
    },
    /// `--no-comment` / `"comment": false`.
    Skipped,
    /// The reply was delivered; only the report is missing.
    Failed {
        error: String,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum ReplyError {
    #[error(transparent)]
    BadRef(#[from] RefError),
    #[error("the reply text is empty: write something for the agent (empty text is never sent)")]
    EmptyText,
    #[error(
        "no session for {0}: a reply never spawns a session; start one with `the-loop sessions start {0}`"
    )]
    NoSession(String),
    #[error(
        "the session for {0} is closed: a reply never restarts it; start a new one with `the-loop sessions start {0}`"
    )]
    Closed(String),
    #[error(
        "the session for {0} is paused: resume it with `the-loop sessions resume {0}`, then reply"
    )]
    Paused(String),
    #[error(
        "the session for {item} has no live pane (its harness exited); a reply never respawns it — attach with `the-loop sessions attach {item}` to look"
    )]
    NoLivePane { item: String },
    #[error("cannot tell whether the session for {item} runs: {error}; nothing was pasted, retry")]
    TmuxUnavailable { item: String, error: String },
    #[error("the session for {item} is busy: {error}; nothing was pasted, retry")]
    Busy { item: String, error: String },
    #[error("the reply was not delivered to {item}: {error}")]
    PasteFailed { item: String, error: String },
    /// Not an error of the reply: it is queued in the session's record and goes out
    /// once the session can take a paste (SPEC §18.3), never into a dialog or a draft.
    #[error(
        "held: {item} waits on {} — {}; the reply is queued (id {id}) and goes out once that clears",
        reason.describe_waiting(),
        reason.advice()
    )]
    Held {
        item: String,
        reason: HoldReason,
        id: String,
    },
    /// The session (or every session today) reached its budget (SPEC §20.4): an
    /// operator reply goes out only when confirmed; nothing was pasted or queued.
    #[error(
        "{item} is over budget: nothing was delivered; deliver it anyway with `the-loop reply --over-budget`, or raise sessions.budgetUsd / budgets.dailyUsd"
    )]
    OverBudget { item: String },
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

impl ReplyError {
    /// The HTTP status of the API route.
    pub fn status(&self) -> u16 {
        match self {
            Self::BadRef(_) | Self::EmptyText | Self::Paused(_) => 400,
            Self::NoSession(_) | Self::Closed(_) | Self::NoLivePane { .. } => 404,
            Self::TmuxUnavailable { .. } | Self::Busy { .. } => 503,
            Self::Held { .. } => 202,
            Self::OverBudget { .. } => 409,
            Self::PasteFailed { .. } | Self::Registry(_) => 500,
        }
    }

    /// The exit code of SPEC §1: 2 for usage errors, 1 for refusals and failures.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::BadRef(_) | Self::EmptyText => 2,
            _ => 1,
        }
    }

    /// What the operator API answers as `reason`: [`Self::reason`], or for usage
    /// errors `bad-ref` / `empty-text` (a client maps those to exit 2).
    pub fn code(&self) -> &'static str {
        match self {
            Self::BadRef(_) => "bad-ref",
            Self::EmptyText => "empty-text",
            other => other.reason().unwrap_or("bad-request"),
        }
    }

    /// The `reason` of `session.reply_failed`; `None` for usage errors, which name no
    /// session and are not logged.
    pub fn reason(&self) -> Option<&'static str> {
        Some(match self {
            Self::BadRef(_) | Self::EmptyText => return None,
            Self::NoSession(_) => "no-session",
            Self::Closed(_) => "session-closed",
            Self::Paused(_) => "session-paused",
            Self::NoLivePane { .. } => "no-live-pane",
            Self::TmuxUnavailable { .. } => "tmux-unavailable",
            Self::Busy { .. } => "session-busy",
            Self::PasteFailed { .. } => "paste-failed",
            Self::Held { .. } => "held",
            Self::OverBudget { .. } => "over-budget",
            Self::Registry(_) => "registry-error",
        })
    }
}

/// Replies into the sessions of one registry and tmux server. Cheap to share.
pub struct Replier {
    pub(super) sessions: Arc<Sessions>,
    github: Result<Arc<Client>, String>,
    pub(super) lock_wait: Duration,
}

impl Replier {
    /// Without a GitHub client, reports fail (and say so) while replies still go out.
    pub fn new(sessions: Arc<Sessions>) -> Self {
        Self {
            sessions,
            github: Err("no GitHub client is configured".into()),
            lock_wait: LOCK_WAIT,
        }
    }

    /// A replier reporting through `github`, or saying why it cannot (no token, an
    /// invalid API URL): how every command builds one from its own client.
    pub fn reporting(sessions: Arc<Sessions>, github: Result<Arc<Client>, String>) -> Self {
        let replier = Self::new(sessions);
        match github {
            Ok(client) => replier.with_github(client),
            Err(why) => replier.without_github(why),
        }
    }

    /// The client delivery reports are posted with.
    pub fn with_github(mut self, client: Arc<Client>) -> Self {
        self.github = Ok(client);
        self
    }

    /// Why there is no client (e.g. the config's API URL is invalid), for the report.
    pub fn without_github(mut self, why: String) -> Self {
        self.github = Err(why);
        self
    }

    /// How often a held session is looked at again (SPEC §18.3).
    pub fn hold_check(&self) -> Duration {
        self.sessions.settings().timings.hold_check
    }

    /// How long to wait for another delivery to the session to finish.
    pub fn with_lock_wait(mut self, wait: Duration) -> Self {
        self.lock_wait = wait;
        self
    }

    /// Delivers one reply (see the module docs for the order of refusals). A session
    /// that cannot take a paste now (SPEC §18.2) gets it queued: [`ReplyError::Held`].
    pub async fn reply(&self, request: ReplyRequest) -> Result<Replied, ReplyError> {
        let item: WorkItemRef = request.work_item.trim().parse()?;
        let text = reply_text(&request.text).ok_or(ReplyError::EmptyText)?;
        let actor = claimed_actor(request.actor.as_deref());
        let id = reply_id();
        let pasted = match self.paste(&item, &text, &id, request.over_budget).await {
            Ok(done) => done,
            Err(Pasting::Held(item, held)) => {
                let queued = HeldReply {
                    id,
                    text: framed(&item, &text),
                    reply: text,
                    actor,
                    via: request.via.as_str().to_string(),
                    comment: request.comment,
                    reason: held.reason,
                    since: crate::time::now_ts(),
                    over_budget: request.over_budget,
                    review: None,
                };
                return Err(self.queue(&item, queued, held, request.via).await);
            }
            Err(Pasting::Refused(error)) => {
                self.refused(&item, &actor, request.via, &error);
                return Err(error);
            }
        };
        Ok(self
            .delivered(pasted, &actor, request.via, request.comment, &text)
            .await)
    }

    /// The report and `session.reply_sent` of a reply that reached the agent.
    pub(super) async fn delivered(
        &self,
        pasted: Pasted,
        actor: &str,
        via: Via,
        comment: bool,
        text: &str,
    ) -> Replied {
        let Pasted {
            work_item: item,
            delivered: Delivered { pane, bytes, .. },
        } = pasted;
        let item = &item;
        let report = if comment {
            self.report(item, actor, via, text).await
        } else {
            Report::Skipped
        };
        let (level, url, error) = match &report {
            Report::Posted { url } => (Level::Info, Some(url.clone()), None),
            Report::Skipped => (Level::Info, None, None),
            Report::Failed { error } => (Level::Warning, None, Some(error.clone())),
        };
        self.sessions.emit(
            Event::new(via.source(), EventType::SessionReplySent)
                .level(level)
                .with("work_item", item.to_string())
                .with("actor", actor)
                .with("via", via.as_str())
                .with("pane", pane.to_string())
                .with("bytes", bytes)
                .with("comment_posted", url.is_some())
                .with_opt("comment_url", url)
                .with_opt("error", error),
        );
        Replied {
            work_item: item.clone(),
            pane,
            bytes,
            actor: actor.to_string(),
            report,
        }
    }

    /// The checks that need the session, then the paste, under the paste lock: the
    /// one paste into a session, under the reply's policy (no respawn, no paste
    /// without the lock or while tmux does not answer).
    async fn paste(
        &self,
        item: &WorkItemRef,
        text: &str,
        id: &str,
        over_budget: bool,
    ) -> Result<Pasted, Pasting> {
        let policy = PastePolicy::reply(self.lock_wait, id).over_budget_confirmed(over_budget);
        self.sessions
            .paste_into(item, |item| framed(item, text), &policy)
            .await
            .map_err(|error| match *error {
                PasteError::Held(item, held) => Pasting::Held(item, held),
                error => Pasting::Refused(ReplyError::from(error)),
            })
    }

    async fn report(&self, item: &WorkItemRef, actor: &str, via: Via, text: &str) -> Report {
        let client = match &self.github {
            Ok(client) => client,
            Err(why) => {
                return Report::Failed {
                    error: format!("the delivery report was not posted: {why}"),
                };
            }
        };
        let body = report_body(actor, via, text);
        match client
            .post_comment(&item.repo_full_name(), item.number, &body)
            .await
        {
            Ok(comment) => Report::Posted {
                url: comment.html_url,
            },
            Err(error) => Report::Failed {
                error: format!("the delivery report was not posted: {error}"),
            },
        }
    }

    /// `session.reply_failed` (never with the text).
    pub(super) fn refused(&self, item: &WorkItemRef, actor: &str, via: Via, error: &ReplyError) {
        let Some(reason) = error.reason() else {
            return;
        };
        self.sessions.emit(
            Event::new(via.source(), EventType::SessionReplyFailed)
                .level(Level::Warning)
                .with("work_item", item.to_string())
                .with("actor", actor)
                .with("via", via.as_str())
                .with("reason", reason)
                .with("error", error.to_string()),
        );
    }
}

/// How a reply's paste went, short of delivered.
enum Pasting {
    Held(WorkItemRef, Held),
    Refused(ReplyError),
}

/// A fresh id for a reply that may be queued.
pub(super) fn reply_id() -> String {
    format!("reply-{:016x}", rand::random::<u64>())
}

impl From<PasteError> for ReplyError {
    fn from(error: PasteError) -> Self {
        let (item, error) = match error {
            PasteError::Registry(error) => return Self::Registry(error),
            PasteError::NoSession(item) => return Self::NoSession(item.to_string()),
            PasteError::Closed(item) => return Self::Closed(item.to_string()),
            PasteError::Paused(item) => return Self::Paused(item.to_string()),
            PasteError::NoLivePane(item) => {
                return Self::NoLivePane {
                    item: item.to_string(),
                };
            }
            PasteError::Lock(item, error @ PasteLockError::Busy { .. }) => {
                return Self::Busy {
                    item: item.to_string(),
                    error: error.to_string(),
                };
            }
            PasteError::Unavailable(item, error) => {
                return Self::TmuxUnavailable {
                    item: item.to_string(),
                    error: error.to_string(),
                };
            }
            PasteError::Lock(item, error) => (item, error.to_string()),
            PasteError::Paste(item, error) => (item, error.to_string()),
            // Not under the reply's policy, which neither respawns nor pastes blind.
            PasteError::Blind { item, error, .. } => (item, error.to_string()),
            PasteError::Respawn(item, failure) => (item, failure.to_string()),
            PasteError::Held(item, held) => (item, format!("held: {}", held.reason.describe())),
        };
        Self::PasteFailed {
            item: item.to_string(),
            error,
        }
    }
}

/// The text to send: control characters removed (as the paste path will), surrounding
/// blank lines and trailing spaces dropped (the first line keeps its indentation);
/// `None` when nothing is left.
pub fn reply_text(raw: &str) -> Option<String> {
    let clean = sanitize(raw);
    let text = clean.trim_end();
    let first = text.find(|c: char| !c.is_whitespace())?;
    let line_start = text[..first].rfind('\n').map_or(0, |i| i + 1);
    Some(text[line_start..].to_string())
}

/// The claimed actor, made safe to log and to quote: no control characters or
/// backticks, at most 64 characters; the local user when none is left.
pub fn claimed_actor(claimed: Option<&str>) -> String {
    let actor: String = claimed
        .unwrap_or("")
        .chars()
        .filter(|c| !c.is_control() && *c != '`')
        .take(64)
        .collect();
    let actor = actor.trim();
    if actor.is_empty() {
        super::ask::local_user()
    } else {
        actor.to_string()
    }
}

/// The delivery report: who replied and how, then the reply quoted. The stamp the
/// client adds removes any marker the operator's text carries.
pub fn report_body(actor: &str, via: Via, text: &str) -> String {
    let mut quoted: String = text.chars().take(MAX_QUOTED_CHARS).collect();
    let cut = quoted.len() < text.len();
    if cut {
        quoted.push_str("\n\n… (cut for GitHub's comment size limit)");
    }
    let quote: Vec<String> = quoted
        .lines()
        .map(|line| {
            if line.trim().is_empty() {
                ">".to_string()
            } else {
                format!("> {line}")
            }
        })
        .collect();
    format!(
        "Operator reply from `{actor}` (via the-loop {}), delivered to the agent's session:\n\n{}",
        via.as_str(),
        quote.join("\n")
    )
}

#[cfg(test)]
#[path = "reply_tests.rs"]
mod tests;
