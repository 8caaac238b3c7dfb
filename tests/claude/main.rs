//! The real agent CLIs, offline: the paste path and the harness hooks against the real
//! Claude Code and the tests' own fake of the model API, and every built-in adapter's
//! argv against the real CLIs' help. Without the CLIs installed (scripts/check installs
//! them) these tests say so and pass, except under CI.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../support/mod.rs"]
mod support;

mod agent_comment;
mod claude_code;
mod claude_hooks;
mod codex_channel;
mod codex_channel_delivery;
mod codex_delivery;
mod codex_latency;
mod codex_limits;
mod codex_usage;
mod harness_cli;
mod inbox;
mod limits;
mod limits_burst;
mod limits_figures;
mod opencode_delivery;
mod opencode_world;
mod record_limit_menu;
mod record_screens;
mod safe_delivery;
mod unknown_release;
mod usage;
