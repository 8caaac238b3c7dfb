//! Harness-reported state (SPEC §17): what a session's harness says about itself,
//! trusted over the screen heuristic, and the operator's answers to its permission
//! dialogs.
//!
//! - [`wiring`]: how a harness is told to report — claude's per-session settings file
//!   (`--settings`), codex's `notify` — to the hidden `the-loop hook claude|codex`.
//! - [`payload`]: what each harness sends, read into [`state::Signal`]s.
//! - [`state`]: the state machine of §17.3, kept in the session record as `reported`.
//! - [`report`]: the hook command's work — record one report, log what matters, print
//!   nothing, exit fast whatever happens.
//! - [`permission`]: `sessions approve|deny` and the TUI's keys: a fixed key, sent only
//!   while the dialog is on screen; `elsewhere` when it was answered in the pane.
//!
//! `session::activity` combines a report with liveness, pause and open questions into
//! the state every view shows, with `stateSource: hooks | screen`.

pub mod payload;
pub mod permission;
pub mod report;
pub mod state;
pub mod wiring;

pub use payload::Reporter;
pub use permission::{AnswerError, Answered, answer, reconcile};
pub use state::{Decision, PermissionRequest, Reported, ReportedState};
pub use wiring::wire;
