//! (in progress)
pub mod deliver;
pub mod harness;
