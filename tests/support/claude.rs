//! The real Claude Code, offline (SPEC §7.4, §17.6): where its binary is, a private
//! `HOME` whose `.claude.json` marks onboarding done, trusts the project directory and
//! pre-approves a dummy API key, and the environment every test that starts it sets —
//! `ANTHROPIC_BASE_URL` at the test's own fake of the Messages API (or at a closed port),
//! no auto-updater, no telemetry, no marketplace, a private `TMPDIR`.
//!
//! The binary comes from npm (`@anthropic-ai/claude-code`, installed by `scripts/check`
//! into `target/npm`), or from `$THE_LOOP_CLAUDE_BIN`. Without it the tests say so and
//! pass, except under CI (`CI` set), where a missing binary fails them. `scripts/check`
//! runs the suite once per release it pins (`CLAUDE_CODE_VERSIONS`); where releases
//! differ, a test asks [`ClaudeVersion`] what the binary under test reports and what
//! that release was recorded to do — nothing else branches on the release.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};
use the_loop::config::PermissionMode;
use the_loop::tmux::SpawnSpec;

/// A dummy key: Claude Code only checks that the operator approved it.
pub const API_KEY: &str = "sk-ant-api03-the-loop-offline-test-key-0000000000000000000000";

/// Where nothing listens: Claude Code fails fast instead of waiting on a network.
pub const NO_MODEL: &str = "http://127.0.0.1:9";

pub fn claude_bin() -> Option<PathBuf> {
    npm_bin("claude", "THE_LOOP_CLAUDE_BIN", "Claude Code")
}

/// A CLI installed from npm into `target/npm` (or named by `env`); `None` (the test
/// is skipped) when it is not installed, except under CI. A binary named by `env` that
/// is not there fails the test: it was asked for.
pub fn npm_bin(name: &str, env: &str, what: &str) -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os(env) {
        let bin = PathBuf::from(bin);
        assert!(bin.exists(), "{env}={} does not exist", bin.display());
        return Some(bin);
    }
    let local = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/npm/node_modules/.bin")
        .join(name);
    if local.exists() {
        return Some(local);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{what} is not installed: scripts/check installs it with npm into target/npm"
    );
    eprintln!("skipping: {what} not installed (scripts/check installs it)");
    None
}

/// Claude Code started in a pane as the-loop starts it: in the `default` permission mode,
/// stated (2.1.332 starts in `auto` without it, running tool calls unasked; SPEC §17.4).
pub fn interactive_argv(bin: &Path) -> Vec<String> {
    vec![
        bin.display().to_string(),
        "--permission-mode".into(),
        PermissionMode::Default.as_str().into(),
    ]
}

/// The release of the Claude Code under test, as its binary reports it
/// (`2.1.332 (Claude Code)`), and what that release was recorded to do where releases
/// differ. Each difference names the last release checked without it and the first
/// checked with it; a release between the two was never checked, and a test that asks
/// about it fails saying so rather than guess.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ClaudeVersion([u32; 3]);

/// A behaviour some releases have: `(last checked without, first checked with)`.
type Since = ([u32; 3], [u32; 3]);

/// A folded paste reaches the model wrapped in `<pasted_content id="…">` tags.
const WRAPS_FOLDED_PASTES: Since = ([2, 1, 197], [2, 1, 332]);

/// A raw `ESC[201~` inside a bracketed paste no longer ends the paste.
const IGNORES_A_PASTED_TERMINATOR: Since = ([2, 1, 197], [2, 1, 332]);

static VERSIONS: LazyLock<Mutex<HashMap<PathBuf, ClaudeVersion>>> = LazyLock::new(Mutex::default);

