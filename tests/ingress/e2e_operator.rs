//! The network never reaches a pane (SPEC §14.1), end to end: the real `the-loop run`
//! with `server.exposed: true` on a loopback port, the simulated GitHub, real tmux and a
//! `fake-agent` session. The reply route is not on the TCP listener at all; it is on
//! `<state>/operator.sock` (0600 in a 0700 directory), which `the-loop reply` and
//! `the-loop ask` use while a supervisor runs — `ask` with no token of its own. With no
//! supervisor, or a dead one's socket left behind, both work in-process.
//!
//! `the-loop comment` (SPEC §19.2) goes the same two ways: through the supervisor with
//! no token in the agent, and in-process with none running.
//!
//! Traffic goes to 127.0.0.1 only.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod comment;
mod network;
mod peers;
