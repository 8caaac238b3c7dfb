//! The binary's own commands and files: `config`, live config reload, critics, the
//! event log and `events`, the single-supervisor lock, `exec-env`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../support/mod.rs"]
mod support;

mod cli_config;
mod config_watch;
mod critic;
mod events;
mod exec_env;
mod supervisor_lock;
mod usage;
