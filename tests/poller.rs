//! The poller against the simulated GitHub (SPEC §4.1): what it reads, what it feeds to
//! the `Ingest` and how often, across faults, restarts and a corrupt ledger; and what an
//! idle cycle costs. The `Ingest` here decides with the real router.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "poller/cost.rs"]
mod cost;
#[path = "poller/faults.rs"]
mod faults;
#[path = "poller/flow.rs"]
mod flow;
#[path = "poller/spawn_ci.rs"]
mod spawn_ci;
#[path = "poller/support.rs"]
mod support;
