//! The supervisor process (`the-loop tui` / `the-loop run`): the one process that polls,
//! serves webhooks and dispatches. Only one runs per state root (SPEC §11.6).

pub mod lock;
