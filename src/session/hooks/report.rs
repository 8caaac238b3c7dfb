//! `the-loop hook claude|codex`: one report from a harness, recorded (SPEC §17.2).
//!
//! The harness runs the hook at every state change and, for some events, waits for it
//! before going on — so the hook reads its payload, moves the session's `reported`
//! state under the record's lock, logs what the operator must know
//! (`session.permission_requested|permission_resolved|turn_ended`), and is gone. It
//! prints **nothing** (the stdout of some hooks becomes model context) and always exits
//! 0: a failure goes to the log file, never into the harness's turn. [`bounded`] makes
//! "fast" a guarantee: whatever the work is waiting on (a lock, a slow disk), the
//! process exits within [`BUDGET`].

use super::payload::{self, Reporter, UsageLog};
use super::state::{self, Outcome};
use crate::events::{Event, EventLog, EventType, Level, Source};
use crate::paths::StatePaths;
use crate::session::registry::{Registry, RegistryError};
use crate::work_item::WorkItemRef;
use std::io::Read;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

/// The longest a hook process runs: the harness's turn waits for some hooks.
pub const BUDGET: Duration = Duration::from_millis(1500);

/// The most of a payload read (Claude's include tool inputs and responses).
pub const MAX_PAYLOAD: u64 = 4 << 20;

