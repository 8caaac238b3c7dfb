//! Sessions (SPEC §7): the registry, the session lifecycle, activity, the dispatcher
//! that turns routed events into deliveries, and [`delivery`] — the one paste path.
//!
//! Every paste the product makes — events, operator replies, respawn boot prompts —
//! goes through [`delivery`]. Every session change — from a comment, the CLI or
//! the TUI — goes through [`Sessions`].

pub mod account;
pub mod activity;
pub mod ask;
pub mod caller;
mod codex_server;
pub mod comment;
mod dedupe_store;
pub mod delivery;
pub mod dispatcher;
mod ending;
pub mod hooks;
mod jobs;
pub mod limits;
pub mod opencode;
pub mod place;
pub mod questions;
mod queue;
pub mod records;
pub mod registry;
mod remote;
pub mod reply;
mod respawn;
pub mod review;
mod sessions;
pub mod settings;
pub mod ship;
pub mod signal;
mod spawn;
#[cfg(test)]
mod test_support;
pub mod usage;

pub use activity::{ActivityState, ActivityTracker, SessionActivity, StateSource, observe};
pub use delivery::{DeliverError, Delivered, Delivery, DeliveryFailure, deliver};
pub use dispatcher::{Dispatcher, DispatcherError};
pub use ending::Ended;
pub use questions::{OpenQuestions, Question};
pub use registry::{Registry, RegistryError, SessionRecord, Status};
pub use reply::{Replied, Replier, ReplyError, ReplyRequest, Via};
pub use sessions::{LedgerHook, Origin, PaneState, SessionError, Sessions, Toggle};
pub use settings::{Settings, Timings};
pub use signal::{ProcessSignaller, Signaller};
pub use spawn::{PromptInputs, StartOutcome};
