//! Sessions (SPEC §7): harness adapters and the one paste path.
//!
//! Every paste the product makes — events, operator replies, respawn boot prompts —
//! goes through [`deliver::deliver`].

pub mod deliver;
pub mod harness;

pub use deliver::{DeliverError, Delivery, deliver, sanitize};
pub use harness::{Harness, HarnessError};
