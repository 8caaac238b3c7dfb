//! GitHub ingress end to end: the real `the-loop run` against the simulated GitHub
//! (started in this process), real tmux on a private socket and `fake-agent` sessions.
//! Each test owns its world (state root, config, tmux server, simulator) and waits for
//! events and agent log lines with generous limits — no timed assertions.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/tmux_server.rs"]
mod tmux_server;

#[path = "common/e2e.rs"]
mod e2e;

#[path = "e2e_ingress/claims.rs"]
mod claims;
#[path = "e2e_ingress/cli.rs"]
mod cli;
#[path = "e2e_ingress/delivery.rs"]
mod delivery;
#[path = "e2e_ingress/faults.rs"]
mod faults;
#[path = "e2e_ingress/in_process.rs"]
mod in_process;
#[path = "e2e_ingress/lifecycle.rs"]
mod lifecycle;
#[path = "e2e_ingress/measure.rs"]
mod measure;
#[path = "e2e_ingress/polling.rs"]
mod polling;
#[path = "e2e_ingress/private.rs"]
mod private;
#[path = "e2e_ingress/reload.rs"]
mod reload;
#[path = "e2e_ingress/rotation.rs"]
mod rotation;
#[path = "e2e_ingress/strangers.rs"]
mod strangers;
#[path = "e2e_ingress/webhook.rs"]
mod webhook;