impl ClaudeVersion {
    /// What `bin --version` reports (asked once per binary per test process); fails the
    /// test when it reports nothing readable.
    pub fn of(bin: &Path) -> Self {
        let mut known = VERSIONS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(version) = known.get(bin) {
            return *version;
        }
        let out = std::process::Command::new(bin)
            .arg("--version")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("{} --version: {e}", bin.display()));
        let printed = String::from_utf8_lossy(&out.stdout);
        let version = the_loop::harness::version::parse(&printed)
            .filter(|_| out.status.success())
            .and_then(|v| Self::parse(&v))
            .unwrap_or_else(|| panic!("{} --version printed {printed:?}", bin.display()));
        known.insert(bin.to_path_buf(), version);
        version
    }

    /// `2.1.332` → `[2, 1, 332]`.
    pub fn parse(text: &str) -> Option<Self> {
        let parts: Vec<u32> = text
            .split('.')
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()?;
        Some(Self(parts.try_into().ok()?))
    }

    /// Whether this release has the behaviour `since` describes.
    fn has(self, (without, with): Since, what: &str) -> bool {
        if self.0 <= without {
            false
        } else if self.0 >= with {
            true
        } else {
            panic!(
                "Claude Code {self} was never checked for {what} ({} was not, {} was): \
                 check it and record it in tests/support/claude.rs",
                Self(without),
                Self(with)
            )
        }
    }

    /// Whether a folded paste (one Claude Code shows as `[Pasted text …]`) reaches the
    /// model wrapped: `\n\n<pasted_content id="ID">\n` + text + `</pasted_content
    /// id="ID">\n`, a newline added before the closing tag when the text does not end
    /// with one. 2.1.197 passes the text as it is.
    pub fn wraps_folded_pastes(self) -> bool {
        self.has(
            WRAPS_FOLDED_PASTES,
            "wrapping a folded paste in <pasted_content>",
        )
    }

    /// Whether an unsanitized `ESC[201~` inside a bracketed paste leaves the paste whole.
    /// 2.1.197 ends the paste there and takes the rest as keystrokes (SPEC §7.4).
    pub fn ignores_a_pasted_terminator(self) -> bool {
        self.has(
            IGNORES_A_PASTED_TERMINATOR,
            "a pasted ESC[201~ not ending the paste",
        )
    }

    /// The message the model receives for a folded paste of `sent`: `sent` itself, or —
    /// on a release that wraps pastes — `sent` in exactly that wrapper, with the id of
    /// the wrapper `received` opens with (the client picks it at random). Compare the
    /// whole message with it: the text arrived once and whole, inside nothing else.
    pub fn folded_paste_as_received(self, sent: &str, received: &str) -> String {
        if !self.wraps_folded_pastes() {
            return sent.to_string();
        }
        let id = received
            .strip_prefix("\n\n<pasted_content id=\"")
            .and_then(|rest| rest.split_once("\">\n"))
            .map(|(id, _)| id)
            .filter(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_hexdigit()))
            .unwrap_or("<no id: the message does not open with the wrapper>");
        let newline = if sent.ends_with('\n') { "" } else { "\n" };
        format!("\n\n<pasted_content id=\"{id}\">\n{sent}{newline}</pasted_content id=\"{id}\">\n")
    }
}

impl std::fmt::Display for ClaudeVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [major, minor, patch] = self.0;
        write!(f, "{major}.{minor}.{patch}")
    }
}

/// Every user message Claude Code recorded under `home` (its `HOME`), across its
/// transcripts, in order.
pub fn user_messages(home: &Path) -> Vec<String> {
    let root = home.join(".claude/projects");
    let mut files: Vec<PathBuf> = walk(&root)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap_or_default()
                .lines()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
        .filter(|v| v["type"] == "user" && v["message"]["role"] == "user")
        .filter_map(|v| match &v["message"]["content"] {
            Value::String(s) => Some(s.clone()),
            // Text blocks (tool results are not the user's messages).
            Value::Array(blocks) => {
                let texts: Vec<&str> = blocks
                    .iter()
                    .filter(|b| b["type"] == "text")
                    .filter_map(|b| b["text"].as_str())
                    .collect();
                (!texts.is_empty()).then(|| texts.join("\n"))
            }
            _ => None,
        })
        .collect()
}