#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error("{0} is not set: `the-loop hook` runs inside a session the-loop started")]
    NoWorkItem(&'static str),
    #[error("{var} holds `{value}`, which is not a work item ref: {error}")]
    BadWorkItem {
        var: &'static str,
        value: String,
        error: String,
    },
    #[error(transparent)]
    Payload(#[from] payload::PayloadError),
    #[error("could not read the hook payload: {0}")]
    Read(std::io::Error),
    #[error("no session record for {0}: the report is dropped")]
    NoSession(WorkItemRef),
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// A session on another host: the report did not reach the supervisor.
    #[error("the report was not sent back to the supervisor: {0}")]
    Forward(String),
    #[error("did not finish within {}ms (the registry lock or the disk is slow); the report is dropped", .0.as_millis())]
    TooSlow(Duration),
}

/// The work item of the session the hook runs in (`$THE_LOOP_WORK_ITEM`).
pub fn work_item_from_env() -> Result<WorkItemRef, HookError> {
    let var = crate::paths::ENV_WORK_ITEM;
    let value = std::env::var(var)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .ok_or(HookError::NoWorkItem(var))?;
    value
        .trim()
        .parse()
        .map_err(|e: crate::work_item::RefError| HookError::BadWorkItem {
            var,
            value,
            error: e.to_string(),
        })
}

/// The payload: codex passes it as its last argument, Claude on stdin.
pub fn read_payload(args: &[String], stdin: impl Read) -> Result<Vec<u8>, HookError> {
    if let Some(last) = args.last() {
        return Ok(last.as_bytes().to_vec());
    }
    let mut bytes = Vec::new();
    stdin
        .take(MAX_PAYLOAD)
        .read_to_end(&mut bytes)
        .map_err(HookError::Read)?;
    Ok(bytes)
}

/// Records one report of `reporter` for `item`'s session: the record's `reported`
/// state moves under its lock, then the outcomes are logged (`source: hook`).
pub fn record(
    paths: &StatePaths,
    item: &WorkItemRef,
    reporter: Reporter,
    payload: &[u8],
) -> Result<Vec<Outcome>, HookError> {
    record_report(paths, item, reporter, payload, true)
}

/// [`record`] for a report sent back from a session on another host (issue 32), by the
/// supervisor: its usage log is a file on that host, never read here.
pub fn record_from_host(
    paths: &StatePaths,
    item: &WorkItemRef,
    reporter: Reporter,
    payload: &[u8],
) -> Result<Vec<Outcome>, HookError> {
    record_report(paths, item, reporter, payload, false)
}

/// The payload of a hook on another host as sent back: Claude's tool output
/// (`tool_response`), which nothing here reads and which can be megabytes, left out.
pub fn for_forwarding(payload: &[u8]) -> Vec<u8> {
    match serde_json::from_slice::<serde_json::Value>(payload) {
        Ok(serde_json::Value::Object(mut fields)) => {
            fields.remove("tool_response");
            serde_json::to_vec(&fields).unwrap_or_else(|_| payload.to_vec())
        }
        _ => payload.to_vec(),
    }
}

fn record_report(
    paths: &StatePaths,
    item: &WorkItemRef,
    reporter: Reporter,
    payload: &[u8],
    usage: bool,
) -> Result<Vec<Outcome>, HookError> {
    let Some(report) = payload::parse(reporter, payload)? else {
        return Ok(Vec::new()); // an event that changes nothing
    };
    let events = EventLog::open(paths);
    let registry = Registry::new(paths, events.clone(), Source::Hook);
    let now = crate::time::now_ts();
    let turn_over = matches!(
        report.signal,
        state::Signal::TurnEnded | state::Signal::TurnFailed { .. } | state::Signal::SessionEnded
    );
    let mut own = true;
    let mut limit = None;
    let mut rollout = usage
        .then(|| codex_rollout(&registry, item, report.thread.as_ref()))
        .flatten();
    let outcomes = registry
        .update(item, |record| {
            own = owns(record, report.thread.as_ref());
            if !own {
                return Vec::new();
            }
            if let Some(path) = rollout.take().filter(|_| record.usage.transcript.is_none()) {
                record
                    .usage
                    .follow(path, crate::usage::reader::Format::Codex);
            }
            limit = crate::session::limits::on_signal(&mut record.limit, &report.signal, &now);
            let (next, outcomes) = state::apply(
                record.reported.as_ref(),
                reporter.as_str(),
                &report.event,
                report.signal.clone(),
                &now,
            );
            record.reported = Some(next);
            if let Some(thread) = report.thread.as_ref().filter(|t| t.by_hook)
                && let Some(reported) = record.reported.as_mut()
            {
                reported
                    .conversation
                    .get_or_insert_with(|| thread.id.clone());
            }
            outcomes
        })?
        .ok_or_else(|| HookError::NoSession(item.clone()))?;
    if !own {
        tracing::debug!(
            work_item = %item,
            event = %report.event,
            "a report of another thread ({:?}): not the session's, ignored",
            report.thread.as_ref().map(|t| &t.id)
        );
        return Ok(Vec::new());
    }
    for outcome in &outcomes {
        let _ = events.emit(outcome_event(Source::Hook, item, outcome));
    }
    if let Some(event) = limit
        .as_ref()
        .and_then(|change| crate::session::limits::event(Source::Hook, item, change))
    {
        let _ = events.emit(event);
    }
    if let Some(log) = report.log.as_ref().filter(|_| turn_over && usage) {
        // What the turn used (SPEC §20): Claude Code 2.1.197 writes the turn's last
        // response to its transcript after its `Stop` hooks return, so it is found,
        // checked and read by a detached process once the file settles, never by this
        // one (which the harness may be waiting for).
        usage_later(log, reporter);
    }
    Ok(outcomes)
}

/// The rollout of the codex thread a hook named, for a session that follows none yet:
/// found in codex's home (the hook runs in codex's environment) and accepted as the
/// session's (`session::usage::accept`). From the first hook on, the-loop reads there
/// whether a turn failed on a limit (`limits::codex`): codex runs no `notify` then.
fn codex_rollout(
    registry: &Registry,
    item: &WorkItemRef,
    thread: Option<&payload::Thread>,
) -> Option<PathBuf> {
    let thread = thread.filter(|t| t.by_hook)?;
    let record = registry.get(item).ok()??;
    if record.usage.transcript.is_some() {
        return None;
    }
    let home = crate::usage::codex::codex_home()?;
    let now = time::OffsetDateTime::now_utc();
    let found = crate::usage::codex::find_rollout(&home, &thread.id, now)?;
    let named = crate::session::usage::Named {
        transcript: &found,
        root: crate::session::usage::Root::Codex(&home),
    };
    match crate::session::usage::accept(&record.cwd, named) {
        Ok((path, _)) => Some(path),
        Err(error) => {
            tracing::warn!(work_item = %item, "codex's rollout not followed: {error}");
            None
        }
    }
}

/// Whether a report naming `thread` is about `record`'s session (issue 41): its own
/// thread is the one the first hook named (hooks run only for its turns); a report of
/// another — codex's title request, a sub-agent — moves nothing. Before any hook named
/// one, every report counts, as before.
fn owns(
    record: &crate::session::registry::SessionRecord,
    thread: Option<&payload::Thread>,
) -> bool {
    let own = record
        .reported
        .as_ref()
        .filter(|r| r.harness == Reporter::Codex.as_str())
        .and_then(|r| r.conversation.as_deref());
    match (own, thread) {
        (Some(own), Some(thread)) => own == thread.id,
        _ => true,
    }
}

/// A session on another host, its report sent back: what a turn that ended used is read
/// there (its logs are files there), as here, by a detached `hook-usage`
/// ([`record_usage`]), which sends the figures back.
pub fn usage_on_host_later(reporter: Reporter, payload: &[u8]) {
    let Ok(Some(report)) = payload::parse(reporter, payload) else {
        return;
    };
    let turn_over = matches!(
        report.signal,
        state::Signal::TurnEnded | state::Signal::SessionEnded
    );
    if let Some(log) = report.log.as_ref().filter(|_| turn_over) {
        usage_later(log, reporter);
    }
}

/// A harness's log of usage and where that harness keeps its logs, both owned.
#[derive(Debug, Clone)]
pub struct UsageSource {
    reporter: Reporter,
    path: PathBuf,
    root: PathBuf,
}

impl UsageSource {
    /// `path` as written by `reporter`'s harness in this environment; `None` when the
    /// environment names no home for it.
    fn of(reporter: Reporter, path: PathBuf) -> Option<Self> {
        let root = match reporter {
            Reporter::Claude => crate::usage::track::claude_config_dir(),
            Reporter::Codex => crate::usage::codex::codex_home(),
        }?;
        Some(Self {
            reporter,
            path,
            root,
        })
    }

    /// The file a report's `log` names: Claude's transcript as given, codex's thread's
    /// rollout looked up under its home.
    pub fn find(reporter: Reporter, log: &UsageLog) -> Option<Self> {
        match (reporter, log) {
            (Reporter::Claude, UsageLog::Transcript(path)) => Self::of(reporter, path.clone()),
            (Reporter::Codex, UsageLog::CodexThread(id)) => {
                let home = crate::usage::codex::codex_home()?;
                let now = time::OffsetDateTime::now_utc();
                let path = crate::usage::codex::find_rollout(&home, id, now);
                if path.is_none() {
                    tracing::debug!("usage: no rollout of codex thread {id} (not logged)");
                }
                Self::of(reporter, path?)
            }
            _ => None,
        }
    }

    pub fn named(&self) -> crate::session::usage::Named<'_> {
        let root = match self.reporter {
            Reporter::Claude => crate::session::usage::Root::Claude(&self.root),
            Reporter::Codex => crate::session::usage::Root::Codex(&self.root),
        };
        crate::session::usage::Named {
            transcript: &self.path,
            root,
        }
    }
}

