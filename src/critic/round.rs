//! One critic round (SPEC §9.3–9.5): check the request, build the argv, run it, and read
//! the result into an envelope. A misconfiguration is a [`RunError`] (nothing ran, the CLI
//! exits 2); anything that goes wrong from there on is an `ok: false` envelope.

use super::envelope::{Envelope, Header, Usage, read_json};
use super::findings;
use super::placeholders::{self, Values};
use super::run::{self, Ending, Finished, ProcessSpec};
use super::spec::{CriticSpec, OutputFormat, Runner};
use crate::harness::OneShotOutput;
use crate::secrets::ChildEnv;
use crate::work_item::WorkItemRef;
use std::fs::{DirBuilder, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The longest single argument Linux accepts (`MAX_ARG_STRLEN`, 128 KiB with its NUL).
#[cfg(target_os = "linux")]
pub const MAX_ARG_BYTES: usize = 128 * 1024 - 1;
/// Elsewhere only the total (`ARG_MAX`) is capped; `E2BIG` from the spawn says so.
#[cfg(not(target_os = "linux"))]
pub const MAX_ARG_BYTES: usize = usize::MAX;

/// Where the prompt comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prompt {
    Text(String),
    File(PathBuf),
}

/// What one round is asked to do, besides the critic itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub prompt: Prompt,
    /// `--cwd` (the session's directory in the TUI); else the entry's, else the current.
    pub cwd: Option<PathBuf>,
    pub work_item: Option<WorkItemRef>,
    pub spec_dir: Option<PathBuf>,
    /// Overrides the entry's `timeoutSeconds`.
    pub timeout: Option<Duration>,
    /// What the critic gets of our environment; the default withholds the token and
    /// the default webhook secret. Set it from the config (`Config::child_env`).
    pub child_env: ChildEnv,
    /// The host the critic runs on, in `cwd` there (a repo with `host:`); `None`: here.
    pub host: Option<std::sync::Arc<crate::tmux::RemoteHost>>,
}

impl Request {
    pub fn new(prompt: Prompt) -> Self {
        Self {
            prompt,
            cwd: None,
            work_item: None,
            spec_dir: None,
            timeout: None,
            child_env: ChildEnv::default(),
            host: None,
        }
    }
}

/// A round that cannot start because of how it was configured or asked for.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("no critic named `{name}`; configured: {}", if .known.is_empty() { "none (add one under critics: in the operator config)".to_string() } else { .known.join(", ") })]
    NoSuchCritic { name: String, known: Vec<String> },
    #[error("{0}; fix the entry in the operator config (see `the-loop critic list`)")]
    Invalid(#[from] super::spec::SpecError),
    #[error("critic `{name}` is disabled: set `enabled: true` on its entry to run it")]
    Disabled { name: String },
    #[error("the prompt is empty: give the material to review with --prompt or --prompt-file")]
    EmptyPrompt,
    #[error("cannot read the prompt file {}: {error}", .path.display())]
    PromptFile { path: PathBuf, error: io::Error },
    #[error("the working directory {} is not a directory: {reason}; pass an existing --cwd or fix the entry's `cwd`", .path.display())]
    Cwd { path: PathBuf, reason: String },
    #[error("the spec directory {} is not a directory; pass an existing --spec-dir", .path.display())]
    SpecDir { path: PathBuf },
    #[error("the timeout must be a positive number of seconds")]
    Timeout,
}

/// A round ready to execute: checked, with its argv built. Dropping it removes its
/// private files.
#[derive(Debug)]
pub struct Prepared {
    pub(super) header: Header,
    pub(super) format: OutputFormat,
    pub(super) timeout: Duration,
    pub(super) plan: Result<ProcessSpec, String>,
    pub(super) last_message: Option<PathBuf>,
    pub(super) _scratch: Option<Scratch>,
    /// Runs on another host: its `cwd` is there, so the places it names are not
    /// checked against files here.
    pub(super) remote: bool,
}

