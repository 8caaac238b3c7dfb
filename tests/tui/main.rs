//! The TUI: against the in-memory backend (snapshots, update, event loop, terminal), as
//! the real `the-loop tui` in a tmux pane, and `the-loop demo` end to end.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../support/mod.rs"]
mod support;

mod e2e_demo;
mod e2e_mouse;
mod e2e_review;
mod e2e_tui;
mod in_memory;
