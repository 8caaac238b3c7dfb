//! Rate-limit headers and the retry policy: how long to wait before trying again, and
//! when to stop waiting and hand the problem back to the caller (the poller backs off
//! across cycles; one call must never block a cycle for minutes).

use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use std::time::{Duration, SystemTime};
use time::OffsetDateTime;

/// What the last response said about the budget. Fields are `None` when the header
/// was absent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RateInfo {
    pub limit: Option<u64>,
    pub remaining: Option<u64>,
    /// When the budget refills, as GitHub stated it (`x-ratelimit-reset`).
    pub reset: Option<OffsetDateTime>,
    /// `retry-after`, seconds or an HTTP date converted to a wait.
    pub retry_after: Option<Duration>,
    /// `x-poll-interval`: the minimum interval GitHub asks pollers to keep.
    pub poll_interval: Option<Duration>,
    /// The response `Date` header.
    pub date: Option<OffsetDateTime>,
}

impl RateInfo {
    pub fn from_headers(headers: &HeaderMap) -> Self {
        let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        let number = |name: &str| text(name).and_then(|v| v.trim().parse::<u64>().ok());
        let date = text("date").and_then(parse_http_date);
        let retry_after = text("retry-after").and_then(|v| {
            let v = v.trim();
            if let Ok(secs) = v.parse::<u64>() {
                return Some(Duration::from_secs(secs));
            }
            // An HTTP date: the wait is measured against the server's own clock when it
            // sent one, so local clock skew does not stretch or shrink it.
            let at = parse_http_date(v)?;
            let now = date.unwrap_or_else(OffsetDateTime::now_utc);
            Some(Duration::try_from(at - now).unwrap_or(Duration::ZERO))
        });
        Self {
            limit: number("x-ratelimit-limit"),
            remaining: number("x-ratelimit-remaining"),
            reset: number("x-ratelimit-reset")
                .and_then(|s| OffsetDateTime::from_unix_timestamp(s as i64).ok()),
            retry_after,
            poll_interval: number("x-poll-interval").map(Duration::from_secs),
            date,
        }
    }

    /// Merges a newer response's headers: absent fields keep what was known.
    pub(crate) fn update(&mut self, newer: RateInfo) {
        self.limit = newer.limit.or(self.limit);
        self.remaining = newer.remaining.or(self.remaining);
        self.reset = newer.reset.or(self.reset);
        self.poll_interval = newer.poll_interval.or(self.poll_interval);
        self.date = newer.date.or(self.date);
        // retry-after belongs to the one response that carried it.
        self.retry_after = newer.retry_after;
    }

    /// How long until the budget refills, by the server's clock when known.
    pub fn wait_for_reset(&self) -> Option<Duration> {
        let reset = self.reset?;
        let now = self.date.unwrap_or_else(OffsetDateTime::now_utc);
        Some(Duration::try_from(reset - now).unwrap_or(Duration::ZERO))
    }
}

fn parse_http_date(s: &str) -> Option<OffsetDateTime> {
    let t: SystemTime = httpdate::parse_http_date(s.trim()).ok()?;
    Some(OffsetDateTime::from(t))
}

/// Whether a failed response is GitHub throttling us (429, or a 403 that says so), as
/// opposed to a 403 that means "forbidden".
pub(crate) fn is_rate_limited(status: StatusCode, info: &RateInfo, body: &str) -> bool {
    if status == StatusCode::TOO_MANY_REQUESTS {
        return true;
    }
    status == StatusCode::FORBIDDEN
        && (info.remaining == Some(0)
            || info.retry_after.is_some()
            || body.to_ascii_lowercase().contains("rate limit"))
}

/// Bounded in-call retries with exponential backoff and jitter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// The first backoff; doubled per retry.
    pub base_delay: Duration,
    /// No single wait is longer: a server asking for more (`retry-after`, a distant
    /// reset) ends the call with `RateLimited` instead.
    pub max_delay: Duration,
    /// All the waits of one call together stay under this.
    pub max_total_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(10),
            max_total_delay: Duration::from_secs(20),
        }
    }
}

