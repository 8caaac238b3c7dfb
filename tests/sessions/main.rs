//! Sessions against real tmux on private sockets: the paste path, the `sessions` CLI
//! and the dispatcher, ask and reply end to end, workspaces (real git), and the tests'
//! git remote over HTTP.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../support/mod.rs"]
mod support;

mod ask_reply;
mod caller;
mod e2e_workspaces;
mod git_remote;
mod lifecycle;
mod ship;
mod tmux_paste;
