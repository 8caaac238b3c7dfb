//! The gate in front of every simulated endpoint: what GitHub does around each answer —
//! token check, rate budget, `Date`, strong ETags with 304 (free of budget), rate-limit
//! headers — and what tests need: scripted faults and a request log.

use super::routes::{Shared, error};
use super::{Fault, RequestRecord, lock};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use std::time::SystemTime;
use time::OffsetDateTime;

pub(crate) async fn gate(State(shared): State<Shared>, req: Request, next: Next) -> Response {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let auth = header_text(req.headers(), header::AUTHORIZATION);
    let if_none_match = header_text(req.headers(), header::IF_NONE_MATCH);
    let (index, fault) = {
        let mut s = lock(&shared);
        s.log.push(RequestRecord {
            method: method.to_string(),
            path: path.clone(),
            query: req.uri().query().map(str::to_string),
            status: None,
            not_modified: false,
            had_token: auth.is_some(),
            conditional: if_none_match.is_some(),
        });
        (s.log.len() - 1, s.take_fault(&path))
    };

    let mut response = match fault {
        Some(Fault::Status(code)) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            error(status, "simulated failure")
        }
        Some(Fault::RateLimited { retry_after }) => {
            let mut r = error(
                StatusCode::TOO_MANY_REQUESTS,
                "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
            );
            r.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(retry_after.as_secs()),
            );
            r
        }
        Some(Fault::Delay(delay)) => {
            tokio::time::sleep(delay).await;
            serve(&shared, req, next, auth, if_none_match).await
        }
        None => serve(&shared, req, next, auth, if_none_match).await,
    };

    let mut s = lock(&shared);
    let remaining = s.rate_remaining();
    let headers = response.headers_mut();
    let now = s.clock.now();
    headers.insert(header::DATE, http_date(now));
    headers.insert("x-ratelimit-limit", HeaderValue::from(s.rate.limit));
    headers.insert("x-ratelimit-remaining", HeaderValue::from(remaining));
    headers.insert(
        "x-ratelimit-reset",
        HeaderValue::from(s.rate.reset.unix_timestamp()),
    );
    headers.insert(
        "x-ratelimit-used",
        HeaderValue::from(s.rate.limit.saturating_sub(remaining)),
    );
    headers.insert("x-ratelimit-resource", HeaderValue::from_static("core"));
    if let Some(interval) = s.poll_interval {
        headers.insert("x-poll-interval", HeaderValue::from(interval));
    }
    let status = response.status();
    if let Some(record) = s.log.get_mut(index) {
        record.status = Some(status.as_u16());
        record.not_modified = status == StatusCode::NOT_MODIFIED;
    }
    response
}

fn header_text(headers: &HeaderMap, name: header::HeaderName) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Token, budget, the handler, then ETag / 304 and the charge.
async fn serve(
    shared: &Shared,
    req: Request,
    next: Next,
    auth: Option<String>,
    if_none_match: Option<String>,
) -> Response {
    let is_get = req.method() == Method::GET;
    {
        let mut s = lock(shared);
        if let Some(required) = &s.required_token {
            let ok = auth.as_deref().is_some_and(|a| {
                a.strip_prefix("Bearer ")
                    .or_else(|| a.strip_prefix("token "))
                    .is_some_and(|t| t == required)
            });
            if !ok {
                return error(StatusCode::UNAUTHORIZED, "Bad credentials");
            }
        }
        if s.rate_remaining() == 0 {
            return error(
                StatusCode::FORBIDDEN,
                "API rate limit exceeded. Wait for the reset (x-ratelimit-reset).",
            );
        }
    }

    let response = next.run(req).await;
    let (mut parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let mut s = lock(shared);
    if is_get && parts.status == StatusCode::OK {
        let etag = format!("\"{}\"", hex::encode(&Sha256::digest(&bytes)[..20]));
        let tag_value = HeaderValue::from_str(&etag).unwrap_or(HeaderValue::from_static("\"\""));
        if if_none_match
            .as_deref()
            .is_some_and(|inm| etag_matches(inm, &etag))
        {
            // Unchanged: no body, and no charge against the budget (as on GitHub).
            let mut r = StatusCode::NOT_MODIFIED.into_response();
            r.headers_mut().insert(header::ETAG, tag_value);
            return r;
        }
        parts.headers.insert(header::ETAG, tag_value);
    }
    s.charge();
    Response::from_parts(parts, Body::from(bytes))
}

/// `If-None-Match`: a list of tags, weak or strong (compared weakly, as GitHub does),
/// or `*`.
fn etag_matches(if_none_match: &str, etag: &str) -> bool {
    if_none_match.split(',').any(|candidate| {
        let c = candidate.trim();
        c == "*" || c.strip_prefix("W/").unwrap_or(c) == etag
    })
}

fn http_date(t: OffsetDateTime) -> HeaderValue {
    let text = httpdate::fmt_http_date(SystemTime::from(t));
    HeaderValue::from_str(&text).unwrap_or(HeaderValue::from_static(""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_none_match_forms() {
        assert!(etag_matches("\"abc\"", "\"abc\""));
        assert!(etag_matches("W/\"abc\"", "\"abc\""));
        assert!(etag_matches("\"x\", \"abc\"", "\"abc\""));
        assert!(etag_matches("*", "\"abc\""));
        assert!(!etag_matches("\"abd\"", "\"abc\""));
    }
}
