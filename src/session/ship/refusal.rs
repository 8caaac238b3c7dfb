//! Why a request or a ship does not go ahead, and the request's limits.

use super::text::short;
use crate::work_item::WorkItemRef;

/// A request's title is one line of at most this many characters.
pub const MAX_TITLE_CHARS: usize = 256;
/// A request's body is at most this many characters.
pub const MAX_BODY_CHARS: usize = 20_000;

/// Why a request or a ship did not go ahead, before anything was pushed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("no open session for {0}")]
    NoSession(WorkItemRef),
    #[error(
        "{0} works in a shared workspace (the repository's own checkout): the-loop ships only a worktree's branch of its own"
    )]
    Shared(WorkItemRef),
    #[error("the worktree is on host `{host}`, which cannot ship now: {why}")]
    OnHost { host: String, why: String },
    #[error(
        "{item} works on `{branch}`, a fork's pull request branch: the-loop has no right to push there; the fork's owner pushes"
    )]
    ForkBranch { item: WorkItemRef, branch: String },
    #[error(
        "{count} uncommitted or untracked {} in the worktree: the agent must commit (or remove) {} first",
        if *.count == 1 { "change" } else { "changes" },
        if *.count == 1 { "it" } else { "them" }
    )]
    Dirty { count: usize },
    #[error("`{branch}` has no commits ahead of {base}: nothing to ship")]
    NothingAhead { branch: String, base: String },
    #[error(
        "the head moved since it was shown: {} then, {} now; look again at what would go out",
        short(.seen), short(.now)
    )]
    HeadMoved { seen: String, now: String },
    #[error("the worktree is not on its branch `{branch}` (HEAD is {head}); check it out again")]
    OffBranch { branch: String, head: String },
    #[error("the title is empty: pass --title")]
    NoTitle,
    #[error("the title is {chars} characters long; at most {MAX_TITLE_CHARS} fit")]
    TitleTooLong { chars: usize },
    #[error("the body is {chars} characters long; at most {MAX_BODY_CHARS} fit")]
    BodyTooLong { chars: usize },
    #[error("git could not say what the worktree holds: {0}")]
    Git(String),
    #[error("the session's record could not be written: {0}")]
    Record(String),
    #[error(
        "this process runs in the session of {own}: it may propose only {own}'s work, not {item}'s"
    )]
    OtherSession { own: String, item: String },
}

impl Refusal {
    /// The `reason` of `ship.refused`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NoSession(_) => "no-session",
            Self::Shared(_) => "shared-workspace",
            Self::OnHost { .. } => "on-host",
            Self::ForkBranch { .. } => "fork-branch",
            Self::Dirty { .. } => "uncommitted-changes",
            Self::NothingAhead { .. } => "nothing-ahead",
            Self::HeadMoved { .. } => "head-moved",
            Self::OffBranch { .. } => "off-branch",
            Self::NoTitle | Self::TitleTooLong { .. } | Self::BodyTooLong { .. } => "bad-request",
            Self::Git(_) => "git",
            Self::Record(_) => "state",
            Self::OtherSession { .. } => "other-session",
        }
    }

    /// A usage error (exit 2) rather than a refusal of the work (exit 1).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Self::NoTitle | Self::TitleTooLong { .. } | Self::BodyTooLong { .. }
        )
    }
}
