//! Critic rounds launched from the keyboard (SPEC §11.4): each runs in the background
//! in the session's working directory over the review material ([`super::review`]),
//! through the [`CriticRunner`] the screen was handed — the same round as `the-loop
//! critic run`, so it is saved under `critics/` with `critic.started` /
//! `critic.finished` — and can then be posted to its work item by the same runner
//! (marked, `critic.posted`).
//!
//! Rounds belong to this screen: quitting drops their tasks, which kills each critic's
//! process group. The last [`KEPT`] rounds are listed — and beside them every round
//! other processes recorded for a listed item (another screen, `the-loop critic run
//! --work-item`: SPEC §17.7), read from the event log ([`super::rounds`]) and their
//! saved envelopes, postable like this screen's own.

use super::actions::Place;
use super::review;
use super::rounds::{Finished, RoundLog};
use crate::critic::round::{self, Prompt, Request};
use crate::critic::{CriticRunner, CriticSpec, Envelope, PostError};
use crate::secrets::ChildEnv;
use crate::tui::backend::{
    ActionError, ActionResult, CriticResult, CriticRunState, CriticRunView, RunId,
};
use crate::tui::text::short_ref;
use crate::work_item::WorkItemRef;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
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

/// A round another process recorded, as last listed.
#[derive(Clone)]
struct Logged {
    work_item: WorkItemRef,
    path: Option<PathBuf>,
}

/// This screen's rounds. Cheap to clone.
#[derive(Clone, Default)]
pub struct CriticRuns {
    runs: Arc<Mutex<Vec<Run>>>,
    next: Arc<AtomicU64>,
    /// Other processes' rounds by id, as last listed.
    logged: Arc<Mutex<HashMap<RunId, Logged>>>,
    /// Saved envelopes read so far (`None`: unreadable), and what was posted.
    envelopes: Arc<Mutex<HashMap<PathBuf, Option<Envelope>>>>,
    posted: Arc<Mutex<HashMap<RunId, String>>>,
}

impl CriticRuns {
    fn lock(&self) -> MutexGuard<'_, Vec<Run>> {
        self.runs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every round, oldest first.
    pub fn views(&self) -> Vec<CriticRunView> {
        self.lock().iter().map(|r| r.view.clone()).collect()
    }

    /// This screen's rounds, then every round of `log` another process ran on an item
    /// `listed` shows. A round whose process is gone without finishing is a failure.
    pub fn views_with(
        &self,
        log: &RoundLog,
        listed: impl Fn(&WorkItemRef) -> bool,
    ) -> Vec<CriticRunView> {
        let mut views = self.views();
        let me = std::process::id();
        let mut logged = HashMap::new();
        let posted = self
            .posted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for round in log.rounds().filter(|r| r.pid != me && listed(&r.work_item)) {
            let id = RunId(format!("log-{}-{}", round.pid, round.started_ts));
            let state = match &round.finished {
                Some(done) => CriticRunState::Finished(self.logged_result(&round.critic, done)),
                None if process_alive(round.pid) => CriticRunState::Running,
                None => CriticRunState::Finished(CriticResult {
                    ok: false,
                    exit_code: -1,
                    duration_secs: 0.0,
                    cost_usd: None,
                    attribution: format!("[{}]", round.critic),
                    output: String::new(),
                    error: Some(format!(
                        "ended without a result: process {} is gone",
                        round.pid
                    )),
                    findings: Vec::new(),
                }),
            };
            logged.insert(
                id.clone(),
                Logged {
                    work_item: round.work_item.clone(),
                    path: round.finished.as_ref().and_then(|f| f.path.clone()),
                },
            );
            views.push(CriticRunView {
                posted: posted.get(&id).cloned(),
                id,
                critic: round.critic.clone(),
                work_item: Some(round.work_item.clone()),
                started_at: round.started_at,
                state,
            });
        }
        *self.logged.lock().unwrap_or_else(|e| e.into_inner()) = logged;
        views
    }