/// Starts `<bin> hook-usage --harness H --transcript PATH` (or `--thread ID`) detached
/// (its own process group, no stdio: the harness waits for neither), inheriting the
/// session's environment.
fn usage_later(log: &UsageLog, reporter: Reporter) {
    use std::os::unix::process::CommandExt;
    let Ok(bin) = std::env::current_exe() else {
        return;
    };
    let mut command = std::process::Command::new(bin);
    command
        .arg("hook-usage")
        .args(["--harness", reporter.as_str()]);
    match log {
        UsageLog::Transcript(path) => command.arg("--transcript").arg(path),
        UsageLog::CodexThread(id) => command.args(["--thread", id]),
    };
    let spawned = command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn();
    if let Err(e) = spawned {
        tracing::warn!("usage: could not start the reader: {e}");
    }
}

/// After a turn ended: finds the log a report named (codex's thread's rollout), waits
/// for it to settle (Claude's grew, then stayed the same for [`SETTLED`]; at most
/// [`SETTLE_LIMIT`]), then reads what the turn used and tells it
/// (`session::usage::read_and_tell`, which reads the log only if it is the session's).
pub fn record_usage(
    paths: &StatePaths,
    item: &WorkItemRef,
    reporter: Reporter,
    log: &UsageLog,
) -> Result<(), HookError> {
    let Some(source) = UsageSource::find(reporter, log) else {
        return Ok(());
    };
    let budgets = match crate::config::load(None) {
        Ok(loaded) => crate::usage::Budgets::from_config(&loaded.config),
        Err(e) => {
            tracing::warn!("usage: the config did not load ({e}); budgets unchecked");
            crate::usage::Budgets::default()
        }
    };
    let events = EventLog::open(paths);
    let registry = Registry::new(paths, events.clone(), Source::Hook);
    read_settled(&source, reporter, || {
        let found = crate::session::usage::read_and_tell(
            &registry,
            &events,
            item,
            Some(source.named()),
            &budgets,
        )?;
        Ok(found.is_some_and(|f| f.after != f.before))
    })
}

/// Reads (`read`: whether it counted anything) once the log settled. What grew may be
/// the lines around the response (Claude Code 2.1.332 under load wrote the usage line
/// after a pause): read again once it grows more, within the limit. A read that counts
/// nothing tells nothing, so this is safe.
fn read_settled(
    source: &UsageSource,
    reporter: Reporter,
    mut read: impl FnMut() -> Result<bool, HookError>,
) -> Result<(), HookError> {
    let transcript = source.path.as_path();
    let size = || std::fs::symlink_metadata(transcript).map_or(0, |m| m.len());
    let start = std::time::Instant::now();
    // Claude Code writes the turn's last response after its `Stop` hooks: its
    // transcript must grow first. Codex's rollout is complete when it notifies.
    let must_grow = reporter == Reporter::Claude;
    loop {
        settle(size, must_grow, start);
        let counted = read()?;
        if counted || !must_grow || start.elapsed() >= SETTLE_LIMIT {
            return Ok(());
        }
    }
}

