//! Harness adapters (SPEC §7.2): for each agent CLI, the binary and the argv of a fresh
//! session, a resumed one, and a one-shot run (the critics' path). Each adapter's argv
//! is written here once; nothing else builds a harness command line. Argv only, never
//! a shell.

pub mod app_server;
mod opencode;
pub mod version;

use crate::config::{CodexPolicy, HarnessConfig, PermissionMode, SessionsConfig};
use crate::substitute::{self, Missing};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// How Claude Code's input box shows a pasted text not yet submitted: it folds a
/// multi-line paste into `[Pasted text #1 +12 lines]`.
pub const CLAUDE_PASTE_MARKER: &str = "[Pasted text #";
/// How Codex's composer shows a large pasted text not yet submitted
/// (`[Pasted Content 2030 chars]`).
pub const CODEX_PASTE_MARKER: &str = "[Pasted Content ";

#[derive(Debug, Clone, PartialEq)]
pub struct Harness {
    name: String,
    kind: Kind,
    /// How a session's harness reports its state back (SPEC §17), when wired.
    hooks: Option<HookWiring>,
    /// Claude Code's `--permission-mode` for interactive sessions, when set.
    permission_mode: Option<PermissionMode>,
    /// Codex's approval policy and sandbox for interactive sessions, when set.
    codex_policy: Option<CodexPolicy>,
    /// Codex's app server its TUI attaches to (`harness::app_server`), when one is.
    app_server: Option<app_server::AppServer>,
}

/// What a built-in harness can report about itself (SPEC §17.2, §17.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookSupport {
    /// Claude Code: every state change, through hooks declared in a settings file.
    SettingsFile,
    /// Codex: a turn's start, tool calls and approval requests through hooks declared
    /// with `-c`, its end through its `notify` program.
    TurnNotify,
    /// Nothing: the screen heuristic is all there is.
    None,
}

/// Whether the-loop knows a harness's screen (SPEC §18.2): for a known screen every
/// paste waits for a ready, empty input box (`session::delivery`, its screen readers); for an unknown one it
/// goes in blind, as before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScreenKind {
    /// Claude Code 2.1.197's screen, recorded from the real client.
    Claude,
    /// Codex 0.171.0's screen, recorded from the real client.
    Codex,
    /// Not recorded (cursor, custom commands).
    Unknown,
}

impl ScreenKind {
    /// As `config check` prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Claude => "claude",
            Self::Codex => "codex",
            Self::Unknown => "unknown",
        }
    }
}

/// The Codex events whose hooks report to the-loop (issue 31), and whether each takes
/// a matcher. The turn's end comes from `notify` (which also names the thread whose
/// rollout holds the usage), so `Stop` is not hooked: one turn, one `turn_ended`.
pub const CODEX_HOOK_EVENTS: [(&str, bool); 4] = [
    ("UserPromptSubmit", false),
    ("PreToolUse", true),
    ("PermissionRequest", true),
    ("PostToolUse", true),
];

/// Codex's flags reporting to `<bin> hook codex` (SPEC §17.5, issue 31): `notify` for
/// the turn's end, and a command hook per [`CODEX_HOOK_EVENTS`] declared with `-c` (the
/// session-flags layer; the operator's own config and hooks are untouched). Codex 0.171.0
/// runs a hook only once its exact definition is trusted, else it stops at a "Hooks
/// need review" screen: `--dangerously-bypass-hook-trust` runs them — the-loop wrote
/// these, and the flag holds for this invocation only (decision
/// `2026-12-04-codex-delivery`).
/// Codex's offer, as its rate limits near, to switch to a cheaper model ("Approaching
/// rate limits": a menu in its TUI, which holds every delivery until someone answers),
/// hidden for the-loop's sessions (issue 43): what its own "Keep current model (never
/// show again)" saves in `[notice]` (checked in codex 0.171.0's config), for this
/// session only. Passed to the TUI and to its app server.
const CODEX_NO_MODEL_NUDGE: &str = "notice.hide_rate_limit_model_nudge=true";