impl RetryPolicy {
    /// Never retry (useful where the caller has its own schedule).
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// The backoff before retry number `attempt` (0-based): `base * 2^attempt` capped at
    /// `max_delay`, with "equal jitter" (a uniform draw from its upper half) so clients
    /// that failed together do not retry together.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let exp = self
            .base_delay
            .saturating_mul(2u32.saturating_pow(attempt.min(16)));
        let capped = exp.min(self.max_delay);
        let half = capped / 2;
        let jitter_ms = half.as_millis() as u64;
        let extra = if jitter_ms == 0 {
            0
        } else {
            rand::random_range(0..=jitter_ms)
        };
        half + Duration::from_millis(extra)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn parses_rate_headers() {
        let info = RateInfo::from_headers(&headers(&[
            ("x-ratelimit-limit", "5000"),
            ("x-ratelimit-remaining", "4990"),
            ("x-ratelimit-reset", "1700000000"),
            ("x-poll-interval", "60"),
            ("retry-after", "7"),
            ("date", "Tue, 14 Nov 2023 22:13:20 GMT"),
        ]));
        assert_eq!(info.limit, Some(5000));
        assert_eq!(info.remaining, Some(4990));
        assert_eq!(info.reset.unwrap().unix_timestamp(), 1_700_000_000);
        assert_eq!(info.poll_interval, Some(Duration::from_secs(60)));
        assert_eq!(info.retry_after, Some(Duration::from_secs(7)));
        assert_eq!(info.date.unwrap().unix_timestamp(), 1_700_000_000);
        assert_eq!(info.wait_for_reset(), Some(Duration::ZERO));
    }

    #[test]
    fn retry_after_as_http_date_is_relative_to_the_server_date() {
        let info = RateInfo::from_headers(&headers(&[
            ("date", "Tue, 14 Nov 2023 22:13:20 GMT"),
            ("retry-after", "Tue, 14 Nov 2023 22:13:50 GMT"),
        ]));
        assert_eq!(info.retry_after, Some(Duration::from_secs(30)));
    }

    #[test]
    fn garbage_headers_are_absent() {
        let info = RateInfo::from_headers(&headers(&[
            ("x-ratelimit-remaining", "lots"),
            ("retry-after", "soon"),
        ]));
        assert_eq!(info, RateInfo::default());
    }

    #[test]
    fn forbidden_is_rate_limited_only_with_a_signal() {
        let plain = RateInfo::default();
        assert!(!is_rate_limited(
            StatusCode::FORBIDDEN,
            &plain,
            "Resource not accessible"
        ));
        assert!(is_rate_limited(
            StatusCode::FORBIDDEN,
            &plain,
            "You have exceeded a secondary rate limit"
        ));
        let exhausted = RateInfo {
            remaining: Some(0),
            ..RateInfo::default()
        };
        assert!(is_rate_limited(StatusCode::FORBIDDEN, &exhausted, ""));
        assert!(is_rate_limited(StatusCode::TOO_MANY_REQUESTS, &plain, ""));
        assert!(!is_rate_limited(
            StatusCode::INTERNAL_SERVER_ERROR,
            &exhausted,
            ""
        ));
    }

    #[test]
    fn backoff_grows_is_capped_and_jittered() {
        let p = RetryPolicy {
            max_retries: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(350),
            max_total_delay: Duration::from_secs(5),
        };
        for _ in 0..50 {
            let d0 = p.backoff(0);
            assert!(d0 >= Duration::from_millis(50) && d0 <= Duration::from_millis(100));
            let d1 = p.backoff(1);
            assert!(d1 >= Duration::from_millis(100) && d1 <= Duration::from_millis(200));
            let d9 = p.backoff(9);
            assert!(d9 >= Duration::from_millis(175) && d9 <= Duration::from_millis(350));
        }
    }
}
