//! Ask and reply end to end (SPEC §8): the simulated GitHub, real tmux on a private
//! socket, `the-loop fake-agent --ask-trigger` as the harness, sessions started through
//! the session module, and the binary for `ask`, `reply` and `sessions list`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/tmux_server.rs"]
mod common;

#[path = "ask_reply/ask_cli.rs"]
mod ask_cli;
#[path = "ask_reply/flow.rs"]
mod flow;
#[path = "ask_reply/refusals.rs"]
mod refusals;
#[path = "ask_reply/world.rs"]
mod world;
