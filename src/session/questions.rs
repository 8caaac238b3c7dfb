//! Open questions (SPEC §8.1, §11.1): what agents asked with `the-loop ask` and the
//! operator has not answered yet, derived from the event log alone — so the supervisor,
//! a viewer and `sessions list` agree without sharing any other state.
//!
//! - `session.awaiting_input` opens a question on its `work_item`. When the asking
//!   session works on another item (it asked on its PR, say), the event also names the
//!   session's own item in `session`: the session *owns* the question.
//! - A later `session.reply_sent` for the question's item, or for the item of the
//!   session that owns it, closes it: the answer reached that agent.
//! - `session.question_dismissed` closes one question (by `question_id`) or, without an
//!   id, every open question of its item — the TUI's dismiss, e.g. after the operator
//!   answered on GitHub (such an answer is delivered as an ordinary comment and does not
//!   close anything by itself).
//!
//! [`OpenQuestions`] is fed event by event (the TUI's incremental form) or loaded
//! ([`OpenQuestions::load`]) from the log's checkpoint, `questions.json` beside it,
//! plus what was appended since (SPEC §15.5): the state survives the log's rotation and
//! loading it costs the same whatever the history. Log order is the order that counts;
//! observing the same event twice changes nothing.

use crate::events::checkpoint::{self, LogState};
use crate::events::{EmitError, Event, EventLog, EventType, Filter, Source};
use crate::session::registry::same_item;
use crate::work_item::WorkItemRef;
use serde::{Deserialize, Serialize};
use std::io;
use std::path::{Path, PathBuf};
use time::OffsetDateTime;

/// One unanswered question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    /// `question_id` from the event (the timestamp when an event has none).
    pub id: String,
    /// The item the question was asked on.
    pub work_item: WorkItemRef,
    /// The asking session's own item, when it differs from `work_item`.
    pub session: Option<WorkItemRef>,
    pub text: String,
    /// The event's `ts`.
    pub asked_at: String,
    pub comment_url: Option<String>,
    pub comment_posted: bool,
    /// Who asked (the local user the agent runs as).
    pub actor: Option<String>,
}

impl Question {
    /// The question as `session.awaiting_input` recorded it; `None` for other events or
    /// one without a readable `work_item`.
    pub fn from_event(event: &Event) -> Option<Self> {
        if event.event != EventType::SessionAwaitingInput {
            return None;
        }
        let work_item = event.work_item()?.parse().ok()?;
        let session = event.str_field("session").and_then(|s| s.parse().ok());
        Some(Self {
            id: event
                .str_field("question_id")
                .map_or_else(|| event.ts.clone(), str::to_string),
            work_item,
            session,
            text: event.str_field("question").unwrap_or_default().to_string(),
            asked_at: event.ts.clone(),
            comment_url: event.str_field("comment_url").map(str::to_string),
            comment_posted: event
                .fields
                .get("comment_posted")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false),
            actor: event.str_field("actor").map(str::to_string),
        })
    }

    /// Whether an answer to `item` reaches the agent that asked: the question's own
    /// item, or the item of the session that owns it.
    pub fn answered_by(&self, item: &WorkItemRef) -> bool {
        same_item(&self.work_item, item)
            || self.session.as_ref().is_some_and(|s| same_item(s, item))
    }

    /// Whole seconds since it was asked (0 for a timestamp in the future or unreadable).
    pub fn age_seconds(&self, now: OffsetDateTime) -> u64 {
        crate::time::parse_ts(&self.asked_at).map_or(0, |at| {
            u64::try_from((now - at).whole_seconds()).unwrap_or(0)
        })
    }
}

/// What one event did to the open questions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Unchanged,
    Opened(Box<Question>),
    /// The questions it closed, oldest first.
    Closed(Vec<Question>),
}

/// The open questions, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenQuestions {
    open: Vec<Question>,
}

impl LogState for OpenQuestions {
    fn filter() -> Filter {
        Filter::parse(Some("session.*"), None, None, None).unwrap_or_default()
    }

    fn observe(&mut self, event: &Event) {
        OpenQuestions::observe(self, event);
    }
}

/// The checkpoint beside a log: `<state>/questions.json`.
pub fn checkpoint_path(log: &Path) -> PathBuf {
    checkpoint::path_for(log, "questions")
}

