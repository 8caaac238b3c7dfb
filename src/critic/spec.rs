//! Critic entries (SPEC §9.1): the raw `critics[]` values of the operator config,
//! validated one by one. An invalid entry is kept with its error — `critic list` shows
//! it, running it is a configuration error — so one typo never hides the other critics.

use super::placeholders;
use crate::config::SessionsConfig;
use crate::harness::{Harness, HarnessError};
use serde_norway::{Mapping, Value};
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `timeoutSeconds` when the entry has none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(900);

/// Every key a critic entry may carry.
pub const KEYS: [&str; 11] = [
    "name",
    "harness",
    "model",
    "command",
    "args",
    "env",
    "cwd",
    "outputFormat",
    "timeoutSeconds",
    "enabled",
    "identity",
];

/// How a critic's stdout is read into the envelope's `output` and `usage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputFormat {
    Text,
    Json,
}

/// What a critic runs: its own executable, or a harness's one-shot invocation.
#[derive(Debug, Clone, PartialEq)]
pub enum Runner {
    Command(String),
    Harness(Harness),
}

/// A valid critic entry, defaults applied.
#[derive(Debug, Clone, PartialEq)]
pub struct CriticSpec {
    pub name: String,
    /// The `harness` as written (with a `command` it is only a label).
    pub harness: Option<String>,
    pub model: Option<String>,
    pub runner: Runner,
    pub args: Vec<String>,
    /// Overlaid on the inherited environment.
    pub env: BTreeMap<String, String>,
    pub cwd: Option<String>,
    pub output_format: OutputFormat,
    pub timeout: Duration,
    pub enabled: bool,
    /// A GitHub login shown in the attribution; it grants nothing.
    pub identity: Option<String>,
}

impl CriticSpec {
    /// `[<harness or name>/<model or default>]`, plus the identity when one is set.
    pub fn attribution(&self) -> String {
        let who = self.harness.as_deref().unwrap_or(&self.name);
        let model = self.model.as_deref().unwrap_or("default");
        match &self.identity {
            Some(identity) => format!("[{who}/{model} as {identity}]"),
            None => format!("[{who}/{model}]"),
        }
    }

    /// The executable this critic starts.
    pub fn program(&self) -> &str {
        match &self.runner {
            Runner::Command(command) => command,
            Runner::Harness(h) => h.program(),
        }
    }

    /// The executable's path, looked up on the `PATH` the child will have (the entry's
    /// `env` may override it); `None` when it is not there.
    pub fn locate(&self) -> Option<PathBuf> {
        let path = self.env.get("PATH").map(OsStr::new);
        crate::paths::find_program(self.program(), path)
    }
}

/// One `critics[]` entry, valid or not, as `critic list` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct CriticEntry {
    /// Position in `critics[]`.
    pub index: usize,
    /// The name, when the entry has a string one (even if it is otherwise invalid).
    pub name: Option<String>,
    pub spec: Result<CriticSpec, SpecError>,
}

/// Why an entry cannot run, naming the entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{entry}: {problem}")]
pub struct SpecError {
    /// `critic `lint` (critics[2])`, or `critics[2]` when it has no name.
    pub entry: String,
    pub problem: Problem,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    #[error("expected a mapping of keys (`- name: …`), found {found}")]
    NotAMapping { found: &'static str },
    #[error("unknown key `{key}`: expected one of {}; check the spelling", KEYS.join(", "))]
    UnknownKey { key: String },
    #[error("`name` is missing: give every critic a unique name, e.g. `name: codex-review`")]
    MissingName,
    #[error(
        "duplicate name `{name}`: critics[{first}] and critics[{second}] are both called `{name}`; rename one of them"
    )]
    DuplicateName {
        name: String,
        first: usize,
        second: usize,
    },
    #[error("`{key}` must be {expected}, found {found}")]
    WrongType {
        key: &'static str,
        expected: &'static str,
        found: &'static str,
    },
    #[error(
        "`args` must be a list of strings, e.g. `args: [--input, \"{{promptFile}}\"]`; found {found}"
    )]
    ArgsNotAList { found: &'static str },
    #[error("`args[{index}]` must be a string, found {found}: quote it")]
    ArgNotAString { index: usize, found: &'static str },
    #[error(
        "`env` must be a map of variable names to values, e.g. `env: {{REVIEW_MODE: strict}}`; found {found}"
    )]
    EnvNotAMap { found: &'static str },
    #[error("`env` entry `{key}` is not usable: {reason}")]
    EnvEntry { key: String, reason: &'static str },
    #[error("unknown outputFormat `{value}`: expected `text` or `json`")]
    UnknownOutputFormat { value: String },
    #[error("`timeoutSeconds` must be a positive number of seconds, e.g. 900; found {value}")]
    NonPositiveTimeout { value: String },
    #[error(
        "unknown placeholder `{placeholder}` in args[{index}]: the known ones are {}",
        placeholders::KNOWN.join(", ")
    )]
    UnknownPlaceholder { placeholder: String, index: usize },
    #[error(
        "command `{command}` is never given the prompt: put `{{prompt}}` or `{{promptFile}}` in args"
    )]
    NoPrompt { command: String },
    #[error(
        "command `{command}` contains whitespace: a command is one executable; put its arguments in args"
    )]
    CommandWhitespace { command: String },
    #[error("`command` is empty: name the executable to run")]
    EmptyCommand,
    #[error(
        "nothing to run: set `harness` (claude, codex, cursor or one of sessions.harnesses) or a `command`"
    )]
    NothingToRun,
    #[error(
        "harness `{harness}` has no built-in one-shot invocation: give this critic a `command`, or add sessions.harnesses.{harness}.oneshotArgs"
    )]
    NoOneShot { harness: String },
    #[error("{0}")]
    Harness(HarnessError),
}

