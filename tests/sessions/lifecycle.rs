//! Sessions end to end: the `sessions` CLI and the dispatcher against real tmux on a
//! private socket, with `the-loop fake-agent` as a custom harness. Every test owns its
//! tmux server (killed on drop, also on panic) and its state root.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod env;

mod cli;
mod live;