impl OpenQuestions {
    pub fn new() -> Self {
        Self::default()
    }

    /// The questions still open after `events`, in log order.
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a Event>) -> Self {
        let mut open = Self::new();
        for event in events {
            open.observe(event);
        }
        open
    }

    /// The questions open at the end of the log: its checkpoint plus what was appended
    /// since (a missing log has no questions; corrupt lines are skipped, as every
    /// reader does). Writes a fresh checkpoint when there was much to read.
    pub fn load(log: &Path) -> io::Result<Self> {
        Self::catch_up(log, false).map(|(open, _)| open)
    }

    /// As [`load`](Self::load), also returning where in the current log file the state
    /// ends; `force` writes the checkpoint whatever was read (before a rotation).
    pub fn catch_up(log: &Path, force: bool) -> io::Result<(Self, u64)> {
        let caught = checkpoint::catch_up::<Self>(log, &checkpoint_path(log), force)?;
        Ok((caught.state, caught.end))
    }

    /// Brings the checkpoint up to the log's end: the supervisor's refresh, so readers
    /// have little to catch up on and the state survives rotation.
    pub fn refresh(log: &Path) {
        if let Err(e) = Self::catch_up(log, true) {
            tracing::warn!(path = %log.display(), error = %e, "open questions not checkpointed");
        }
    }

    /// Applies one event (feed them in log order).
    pub fn observe(&mut self, event: &Event) -> Change {
        match event.event {
            EventType::SessionAwaitingInput => match Question::from_event(event) {
                // Seen already (a reader that caught up, then followed from before).
                Some(question) if self.open.iter().any(|q| q.id == question.id) => {
                    Change::Unchanged
                }
                Some(question) => {
                    // Sorted by time; appended events are nearly always the newest.
                    let at = self
                        .open
                        .iter()
                        .rposition(|q| q.asked_at <= question.asked_at)
                        .map_or(0, |i| i + 1);
                    self.open.insert(at, question.clone());
                    Change::Opened(Box::new(question))
                }
                None => Change::Unchanged,
            },
            EventType::SessionReplySent => match parse_item(event) {
                Some(item) => self.close(|q| q.answered_by(&item)),
                None => Change::Unchanged,
            },
            EventType::SessionQuestionDismissed => {
                let item = parse_item(event);
                match (event.str_field("question_id"), item) {
                    (Some(id), _) => self.close(|q| q.id == id),
                    (None, Some(item)) => self.close(|q| q.answered_by(&item)),
                    (None, None) => Change::Unchanged,
                }
            }
            _ => Change::Unchanged,
        }
    }

    fn close(&mut self, matches: impl Fn(&Question) -> bool) -> Change {
        let (closed, open): (Vec<Question>, Vec<Question>) = std::mem::take(&mut self.open)
            .into_iter()
            .partition(matches);
        self.open = open;
        if closed.is_empty() {
            Change::Unchanged
        } else {
            Change::Closed(closed)
        }
    }

    /// Every open question, oldest first.
    pub fn list(&self) -> &[Question] {
        &self.open
    }

    pub fn len(&self) -> usize {
        self.open.len()
    }

    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    /// Whether the session working on `item` waits for the operator: an open question
    /// on its item, or one it owns. This is the hook `activity::observe` takes to show
    /// `awaiting-input`.
    pub fn awaiting(&self, item: &WorkItemRef) -> bool {
        self.open.iter().any(|q| q.answered_by(item))
    }
}

fn parse_item(event: &Event) -> Option<WorkItemRef> {
    event.work_item()?.parse().ok()
}

/// Closes a question without replying (`session.question_dismissed`): the one with
/// `question_id`, or every open question of `item` when there is no id.
pub fn dismiss(
    events: &EventLog,
    source: Source,
    item: &WorkItemRef,
    question_id: Option<&str>,
    actor: Option<&str>,
) -> Result<(), EmitError> {
    events.emit(
        Event::new(source, EventType::SessionQuestionDismissed)
            .with("work_item", item.to_string())
            .with_opt("question_id", question_id)
            .with_opt("actor", actor),
    )
}

#[cfg(test)]
#[path = "questions_tests.rs"]
mod tests;
