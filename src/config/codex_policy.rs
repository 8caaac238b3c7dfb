//! `sessions.codex` and `repos[].codex` (issue 41): when Codex asks before it runs a
//! command, and what its commands may touch — passed on every start and resume, so a
//! GitHub-steered agent's freedom never depends on the operator's own `~/.codex`
//! config. Named as codex 0.171.0's `--ask-for-approval` and `--sandbox` name them.

use serde::{Deserialize, Serialize};

/// `sessions.codexChannel` (issue 41): how a local codex session is driven. With
/// `app-server`, the-loop starts codex's app server in the session's tmux session and
/// the pane's TUI attaches to it (`codex --remote`); with `paste`, the TUI runs alone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CodexChannel {
    /// The TUI alone in the pane; deliveries are pasted.
    Paste,
    /// The TUI attached to an app server the-loop starts for the session, on a private
    /// socket under the state root (codex 0.171.0 or later; an older one is pasted into).
    #[default]
    AppServer,
}

impl CodexChannel {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Paste => "paste",
            Self::AppServer => "app-server",
        }
    }
}

/// `--ask-for-approval`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalPolicy {
    /// Codex asks before anything its sandbox does not allow (the model asks for it).
    #[default]
    OnRequest,
    /// Codex never asks: what the sandbox refuses fails. Needs `sessions.allowBypass`.
    Never,
}

/// `--sandbox`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Commands read anything, write nothing.
    ReadOnly,
    /// Commands write in the session's directory only.
    #[default]
    WorkspaceWrite,
    /// Commands touch anything. Needs `sessions.allowBypass`.
    DangerFullAccess,
}

impl ApprovalPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OnRequest => "on-request",
            Self::Never => "never",
        }
    }
}

impl SandboxMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
            Self::DangerFullAccess => "danger-full-access",
        }
    }
}

/// Codex's approval policy and sandbox for a session. The default asks before anything
/// outside the workspace sandbox: the analogue of Claude Code's `default` mode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct CodexPolicy {
    pub approval_policy: ApprovalPolicy,
    pub sandbox: SandboxMode,
}

/// A repo's own codex policy: each key given replaces the one of `sessions.codex`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct CodexPolicyOverride {
    pub approval_policy: Option<ApprovalPolicy>,
    pub sandbox: Option<SandboxMode>,
}

impl CodexPolicy {
    /// Codex's flags for it: `-a on-request -s workspace-write`.
    pub fn flags(self) -> Vec<String> {
        vec![
            "--ask-for-approval".into(),
            self.approval_policy.as_str().into(),
            "--sandbox".into(),
            self.sandbox.as_str().into(),
        ]
    }

    /// A command can run without the operator seeing it asked about beyond the
    /// workspace: codex never asks, or its commands reach everything.
    pub fn never_asks(self) -> bool {
        self.approval_policy == ApprovalPolicy::Never
            || self.sandbox == SandboxMode::DangerFullAccess
    }

    /// `self` with a repo's keys over it.
    pub fn with(self, over: CodexPolicyOverride) -> Self {
        Self {
            approval_policy: over.approval_policy.unwrap_or(self.approval_policy),
            sandbox: over.sandbox.unwrap_or(self.sandbox),
        }
    }
}

impl std::fmt::Display for CodexPolicy {
    /// `on-request, workspace-write`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}, {}",
            self.approval_policy.as_str(),
            self.sandbox.as_str()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_asks_beyond_the_workspace_and_a_repo_replaces_keys() {
        let default = CodexPolicy::default();
        assert_eq!(
            default.flags(),
            [
                "--ask-for-approval",
                "on-request",
                "--sandbox",
                "workspace-write"
            ]
        );
        assert!(!default.never_asks());
        assert_eq!(default.to_string(), "on-request, workspace-write");
        let read_only = default.with(CodexPolicyOverride {
            approval_policy: None,
            sandbox: Some(SandboxMode::ReadOnly),
        });
        assert_eq!(read_only.approval_policy, ApprovalPolicy::OnRequest);
        assert_eq!(read_only.sandbox, SandboxMode::ReadOnly);
        for never in [
            CodexPolicy {
                approval_policy: ApprovalPolicy::Never,
                ..default
            },
            CodexPolicy {
                sandbox: SandboxMode::DangerFullAccess,
                ..default
            },
        ] {
            assert!(never.never_asks(), "{never}");
        }
        let parsed: CodexPolicy =
            serde_norway::from_str("{approvalPolicy: never, sandbox: read-only}").unwrap();
        assert_eq!(parsed.to_string(), "never, read-only");
        assert!(serde_norway::from_str::<CodexPolicy>("{approvalPolicy: sometimes}").is_err());
    }
}
