//! The real Claude Code, offline (SPEC §7.4, §17.6): where its binary is, a private
//! `HOME` whose `.claude.json` marks onboarding done, trusts the project directory and
//! pre-approves a dummy API key, and the environment every test that starts it sets —
//! `ANTHROPIC_BASE_URL` at the test's own fake of the Messages API (or at a closed port),
//! no auto-updater, no telemetry, no marketplace, a private `TMPDIR`.
//!
//! The binary comes from npm (`@anthropic-ai/claude-code`, installed by `scripts/check`
//! into `target/npm`), or from `$THE_LOOP_CLAUDE_BIN`. Without it the tests say so and
//! pass, except under CI (`CI` set), where a missing binary fails them.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use the_loop::tmux::SpawnSpec;

/// A dummy key: Claude Code only checks that the operator approved it.
pub const API_KEY: &str = "sk-ant-api03-the-loop-offline-test-key-0000000000000000000000";

/// Where nothing listens: Claude Code fails fast instead of waiting on a network.
pub const NO_MODEL: &str = "http://127.0.0.1:9";

pub fn claude_bin() -> Option<PathBuf> {
    npm_bin("claude", "THE_LOOP_CLAUDE_BIN", "Claude Code")
}

/// A CLI installed from npm into `target/npm` (or named by `env`); `None` (the test
/// is skipped) when it is not installed, except under CI.
pub fn npm_bin(name: &str, env: &str, what: &str) -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os(env) {
        return Some(PathBuf::from(bin));
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
        let project_key = project.display().to_string();
        let config = serde_json::json!({
            "hasCompletedOnboarding": true,
            "projects": { project_key: { "hasTrustDialogAccepted": true } },
            "customApiKeyResponses": {
                "approved": [&API_KEY[API_KEY.len() - 20..]],
                "rejected": []
            }
        });
        std::fs::write(home.join(".claude.json"), config.to_string()).unwrap();
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
