//! the-loop: a terminal UI that supervises AI coding agents running in tmux.
//!
//! Data flows one way: GitHub (poll or webhook) → router (guards, work items) →
//! dispatcher → tmux pane, with every decision written to the event log that the TUI
//! shows. See `docs/architecture.md`.

pub mod channel;
pub mod cli;
pub mod config;
pub mod critic;
pub mod demo;
pub mod events;
pub mod fsutil;
pub mod github;
pub mod guard;
pub mod harness;
pub mod hidden_text;
pub mod ingress;
pub mod logging;
pub mod operator;
pub mod paths;
pub mod routing;
pub mod runtime;
pub mod secrets;
pub mod server;
pub mod session;
pub mod ssh;
pub mod state_writer;
pub mod substitute;
pub mod supervisor;
pub mod time;
pub mod tmux;
pub mod tui;
pub mod usage;
pub mod work_item;
pub mod workspace;

#[cfg(test)]
mod layers_tests;
#[cfg(test)]
mod session_files_tests;