/// Validates every entry. Names shared by several entries make all of them invalid:
/// `critic run NAME` must never pick one silently.
pub fn parse_all(raw: &[Value], sessions: &SessionsConfig) -> Vec<CriticEntry> {
    let mut entries: Vec<CriticEntry> = raw
        .iter()
        .enumerate()
        .map(|(index, value)| {
            let name = value
                .get("name")
                .and_then(Value::as_str)
                .filter(|n| !n.trim().is_empty())
                .map(str::to_string);
            let spec = parse_one(value, sessions)
                .map_err(|problem| SpecError::new(index, name.as_deref(), problem));
            CriticEntry { index, name, spec }
        })
        .collect();
    let names: Vec<(usize, Option<String>)> =
        entries.iter().map(|e| (e.index, e.name.clone())).collect();
    for entry in &mut entries {
        let Some(name) = entry.name.as_deref() else {
            continue;
        };
        let other = names
            .iter()
            .find(|(i, n)| *i != entry.index && n.as_deref() == Some(name));
        if let (Some((other, _)), Ok(_)) = (other, &entry.spec) {
            let (first, second) = (entry.index.min(*other), entry.index.max(*other));
            entry.spec = Err(SpecError::new(
                entry.index,
                Some(name),
                Problem::DuplicateName {
                    name: name.to_string(),
                    first,
                    second,
                },
            ));
        }
    }
    entries
}

impl SpecError {
    fn new(index: usize, name: Option<&str>, problem: Problem) -> Self {
        let entry = match name {
            Some(name) => format!("critic `{name}` (critics[{index}])"),
            None => format!("critics[{index}]"),
        };
        Self { entry, problem }
    }
}

fn parse_one(value: &Value, sessions: &SessionsConfig) -> Result<CriticSpec, Problem> {
    let Value::Mapping(map) = value else {
        return Err(Problem::NotAMapping { found: kind(value) });
    };
    for key in map.keys() {
        let key = key.as_str().map(str::to_string).unwrap_or_else(|| {
            serde_norway::to_string(key)
                .unwrap_or_default()
                .trim()
                .to_string()
        });
        if !KEYS.contains(&key.as_str()) {
            return Err(Problem::UnknownKey { key });
        }
    }
    let name = string(map, "name")?
        .filter(|n| !n.trim().is_empty())
        .ok_or(Problem::MissingName)?;
    let harness = string(map, "harness")?.filter(|h| !h.is_empty());
    let model = string(map, "model")?.filter(|m| !m.is_empty());
    let command = string(map, "command")?;
    let args = args(map.get("args"))?;
    let env = env(map.get("env"))?;
    let cwd = string(map, "cwd")?.filter(|c| !c.is_empty());
    let identity = string(map, "identity")?.filter(|i| !i.is_empty());
    let enabled = match map.get("enabled") {
        None => true,
        Some(Value::Bool(b)) => *b,
        Some(other) => return Err(wrong("enabled", "true or false", other)),
    };
    let output_format = match map.get("outputFormat") {
        None => None,
        Some(Value::String(s)) if s == "text" => Some(OutputFormat::Text),
        Some(Value::String(s)) if s == "json" => Some(OutputFormat::Json),
        Some(Value::String(s)) => return Err(Problem::UnknownOutputFormat { value: s.clone() }),
        Some(other) => return Err(wrong("outputFormat", "`text` or `json`", other)),
    };
    let timeout = timeout(map.get("timeoutSeconds"))?;
    for (index, arg) in args.iter().enumerate() {
        if let Some(placeholder) = placeholders::unknown(arg).first() {
            return Err(Problem::UnknownPlaceholder {
                placeholder: placeholder.to_string(),
                index,
            });
        }
    }
    let runner = runner(command, harness.as_deref(), &args, sessions)?;
    let built_in_harness = matches!(runner, Runner::Harness(_))
        && harness
            .as_deref()
            .is_some_and(|h| crate::config::BUILT_IN_HARNESSES.contains(&h));
    let default_format = if built_in_harness {
        OutputFormat::Json
    } else {
        OutputFormat::Text
    };
    Ok(CriticSpec {
        name,
        harness,
        model,
        runner,
        args,
        env,
        cwd,
        output_format: output_format.unwrap_or(default_format),
        timeout,
        enabled,
        identity,
    })
}

