//! Sessions on other hosts over SSH, against a real sshd on loopback whose user is the
//! "remote host" (`support::sshd`): the harness itself, the transport, and sessions
//! started and delivered to there.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../support/mod.rs"]
mod support;

mod agents;
mod claude_there;
mod critics;
mod health_and_attach;
mod remote_sessions;
mod sshd_harness;
mod supervised;
mod unreachable;
mod worktrees;
