//! What a harness's screen shows (SPEC §17.4, §18.2), one file per harness whose screen
//! the-loop knows (`harness::ScreenKind`): [`claude`] and [`codex`]. Each reads a `tmux
//! capture-pane` screen into the same [`Look`], the only thing the paste path decides
//! on (`hold::decide`), through the [`Reader`] of the session's harness; a harness
//! without a file here is pasted blind.

mod cells;
pub mod claude;
pub mod codex;
mod look;

pub use look::{Dialog, InputBox, Look};

use crate::harness::{CLAUDE_PASTE_MARKER, CODEX_PASTE_MARKER, Harness, ScreenKind};

/// How the-loop reads the screen of the client a session runs (SPEC §18.2, issues 30
/// and 40): per recorded release, not per harness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Screen {
    /// Recorded and read: every paste waits for a ready, empty input box.
    Known,
    /// A harness whose screen the-loop reads, in a release nobody recorded (or whose
    /// release it could not read, `None`): read with the newest recorded release's
    /// rules, and pasted only when the hooks agree (`delivery::witnesses`).
    Unrecorded(Option<String>),
    /// A harness whose screen the-loop does not read at all: pasted blind (SPEC §18.2).
    NotRead,
}

impl Screen {
    /// What `harness` at `version` (as `claude --version` or `codex --version` named
    /// it) shows.
    pub fn of(harness: &Harness, version: Option<&str>) -> Self {
        match harness.screen() {
            ScreenKind::Unknown => Self::NotRead,
            kind => match (version, Reader::of(kind)) {
                (Some(v), Some(reader)) if reader.recorded(v) => Self::Known,
                (other, _) => Self::Unrecorded(other.map(str::to_string)),
            },
        }
    }
}

/// The screen reader of one harness: the same questions, asked of its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    Claude,
    Codex,
}

impl Reader {
    /// The reader of `kind`'s screen, when the-loop reads it.
    pub fn of(kind: ScreenKind) -> Option<Self> {
        match kind {
            ScreenKind::Claude => Some(Self::Claude),
            ScreenKind::Codex => Some(Self::Codex),
            ScreenKind::Unknown => None,
        }
    }

    /// The client, as its `--version` and the docs name it.
    pub fn client(self) -> &'static str {
        match self {
            Self::Claude => "Claude Code",
            Self::Codex => "Codex",
        }
    }

    /// The permission mode the footer under the input box names, for a client whose
    /// footer names one (Claude Code).
    pub fn shown_mode(self, screen: &str) -> Option<crate::config::PermissionMode> {
        match self {
            Self::Claude => claude::shown_mode(screen),
            Self::Codex => None,
        }
    }

    /// The client's name in file names (`claude`, `codex`).
    pub fn key(self) -> &'static str {
        match self {
            Self::Claude => "claude",
            Self::Codex => "codex",
        }
    }

    /// The newest recorded release: its rules read a release nobody recorded.
    pub fn newest_recorded(self) -> &'static str {
        self.recorded_releases().last().copied().unwrap_or("none")
    }

    /// The client releases whose screens were recorded, oldest first.
    pub fn recorded_releases(self) -> &'static [&'static str] {
        match self {
            Self::Claude => claude::RECORDED_RELEASES,
            Self::Codex => codex::RECORDED_RELEASES,
        }
    }

    /// Whether release `version`'s screen was recorded.
    pub fn recorded(self, version: &str) -> bool {
        self.recorded_releases().contains(&version)
    }

    /// What `screen` (best a `capture-pane -e` capture) shows.
    pub fn look(self, screen: &str) -> Look {
        match self {
            Self::Claude => claude::look(screen),
            Self::Codex => codex::look(screen),
        }
    }

    /// How the input box shows a paste it folded, until it is submitted (the submit
    /// check looks for it).
    pub fn paste_marker(self) -> &'static str {
        match self {
            Self::Claude => CLAUDE_PASTE_MARKER,
            Self::Codex => CODEX_PASTE_MARKER,
        }
    }

    /// After a paste into an empty box: whether the box shows that paste and no dialog
    /// is up, so Enter submits it and nothing else. It shows either the folded form
    /// ([`Self::paste_marker`], then Claude Code's `1 +4 lines]` or `2]`, Codex's `2030
    /// chars]`) and nothing more, or `pasted` itself (whitespace aside: both wrap long
    /// lines, Claude Code expands tabs). `pasted` is the text as pasted, after
    /// sanitizing.
    pub fn shows_paste(self, screen: &str, pasted: &str) -> bool {
        match self.look(screen) {
            Look {
                dialog: None,
                input: InputBox::Holds(text),
            } => {
                self.folded(&text)
                    || (!squash(pasted).is_empty() && squash(&text) == squash(pasted))
            }
            _ => false,
        }
    }

    /// Whether the box holds nothing but a folded paste (`[Pasted text #1 +12 lines]`,
    /// `[Pasted Content 2030 chars]`), with no dialog up, where Enter would choose an
    /// option instead.
    pub fn holds_paste(self, screen: &str) -> bool {
        matches!(
            self.look(screen),
            Look { dialog: None, input: InputBox::Holds(text) } if self.folded(&text)
        )
    }

    fn folded(self, text: &str) -> bool {
        let marker = self.paste_marker();
        match self {
            Self::Claude => claude::folded(text, marker),
            Self::Codex => codex::folded(text, marker),
        }
    }

    /// Whether the harness's permission dialog is up with its first option ("Yes")
    /// selected, where Enter approves and Escape denies (SPEC §17.4).
    pub fn shows_dialog(self, screen: &str) -> bool {
        match self {
            Self::Claude => claude::shows_dialog(screen),
            Self::Codex => codex::shows_dialog(screen),
        }
    }
}

/// Whether `screen` shows no text at all (a client not drawn yet).
pub fn blank(screen: &str) -> bool {
    cells::lines(screen)
        .iter()
        .all(|l| l.text.trim().is_empty())
}

/// `text` without any whitespace.
fn squash(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}