/// What a pane's environment never takes from the developer's: tokens, an outer tmux,
/// the-loop's own settings, another Claude config.
pub const NOT_INHERITED: &[&str] = &[
    "GH_TOKEN",
    "GITHUB_TOKEN",
    "THE_LOOP_GITHUB_API_URL",
    "THE_LOOP_TMUX_SOCKET",
    "THE_LOOP_WORK_ITEM",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CONFIG_DIR",
    "TMUX",
    "TMUX_PANE",
];

/// `home`'s `.claude.json`: onboarding done, [`API_KEY`] approved, and `project`
/// trusted or not (`trusted: false` shows the trust screen).
pub fn write_config(home: &Path, project: &Path, trusted: bool) {
    let config = serde_json::json!({
        "hasCompletedOnboarding": true,
        "projects": { project.display().to_string(): { "hasTrustDialogAccepted": trusted } },
        "customApiKeyResponses": {
            "approved": [&API_KEY[API_KEY.len() - 20..]],
            "rejected": []
        }
    });
    std::fs::write(home.join(".claude.json"), config.to_string()).unwrap();
}

/// A private `HOME` (and `TMPDIR`) for Claude Code, removed on drop.
pub struct ClaudeHome {
    pub dir: tempfile::TempDir,
    pub home: PathBuf,
    pub project: PathBuf,
    pub tmp: PathBuf,
    /// `ANTHROPIC_BASE_URL`.
    pub model_url: String,
}

impl ClaudeHome {
    /// Claude Code pointed at `model_url` (a [`super::fake_model::FakeModel`], or
    /// [`NO_MODEL`]).
    pub fn new(model_url: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let project = dir.path().join("project");
        let tmp = dir.path().join("tmp");
        for d in [&home, &project, &tmp] {
            std::fs::create_dir_all(d).unwrap();
        }
        write_config(&home, &project, true);
        Self {
            dir,
            home,
            project,
            tmp,
            model_url: model_url.to_string(),
        }
    }

    /// The environment of SPEC §17.6: with it Claude Code contacts nothing but
    /// `model_url`.
    pub fn env(&self) -> Vec<(String, String)> {
        [
            ("HOME", self.home.display().to_string()),
            ("ANTHROPIC_API_KEY", API_KEY.to_string()),
            ("ANTHROPIC_BASE_URL", self.model_url.clone()),
            // Else it runs a global `npm install` of a newer version in the background.
            ("DISABLE_AUTOUPDATER", "1".to_string()),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_string()),
            (
                "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL",
                "1".to_string(),
            ),
            ("DISABLE_TELEMETRY", "1".to_string()),
            ("DISABLE_ERROR_REPORTING", "1".to_string()),
            // A failed request is not retried by the client (it would retry a 429 ten
            // times, ~2.5 min): a limit the fake model answers ends the turn at once
            // (issue 43). The fake never fails unless a test tells it to.
            ("CLAUDE_CODE_MAX_RETRIES", "0".to_string()),
            ("TMPDIR", self.tmp.display().to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    pub fn spec(&self, name: &str, argv: Vec<String>) -> SpawnSpec {
        SpawnSpec {
            name: name.into(),
            cwd: self.project.clone(),
            env: self.env(),
            argv,
            remain_on_exit: true,
            private_files: false,
        }
    }

    /// Every user message Claude Code recorded, across its transcripts, in order.
    pub fn user_messages(&self) -> Vec<String> {
        user_messages(&self.home)
    }

    pub fn transcript(&self, session_id: &str) -> Option<PathBuf> {
        walk(&self.home.join(".claude/projects"))
            .into_iter()
            .find(|p| {
                p.file_name()
                    .is_some_and(|n| n == format!("{session_id}.jsonl").as_str())
            })
    }
}

pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                out.extend(walk(&path));
            } else {
                out.push(path);
            }
        }
    }
    out
}