/// Checks `request` against `spec` and builds the invocation. Fails only for
/// misconfiguration; a critic that cannot run (missing binary, a prompt too long for
/// one argument) prepares fine and yields an `ok: false` envelope.
pub fn prepare(spec: &CriticSpec, request: &Request) -> Result<Prepared, RunError> {
    if !spec.enabled {
        return Err(RunError::Disabled {
            name: spec.name.clone(),
        });
    }
    let timeout = request.timeout.unwrap_or(spec.timeout);
    if timeout.is_zero() {
        return Err(RunError::Timeout);
    }
    if let Some(host) = &request.host {
        return super::remote::prepare(spec, request, host, timeout);
    }
    let cwd = working_dir(spec, request)?;
    let spec_dir = match &request.spec_dir {
        Some(dir) => {
            let dir = absolute(dir);
            if !dir.is_dir() {
                return Err(RunError::SpecDir { path: dir });
            }
            Some(dir)
        }
        None => None,
    };
    let wants_text = matches!(spec.runner, Runner::Harness(_))
        || crate::substitute::mentions(&spec.args, "{prompt}");
    let wants_file = crate::substitute::mentions(&spec.args, "{promptFile}");
    let (text, given_file) = prompt_parts(&request.prompt, wants_text)?;
    let last_message_wanted = match &spec.runner {
        Runner::Harness(h) => h.oneshot_output() == OneShotOutput::LastMessageFile,
        Runner::Command(_) => false,
    };
    let needs_scratch = (wants_file && given_file.is_none()) || last_message_wanted;
    let header = header(spec);
    let scratch = if needs_scratch {
        match Scratch::create() {
            Ok(s) => Some(s),
            Err(e) => {
                let error = format!("cannot create a private temporary directory: {e}");
                return Ok(Prepared::not_runnable(header, spec, timeout, error));
            }
        }
    } else {
        None
    };
    let prompt_file = match (&given_file, &scratch, wants_file) {
        (Some(file), _, _) => Some(file.clone()),
        (None, Some(scratch), true) => match scratch.write_prompt(text.as_deref().unwrap_or("")) {
            Ok(path) => Some(path),
            Err(e) => {
                let error = format!("cannot write the prompt to a private file: {e}");
                return Ok(Prepared::not_runnable(header, spec, timeout, error));
            }
        },
        _ => None,
    };
    let last_message = scratch
        .as_ref()
        .filter(|_| last_message_wanted)
        .map(Scratch::last_message);
    let values = Values {
        prompt: text,
        prompt_file: prompt_file.map(|p| p.to_string_lossy().into_owned()),
        model: spec.model.clone(),
        work_item: request.work_item.as_ref().map(ToString::to_string),
        spec_dir: spec_dir.map(|d| d.to_string_lossy().into_owned()),
        cwd: Some(cwd.to_string_lossy().into_owned()),
    };
    let placeholder_file = PathBuf::from("last-message.txt");
    let argv = build_argv(
        spec,
        &values,
        last_message.as_deref().unwrap_or(&placeholder_file),
    );
    let plan = plan(spec, argv, cwd, timeout, &request.child_env);
    Ok(Prepared {
        header,
        format: spec.output_format,
        timeout,
        plan,
        last_message,
        _scratch: scratch,
        remote: false,
    })
}

/// The critic's argv (SPEC §9.3): `[command] + args`, or the harness adapter's one-shot
/// argv plus `args`, placeholders substituted inside single elements.
pub fn build_argv(spec: &CriticSpec, values: &Values, last_message_file: &Path) -> Vec<String> {
    let mut argv = match &spec.runner {
        Runner::Command(command) => vec![command.clone()],
        Runner::Harness(harness) => harness
            .oneshot_argv(
                values.prompt.as_deref().unwrap_or(""),
                spec.model.as_deref(),
                last_message_file,
            )
            .unwrap_or_default(),
    };
    argv.extend(placeholders::substitute_all(&spec.args, values));
    argv
}

fn plan(
    spec: &CriticSpec,
    argv: Vec<String>,
    cwd: PathBuf,
    timeout: Duration,
    child_env: &ChildEnv,
) -> Result<ProcessSpec, String> {
    if argv.is_empty() {
        return Err(format!(
            "critic `{}` has no invocation: its harness gave no one-shot argv",
            spec.name
        ));
    }
    if let Some((index, arg)) = argv
        .iter()
        .enumerate()
        .find(|(_, a)| a.len() > MAX_ARG_BYTES)
    {
        return Err(too_long(spec, index, arg.len()));
    }
    let program = spec.locate().ok_or_else(|| {
        format!(
            "`{}` was not found on PATH (or is not executable): install it, or set the critic's `command` (or its harness's command) to its full path",
            spec.program()
        )
    })?;
    Ok(ProcessSpec {
        program,
        argv,
        env: spec.env.clone(),
        child_env: child_env.clone(),
        cwd,
        timeout,
        kill_grace: run::KILL_GRACE,
    })
}

