//! GitHub: the REST client the poller, `ask`, `reply` and critics use (SPEC §4.1), and a
//! simulated GitHub that the end-to-end tests and the demo share (SPEC §12).
//!
//! - [`Client`]: token from `GH_TOKEN` / `GITHUB_TOKEN` / `gh auth token`, conditional
//!   GETs with an [`EtagCache`], `Link` pagination, rate-limit reading ([`RateInfo`])
//!   and bounded retries with backoff; typed calls in `api.rs`, pull requests in
//!   `pulls.rs`, reviews the tool writes (and the lines of a diff) in `reviews.rs`.
//! - [`models`]: accessors over GitHub-shaped JSON.
//! - [`sim`]: an axum server speaking the same endpoints, with scriptable faults.

mod api;
mod client;
mod error;
pub mod etag;
pub mod models;
mod pages;
mod pulls;
mod rate;
mod reviews;
mod send;
pub mod sim;
mod token;

pub use api::{CreatedComment, repo_path};
pub use client::{Client, ClientBuilder, DEFAULT_TIMEOUT, Fetched, RequestCounters};
pub use error::Error;
pub use etag::EtagCache;
pub use pulls::{NewPull, PullSummary};
pub use rate::{RateInfo, RetryPolicy};
pub use reviews::{CreatedReview, DiffLines, LineComment};
pub use token::{Token, TokenResolver};
