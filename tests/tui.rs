//! The TUI against the in-memory backend: snapshots of every pane and popup, the update
//! function driven by keys, the event loop's redraw policy, and terminal restoration.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "tui/common.rs"]
mod common;
#[path = "tui/event_loop.rs"]
mod event_loop;
#[path = "tui/permissions.rs"]
mod permissions;
#[path = "tui/sizes.rs"]
mod sizes;
#[path = "tui/snapshots.rs"]
mod snapshots;
#[path = "tui/terminal.rs"]
mod terminal;
#[path = "tui/themes.rs"]
mod themes;
#[path = "tui/update.rs"]
mod update;