    /// A logged round's result: its saved envelope (read once), else what the event said.
    fn logged_result(&self, critic: &str, done: &Finished) -> CriticResult {
        if let Some(envelope) = done.path.as_ref().and_then(|p| self.envelope(p)) {
            return result_of(&envelope);
        }
        CriticResult {
            ok: done.ok,
            exit_code: done.exit_code,
            duration_secs: done.duration_secs,
            cost_usd: done.cost_usd,
            attribution: format!("[{critic}]"),
            output: String::new(),
            error: done.error.clone(),
            findings: Vec::new(),
        }
    }

    fn envelope(&self, path: &Path) -> Option<Envelope> {
        let mut cache = self.envelopes.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .entry(path.to_path_buf())
            .or_insert_with(|| {
                let bytes = std::fs::read(path).ok()?;
                serde_json::from_slice(&bytes).ok()
            })
            .clone()
    }

    /// A logged round's envelope and item for posting, or why it cannot be posted.
    fn logged_for_posting(
        &self,
        id: &RunId,
    ) -> Result<(Envelope, WorkItemRef, PathBuf), ActionError> {
        let refused = |s: String| Err(ActionError::Refused(s));
        if let Some(url) = self
            .posted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
        {
            return refused(format!("already posted: {url}"));
        }
        let logged = self
            .logged
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned();
        let Some(logged) = logged else {
            return refused("that critic run is no longer listed".into());
        };
        let Some(path) = logged.path else {
            return refused("the round is still running, or saved no result".into());
        };
        let Some(envelope) = self.envelope(&path) else {
            return refused(format!(
                "the saved result {} is not readable",
                path.display()
            ));
        };
        if !envelope.ok {
            return refused(format!(
                "{} failed, so there are no findings to post (`the-loop critic post --post-failures {}` posts it anyway)",
                envelope.critic,
                path.display()
            ));
        }
        Ok((envelope, logged.work_item, path))
    }

