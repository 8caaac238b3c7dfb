//! Workspaces end to end (SPEC §16): real git — a bare "origin" and the operator's clone
//! of it — real tmux on a private socket, the real binary (`the-loop sessions …`,
//! `the-loop run`) and the simulated GitHub. Each test owns its world and cleans up
//! every tmux server and process it starts; waits have generous limits, nothing asserts
//! a time.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/tmux_server.rs"]
mod tmux_server;

#[path = "common/e2e.rs"]
mod e2e;

#[path = "e2e_workspaces/repo.rs"]
mod repo;

#[path = "e2e_workspaces/ending.rs"]
mod ending;
#[path = "e2e_workspaces/isolation.rs"]
mod isolation;
#[path = "e2e_workspaces/path.rs"]
mod path;
#[path = "e2e_workspaces/setup.rs"]
mod setup;
#[path = "e2e_workspaces/trust.rs"]
mod trust;
