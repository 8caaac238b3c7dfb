//! Critic rounds launched from the keyboard (SPEC §11.4): each runs in the background
//! in the session's working directory over the review material ([`super::review`]),
//! through the same [`run_round`] as `the-loop critic run` — so it is saved under
//! `critics/` with `critic.started` / `critic.finished` — and can then be posted to its
//! work item with [`post::post`] (marked, `critic.posted`).
//!
//! Rounds belong to this screen: quitting drops their tasks, which kills each critic's
//! process group. The last [`KEPT`] rounds are listed.

use super::review;
use crate::critic::round::{self, Prompt, Request};
use crate::critic::{CriticSpec, Envelope, Recorder, post, run_round};
use crate::events::{EventLog, Source};
use crate::github::Client;
use crate::routing::WorkItemRef;
use crate::secrets::ChildEnv;
use crate::tui::backend::{
    ActionError, ActionResult, CriticResult, CriticRunState, CriticRunView, RunId,
};
use crate::tui::text::short_ref;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use time::OffsetDateTime;

/// Finished rounds beyond this many (oldest first) are dropped from the pane.
pub const KEPT: usize = 50;

struct Run {
    view: CriticRunView,
    envelope: Option<Envelope>,
    saved: Option<PathBuf>,
    posting: bool,
}

/// This screen's rounds. Cheap to clone.
#[derive(Clone, Default)]
pub struct CriticRuns {
    runs: Arc<Mutex<Vec<Run>>>,
    next: Arc<AtomicU64>,
}

impl CriticRuns {
    fn lock(&self) -> MutexGuard<'_, Vec<Run>> {
        self.runs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every round, oldest first.
    pub fn views(&self) -> Vec<CriticRunView> {
        self.lock().iter().map(|r| r.view.clone()).collect()
    }

    /// Starts `spec` on `item` in `cwd`, reviewing its diff against `base` (the
    /// session's worktree base; `None`: what git finds) — must run inside a tokio
    /// runtime.
    pub fn start(
        &self,
        spec: CriticSpec,
        item: WorkItemRef,
        cwd: PathBuf,
        base: Option<String>,
        recorder: Recorder,
        child_env: ChildEnv,
    ) -> RunId {
        let id = RunId(format!(
            "run-{}",
            self.next.fetch_add(1, Ordering::Relaxed) + 1
        ));
        {
            let mut runs = self.lock();
            runs.push(Run {
                view: CriticRunView {
                    id: id.clone(),
                    critic: spec.name.clone(),
                    work_item: Some(item.clone()),
                    started_at: OffsetDateTime::now_utc(),
                    state: CriticRunState::Running,
                    posted: None,
                },
                envelope: None,
                saved: None,
                posting: false,
            });
            trim(&mut runs);
        }
        let this = self.clone();
        let run = id.clone();
        tokio::spawn(async move {
            let (envelope, saved) = one_round(&spec, item, cwd, base, &recorder, child_env).await;
            this.finish(&run, envelope, saved);
        });
        id
    }

    fn finish(&self, id: &RunId, envelope: Envelope, saved: Option<PathBuf>) {
        let mut runs = self.lock();
        if let Some(run) = runs.iter_mut().find(|r| &r.view.id == id) {
            run.view.state = CriticRunState::Finished(result_of(&envelope));
            run.envelope = Some(envelope);
            run.saved = saved;
        }
    }

    /// Posts a finished, passing round's output to its work item.
    pub async fn post(
        &self,
        id: &RunId,
        github: &Result<Arc<Client>, String>,
        events: &EventLog,
    ) -> ActionResult {
        let (envelope, item, saved) = self.take_for_posting(id)?;
        let client = match github {
            Ok(client) => client,
            Err(why) => {
                self.set_posting(id, None);
                return Err(ActionError::Failed(format!(
                    "cannot post {}'s findings: {why}",
                    envelope.critic
                )));
            }
        };
        match post::post(client, &envelope, &item, saved.as_deref()).await {
            Ok(comment) => {
                let _ = events.emit(post::posted_event(
                    Source::Tui,
                    &envelope,
                    &item,
                    &comment,
                    saved.as_deref(),
                ));
                self.set_posting(id, Some(comment.html_url.clone()));
                Ok(format!(
                    "Posted {}'s findings on {}: {}",
                    envelope.critic,
                    short_ref(&item),
                    comment.html_url
                ))
            }
            Err(e) => {
                self.set_posting(id, None);
                Err(ActionError::Failed(format!(
                    "GitHub did not take {}'s findings: {e}",
                    envelope.critic
                )))
            }
        }
    }

    /// The round's envelope, marked as being posted (so a second key press does not
    /// post twice), or why it cannot be posted.
    fn take_for_posting(
        &self,
        id: &RunId,
    ) -> Result<(Envelope, WorkItemRef, Option<PathBuf>), ActionError> {
        let refused = |s: &str| Err(ActionError::Refused(s.to_string()));
        let mut runs = self.lock();
        let Some(run) = runs.iter_mut().find(|r| &r.view.id == id) else {
            return refused("that critic run is no longer listed");
        };
        let Some(envelope) = run.envelope.clone() else {
            return refused("the critic is still running");
        };
        if let Some(url) = &run.view.posted {
            return Err(ActionError::Refused(format!("already posted: {url}")));
        }
        if run.posting {
            return refused("already being posted");
        }
        if !envelope.ok {
            return Err(ActionError::Refused(format!(
                "{} failed, so there are no findings to post; read its error with enter (`the-loop critic post --post-failures {}` posts it anyway)",
                envelope.critic,
                run.saved
                    .as_ref()
                    .map_or_else(|| "ENVELOPE".to_string(), |p| p.display().to_string())
            )));
        }
        let Some(item) = run.view.work_item.clone() else {
            return refused("the round has no work item to post to");
        };
        run.posting = true;
        Ok((envelope, item, run.saved.clone()))
    }

