//! From a GitHub event to the work items it concerns and the prompt an agent sees.

pub mod excerpt;
pub mod extract;
pub mod prompt;
pub mod refs;
pub mod router;

pub use refs::WorkItemRef;
