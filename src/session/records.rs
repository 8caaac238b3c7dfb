//! What shipping keeps in a session's record (SPEC §19.3–19.4): the agent's request,
//! the last push and the pull request the work went to. Plain records, beside the
//! registry that stores them, so the registry needs nothing of `ship`.

use serde::{Deserialize, Serialize};

/// An agent's request to ship its work, in its session's record (`shipRequest`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShipRequest {
    pub id: String,
    pub title: String,
    #[serde(default)]
    pub body: String,
    /// `--draft` / `--ready`; `None`: `ship.draft`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft: Option<bool>,
    pub branch: String,
    /// The commit the request was made at: what the operator is shown, and ships.
    pub head: String,
    pub requested_at: String,
}

/// The pull request a session's work went to (`pullRequest`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LinkedPull {
    pub number: u64,
    pub url: String,
    pub draft: bool,
}

/// The last push that succeeded (`pushed`): a retry after a later step failed does not
/// push again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pushed {
    pub branch: String,
    pub sha: String,
}
