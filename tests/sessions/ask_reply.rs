//! Ask and reply end to end (SPEC §8): the simulated GitHub, real tmux on a private
//! socket, `the-loop fake-agent --ask-trigger` as the harness, sessions started through
//! the session module, and the binary for `ask`, `reply` and `sessions list`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod ask_cli;
mod flow;
mod refusals;
