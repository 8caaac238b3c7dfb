//! The poller against the simulated GitHub (SPEC §4.1): what it reads, what it feeds to
//! the `Ingest` and how often, across faults, restarts and a corrupt ledger; and what an
//! idle cycle costs. The `Ingest` here decides with the real router.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cost;
mod critic_review;
mod faults;
mod flow;
mod spawn_ci;
