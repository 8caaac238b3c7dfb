//! `the-loop demo` end to end (SPEC §12): the demo runs in a pane of a private outer tmux
//! server, as a newcomer would run it in a terminal; the test reads the screen, answers
//! the agent's question, launches the demo critic, quits, and checks that nothing the
//! demo started is left: no tmux server, no process, no temp state. Also: the install
//! hint without tmux, and the docs kept true to the code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod docs;
mod flow;
mod headless;
mod signals;