fn codex_hook_flags(bin: &Path) -> Vec<String> {
    // TOML basic strings; JSON's string escapes are TOML's.
    let element = |s: &str| serde_json::Value::from(s).to_string();
    let bin_text = bin.to_string_lossy();
    let mut flags = vec![
        "-c".into(),
        format!(
            "notify=[{},{},{}]",
            element(&bin_text),
            element("hook"),
            element("codex")
        ),
    ];
    // Codex runs a hook's command through a shell: the path is quoted for it.
    let Ok(quoted) = shlex::try_quote(&bin_text) else {
        return flags;
    };
    let command = element(&format!("{quoted} hook codex"));
    flags.extend([
        "--dangerously-bypass-hook-trust".into(),
        "-c".into(),
        "features.hooks=true".into(),
    ]);
    for (event, matcher) in CODEX_HOOK_EVENTS {
        let matcher = if matcher { "matcher=\"\"," } else { "" };
        flags.push("-c".into());
        flags.push(format!(
            "hooks.{event}=[{{{matcher}hooks=[{{type=\"command\",command={command},timeout=5}}]}}]"
        ));
    }
    flags
}

/// Where a session's harness sends its reports: `<bin> hook <harness>`, and (claude)
/// the per-session settings file declaring the hooks. Written by `session::hooks`.
#[derive(Debug, Clone, PartialEq)]
pub struct HookWiring {
    /// The running `the-loop` binary (absolute).
    pub bin: PathBuf,
    /// Claude's `--settings` file.
    pub settings_file: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Claude {
        program: String,
    },
    Codex {
        program: String,
    },
    Cursor {
        program: String,
    },
    /// With the server its TUI attaches to (`harness::opencode`), when one is.
    Opencode {
        program: String,
        server: Option<opencode::OpencodeServer>,
    },
    Custom(HarnessConfig),
}

impl Kind {
    fn built_in(name: &str, program: String) -> Self {
        match name {
            "claude" => Self::Claude { program },
            "codex" => Self::Codex { program },
            "opencode" => Self::Opencode {
                program,
                server: None,
            },
            _ => Self::Cursor { program },
        }
    }
}

/// Where a one-shot run leaves its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OneShotOutput {
    /// On stdout (claude, cursor: one JSON document).
    Stdout,
    /// In the file passed as `last_message_file` (codex: `exec --json` prints JSON
    /// Lines, and the final message goes to `--output-last-message`).
    LastMessageFile,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HarnessError {
    #[error(
        "unknown harness `{name}`: use claude, codex, cursor or opencode, or define sessions.harnesses.{name} in the config"
    )]
    Unknown { name: String },
    #[error("sessions.harnesses.{name}.command is empty: set the program to run")]
    NoCommand { name: String },
    #[error(
        "harness `{harness}` needs `{program}`, which is not on PATH: install it, or set sessions.harnesses.{harness}.command to its full path"
    )]
    NotFound { harness: String, program: String },
}

