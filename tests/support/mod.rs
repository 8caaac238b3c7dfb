//! Test support shared by every integration-test crate (`tests/<crate>/main.rs` mounts it
//! once as `mod support;`): private tmux servers, the hermetic worlds the end-to-end tests
//! drive, fakes of the outside (the model API), and the helpers a suite shares between
//! its files. Nothing here is a test; each crate uses the part it needs.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

/// `the-loop ask` / `reply` end to end: sessions on fake agents, the dispatcher, the binary.
pub mod ask_world;
/// The real Claude Code, offline: its binary and a private `HOME`.
pub mod claude;
/// Real Claude Code driven through the-loop against [`fake_model`].
pub mod claude_world;
/// `the-loop demo` in a pane of a private outer tmux server.
pub mod demo;
/// The supervisor end to end: `the-loop run`, the simulated GitHub, real tmux.
pub mod e2e;
/// A local fake of the OpenAI Chat Completions API, for the real opencode.
pub mod fake_chat;
/// A local fake of the Anthropic Messages API.
pub mod fake_model;
/// A local fake of the OpenAI Responses API, for the real Codex.
pub mod fake_openai;
/// A real git remote over HTTP (`git http-backend`) that requires the token.
pub mod git_remote;
/// Where a secret could show: processes' argv, files under a directory.
pub mod leaks;
/// The poller against the simulated GitHub, with a recording `Ingest`.
pub mod poller;
/// The walk that finds any path under a state root open to group or others.
pub mod private_state;
/// The processes a world starts, found and ended.
pub mod processes;
/// Recording a Claude Code release's screens (`scripts/record-screens`).
pub mod screen_recorder;
/// A real sshd on loopback for one fresh unix user: the "remote host" of ssh sessions.
pub mod sshd;
/// A private tmux server per test, and the path of the binary under test.
pub mod tmux_server;
/// The TUI against the in-memory backend: apps from sample data, drawing, snapshots.
pub mod tui_app;
/// Figures for `the-loop tui` as a process (printed, never asserted).
pub mod tui_figures;
/// `the-loop tui` in a tmux pane, driven with `send-keys`.
pub mod tui_world;
/// The webhook receiver on a real server, with a recording `Ingest`.
pub mod webhook;
/// The git side of a workspace world: origin, clone, worktree rows.
pub mod workspaces;

/// The name libtest gives the test function `name` of the module `module` (pass
/// `module_path!()`): the module path without the crate's name. A test that re-runs its
/// own binary to be the other process selects its helper test with it (`--exact`).
pub fn test_name(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_crate, path)) => format!("{path}::{name}"),
        None => name.to_string(),
    }
}

/// `got` is a cost in USD equal to `want` (to 1e-12 of it): the sums of tokens × price
/// a test computes and the-loop's.
pub fn assert_usd(got: &serde_json::Value, want: f64) {
    let got = got.as_f64().unwrap_or_else(|| panic!("not a cost: {got}"));
    assert!(
        (got - want).abs() <= 1e-12 * want.max(1.0),
        "{got} != {want}"
    );
}
