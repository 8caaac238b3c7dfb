//! One request, retried: rate-limit bookkeeping, backoff with jitter on throttling,
//! 5xx, timeouts and connection failures, and the mapping of what finally happened to
//! an [`Error`]. Never hammers: a known-empty budget fails fast without a request.

use super::Error;
use super::client::{CallMeta, Client, Reply, State, describe};
use super::rate::{RateInfo, is_rate_limited};
use super::token::Token;
use reqwest::header::IF_NONE_MATCH;
use reqwest::{Method, StatusCode, Url};
use serde_json::Value;
use std::sync::atomic::Ordering;
use std::time::Duration;
use time::OffsetDateTime;

/// A rate-limit block never lasts longer than GitHub's window, whatever a clock says.
const MAX_BLOCK: Duration = Duration::from_secs(3600);
/// GitHub's advice when it throttles without saying for how long.
const UNSPECIFIED_THROTTLE: Duration = Duration::from_secs(60);

/// Why an attempt failed, before deciding whether to retry.
enum Failure {
    Throttled { wait: Duration },
    Server { status: StatusCode, message: String },
    Timeout,
    Transport { message: String, connect: bool },
}

impl Client {
    fn record_rate(&self, info: &RateInfo) {
        let mut state = self.lock();
        state.rate.update(info.clone());
        if info.remaining == Some(0)
            && let Some(wait) = info.wait_for_reset().filter(|w| !w.is_zero())
        {
            block(&mut state, wait);
        }
    }

    /// Sends one request with retries. Returns a success or a 304; everything else is
    /// an [`Error`]. Reads (and rate-limit rejections of any method) are retried; a POST
    /// that may have reached GitHub is not, so a comment is never posted twice.
    pub(crate) async fn send(
        &self,
        method: Method,
        url: &Url,
        json: Option<&Value>,
        etag: Option<&str>,
        meta: &mut CallMeta,
    ) -> Result<Reply, Error> {
        let what = describe(&method, url);
        let token = self.token().await;
        if method != Method::GET && token.is_none() {
            return Err(Error::NoToken { what });
        }
        if let Some(until) = self.lock().blocked_until
            && until > OffsetDateTime::now_utc()
        {
            return Err(Error::RateLimited { reset: until });
        }
        let idempotent = method != Method::POST;
        let mut slept = Duration::ZERO;
        let mut attempt: u32 = 0;
        loop {
            let mut req = self.http.request(method.clone(), url.clone());
            if let Some(t) = token {
                req = req.bearer_auth(t.expose());
            }
            if let Some(e) = etag {
                req = req.header(IF_NONE_MATCH, e);
            }
            if let Some(body) = json {
                req = req.json(body);
            }
            meta.requests += 1;
            self.requests.fetch_add(1, Ordering::Relaxed);

            let failure = match req.send().await {
                Ok(resp) => {
                    let status = resp.status();
                    let headers = resp.headers().clone();
                    let info = RateInfo::from_headers(&headers);
                    meta.date = meta.date.or(info.date);
                    self.record_rate(&info);
                    if status == StatusCode::NOT_MODIFIED {
                        meta.not_modified += 1;
                        self.not_modified.fetch_add(1, Ordering::Relaxed);
                        return Ok(Reply {
                            status,
                            headers,
                            body: Vec::new(),
                        });
                    }
                    match resp.bytes().await {
                        Ok(body) if status.is_success() => {
                            return Ok(Reply {
                                status,
                                headers,
                                body: body.to_vec(),
                            });
                        }
                        Ok(body) => {
                            let text = String::from_utf8_lossy(&body);
                            let message = self.scrub(&github_message(&text));
                            if is_rate_limited(status, &info, &text) {
                                Failure::Throttled {
                                    wait: throttle_wait(&info),
                                }
                            } else if status.is_server_error() {
                                Failure::Server { status, message }
                            } else {
                                return Err(client_error(status, what, message, token));
                            }
                        }
                        Err(e) if e.is_timeout() => Failure::Timeout,
                        Err(e) => Failure::Transport {
                            message: self.scrub(&e.to_string()),
                            connect: false,
                        },
                    }
                }
                Err(e) if e.is_timeout() => Failure::Timeout,
                Err(e) => Failure::Transport {
                    message: self.scrub(&error_chain(&e)),
                    connect: e.is_connect(),
                },
            };

            let (retryable, wait) = match &failure {
                // A throttled request was refused, so repeating it is safe for any method.
                Failure::Throttled { wait } => (*wait <= self.retry.max_delay, *wait),
                Failure::Transport { connect: true, .. } => (true, self.retry.backoff(attempt)),
                _ => (idempotent, self.retry.backoff(attempt)),
            };
            if !retryable
                || attempt >= self.retry.max_retries
                || slept + wait > self.retry.max_total_delay
            {
                return Err(self.give_up(failure, what));
            }
            tracing::debug!(%what, attempt, wait_ms = wait.as_millis() as u64, "retrying GitHub request");
            tokio::time::sleep(wait).await;
            slept += wait;
            attempt += 1;
        }
    }

