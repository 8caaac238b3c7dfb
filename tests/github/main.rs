//! The GitHub client against wiremock, and the simulated GitHub itself; pull requests; reviews.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../support/mod.rs"]
mod support;

mod github_client;
mod github_pulls;
mod github_reviews;
mod github_sim;
