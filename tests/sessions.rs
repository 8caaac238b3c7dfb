//! Sessions end to end: the `sessions` CLI and the dispatcher against real tmux on a
//! private socket, with `the-loop fake-agent` as a custom harness. Every test owns its
//! tmux server (killed on drop, also on panic) and its state root.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/tmux_server.rs"]
mod common;
#[path = "sessions/env.rs"]
mod env;

#[path = "sessions/cli.rs"]
mod cli;
#[path = "sessions/live.rs"]
mod live;
