//! Bad input at volume and the payload excerpt: property tests over mutated real
//! payloads, config, refs and text, and the excerpt's cases, properties and command.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../support/mod.rs"]
mod support;

mod bad_input;
mod excerpt;