    /// Starts `spec` on `item` in `cwd`, reviewing its diff against `base` (the
    /// session's worktree base; `None`: what git finds) — must run inside a tokio
    /// runtime.
    pub fn start(
        &self,
        spec: CriticSpec,
        item: WorkItemRef,
        place: Place,
        runner: CriticRunner,
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
            let (envelope, saved) = one_round(&spec, item, place, &runner, child_env).await;
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
    pub async fn post(&self, id: &RunId, runner: &CriticRunner) -> ActionResult {
        let logged = id.0.starts_with("log-");
        let (envelope, item, saved) = if logged {
            let (envelope, item, path) = self.logged_for_posting(id)?;
            (envelope, item, Some(path))
        } else {
            self.take_for_posting(id)?
        };
        match runner.post(&envelope, &item, saved.as_deref()).await {
            Ok(posted) => {
                self.set_posting(id, Some(posted.html_url.clone()));
                let what = if posted.review {
                    format!("a review ({} on their lines)", posted.comments)
                } else {
                    "a comment".to_string()
                };
                Ok(format!(
                    "Posted {}'s round on {} as {what}: {}",
                    envelope.critic,
                    short_ref(&item),
                    posted.html_url
                ))
            }
            Err(PostError::NoClient(why)) => {
                self.set_posting(id, None);
                Err(ActionError::Failed(format!(
                    "cannot post {}'s findings: {why}",
                    envelope.critic
                )))
            }
            Err(PostError::GitHub(e)) => {
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
        if let Some(url) = &posted
            && id.0.starts_with("log-")
        {
            self.posted
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(id.clone(), url.clone());
        }
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
    place: Place,
    runner: &CriticRunner,
    child_env: ChildEnv,
) -> (Envelope, Option<PathBuf>) {
    let material = review::material(&place.git, &item, &place.cwd, place.base.as_deref()).await;
    let mut request = Request::new(Prompt::Text(material));
    request.child_env = child_env;
    request.cwd = Some(place.cwd);
    request.host = place.host;
    request.work_item = Some(item);
    match runner.run(spec, &request).await {
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

/// Whether process `pid` still runs (signal 0; a process of another user counts).
fn process_alive(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    !matches!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None),
        Err(nix::errno::Errno::ESRCH)
    )
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
        findings: envelope.findings.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory on this machine, diffed against what git finds.
    fn here(dir: &std::path::Path) -> Place {
        Place {
            cwd: dir.to_path_buf(),
            base: None,
            git: crate::workspace::Git::default(),
            host: None,
        }
    }
    use crate::config::SessionsConfig;
    use crate::critic::Recorder;
    use crate::events::{EventLog, Source};
    use crate::paths::StatePaths;
    use std::time::Duration;

    /// A runner that records under `paths` and has no client (`why`).
    fn runner(paths: &StatePaths, events: &EventLog, why: &str) -> CriticRunner {
        let recorder = Recorder::new(paths, events.clone());
        CriticRunner::new(recorder, Err(why.to_string()), Source::Tui)
    }

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
        let runner = runner(&paths, &events, "no token");
        let runs = CriticRuns::default();
        let item = WorkItemRef::new("octo", "repo", 15);
        let work = dir.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        let id = runs.start(
            spec("grep -c UNTRUSTED \"$1\"; pwd"),
            item.clone(),
            here(&work),
            runner.clone(),
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

        let err = runs.post(&id, &runner).await.unwrap_err();
        assert!(
            matches!(err, ActionError::Failed(ref m) if m.contains("no token")),
            "{err:?}"
        );
        assert_eq!(runs.views()[0].posted, None);
    }

    #[test]
    fn rounds_other_processes_recorded_are_listed_for_listed_items() {
        use crate::events::{Event, EventType};
        let dir = tempfile::tempdir().unwrap();
        let saved = dir.path().join("critics-1.json");
        let mut envelope = Envelope::not_run(round::header(&spec("true")), "unused".into(), 2.0);
        envelope.ok = true;
        envelope.error = None;
        envelope.output = "looks fine".into();
        std::fs::write(&saved, serde_json::to_vec(&envelope).unwrap()).unwrap();
        let event = |t: EventType, pid: u32, item: &str| {
            let mut e = Event::new(Source::Critic, t)
                .with("critic", "echo")
                .with("work_item", item);
            e.pid = pid;
            e
        };
        let mut log = RoundLog::default();
        // Another process's finished round, with its saved envelope.
        log.observe(&event(
            EventType::CriticStarted,
            4_000_001,
            "github:octo/repo#15",
        ));
        log.observe(
            &event(EventType::CriticFinished, 4_000_001, "github:octo/repo#15")
                .with("ok", true)
                .with("exit_code", 0)
                .with("path", saved.display().to_string()),
        );
        // One whose process is gone without a result.
        log.observe(&event(
            EventType::CriticStarted,
            4_000_002,
            "github:octo/repo#15",
        ));
        // One on an item this screen does not list.
        log.observe(&event(
            EventType::CriticStarted,
            4_000_003,
            "github:octo/other#1",
        ));
        // This process's own: CriticRuns has it already.
        log.observe(&event(
            EventType::CriticStarted,
            std::process::id(),
            "github:octo/repo#15",
        ));

        let runs = CriticRuns::default();
        let listed = WorkItemRef::new("octo", "repo", 15);
        let views = runs.views_with(&log, |item| item == &listed);
        assert_eq!(views.len(), 2, "{views:#?}");
        let result = views[0].result().unwrap();
        assert!(result.ok);
        assert_eq!(result.output, "looks fine", "read from the saved envelope");
        let gone = views[1].result().unwrap();
        assert!(!gone.ok);
        assert!(
            gone.error.as_deref().unwrap().contains("is gone"),
            "{gone:?}"
        );
        // A logged round can be posted like this screen's (here: no client).
        let taken = runs.logged_for_posting(&views[0].id).unwrap();
        assert_eq!(taken.1, listed);
        assert!(matches!(
            runs.logged_for_posting(&views[1].id),
            Err(ActionError::Refused(_))
        ));
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
            here(dir.path()),
            runner(&paths, &events, "unused"),
            ChildEnv::default(),
        );
        let view = finished(&runs).await;
        assert_eq!(view.result().unwrap().exit_code, 3);
        let err = runs
            .post(&id, &runner(&paths, &events, "unused"))
            .await
            .unwrap_err();
        assert!(
            matches!(err, ActionError::Refused(ref m) if m.contains("failed")),
            "{err:?}"
        );
    }
}
