//! Workspaces end to end (SPEC §16): real git — a bare "origin" and the operator's clone
//! of it — real tmux on a private socket, the real binary (`the-loop sessions …`,
//! `the-loop run`) and the simulated GitHub. Each test owns its world and cleans up
//! every tmux server and process it starts; waits have generous limits, nothing asserts
//! a time.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod ending;
mod isolation;
mod path;
mod setup;
mod trust;
