//! Sessions (SPEC §7): the one paste path, the registry, the session
//! lifecycle, activity, and the dispatcher that turns routed events into deliveries.
//!
//! Every paste the product makes — events, operator replies, respawn boot prompts —
//! goes through [`deliver::deliver`]. Every session change — from a comment, the CLI or
//! the TUI — goes through [`Sessions`].

pub mod activity;
pub mod ask;
pub mod caller;
pub mod comment;
mod dedupe_store;
pub mod deliver;
pub mod dispatcher;
mod ending;
mod held_lane;
mod held_replies;
pub mod hold;
pub mod hooks;
mod jobs;
mod paste_into;
pub mod paste_lock;
pub mod questions;
mod queue;
pub mod registry;
pub mod reply;
mod respawn;
pub mod review;
pub mod screen;
mod sessions;
pub mod settings;
pub mod ship;
pub mod signal;
mod spawn;
#[cfg(test)]
mod test_support;
pub mod usage;

pub use activity::{ActivityState, ActivityTracker, SessionActivity, StateSource, observe};
pub use deliver::{DeliverError, Delivery, deliver};
pub use dispatcher::{Dispatcher, DispatcherError};
pub use ending::{Ended, LedgerHook};
pub use paste_into::{Delivered, DeliveryFailure};
pub use questions::{OpenQuestions, Question};
pub use registry::{Registry, RegistryError, SessionRecord, Status};
pub use reply::{Replied, Replier, ReplyError, ReplyRequest, Via};
pub use sessions::{Origin, PaneState, SessionError, Sessions, Toggle};
pub use settings::{Settings, Timings};
pub use signal::{ProcessSignaller, Signaller};
pub use spawn::{PromptInputs, StartOutcome};
