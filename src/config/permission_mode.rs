//! `sessions.permissionMode` and `repos[].permissionMode` (issue 30): the mode Claude
//! Code sessions start in, always passed explicitly.

use serde::{Deserialize, Serialize};

/// Which tool calls Claude Code asks about before running them, named as Claude Code
/// names its `--permission-mode` values. The-loop passes one explicitly on every start
/// and resume: Claude Code's own default has moved (2.1.332 starts in `auto`, running
/// the calls it judges lower-risk unasked) while the-loop feeds its sessions text from
/// other people.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PermissionMode {
    /// Every call Claude Code would ask about waits for the operator (SPEC §17.4).
    #[default]
    Default,
    /// File edits run unasked; commands still ask.
    AcceptEdits,
    /// The agent plans and changes nothing.
    Plan,
    /// Claude Code runs the calls it judges lower-risk unasked, asks about the rest.
    Auto,
    /// Calls not allowed beforehand are refused, never asked about.
    DontAsk,
    /// Every call runs unasked. Needs `sessions.allowBypass: true` as well.
    BypassPermissions,
}

impl PermissionMode {
    pub const ALL: [Self; 6] = [
        Self::Default,
        Self::AcceptEdits,
        Self::Plan,
        Self::Auto,
        Self::DontAsk,
        Self::BypassPermissions,
    ];

    /// As Claude Code's `--permission-mode` takes it, and as the-loop shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::AcceptEdits => "acceptEdits",
            Self::Plan => "plan",
            Self::Auto => "auto",
            Self::DontAsk => "dontAsk",
            Self::BypassPermissions => "bypassPermissions",
        }
    }

    /// Whether a tool call may run without the operator seeing it asked.
    pub fn runs_unasked(self) -> bool {
        matches!(
            self,
            Self::AcceptEdits | Self::Auto | Self::BypassPermissions
        )
    }
}

impl std::str::FromStr for PermissionMode {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        Self::ALL.into_iter().find(|m| m.as_str() == s).ok_or(())
    }
}

impl std::fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