fn runner(
    command: Option<String>,
    harness: Option<&str>,
    args: &[String],
    sessions: &SessionsConfig,
) -> Result<Runner, Problem> {
    if let Some(command) = command {
        if command.trim().is_empty() {
            return Err(Problem::EmptyCommand);
        }
        if command.chars().any(char::is_whitespace) {
            return Err(Problem::CommandWhitespace { command });
        }
        if !crate::substitute::mentions(args, "{prompt}")
            && !crate::substitute::mentions(args, "{promptFile}")
        {
            return Err(Problem::NoPrompt { command });
        }
        return Ok(Runner::Command(command));
    }
    let name = harness.ok_or(Problem::NothingToRun)?;
    let resolved = Harness::resolve(name, sessions).map_err(Problem::Harness)?;
    if resolved
        .oneshot_argv("", None, Path::new("last-message"))
        .is_none()
    {
        return Err(Problem::NoOneShot {
            harness: name.to_string(),
        });
    }
    Ok(Runner::Harness(resolved))
}

fn string(map: &Mapping, key: &'static str) -> Result<Option<String>, Problem> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(wrong(key, "a string", other)),
    }
}

fn args(value: Option<&Value>) -> Result<Vec<String>, Problem> {
    let items = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Sequence(items)) => items,
        Some(other) => return Err(Problem::ArgsNotAList { found: kind(other) }),
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            scalar_text(item).ok_or(Problem::ArgNotAString {
                index,
                found: kind(item),
            })
        })
        .collect()
}

fn env(value: Option<&Value>) -> Result<BTreeMap<String, String>, Problem> {
    let map = match value {
        None | Some(Value::Null) => return Ok(BTreeMap::new()),
        Some(Value::Mapping(map)) => map,
        Some(other) => return Err(Problem::EnvNotAMap { found: kind(other) }),
    };
    let mut env = BTreeMap::new();
    for (key, value) in map {
        let key = scalar_text(key).unwrap_or_default();
        let bad = |reason| Problem::EnvEntry {
            key: key.clone(),
            reason,
        };
        if key.is_empty() || key.contains(['=', '\0']) {
            return Err(bad("a variable name must be non-empty, without `=` or NUL"));
        }
        let value = match value {
            Value::Bool(b) => b.to_string(),
            other => scalar_text(other).ok_or_else(|| bad("its value must be a string"))?,
        };
        if value.contains('\0') {
            return Err(bad("its value contains NUL"));
        }
        env.insert(key, value);
    }
    Ok(env)
}

fn timeout(value: Option<&Value>) -> Result<Duration, Problem> {
    let Some(value) = value else {
        return Ok(DEFAULT_TIMEOUT);
    };
    let shown = || {
        serde_norway::to_string(value)
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    let seconds = match value {
        Value::Number(n) => n.as_f64(),
        _ => None,
    };
    seconds
        .filter(|s| *s > 0.0)
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| Problem::NonPositiveTimeout { value: shown() })
}

/// Strings as they are; numbers as written (YAML `- 3` means the argument `3`).
fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn wrong(key: &'static str, expected: &'static str, found: &Value) -> Problem {
    Problem::WrongType {
        key,
        expected,
        found: kind(found),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

#[cfg(test)]
#[path = "spec_tests.rs"]
mod tests;
