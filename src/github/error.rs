//! The errors a GitHub call can end in. Callers match on them: the poller backs off
//! across cycles on `RateLimited`, `ask` reports `NoToken` with a fix. No message ever
//! carries the token (every text that came from the network is scrubbed first).

use std::time::Duration;
use time::OffsetDateTime;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No token was found and the request needs one (a write, or GitHub answered 401
    /// to an anonymous request).
    #[error(
        "no GitHub token: set GH_TOKEN or GITHUB_TOKEN, or log in with `gh auth login` (needed for {what})"
    )]
    NoToken { what: String },

    /// GitHub rejected the token.
    #[error(
        "GitHub rejected the token (401 Unauthorized) for {what}: {message}; check GH_TOKEN / GITHUB_TOKEN or run `gh auth login` again"
    )]
    Unauthorized { what: String, message: String },

    /// 404: the item does not exist, or the token cannot see it.
    #[error(
        "GitHub returned 404 Not Found for {what}: the repository or item does not exist, or the token cannot see it"
    )]
    NotFound { what: String },

    /// The rate limit is exhausted (or GitHub asked us to slow down) for longer than one
    /// call may wait. Retry no earlier than `reset` (local clock).
    #[error(
        "GitHub rate limit reached; retry after {} (in {}s)",
        crate::time::format_ts(*reset),
        secs_until(*reset)
    )]
    RateLimited { reset: OffsetDateTime },

    /// Any other non-success status (after retries, for 5xx).
    #[error("GitHub answered {status} for {what}: {message}")]
    Http {
        status: u16,
        what: String,
        message: String,
    },

    /// No answer within the request timeout (after retries, for reads).
    #[error(
        "GitHub did not answer {what} within {}s; check the network or githubApiUrl",
        timeout.as_secs_f32()
    )]
    Timeout { what: String, timeout: Duration },

    /// The connection failed (DNS, refused, TLS, reset).
    #[error("could not reach GitHub for {what}: {message}; check the network or githubApiUrl")]
    Transport { what: String, message: String },

    /// The answer was not the JSON shape expected.
    #[error("unexpected answer from GitHub for {what}: {message}")]
    Decode { what: String, message: String },

    /// A caller passed something that cannot name a GitHub resource.
    #[error("{0}")]
    InvalidRequest(String),
}

fn secs_until(t: OffsetDateTime) -> i64 {
    (t - OffsetDateTime::now_utc()).whole_seconds().max(0)
}

impl Error {
    /// The HTTP status GitHub answered, when the call ended in one (`None`: no answer,
    /// no token, a rate-limit block, an undecodable answer).
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Unauthorized { .. } => Some(401),
            Error::NotFound { .. } => Some(404),
            Error::Http { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// GitHub refused to open a pull request because one is already open for its head
    /// branch (422 `A pull request already exists for owner:branch.`).
    pub fn is_pull_request_exists(&self) -> bool {
        matches!(self, Error::Http { status: 422, message, .. } if message.contains("pull request already exists"))
    }

    /// Worth retrying on a later cycle (as opposed to a configuration problem).
    pub fn is_transient(&self) -> bool {
        match self {
            Error::RateLimited { .. } | Error::Timeout { .. } | Error::Transport { .. } => true,
            Error::Http { status, .. } => *status >= 500 || *status == 429,
            _ => false,
        }
    }
}
