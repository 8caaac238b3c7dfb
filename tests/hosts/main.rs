//! Sessions on other hosts over SSH, against a real sshd on loopback whose user is the
//! "remote host" (`support::sshd`): for now, the harness itself.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../support/mod.rs"]
mod support;

mod sshd_harness;