    fn give_up(&self, failure: Failure, what: String) -> Error {
        match failure {
            Failure::Throttled { wait } => {
                let mut state = self.lock();
                let reset = block(&mut state, wait.max(Duration::from_secs(1)));
                Error::RateLimited { reset }
            }
            Failure::Server { status, message } => Error::Http {
                status: status.as_u16(),
                what,
                message,
            },
            Failure::Timeout => Error::Timeout {
                what,
                timeout: self.timeout,
            },
            Failure::Transport { message, .. } => Error::Transport { what, message },
        }
    }
}

/// Blocks new requests for `wait` (capped) and returns when the block ends.
fn block(state: &mut State, wait: Duration) -> OffsetDateTime {
    let until = OffsetDateTime::now_utc() + wait.min(MAX_BLOCK);
    state.blocked_until = Some(state.blocked_until.map_or(until, |b| b.max(until)));
    until
}

/// How long a throttled response asks us to wait: `retry-after`, else until the reset
/// when the budget is spent, else GitHub's advice of at least a minute.
fn throttle_wait(info: &RateInfo) -> Duration {
    if let Some(wait) = info.retry_after {
        return wait;
    }
    if info.remaining == Some(0)
        && let Some(wait) = info.wait_for_reset()
    {
        return wait.max(Duration::from_secs(1));
    }
    UNSPECIFIED_THROTTLE
}

fn client_error(status: StatusCode, what: String, message: String, token: Option<&Token>) -> Error {
    match status {
        StatusCode::UNAUTHORIZED if token.is_none() => Error::NoToken { what },
        StatusCode::UNAUTHORIZED => Error::Unauthorized { what, message },
        StatusCode::NOT_FOUND => Error::NotFound { what },
        _ => Error::Http {
            status: status.as_u16(),
            what,
            message,
        },
    }
}

/// GitHub's `message` field of an error body, with the details of a 422's `errors`
/// after it (`Validation Failed: A pull request already exists for octo:b.`), else the
/// start of the text.
fn github_message(text: &str) -> String {
    if let Ok(v) = serde_json::from_str::<Value>(text)
        && let Some(m) = v.get("message").and_then(Value::as_str)
    {
        let details: Vec<String> = v
            .get("errors")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(error_detail)
            .collect();
        if details.is_empty() {
            return m.to_string();
        }
        return format!("{m}: {}", details.join("; "))
            .chars()
            .take(MAX_MESSAGE)
            .collect();
    }
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return "(no message)".to_string();
    }
    trimmed.chars().take(300).collect()
}

/// An error message is cut here (GitHub's own are short; a proxy's page is not).
const MAX_MESSAGE: usize = 600;

/// One entry of a 422's `errors`: its `message` when it has one, else
/// `resource.field code` (`PullRequest.head invalid`); GitHub sometimes sends a string.
fn error_detail(e: &Value) -> Option<String> {
    if let Some(text) = e.as_str() {
        return Some(text.to_string());
    }
    if let Some(m) = e.get("message").and_then(Value::as_str) {
        return Some(m.to_string());
    }
    let code = e.get("code").and_then(Value::as_str)?;
    let field = e.get("field").and_then(Value::as_str);
    let resource = e.get("resource").and_then(Value::as_str);
    Some(match (resource, field) {
        (Some(r), Some(f)) => format!("{r}.{f} {code}"),
        (None, Some(f)) => format!("{f} {code}"),
        (Some(r), None) => format!("{r} {code}"),
        (None, None) => code.to_string(),
    })
}

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_prefers_githubs_field() {
        assert_eq!(
            github_message(r#"{"message":"Bad credentials"}"#),
            "Bad credentials"
        );
        assert_eq!(github_message("  "), "(no message)");
        assert_eq!(
            github_message(
                r#"{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"A pull request already exists for octo:b."}]}"#
            ),
            "Validation Failed: A pull request already exists for octo:b."
        );
        assert_eq!(
            github_message(
                r#"{"message":"Validation Failed","errors":[{"resource":"PullRequest","field":"head","code":"invalid"},"x"]}"#
            ),
            "Validation Failed: PullRequest.head invalid; x"
        );
        assert_eq!(github_message(&"x".repeat(500)).len(), 300);
    }
}
