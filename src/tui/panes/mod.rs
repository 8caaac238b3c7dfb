//! What draws one part of the screen, one module per pane, bar or overlay. Each reads
//! `&App` and draws into the rectangle [`super::view`] gives it.
//!
//! - The panes of the grid (SPEC §11.1): [`sessions`], [`preview`] (the selected
//!   session's tmux pane), [`questions`], [`events`], [`critics`] (with the output popup
//!   of a finished round).
//! - The bars: [`status_bar`] (the top line) and [`footer`] (the bottom line).
//! - The reply box docked under the panes: [`reply_box`].
//! - The overlays: [`help`], [`picker`] (the critic picker), [`diff`] (a worktree's
//!   diff), [`confirm`] (asked before what cannot be undone).

pub mod confirm;
pub mod critics;
pub mod diff;
pub mod events;
pub mod footer;
pub mod help;
pub mod picker;
pub mod preview;
pub mod questions;
pub mod reply_box;
pub mod sessions;
pub mod status_bar;
