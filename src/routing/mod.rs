//! From a GitHub event to the work items it concerns and the prompt an agent sees.

pub mod refs;

pub use refs::WorkItemRef;
