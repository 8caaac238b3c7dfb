//! A whole round with its record (SPEC §9.6): `critic.started`, the run, the envelope
//! saved atomically as `critics/<ts>-<name>.json`, its usage added to its work item's
//! critic spend (`usage::critics`), `critic.finished`. The TUI records
//! every round; the CLI records rounds run with `--work-item`.

use super::envelope::Envelope;
use super::round::{self, Request, RunError};
use super::spec::CriticSpec;
use crate::events::{Event, EventLog, EventType, Level, Source};
use crate::paths::StatePaths;
use crate::usage::critics::{CriticSpend, CriticTally};
use crate::work_item::slugify;
use std::io;
use std::path::PathBuf;
use std::time::Instant;

/// Where rounds are recorded.
#[derive(Debug, Clone)]
pub struct Recorder {
    events: EventLog,
    dir: PathBuf,
    spend: CriticTally,
}

impl Recorder {
    pub fn new(paths: &StatePaths, events: EventLog) -> Self {
        Self {
            events,
            dir: paths.critics_dir(),
            spend: CriticTally::new(paths),
        }
    }

    /// Saves `envelope` atomically under `critics/` and returns its path.
    pub fn save(&self, envelope: &Envelope) -> io::Result<PathBuf> {
        let path = self.dir.join(format!(
            "{}-{}.json",
            crate::time::compact_now(),
            slugify(&envelope.critic)
        ));
        crate::fsutil::atomic_write_json(&path, envelope)?;
        Ok(path)
    }

    pub fn events(&self) -> &EventLog {
        &self.events
    }
}

/// The outcome of [`run_round`].
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    pub envelope: Envelope,
    /// Where the envelope was saved, when the round was recorded and the save worked.
    pub saved: Option<PathBuf>,
    /// Why a recorded round's envelope could not be saved.
    pub save_error: Option<String>,
}

/// Runs one round of `spec`; with a recorder, logs and saves it. `Err` means nothing
/// ran (misconfiguration). Dropping the future abandons the round (nothing recorded)
/// and kills the critic's process group.
pub async fn run_round(
    spec: &CriticSpec,
    request: &Request,
    recorder: Option<&Recorder>,
) -> Result<Round, RunError> {
    run_round_until(spec, request, recorder, std::future::pending()).await
}

/// [`run_round`], cancelled when `cancel` completes first (with the reason, e.g.
/// "interrupted"): the critic's group is killed and the round ends `ok: false` with
/// `exitCode: -1`, recorded like any other.
pub async fn run_round_until(
    spec: &CriticSpec,
    request: &Request,
    recorder: Option<&Recorder>,
    cancel: impl Future<Output = String>,
) -> Result<Round, RunError> {
    let prepared = round::prepare(spec, request)?;
    let header = prepared.header().clone();
    let started = Instant::now();
    let work_item = request.work_item.as_ref().map(ToString::to_string);
    // The commit the round reviews, so a ship can show the verdict on what goes out
    // (SPEC §19.3).
    let head = match (recorder, &request.cwd) {
        // (A round on another host reviews its files there: no head read here.)
        (Some(_), Some(cwd)) if request.host.is_none() => reviewed_head(cwd).await,
        _ => None,
    };
    if let Some(recorder) = recorder {
        let _ = recorder.events.emit(
            Event::new(Source::Critic, EventType::CriticStarted)
                .with("critic", spec.name.as_str())
                .with_opt("work_item", work_item.clone())
                .with_opt("head", head.clone())
                .with_opt("harness", spec.harness.clone())
                .with_opt("model", spec.model.clone()),
        );
    }
    let envelope = tokio::select! {
        envelope = prepared.execute() => envelope,
        reason = cancel => Envelope::not_run(
            header,
            format!("cancelled ({reason}): the critic and every process it started were killed"),
            round::seconds(started.elapsed()),
        ),
    };
    tracing::info!(
        critic = %envelope.critic,
        ok = envelope.ok,
        exit_code = envelope.exit_code,
        duration_seconds = envelope.duration_seconds,
        error = envelope.error.as_deref().unwrap_or(""),
        "critic round finished"
    );
    let Some(recorder) = recorder else {
        return Ok(Round {
            envelope,
            saved: None,
            save_error: None,
        });
    };
    let (saved, save_error) = match recorder.save(&envelope) {
        Ok(path) => (Some(path), None),
        Err(e) => {
            tracing::warn!(error = %e, "critic envelope not saved");
            (
                None,
                Some(format!(
                    "the envelope could not be saved under {}: {e}",
                    recorder.dir.display()
                )),
            )
        }
    };
    if let Some(item) = &request.work_item {
        // Before the event: a tally built from the log meanwhile cannot count it twice.
        let usage = &envelope.usage;
        let round = CriticSpend::round(usage.input_tokens, usage.output_tokens, usage.cost_usd);
        if let Err(e) = recorder.spend.add(item, &crate::usage::today(), &round) {
            tracing::warn!(error = %e, %item, "critic spend not counted");
        }
    }
    let _ = recorder
        .events
        .emit(finished_event(&envelope, work_item, saved.as_ref()).with_opt("head", head));
    Ok(Round {
        envelope,
        saved,
        save_error,
    })
}

/// `HEAD` of the git repository at `cwd`, when there is one.
async fn reviewed_head(cwd: &std::path::Path) -> Option<String> {
    crate::workspace::Git::default()
        .line(cwd, &["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])
        .await
        .ok()
        .flatten()
}

fn finished_event(
    envelope: &Envelope,
    work_item: Option<String>,
    saved: Option<&PathBuf>,
) -> Event {
    let level = if envelope.ok {
        Level::Info
    } else {
        Level::Warning
    };
    Event::new(Source::Critic, EventType::CriticFinished)
        .level(level)
        .with("critic", envelope.critic.as_str())
        .with_opt("work_item", work_item)
        .with("ok", envelope.ok)
        .with("exit_code", envelope.exit_code)
        .with("duration_seconds", envelope.duration_seconds)
        .with_opt("path", saved.map(|p| p.display().to_string()))
        .with_opt("cost_usd", envelope.usage.cost_usd)
        .with_opt("input_tokens", envelope.usage.input_tokens)
        .with_opt("output_tokens", envelope.usage.output_tokens)
        .with_opt("error", envelope.error.clone())
}
