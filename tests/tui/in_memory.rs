//! The TUI against the in-memory backend: snapshots of every pane and popup, the update
//! function driven by keys, held deliveries, the event loop's redraw policy, and
//! terminal restoration.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod event_loop;
mod findings;
mod held;
mod hosts;
mod mouse;
mod permissions;
mod review;
mod ship;
mod sizes;
mod snapshots;
mod terminal;
mod themes;
mod update;
mod usage;
