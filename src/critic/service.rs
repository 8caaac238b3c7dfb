//! The critic runner a view is handed (STYLE.md: a view gets services, never their
//! construction): it runs a round recorded under `critics/` with `critic.*` events
//! ([`run_round`]), and posts a round's findings through the product's GitHub client
//! ([`post::post`]), logging `critic.posted`. Whoever wires the view builds it, with
//! the client or the reason there is none.

use super::post::{self, Posted};
use super::results::{Recorder, Round, run_round};
use super::round::{Request, RunError};
use super::{CriticSpec, Envelope};
use crate::events::Source;
use crate::github::Client;
use crate::work_item::WorkItemRef;
use std::path::Path;
use std::sync::Arc;

/// Why findings were not posted.
#[derive(Debug, thiserror::Error)]
pub enum PostError {
    /// There is no client to post with (no token, an invalid API URL): why.
    #[error("{0}")]
    NoClient(String),
    /// GitHub refused or could not be reached.
    #[error(transparent)]
    GitHub(#[from] crate::github::Error),
}

/// Runs and posts critic rounds for one process. Cheap to clone.
#[derive(Clone)]
pub struct CriticRunner {
    recorder: Recorder,
    github: Result<Arc<Client>, String>,
    source: Source,
}

impl CriticRunner {
    /// `github`: the client findings are posted with, or why there is none; `source`:
    /// who the `critic.posted` events are from.
    pub fn new(recorder: Recorder, github: Result<Arc<Client>, String>, source: Source) -> Self {
        Self {
            recorder,
            github,
            source,
        }
    }

    /// One round, recorded (see [`run_round`]); cancelled by dropping the future.
    pub async fn run(&self, spec: &CriticSpec, request: &Request) -> Result<Round, RunError> {
        run_round(spec, request, Some(&self.recorder)).await
    }

    /// Posts `envelope` on `to` (marked: a review with line comments on a pull
    /// request, one comment on an issue) and logs `critic.posted`; `saved` is where the
    /// envelope was saved.
    pub async fn post(
        &self,
        envelope: &Envelope,
        to: &WorkItemRef,
        saved: Option<&Path>,
    ) -> Result<Posted, PostError> {
        let client = self
            .github
            .as_ref()
            .map_err(|why| PostError::NoClient(why.clone()))?;
        let posted = post::post(client, envelope, to, saved).await?;
        let _ = self.recorder.events().emit(post::posted_event(
            self.source,
            envelope,
            to,
            &posted,
            saved,
        ));
        Ok(posted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::critic::Usage;
    use crate::events::EventLog;
    use crate::github::sim::{IssueSpec, SimGithub};
    use crate::guard::is_self_authored;
    use crate::paths::StatePaths;

    fn envelope() -> Envelope {
        Envelope {
            critic: "lint".into(),
            harness: None,
            model: None,
            attribution: "[lint]".into(),
            ok: true,
            exit_code: 0,
            duration_seconds: 1.0,
            output: "Looks fine.".into(),
            error: None,
            usage: Usage::default(),
            findings: Vec::new(),
        }
    }

    fn posted_lines(events: &EventLog) -> Vec<String> {
        std::fs::read_to_string(events.path())
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("critic.posted"))
            .map(str::to_string)
            .collect()
    }

    #[tokio::test]
    async fn findings_are_posted_marked_and_logged_once() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        let events = EventLog::open(&paths);
        let sim = SimGithub::start().await.unwrap();
        sim.add_issue("octo/repo", IssueSpec::new("Retries").number(15))
            .unwrap();
        let client = Client::builder(&sim.base_url())
            .token(Some("ghp_critictesttoken_0123456789"))
            .retry_policy(crate::github::RetryPolicy::none())
            .build()
            .unwrap();
        let runner = CriticRunner::new(
            Recorder::new(&paths, events.clone()),
            Ok(Arc::new(client)),
            Source::Tui,
        );
        let item = WorkItemRef::new("octo", "repo", 15);
        let comment = runner.post(&envelope(), &item, None).await.unwrap();
        let on_github = sim.comments_on("octo/repo", 15);
        assert_eq!(on_github.len(), 1);
        assert!(is_self_authored(Some(&on_github[0].body)), "stamped");
        let logged = posted_lines(&events);
        assert_eq!(logged.len(), 1, "{logged:?}");
        assert!(logged[0].contains(&comment.html_url), "{logged:?}");
        assert!(logged[0].contains("\"source\":\"tui\""), "{logged:?}");
    }

    #[tokio::test]
    async fn without_a_client_nothing_is_posted_and_the_reason_is_given() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        let events = EventLog::open(&paths);
        let runner = CriticRunner::new(
            Recorder::new(&paths, events.clone()),
            Err("no token is configured".into()),
            Source::Tui,
        );
        let item = WorkItemRef::new("octo", "repo", 15);
        let err = runner.post(&envelope(), &item, None).await.unwrap_err();
        assert!(
            matches!(&err, PostError::NoClient(why) if why == "no token is configured"),
            "{err:?}"
        );
        assert!(posted_lines(&events).is_empty());
    }
}
