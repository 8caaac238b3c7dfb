//! (in progress)
pub mod client;
pub mod models;
pub mod sim;
