//! An agent asks the operator (SPEC §8.1). Runs inside the asking process (`the-loop
//! ask` in the agent's pane), with or without a supervisor: the question is posted on
//! the work item as a marked comment and **always** recorded as
//! `session.awaiting_input` — also when GitHub failed, because the agent waits either
//! way and the operator's TUI (or `the-loop reply`) is then the only way to answer.

use crate::events::{Event, EventLog, EventType, Level, Source};
use crate::github::{Client, CreatedComment};
use crate::work_item::WorkItemRef;

/// GitHub refuses comments over 65,536 characters; a question is far shorter.
pub const MAX_QUESTION_CHARS: usize = 60_000;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuestionError {
    #[error("the question is empty: pass the text with --question or --question-file")]
    Empty,
    #[error(
        "the question is {chars} characters long; at most {MAX_QUESTION_CHARS} fit in a GitHub comment: shorten it"
    )]
    TooLong { chars: usize },
}

/// A question, checked: trimmed, not empty, not too long.
pub fn question_text(raw: &str) -> Result<String, QuestionError> {
    let text = raw.trim();
    let chars = text.chars().count();
    if chars == 0 {
        Err(QuestionError::Empty)
    } else if chars > MAX_QUESTION_CHARS {
        Err(QuestionError::TooLong { chars })
    } else {
        Ok(text.to_string())
    }
}

