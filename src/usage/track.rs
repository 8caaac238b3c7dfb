//! A session's usage, kept current (SPEC §20.1): its transcript and its sub-agents'
//! transcripts, each read from a kept offset. Kept in the session record (`usage`), so
//! every process sees the same figures and the record's lock orders the readers.

use super::reader::{Cursor, Format, ReadStats};
use super::tally::Tally;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use time::UtcOffset;

/// The most sub-agent transcripts followed per session.
pub const MAX_SUBAGENTS: usize = 256;

/// What the-loop knows of a session's usage, in its record.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SessionUsage {
    /// The transcript the harness named, once accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transcript: Option<PathBuf>,
    /// The transcript first, then its sub-agents'.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<Cursor>,
    /// Bytes read over every refresh, and in the last one: what keeping the figures
    /// current costs.
    pub bytes_read: u64,
    pub last_read_bytes: u64,
    pub refreshes: u64,
    /// Over-long lines skipped.
    pub skipped_lines: u64,
    /// What a harness reported per message instead of a transcript (opencode's server,
    /// issue 44), by message id: a message told again replaces its figures, never adds.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub messages: std::collections::BTreeMap<String, Reported>,
}

/// One message's figures as its harness reported them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Reported {
    /// The local day it was counted on (`YYYY-MM-DD`).
    pub day: String,
    pub model: String,
    pub tokens: super::Tokens,
}

impl SessionUsage {
    /// Whether anything is known: a session whose harness names no log shows `—`,
    /// never 0.
    pub fn is_known(&self) -> bool {
        self.transcript.is_some() || !self.messages.is_empty()
    }

    /// Everything counted, by day and model.
    pub fn tally(&self) -> Tally {
        let mut out = Tally::default();
        for file in &self.files {
            out.merge(&file.tally);
        }
        for message in self.messages.values() {
            out.add(&message.day, &message.model, &message.tokens);
        }
        out
    }

    /// Follows `transcript`, written in `format`, from now on (a new path — `/clear`, a
    /// resume, another codex thread — starts a new file; the old ones keep counting what
    /// they counted).
    pub fn follow(&mut self, transcript: PathBuf, format: Format) {
        if self.transcript.as_ref() != Some(&transcript) {
            if !self.files.iter().any(|f| f.path == transcript) {
                self.files.push(Cursor::new(transcript.clone(), format));
            }
            self.transcript = Some(transcript);
        }
    }

    /// Reads what every followed file gained, and finds new sub-agent transcripts (of
    /// Claude Code's).
    pub fn refresh(&mut self, today: &str, offset: UtcOffset) -> ReadStats {
        let claude = |path: &PathBuf| {
            self.files
                .iter()
                .any(|f| f.path == *path && f.format == Format::Claude)
        };
        if let Some(transcript) = self.transcript.clone().filter(claude) {
            for sub in subagents(&transcript) {
                if self.files.len() > MAX_SUBAGENTS {
                    break;
                }
                if !self.files.iter().any(|f| f.path == sub) {
                    self.files.push(Cursor::new(sub, Format::Claude));
                }
            }
        }
        let mut stats = ReadStats::default();
        for file in &mut self.files {
            match file.read_new(today, offset) {
                Ok(s) => stats.add(s),
                // A file not there yet (Claude writes it after the first turn) or gone.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => tracing::warn!(path = %file.path.display(), "transcript not read: {e}"),
            }
        }
        self.bytes_read = self.bytes_read.saturating_add(stats.bytes);
        self.last_read_bytes = stats.bytes;
        self.refreshes += 1;
        self.skipped_lines += stats.skipped;
        stats
    }
}

/// `<dir>/<session>/subagents/*.jsonl` of `<dir>/<session>.jsonl`: regular files only,
/// at most [`MAX_SUBAGENTS`].
pub fn subagents(transcript: &Path) -> Vec<PathBuf> {
    let dir = transcript.with_extension("").join("subagents");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .take(MAX_SUBAGENTS * 4)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    out.sort();
    out.truncate(MAX_SUBAGENTS);
    out
}

/// Claude Code's project directory for a session started in `cwd`: its config dir
/// (`CLAUDE_CONFIG_DIR`, else `~/.claude`) `/projects/` and `cwd` with every character
/// but ASCII letters and digits made `-`.
pub fn claude_project_dir(config_dir: &Path, cwd: &Path) -> PathBuf {
    let encoded: String = cwd
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    config_dir.join("projects").join(encoded)
}

/// Claude Code's config dir in this environment.
pub fn claude_config_dir() -> Option<PathBuf> {
    std::env::var_os("CLAUDE_CONFIG_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude")))
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TranscriptError {
    #[error("transcript path {0} is not a `.jsonl` file")]
    NotJsonl(String),
    #[error("transcript {path} is outside the session's Claude project directory {dir}")]
    Outside { path: String, dir: String },
}

/// Accepts `path` only as a `.jsonl` file directly inside `project_dir`, both resolved
/// (a symlinked directory escaping it is refused; the file itself is opened with
/// `O_NOFOLLOW` when read). The file need not exist yet.
pub fn accept_transcript(path: &Path, project_dir: &Path) -> Result<PathBuf, TranscriptError> {
    let shown = || path.display().to_string();
    if path.extension().is_none_or(|x| x != "jsonl") {
        return Err(TranscriptError::NotJsonl(shown()));
    }
    let outside = || TranscriptError::Outside {
        path: shown(),
        dir: project_dir.display().to_string(),
    };
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(outside());
    };
    let (Ok(parent), Ok(dir)) = (parent.canonicalize(), project_dir.canonicalize()) else {
        return Err(outside());
    };
    if parent != dir {
        return Err(outside());
    }
    Ok(dir.join(name))
}

#[cfg(test)]
#[path = "track_tests.rs"]
mod tests;