pub(super) fn too_long(spec: &CriticSpec, index: usize, len: usize) -> String {
    let limit = MAX_ARG_BYTES + 1;
    let fix = match spec.runner {
        Runner::Command(_) => {
            "pass the prompt as a file: use `{promptFile}` in args instead of `{prompt}`"
        }
        Runner::Harness(_) => {
            "this harness takes the prompt inline: shorten the review material, or declare a critic with a `command` that reads `{promptFile}`"
        }
    };
    format!(
        "argument {index} is {len} bytes, over Linux's limit of {limit} bytes for one argument (MAX_ARG_STRLEN), so the critic was not started; {fix}"
    )
}

impl Prepared {
    pub(super) fn not_runnable(
        header: Header,
        spec: &CriticSpec,
        timeout: Duration,
        error: String,
    ) -> Self {
        Self {
            header,
            format: spec.output_format,
            timeout,
            plan: Err(error),
            last_message: None,
            _scratch: None,
            remote: false,
        }
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The argv that will run, if the critic can run.
    pub fn argv(&self) -> Option<&[String]> {
        self.plan.as_ref().ok().map(|p| p.argv.as_slice())
    }

    /// Runs the critic and reads its result. Dropping the future kills the critic's
    /// whole process group.
    pub async fn execute(self) -> Envelope {
        let started = Instant::now();
        let process = match &self.plan {
            Ok(process) => process,
            Err(error) => return Envelope::not_run(self.header.clone(), error.clone(), 0.0),
        };
        match run::execute(process).await {
            Ok(finished) => {
                let last_message = self
                    .last_message
                    .as_deref()
                    .and_then(|p| std::fs::read_to_string(p).ok())
                    .filter(|m| !m.trim().is_empty());
                let envelope = envelope(
                    self.header.clone(),
                    self.format,
                    self.timeout,
                    &finished,
                    last_message,
                );
                if self.remote {
                    return envelope;
                }
                let (format, root) = (self.format, process.cwd.clone());
                let stdout = finished.stdout.text();
                // Reading the named files is blocking work, bounded (findings.rs).
                let anchored = envelope.clone();
                tokio::task::spawn_blocking(move || anchor(anchored, format, &stdout, &root))
                    .await
                    .unwrap_or(envelope)
            }
            Err(e) => Envelope::not_run(
                self.header.clone(),
                spawn_error(&process.argv[0], &e),
                seconds(started.elapsed()),
            ),
        }
    }
}

fn spawn_error(program: &str, e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => format!("`{program}` could not be started: not found ({e})"),
        io::ErrorKind::PermissionDenied => {
            format!("`{program}` could not be started: permission denied; make it executable")
        }
        _ if e.raw_os_error() == Some(nix::libc::E2BIG) => format!(
            "`{program}` could not be started: its arguments and environment are too large ({e}); pass the prompt as a file with `{{promptFile}}`"
        ),
        _ => format!("`{program}` could not be started: {e}"),
    }
}

/// The envelope of a round that ran.
pub fn envelope(
    header: Header,
    format: OutputFormat,
    timeout: Duration,
    finished: &Finished,
    last_message: Option<String>,
) -> Envelope {
    let stdout = finished.stdout.text();
    let (output, usage, reported_error) = match format {
        OutputFormat::Text => (last_message.unwrap_or(stdout), Usage::default(), false),
        OutputFormat::Json => {
            let reading = read_json(&stdout);
            let output = last_message.or(reading.output).unwrap_or(stdout);
            (output, reading.usage, reading.reported_error)
        }
    };
    let error = match finished.ending {
        Ending::Exited(0) if reported_error => {
            Some("the critic reported an error (`is_error: true`)".to_string())
        }
        Ending::Exited(0) => None,
        Ending::Exited(code) => Some(format!("the critic exited with status {code}")),
        Ending::Signalled(signal) => Some(format!("the critic was killed by signal {signal}")),
        Ending::TimedOut { .. } => Some(format!(
            "timed out after {}s: the critic and every process it started were killed; raise timeoutSeconds or --timeout if it needs longer",
            seconds(timeout)
        )),
    }
    .map(|e| with_stderr_tail(e, &finished.stderr.text()));
    Envelope {
        critic: header.critic,
        harness: header.harness,
        model: header.model,
        attribution: header.attribution,
        ok: error.is_none(),
        exit_code: finished.ending.code(),
        duration_seconds: seconds(finished.elapsed),
        output,
        error,
        usage,
        findings: Vec::new(),
    }
}