    fn set_posting(&self, id: &RunId, posted: Option<String>) {
        if let Some(run) = self.lock().iter_mut().find(|r| &r.view.id == id) {
            run.posting = false;
            if posted.is_some() {
                run.view.posted = posted;
            }
        }
    }
}

/// Drops the oldest finished rounds beyond [`KEPT`]; running ones always stay.
fn trim(runs: &mut Vec<Run>) {
    while runs.len() > KEPT {
        match runs.iter().position(|r| r.envelope.is_some()) {
            Some(i) => {
                runs.remove(i);
            }
            None => break,
        }
    }
}

/// Builds the material and runs the round, recorded. A round that cannot start
/// (misconfigured) ends as a failed envelope, like any other failure on screen.
async fn one_round(
    spec: &CriticSpec,
    item: WorkItemRef,
    cwd: PathBuf,
    base: Option<String>,
    recorder: &Recorder,
    child_env: ChildEnv,
) -> (Envelope, Option<PathBuf>) {
    let material = review::material(&item, &cwd, base.as_deref()).await;
    let mut request = Request::new(Prompt::Text(material));
    request.child_env = child_env;
    request.cwd = Some(cwd);
    request.work_item = Some(item);
    match run_round(spec, &request, Some(recorder)).await {
        Ok(round) => {
            let mut envelope = round.envelope;
            if let Some(problem) = round.save_error {
                let error = envelope.error.take();
                envelope.error = Some(match error {
                    Some(e) => format!("{e}; {problem}"),
                    None => problem,
                });
            }
            (envelope, round.saved)
        }
        Err(e) => (
            Envelope::not_run(round::header(spec), e.to_string(), 0.0),
            None,
        ),
    }
}

fn result_of(envelope: &Envelope) -> CriticResult {
    CriticResult {
        ok: envelope.ok,
        exit_code: envelope.exit_code,
        duration_secs: envelope.duration_seconds,
        cost_usd: envelope.usage.cost_usd,
        attribution: envelope.attribution.clone(),
        output: envelope.output.clone(),
        error: envelope.error.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SessionsConfig;
    use crate::paths::StatePaths;
    use std::time::Duration;

    fn spec(script: &str) -> CriticSpec {
        let raw: serde_norway::Value = serde_norway::from_str(&format!(
            "{{name: echo, command: sh, args: [-c, '{script}', critic, '{{promptFile}}'], outputFormat: text}}"
        ))
        .unwrap();
        crate::critic::parse_all(&[raw], &SessionsConfig::default())
            .remove(0)
            .spec
            .unwrap()
    }

    async fn finished(runs: &CriticRuns) -> CriticRunView {
        for _ in 0..500 {
            let view = runs.views().remove(0);
            if !view.is_running() {
                return view;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("the critic did not finish");
    }

    #[tokio::test]
    async fn a_round_runs_in_the_background_over_the_material_and_is_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path().join("state"));
        let events = EventLog::open(&paths);
        let recorder = Recorder::new(&paths, events.clone());
        let runs = CriticRuns::default();
        let item = WorkItemRef::new("octo", "repo", 15);
        let work = dir.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        let id = runs.start(
            spec("grep -c UNTRUSTED \"$1\"; pwd"),
            item.clone(),
            work.clone(),
            None,
            recorder,
            ChildEnv::default(),
        );
        assert!(runs.views()[0].is_running());
        let view = finished(&runs).await;
        let result = view.result().unwrap();
        assert!(result.ok, "{result:?}");
        assert!(result.output.starts_with('1'), "{result:?}");
        assert!(
            result.output.contains(&work.display().to_string()),
            "ran in the cwd"
        );

        let log = std::fs::read_to_string(events.path()).unwrap();
        assert!(log.contains("critic.started") && log.contains("critic.finished"));
        assert_eq!(std::fs::read_dir(paths.critics_dir()).unwrap().count(), 1);

        let no_client = Err("no token".to_string());
        let err = runs.post(&id, &no_client, &events).await.unwrap_err();
        assert!(
            matches!(err, ActionError::Failed(ref m) if m.contains("no token")),
            "{err:?}"
        );
        assert_eq!(runs.views()[0].posted, None);
    }

    #[tokio::test]
    async fn a_failed_round_is_not_posted() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        let events = EventLog::open(&paths);
        let runs = CriticRuns::default();
        let id = runs.start(
            spec("echo broken >&2; exit 3"),
            WorkItemRef::new("octo", "repo", 1),
            dir.path().to_path_buf(),
            None,
            Recorder::new(&paths, events.clone()),
            ChildEnv::default(),
        );
        let view = finished(&runs).await;
        assert_eq!(view.result().unwrap().exit_code, 3);
        let err = runs
            .post(&id, &Err("unused".into()), &events)
            .await
            .unwrap_err();
        assert!(
            matches!(err, ActionError::Refused(ref m) if m.contains("failed")),
            "{err:?}"
        );
    }
}