/// [`record_usage`] in a session on another host: the session's figures as the-loop
/// there keeps them, `<THE_LOOP_HOME>/usage/<slug>.json` (private, one reader at a
/// time), read further from its logs for a session in this process's directory (the
/// harness's), and handed whole to `send` (the caller's way back to the supervisor)
/// after each read. Nothing is told here.
pub fn keep_usage_on_host(
    paths: &StatePaths,
    item: &WorkItemRef,
    reporter: Reporter,
    log: &UsageLog,
    mut send: impl FnMut(&crate::usage::SessionUsage) -> Result<(), HookError>,
) -> Result<(), HookError> {
    let Some(source) = UsageSource::find(reporter, log) else {
        return Ok(());
    };
    let failed =
        |e: std::io::Error| HookError::Forward(format!("the usage kept on this host: {e}"));
    let dir = paths.usage_dir();
    let name = item.slug().to_ascii_lowercase();
    let file = dir.join(format!("{name}.json"));
    read_settled(&source, reporter, || {
        let _lock =
            crate::fsutil::lock_exclusive(&dir.join(format!("{name}.lock"))).map_err(failed)?;
        let mut usage = match crate::fsutil::read_json_state(&file).map_err(failed)? {
            crate::fsutil::StateRead::Ok(usage) => usage,
            _ => crate::usage::SessionUsage::default(),
        };
        let cwd = std::env::current_dir().map_err(failed)?;
        let found = crate::session::usage::read_more(&mut usage, &cwd, Some(source.named()), item);
        crate::fsutil::atomic_write_json(&file, &usage).map_err(failed)?;
        send(&usage)?;
        Ok(found.after != found.before)
    })
}

/// Waits, within [`SETTLE_LIMIT`] of `start`, until the log has stood unchanged for
/// [`SETTLED`] — after growing first, when `must_grow`.
fn settle(size: impl Fn() -> u64, must_grow: bool, start: std::time::Instant) {
    let first = size();
    let (mut last, mut since) = (first, std::time::Instant::now());
    while start.elapsed() < SETTLE_LIMIT {
        std::thread::sleep(Duration::from_millis(50));
        let now = size();
        if now != last {
            (last, since) = (now, std::time::Instant::now());
        } else if (now != first || !must_grow) && since.elapsed() >= SETTLED {
            break;
        }
    }
}

/// How long the transcript stays unchanged before the turn's usage is read.
pub const SETTLED: Duration = Duration::from_millis(300);

/// The longest wait for the transcript to settle.
pub const SETTLE_LIMIT: Duration = Duration::from_secs(5);

/// The event that tells `outcome` on `item`'s session.
pub fn outcome_event(source: Source, item: &WorkItemRef, outcome: &Outcome) -> Event {
    match outcome {
        Outcome::PermissionRequested(request) => {
            Event::new(source, EventType::SessionPermissionRequested)
                .level(Level::Warning)
                .with("work_item", item.to_string())
                .with("tool", request.tool.as_str())
                .with("summary", request.summary.as_str())
                .with("request_id", request.id.as_str())
        }
        Outcome::PermissionResolved {
            request,
            decision,
            actor,
        } => {
            // An answer given in the-loop and settled by the tool's report is still the
            // answerer's.
            let answered_by = request.answering.as_ref().and_then(|a| a.source);
            Event::new(
                answered_by.unwrap_or(source),
                EventType::SessionPermissionResolved,
            )
            .with("work_item", item.to_string())
            .with("decision", decision.as_str())
            .with_opt("actor", actor.clone())
            .with("tool", request.tool.as_str())
            .with("request_id", request.id.as_str())
        }
        Outcome::TurnEnded => {
            Event::new(source, EventType::SessionTurnEnded).with("work_item", item.to_string())
        }
    }
}

/// Runs `work` on its own thread and waits at most `budget`: a report that cannot be
/// recorded in time is dropped (the process exits, and with it the thread), never
/// waited for.
pub fn bounded<T: Send + 'static>(
    budget: Duration,
    work: impl FnOnce() -> Result<T, HookError> + Send + 'static,
) -> Result<T, HookError> {
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("hook".into())
        .spawn(move || {
            let _ = tx.send(work());
        });
    if let Err(e) = spawned {
        return Err(HookError::Read(e));
    }
    rx.recv_timeout(budget)
        .unwrap_or(Err(HookError::TooSlow(budget)))
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
