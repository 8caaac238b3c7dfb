//! Whether the-loop reads a client's screen at all: per harness, and for Claude Code
//! per recorded release (issue 30).

use super::claude;
use crate::harness::{Harness, ScreenKind};

/// Whether the-loop reads the screen of the client a session runs (SPEC §18.2, issue
/// 30): known per recorded release, not per harness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Screen {
    /// Recorded and read: every paste waits for a ready, empty input box.
    Known,
    /// A harness whose screen the-loop reads, in a release it has not recorded (or
    /// whose release it could not read, `None`): deliveries are held, never guessed.
    UnknownRelease(Option<String>),
    /// A harness whose screen the-loop does not read at all: pasted blind (SPEC §18.2).
    NotRead,
}

impl Screen {
    /// What `harness` at `version` (as `claude --version` named it) shows.
    pub fn of(harness: &Harness, version: Option<&str>) -> Self {
        match harness.screen() {
            ScreenKind::Unknown => Self::NotRead,
            ScreenKind::Claude => match version {
                Some(v) if claude::recorded(v) => Self::Known,
                other => Self::UnknownRelease(other.map(str::to_string)),
            },
        }
    }
}
