//! GitHub ingress end to end: the real `the-loop run` against the simulated GitHub
//! (started in this process), real tmux on a private socket and `fake-agent` sessions.
//! Each test owns its world (state root, config, tmux server, simulator) and waits for
//! events and agent log lines with generous limits — no timed assertions.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod claims;
mod cli;
mod delivery;
mod faults;
mod in_process;
mod lifecycle;
mod measure;
mod polling;
mod private;
mod reload;
mod rotation;
mod strangers;
mod webhook;
