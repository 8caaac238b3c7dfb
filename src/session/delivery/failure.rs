//! Why a delivery did not reach its session, as the dispatcher's lane and the event
//! log see it: [`DeliveryFailure`], from what the paste into the session said
//! (`paste::PasteError`).

use super::hold::Held;
use super::paste::PasteError;
use crate::work_item::WorkItemRef;

/// Why a delivery did not reach the session.
#[derive(Debug, thiserror::Error)]
pub enum DeliveryFailure {
    #[error("no session for {0}")]
    NoSession(WorkItemRef),
    #[error("the session for {0} is closed")]
    Closed(WorkItemRef),
    #[error("the session for {0} is paused")]
    Paused(WorkItemRef),
    /// Worth retrying later (tmux busy or not answering, a paste failed).
    #[error("{0}")]
    Transient(String),
    /// The text is in the agent's input box but was not submitted: never re-deliver.
    #[error("{0}")]
    NotSubmitted(String),
    /// The session cannot take a paste now (SPEC §18.2); wait and try again.
    #[error("held: {}", .0.reason.describe())]
    Held(Held),
    /// The session ended (stopped, closed, reset) while the delivery was held.
    #[error("the session for {0} ended while the delivery was held")]
    Ended(WorkItemRef),
}

impl From<PasteError> for DeliveryFailure {
    fn from(error: PasteError) -> Self {
        match error {
            PasteError::NoSession(item) => Self::NoSession(item),
            PasteError::Closed(item) => Self::Closed(item),
            PasteError::Paused(item) => Self::Paused(item),
            PasteError::Respawn(_, failure) => failure,
            PasteError::Held(_, held) => Self::Held(held),
            PasteError::Paste(_, error) if error.pasted() => Self::NotSubmitted(error.to_string()),
            PasteError::Blind { error, .. } if error.pasted() => {
                Self::NotSubmitted(error.to_string())
            }
            PasteError::Blind {
                error, liveness, ..
            } => Self::Transient(format!(
                "{error} (liveness unknown: {liveness}; not respawning)"
            )),
            PasteError::Paste(_, error) => Self::Transient(error.to_string()),
            PasteError::Unavailable(_, error) => Self::Transient(error.to_string()),
            PasteError::Lock(_, error) => Self::Transient(error.to_string()),
            PasteError::Registry(error) => Self::Transient(error.to_string()),
            // Not under the event policy, which respawns.
            PasteError::NoLivePane(item) => Self::Transient(format!("no live pane for {item}")),
        }
    }
}