impl Harness {
    /// The harness called `name`: a `sessions.harnesses` entry wins over a built-in of
    /// the same name. An entry with only `command` keeps the built-in's argv and changes
    /// its binary; an entry with any argument list replaces the built-in.
    pub fn resolve(name: &str, config: &SessionsConfig) -> Result<Self, HarnessError> {
        let entry = config.harnesses.get(name);
        if let Some(entry) = entry
            && entry.command.trim().is_empty()
        {
            return Err(HarnessError::NoCommand { name: name.into() });
        }
        let default_program = match name {
            "claude" => Some("claude"),
            "codex" => Some("codex"),
            "cursor" => Some("cursor-agent"),
            "opencode" => Some("opencode"),
            _ => None,
        };
        let kind = match (default_program, entry) {
            (Some(default), None) => Kind::built_in(name, default.to_string()),
            (Some(_), Some(e))
                if e.args.is_empty() && e.resume_args.is_empty() && e.oneshot_args.is_empty() =>
            {
                Kind::built_in(name, e.command.clone())
            }
            (_, Some(e)) => Kind::Custom(e.clone()),
            (None, None) => return Err(HarnessError::Unknown { name: name.into() }),
        };
        Ok(Self {
            name: name.to_string(),
            kind,
            hooks: None,
            permission_mode: None,
            codex_policy: None,
            app_server: None,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The built-in Claude Code adapter (its binary possibly moved by config).
    pub fn is_claude(&self) -> bool {
        matches!(self.kind, Kind::Claude { .. })
    }

    /// Whether the-loop can read this harness's screen: the built-in `claude` adapter
    /// (its binary possibly moved); a custom command is unknown even when it runs Claude
    /// Code, since its arguments may change what the screen shows.
    pub fn screen(&self) -> ScreenKind {
        match self.kind {
            Kind::Claude { .. } => ScreenKind::Claude,
            Kind::Codex { .. } => ScreenKind::Codex,
            _ => ScreenKind::Unknown,
        }
    }

    /// What this harness reports about itself; a custom harness reports nothing.
    pub fn hook_support(&self) -> HookSupport {
        match &self.kind {
            Kind::Claude { .. } => HookSupport::SettingsFile,
            Kind::Codex { .. } => HookSupport::TurnNotify,
            Kind::Cursor { .. } | Kind::Opencode { .. } | Kind::Custom(_) => HookSupport::None,
        }
    }

    /// This harness with its sessions reporting to `wiring` (fresh and resume argv).
    pub fn with_hooks(mut self, wiring: HookWiring) -> Self {
        self.hooks = Some(wiring);
        self
    }

    /// This harness with its interactive sessions (fresh and resumed) started in `mode`.
    /// Only Claude Code takes one; the others ignore it.
    pub fn with_permission_mode(mut self, mode: PermissionMode) -> Self {
        self.permission_mode = Some(mode);
        self
    }

    /// The permission mode its interactive sessions start in: `None` for a harness that
    /// takes none (everything but the built-in `claude`).
    pub fn permission_mode(&self) -> Option<PermissionMode> {
        self.permission_mode.filter(|_| self.is_claude())
    }

    /// This harness with its interactive codex sessions (fresh and resumed) under
    /// `policy` (issue 41). Only the built-in codex takes one; the others ignore it.
    pub fn with_codex_policy(mut self, policy: CodexPolicy) -> Self {
        self.codex_policy = Some(policy);
        self
    }

    /// The codex policy its interactive sessions run under: `None` for every harness
    /// but the built-in `codex`.
    pub fn codex_policy(&self) -> Option<CodexPolicy> {
        self.codex_policy
            .filter(|_| matches!(self.kind, Kind::Codex { .. }))
    }

    /// Claude's `--permission-mode <mode>`, codex's `--ask-for-approval P --sandbox S`,
    /// for the interactive argv.
    fn permission_flags(&self) -> Vec<String> {
        if let Some(policy) = self.codex_policy() {
            return policy.flags();
        }
        self.permission_mode()
            .map(|mode| vec!["--permission-mode".into(), mode.as_str().into()])
            .unwrap_or_default()
    }

    /// The flags that wire the hooks in, for the interactive argv (SPEC §17.2, §17.5):
    /// claude's `--settings <file>`, codex's `-c notify=["<bin>","hook","codex"]`.
    fn hook_flags(&self) -> Vec<String> {
        let Some(wiring) = &self.hooks else {
            return Vec::new();
        };
        match (&self.kind, &wiring.settings_file) {
            (Kind::Claude { .. }, Some(file)) => {
                vec!["--settings".into(), file.to_string_lossy().into_owned()]
            }
            (Kind::Codex { .. }, _) => codex_hook_flags(&wiring.bin),
            _ => Vec::new(),
        }
    }

    /// Codex's TUI flags before its policy: attached to its app server (the hooks run
    /// where the agent does, in the server), else its own hooks; and its model nudge
    /// hidden ([`CODEX_NO_MODEL_NUDGE`]).
    fn codex_attach_flags(&self) -> Vec<String> {
        let mut flags = match &self.app_server {
            Some(server) => server.tui_flags(),
            None => self.hook_flags(),
        };
        flags.extend(["-c".into(), CODEX_NO_MODEL_NUDGE.into()]);
        flags
    }

    /// The binary this harness runs.
    pub fn program(&self) -> &str {
        match &self.kind {
            Kind::Claude { program }
            | Kind::Codex { program }
            | Kind::Cursor { program }
            | Kind::Opencode { program, .. } => program,
            Kind::Custom(c) => &c.command,
        }
    }

    /// Whether the tool mints the conversation id and passes it to a fresh session
    /// (claude's `--session-id`; a custom `args` with `{sessionId}`).
    pub fn mints_session_id(&self) -> bool {
        match &self.kind {
            Kind::Claude { .. } => true,
            Kind::Codex { .. } | Kind::Cursor { .. } | Kind::Opencode { .. } => false,
            Kind::Custom(c) => substitute::mentions(&c.args, "{sessionId}"),
        }
    }

    /// A fresh conversation id when this harness takes one.
    pub fn mint_session_id(&self) -> Option<String> {
        self.mints_session_id()
            .then(|| uuid::Uuid::new_v4().to_string())
    }

    /// The interactive argv of a fresh session.
    pub fn fresh_argv(&self, prompt: &str, session_id: Option<&str>) -> Vec<String> {
        let prompt = pane_prompt(prompt);
        match &self.kind {
            Kind::Claude { program } => {
                let mut argv = vec![program.clone()];
                argv.extend(self.hook_flags());
                argv.extend(self.permission_flags());
                if let Some(id) = session_id {
                    argv.extend(["--session-id".into(), id.into()]);
                }
                argv.push(prompt);
                argv
            }
            Kind::Codex { program } => {
                let mut argv = vec![program.clone()];
                argv.extend(self.codex_attach_flags());
                argv.extend(self.permission_flags());
                argv.push(prompt);
                argv
            }
            Kind::Cursor { program } => vec![program.clone(), prompt],
            Kind::Opencode { program, .. } => self.opencode_fresh_argv(program, prompt),
            Kind::Custom(c) => custom(
                &c.command,
                &c.args,
                &values(&prompt, session_id, None, None),
            ),
        }
    }

    /// The argv resuming conversation `session_id`, or `None` when this harness cannot
    /// resume or the id is unknown (never codex's `--last`: sessions share directories).
    pub fn resume_argv(&self, prompt: &str, session_id: &str) -> Option<Vec<String>> {
        if session_id.is_empty() {
            return None;
        }
        let prompt = pane_prompt(prompt);
        match &self.kind {
            Kind::Claude { program } => {
                let mut argv = vec![program.clone()];
                argv.extend(self.hook_flags());
                argv.extend(self.permission_flags());
                argv.extend(["--resume".into(), session_id.into(), prompt]);
                Some(argv)
            }
            Kind::Codex { program } => {
                let mut argv = vec![program.clone(), "resume".into()];
                argv.extend(self.codex_attach_flags());
                argv.extend(self.permission_flags());
                argv.extend([session_id.into(), prompt]);
                Some(argv)
            }
            Kind::Cursor { .. } => None,
            Kind::Opencode { program, .. } => {
                Some(self.opencode_resume_argv(program, prompt, session_id))
            }
            Kind::Custom(c) if c.resume_args.is_empty() => None,
            Kind::Custom(c) => Some(custom(
                &c.command,
                &c.resume_args,
                &values(&prompt, Some(session_id), None, None),
            )),
        }
    }

    /// The one-shot argv critics run; `None` when the harness has none. Harnesses whose
    /// answer goes to a file ([`Harness::oneshot_output`]) write it to
    /// `last_message_file`; the others ignore it.
    pub fn oneshot_argv(
        &self,
        prompt: &str,
        model: Option<&str>,
        last_message_file: &Path,
    ) -> Option<Vec<String>> {
        let prompt = guard_dash(prompt);
        let model = model.filter(|m| !m.is_empty());
        let with_model = |mut argv: Vec<String>, flag: &str| {
            if let Some(m) = model {
                argv.extend([flag.to_string(), m.to_string()]);
            }
            argv
        };
        match &self.kind {
            Kind::Claude { program } => Some(with_model(print_json(program, prompt), "--model")),
            Kind::Codex { program } => Some(with_model(
                vec![
                    program.clone(),
                    "exec".into(),
                    "--json".into(),
                    "--output-last-message".into(),
                    last_message_file.to_string_lossy().into_owned(),
                    prompt,
                ],
                "--model",
            )),
            Kind::Cursor { program } => Some(with_model(print_json(program, prompt), "-m")),
            // Critics read one JSON answer; `opencode run` prints a conversation.
            Kind::Opencode { .. } => None,
            Kind::Custom(c) if c.oneshot_args.is_empty() => None,
            Kind::Custom(c) => {
                let file = last_message_file.to_string_lossy();
                Some(custom(
                    &c.command,
                    &c.oneshot_args,
                    &values(&prompt, None, model, Some(&file)),
                ))
            }
        }
    }

    /// Where [`Harness::oneshot_argv`]'s run leaves its answer.
    pub fn oneshot_output(&self) -> OneShotOutput {
        match &self.kind {
            Kind::Codex { .. } => OneShotOutput::LastMessageFile,
            Kind::Custom(c) if substitute::mentions(&c.oneshot_args, "{outputFile}") => {
                OneShotOutput::LastMessageFile
            }
            _ => OneShotOutput::Stdout,
        }
    }

    /// Finds the binary on `path` (the process's `PATH` when `None`), so a missing
    /// harness is a clear error before tmux is asked to run it.
    pub fn locate(&self, path: Option<&OsStr>) -> Result<PathBuf, HarnessError> {
        crate::paths::find_program(self.program(), path).ok_or_else(|| HarnessError::NotFound {
            harness: self.name.clone(),
            program: self.program().to_string(),
        })
    }
}

/// `PROGRAM -p PROMPT --output-format json`: claude's and cursor-agent's one-shot form.
fn print_json(program: &str, prompt: String) -> Vec<String> {
    vec![
        program.to_string(),
        "-p".into(),
        prompt,
        "--output-format".into(),
        "json".into(),
    ]
}

/// A prompt starting with `-` would be read as an option by the harness CLI; a leading
/// space keeps it a positional argument and means nothing to the model.
/// The prompt of an interactive session, which the harness shows in its pane: sanitized
/// as every paste is (SPEC §14.6 — argv is a path into the pane too), then guarded.
fn pane_prompt(prompt: &str) -> String {
    guard_dash(&crate::guard::sanitize(prompt))
}

fn guard_dash(prompt: &str) -> String {
    if prompt.starts_with('-') {
        format!(" {prompt}")
    } else {
        prompt.to_string()
    }
}

type Values<'a> = [(&'static str, Option<&'a str>); 4];

fn values<'a>(
    prompt: &'a str,
    session_id: Option<&'a str>,
    model: Option<&'a str>,
    output_file: Option<&'a str>,
) -> Values<'a> {
    [
        ("{prompt}", Some(prompt)),
        ("{sessionId}", session_id),
        ("{model}", model),
        ("{outputFile}", output_file),
    ]
}

/// `[command] + args`, placeholders substituted inside single argv elements
/// ([`crate::substitute`]). An element naming a placeholder without a value (no model
/// given) is left out: write `--model={model}` as one element to make a flag optional.
fn custom(command: &str, args: &[String], values: &Values<'_>) -> Vec<String> {
    let mut argv = vec![command.to_string()];
    argv.extend(substitute::argv(args, values, Missing::OmitElement));
    argv
}

#[cfg(test)]
#[path = "harness_tests.rs"]
mod tests;