/// The round's findings (SPEC §21.3): the places its answer names that hold in the
/// worktree `root` (the round's working directory); the output gets a note for those
/// it would not otherwise show and for those over the cap.
pub fn anchor(mut envelope: Envelope, format: OutputFormat, stdout: &str, root: &Path) -> Envelope {
    let json = (format == OutputFormat::Json).then_some(stdout);
    let checked = findings::check(findings::named(&envelope.output, json), root);
    envelope.output.push_str(&findings::output_note(&checked));
    envelope.findings = checked.findings;
    envelope
}

/// The last lines of stderr, so a failure says why without opening a log.
fn with_stderr_tail(error: String, stderr: &str) -> String {
    const TAIL: usize = 2000;
    let stderr = stderr.trim();
    if stderr.is_empty() {
        return error;
    }
    let mut start = stderr.len().saturating_sub(TAIL);
    while !stderr.is_char_boundary(start) {
        start += 1;
    }
    let cut = if start > 0 { "…" } else { "" };
    format!("{error}; stderr: {cut}{}", &stderr[start..])
}

/// Seconds, rounded to milliseconds.
pub fn seconds(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0).round() / 1000.0
}

pub fn header(spec: &CriticSpec) -> Header {
    Header {
        critic: spec.name.clone(),
        harness: spec.harness.clone(),
        model: spec.model.clone(),
        attribution: spec.attribution(),
    }
}

fn working_dir(spec: &CriticSpec, request: &Request) -> Result<PathBuf, RunError> {
    let chosen = match (&request.cwd, &spec.cwd) {
        (Some(dir), _) => absolute(dir),
        (None, Some(dir)) => absolute(&crate::paths::expand_tilde(dir)),
        (None, None) => std::env::current_dir().map_err(|e| RunError::Cwd {
            path: PathBuf::from("."),
            reason: e.to_string(),
        })?,
    };
    match std::fs::metadata(&chosen) {
        Ok(m) if m.is_dir() => Ok(chosen),
        Ok(_) => Err(RunError::Cwd {
            path: chosen,
            reason: "it is a file".into(),
        }),
        Err(e) => Err(RunError::Cwd {
            path: chosen,
            reason: e.to_string(),
        }),
    }
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The prompt text (read only when the argv needs it) and the caller's file, if any.
pub(super) fn prompt_parts(
    prompt: &Prompt,
    wants_text: bool,
) -> Result<(Option<String>, Option<PathBuf>), RunError> {
    match prompt {
        Prompt::Text(text) if text.trim().is_empty() => Err(RunError::EmptyPrompt),
        Prompt::Text(text) => Ok((Some(text.clone()), None)),
        Prompt::File(path) => {
            let path = absolute(path);
            let err = |error| RunError::PromptFile {
                path: path.clone(),
                error,
            };
            let meta = std::fs::metadata(&path).map_err(err)?;
            if !meta.is_file() {
                return Err(err(io::Error::other("not a regular file")));
            }
            if !wants_text {
                return if meta.len() == 0 {
                    Err(RunError::EmptyPrompt)
                } else {
                    Ok((None, Some(path)))
                };
            }
            let text = std::fs::read_to_string(&path).map_err(err)?;
            if text.trim().is_empty() {
                return Err(RunError::EmptyPrompt);
            }
            Ok((Some(text), Some(path)))
        }
    }
}

/// A private (0700) directory for an inline prompt's file and a harness's answer file,
/// removed when the round ends.
#[derive(Debug)]
pub(super) struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    fn create() -> io::Result<Self> {
        let dir =
            std::env::temp_dir().join(format!("the-loop-critic-{}", uuid::Uuid::new_v4().simple()));
        DirBuilder::new().mode(0o700).create(&dir)?;
        Ok(Self { dir })
    }

    fn write_prompt(&self, text: &str) -> io::Result<PathBuf> {
        let path = self.dir.join("prompt.txt");
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        Ok(path)
    }

    fn last_message(&self) -> PathBuf {
        self.dir.join("last-message.txt")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.dir) {
            tracing::warn!(dir = %self.dir.display(), error = %e, "critic scratch directory not removed");
        }
    }
}

#[cfg(test)]
#[path = "round_tests.rs"]
mod tests;