/// The user this process runs as (`$USER`, else `$LOGNAME`): the `actor` of a question,
/// and of a reply that names no one.
pub fn local_user() -> String {
    ["USER", "LOGNAME"]
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .map(|v| v.trim().to_string())
        .find(|v| !v.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

/// One question to ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    pub work_item: WorkItemRef,
    /// Checked with [`question_text`].
    pub question: String,
    /// The asking session's own item (`$THE_LOOP_WORK_ITEM`) when it asks about
    /// another item: a reply to the session closes the question too.
    pub session: Option<WorkItemRef>,
    pub actor: String,
}

impl Ask {
    /// `session` is dropped when it is the item asked about.
    pub fn new(
        work_item: WorkItemRef,
        question: String,
        session: Option<WorkItemRef>,
        actor: String,
    ) -> Self {
        let session = session.filter(|s| !crate::session::registry::same_item(s, &work_item));
        Self {
            work_item,
            question,
            session,
            actor,
        }
    }
}

/// What asking did.
#[derive(Debug)]
pub struct Asked {
    /// Names the question in `session.awaiting_input` (the TUI dismisses by it).
    pub question_id: String,
    /// The posted comment, or why there is none.
    pub comment: Result<CreatedComment, String>,
}

/// Posts the question (when `github` is a client) and records it. `github` is the
/// reason there is no client when it could not be set up (the question is still
/// recorded).
pub async fn ask(github: Result<&Client, String>, events: &EventLog, request: &Ask) -> Asked {
    let comment = match github {
        Ok(client) => post_question(client, request)
            .await
            .map_err(|e| e.to_string()),
        Err(error) => Err(error),
    };
    let asked = Asked {
        question_id: new_question_id(),
        comment,
    };
    record(events, request, &asked);
    asked
}

/// The comment is the question itself; the client stamps it, removing any marker the
/// agent's text carries, so the stamp is the one, last marker (and its attribution
/// line is always added).
async fn post_question(
    client: &Client,
    request: &Ask,
) -> Result<CreatedComment, crate::github::Error> {
    client
        .post_comment(
            &request.work_item.repo_full_name(),
            request.work_item.number,
            &request.question,
        )
        .await
}

/// `session.awaiting_input`: `info` when posted, `warning` with the error when not.
fn record(events: &EventLog, request: &Ask, asked: &Asked) {
    let (level, url, error) = match &asked.comment {
        Ok(comment) => (Level::Info, Some(comment.html_url.clone()), None),
        Err(error) => (Level::Warning, None, Some(error.clone())),
    };
    let event = Event::new(Source::Cli, EventType::SessionAwaitingInput)
        .level(level)
        .with("work_item", request.work_item.to_string())
        .with("question_id", asked.question_id.as_str())
        .with("question", request.question.as_str())
        .with_opt("session", request.session.as_ref().map(ToString::to_string))
        .with_opt("comment_url", url)
        .with("comment_posted", asked.comment.is_ok())
        .with("actor", request.actor.as_str())
        .with_opt("error", error);
    if let Err(error) = events.emit(event) {
        tracing::error!(work_item = %request.work_item, "the question was not recorded: {error}");
    }
}

/// Short and unique enough to tell one item's questions apart.
fn new_question_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::github::sim::{Fault, IssueSpec, SimGithub};
    use crate::guard::{ATTRIBUTION, MARKER, is_self_authored};

    #[test]
    fn questions_are_trimmed_and_bounded() {
        assert_eq!(question_text("  Per repo?\n"), Ok("Per repo?".into()));
        assert_eq!(question_text(" \n\t "), Err(QuestionError::Empty));
        let long = "x".repeat(MAX_QUESTION_CHARS + 1);
        assert!(matches!(
            question_text(&long),
            Err(QuestionError::TooLong { .. })
        ));
    }

    #[test]
    fn the_session_is_kept_only_when_it_is_another_item() {
        let item = WorkItemRef::new("octo", "repo", 16);
        let same = Ask::new(
            item.clone(),
            "?".into(),
            Some(WorkItemRef::new("Octo", "Repo", 16)),
            "me".into(),
        );
        assert_eq!(same.session, None);
        let owner = WorkItemRef::new("octo", "repo", 15);
        let other = Ask::new(item, "?".into(), Some(owner.clone()), "me".into());
        assert_eq!(other.session, Some(owner));
    }

    /// Issue #15 on a simulator, a client for it (no retries), a state directory.
    async fn setup() -> (crate::github::sim::SimHandle, Client, tempfile::TempDir) {
        let sim = SimGithub::start().await.unwrap();
        sim.add_issue("octo/repo", IssueSpec::new("Retries").number(15))
            .unwrap();
        let client = Client::builder(&sim.base_url())
            .token(Some("ghp_asktesttoken_0123456789"))
            .retry_policy(crate::github::RetryPolicy::none())
            .build()
            .unwrap();
        (sim, client, tempfile::tempdir().unwrap())
    }

    fn events_of(log: &EventLog) -> Vec<Event> {
        std::fs::read_to_string(log.path())
            .unwrap()
            .lines()
            .map(|l| crate::events::parse_line(l).unwrap())
            .collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn posts_a_marked_question_and_records_it() {
        let (sim, client, dir) = setup().await;
        let log = EventLog::open_path(dir.path().join("events.jsonl"));
        let request = Ask::new(
            WorkItemRef::new("octo", "repo", 15),
            format!("Per repo {MARKER} or global?"),
            Some(WorkItemRef::new("octo", "repo", 9)),
            "agent".into(),
        );
        let asked = ask(Ok(&client), &log, &request).await;
        let comment = asked.comment.unwrap();

        let posted = sim.comments_on("octo/repo", 15);
        assert_eq!(posted.len(), 1);
        let body = &posted[0].body;
        assert!(is_self_authored(Some(body)));
        assert_eq!(body.matches(MARKER).count(), 1, "{body}");
        let lines: Vec<&str> = body.trim_end().lines().collect();
        assert_eq!(lines[lines.len() - 1], MARKER);
        assert_eq!(lines[lines.len() - 2], ATTRIBUTION);
        assert!(body.starts_with("Per repo  or global?"), "{body}");

        let events = events_of(&log);
        assert_eq!(events.len(), 1);
        let event = &events[0];
        assert_eq!(event.event, EventType::SessionAwaitingInput);
        assert_eq!(event.level, Level::Info);
        assert_eq!(event.work_item(), Some("github:octo/repo#15"));
        assert_eq!(event.str_field("session"), Some("github:octo/repo#9"));
        assert_eq!(
            event.str_field("question_id"),
            Some(asked.question_id.as_str())
        );
        assert_eq!(
            event.str_field("comment_url"),
            Some(comment.html_url.as_str())
        );
        assert_eq!(event.fields["comment_posted"], true);
        assert_eq!(event.str_field("actor"), Some("agent"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_post_is_still_recorded_as_a_warning() {
        let (sim, client, dir) = setup().await;
        sim.fail_next(10, Fault::Status(502));
        let log = EventLog::open_path(dir.path().join("events.jsonl"));
        let request = Ask::new(
            WorkItemRef::new("octo", "repo", 15),
            "Per repo?".into(),
            None,
            "agent".into(),
        );
        let asked = ask(Ok(&client), &log, &request).await;
        let error = asked.comment.unwrap_err();
        assert!(error.contains("502"), "{error}");
        assert!(sim.comments_on("octo/repo", 15).is_empty());

        let no_client = ask(Err("no config".into()), &log, &request).await;
        assert_eq!(no_client.comment.unwrap_err(), "no config");

        let events = events_of(&log);
        assert_eq!(events.len(), 2);
        for event in &events {
            assert_eq!(event.event, EventType::SessionAwaitingInput);
            assert_eq!(event.level, Level::Warning);
            assert_eq!(event.fields["comment_posted"], false);
            assert_eq!(event.str_field("question"), Some("Per repo?"));
            assert!(event.str_field("comment_url").is_none());
            assert!(event.str_field("error").is_some());
        }
        assert_eq!(events[1].str_field("error"), Some("no config"));
    }
}
