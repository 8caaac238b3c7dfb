//! The operator's screen (SPEC §11): a view over supervisor state and the event log.
//!
//! - [`backend::Backend`] is everything the screen needs from the rest of the product
//!   (the supervisor, or a viewer of another one); `fake::FakeBackend` stands in for
//!   it in tests (it is compiled for tests only).
//! - [`app::App`] is the state; it changes only in [`update::update`], which turns an
//!   [`action::Action`] into state and [`action::Effect`]s (I/O for the loop).
//! - [`view::render`] draws `&App`; each pane, bar and overlay has its module in
//!   `panes/`. [`event_rows`] turns events into the Events pane's rows once, on arrival;
//!   [`held`] says how deliveries held on a session show and when they notify;
//!   [`mouse`] says what is under the pointer and what a click or the wheel does there.
//! - [`run::event_loop`] is the tokio loop, generic over the ratatui backend;
//!   [`terminal`] owns raw mode and restores the terminal on every exit path.
//! - Keys and colors are data: [`keymap`] and [`theme`], embedded from `keymaps/` and
//!   `themes/`, patched by the user's files in the config dir.

pub mod action;
pub mod app;
pub mod backend;
mod commands;
pub mod diff_view;
pub mod event_rows;
#[cfg(any(test, feature = "test-support"))]
pub mod fake;
pub mod held;
pub mod keymap;
pub mod keys;
pub mod layout;
pub mod live;
pub mod mouse;
pub mod notify;
mod panes;
pub mod review;
pub mod run;
#[cfg(any(test, feature = "test-support"))]
pub mod sample;
pub mod ship;
pub mod terminal;
pub mod text;
pub mod theme;
pub mod update;
pub mod view;

pub use backend::Backend;
pub use run::{RunOptions, run};
