//! (in progress)
pub mod fake;
pub mod real;
