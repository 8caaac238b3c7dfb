//! From a GitHub event to the work items it concerns and the prompt an agent sees.

pub mod control;
pub mod dedupe;
pub mod excerpt;
pub mod extract;
pub mod outcome;
pub mod prompt;
pub mod router;

pub use control::{ControlCommand, ControlKeywords, ControlMatch};
pub use dedupe::DeliveryDedupe;
pub use outcome::{DropReason, Outcome};
pub use router::{EnabledEvents, EventKind, Inbound, RouterConfig, route};
