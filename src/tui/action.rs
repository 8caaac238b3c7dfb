//! The messages of the one `update`: [`Action`]s come in (terminal input, backend data,
//! timers, results), [`Effect`]s go out (I/O for the event loop to perform). Keeping
//! the two apart is what lets tests drive the whole app without a terminal or a backend.

use super::backend::{ActionResult, RunId, Snapshot};
use crate::events::Event;
use crate::session::review::ReviewComment;
use crate::work_item::WorkItemRef;
use crossterm::event::{KeyEvent, MouseEvent};
use std::time::Instant;
use time::OffsetDateTime;

#[derive(Debug, Clone)]
pub enum Action {
    Key(KeyEvent),
    /// A bracketed paste from the terminal.
    Paste(String),
    /// Mouse input (SPEC §21.1), stamped with the monotonic clock when it was read, so
    /// double clicks are told apart by time (tests pass their own instants).
    Mouse {
        event: MouseEvent,
        at: Instant,
    },
    Resize {
        width: u16,
        height: u16,
    },
    /// The clock, about once a second: relative times, message expiry.
    Tick(OffsetDateTime),
    /// The spinner's frame (only while a critic runs).
    Spin,
    /// Time to refresh the pane preview (only while it is visible).
    PreviewDue,
    /// Time to ask the backend for a fresh snapshot.
    RefreshDue,
    Snapshot(Box<Snapshot>),
    /// The recent events loaded at start.
    History(Vec<Event>),
    /// Live events, batched.
    Events(Vec<Event>),
    /// The live stream fell behind and lost this many events.
    EventsLagged(u64),
    Captured {
        work_item: WorkItemRef,
        result: Result<String, String>,
    },
    /// The session's worktree diff arrived, with its pending review and findings.
    DiffLoaded {
        work_item: WorkItemRef,
        result: Result<String, String>,
        review: super::diff_view::ReviewMaterial,
    },
    /// What shipping a session's work would push, for its confirmation.
    ShipPreviewed {
        work_item: WorkItemRef,
        result: Result<Box<super::backend::Preview>, String>,
    },
    /// A backend request finished.
    Done {
        request: Request,
        result: ActionResult,
    },
    /// An attach finished (the operator detached, or it failed).
    Attached {
        work_item: WorkItemRef,
        result: Result<(), String>,
    },
}

/// Operator actions the backend performs.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    Reply {
        work_item: WorkItemRef,
        text: String,
        /// Confirmed for a session over its budget (SPEC §20.4).
        over_budget: bool,
    },
    Start(WorkItemRef),
    Pause(WorkItemRef),
    Resume(WorkItemRef),
    Stop(WorkItemRef),
    Dismiss(WorkItemRef),
    /// Approve once (`approve`) or deny a harness's permission dialog (SPEC §17.4).
    Permission {
        work_item: WorkItemRef,
        request_id: String,
        approve: bool,
    },
    /// Deliver one delivery held `screen-unread` (issues 30, 40).
    DeliverHeld(WorkItemRef),
    RunCritic {
        critic: String,
        work_item: WorkItemRef,
    },
    PostCritic(RunId),
    OpenUrl(String),
    /// Ship the session's work at the head the confirmation showed (SPEC §19.4).
    Ship {
        work_item: WorkItemRef,
        seen_head: String,
    },
    /// Add a comment to the pending review (SPEC §21.2).
    SaveComment {
        work_item: WorkItemRef,
        comment: Box<ReviewComment>,
    },
    /// Send the pending review's comments to the agent as one note.
    SendReview {
        work_item: WorkItemRef,
        comments: Vec<ReviewComment>,
        /// Confirmed for a session over its budget (SPEC §20.4).
        over_budget: bool,
    },
    /// Drop these pending comments unsent.
    DiscardReview {
        work_item: WorkItemRef,
        ids: Vec<String>,
    },
}

impl Request {
    /// What was asked, for messages: "reply to octo/repo#18".
    pub fn describe(&self) -> String {
        use super::text::short_ref;
        match self {
            Request::Reply { work_item, .. } => format!("reply to {}", short_ref(work_item)),
            Request::Start(w) => format!("start {}", short_ref(w)),
            Request::Pause(w) => format!("pause {}", short_ref(w)),
            Request::Resume(w) => format!("resume {}", short_ref(w)),
            Request::Stop(w) => format!("stop {}", short_ref(w)),
            Request::Dismiss(w) => format!("dismiss the question on {}", short_ref(w)),
            Request::Permission {
                work_item, approve, ..
            } => format!(
                "{} the permission request on {}",
                if *approve { "approve" } else { "deny" },
                short_ref(work_item)
            ),
            Request::DeliverHeld(w) => format!("deliver a held delivery to {}", short_ref(w)),
            Request::RunCritic { critic, work_item } => {
                format!("run {critic} on {}", short_ref(work_item))
            }
            Request::PostCritic(_) => "post the critic's findings".into(),
            Request::OpenUrl(url) => format!("open {url}"),
            Request::Ship { work_item, .. } => format!("ship {}", short_ref(work_item)),
            Request::SaveComment { work_item, .. } => {
                format!("save the comment on {}'s diff", short_ref(work_item))
            }
            Request::SendReview { work_item, .. } => {
                format!("send the review to {}", short_ref(work_item))
            }
            Request::DiscardReview { work_item, .. } => {
                format!("discard the pending review of {}", short_ref(work_item))
            }
        }
    }
}

/// A desktop notification or bell for a new question or permission request
/// (`tui.notify`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    pub title: String,
    pub body: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    Request(Request),
    Capture(WorkItemRef),
    /// Load the session's worktree diff against its base.
    LoadDiff(WorkItemRef),
    /// Look at what shipping the session's work would push, to confirm it.
    LoadShip(WorkItemRef),
    Refresh,
    Attach {
        work_item: WorkItemRef,
        read_only: bool,
    },
    Bell,
    Desktop(Notification),
    Quit,
}
