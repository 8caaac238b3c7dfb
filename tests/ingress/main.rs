//! GitHub → session, the ingress side: the router against the real fixtures, the webhook
//! receiver and the HTTP server, the poller against the simulated GitHub, and the real
//! `the-loop run` end to end (delivery, strangers, faults, the operator socket, a
//! starved server).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../support/mod.rs"]
mod support;

mod e2e_ingress;
mod e2e_operator;
mod e2e_starve;
mod flood;
mod poller;
mod router;
mod webhook;
