//! Findings anchored to lines (SPEC §21.3): places a critic names, `path:line` inside
//! the work item's worktree. The envelope carries the ones that were checked against
//! the worktree; everything else stays in the general output only.

use serde::{Deserialize, Serialize};

/// How serious a finding is, as the critic said (`note` when it said nothing).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    #[default]
    Note,
    Warning,
    Error,
}

/// One finding: a path relative to the worktree, a 1-based line that the file has, and
/// the critic's message (review material: rendered inert like every critic output).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    pub path: String,
    pub line: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    #[serde(default)]
    pub severity: Severity,
    pub message: String,
}
