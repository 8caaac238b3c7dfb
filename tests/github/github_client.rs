//! The GitHub client against wiremock: conditional requests, pagination, retries,
//! rate limits, the marker stamp, the token's secrecy and its resolution.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use std::time::Duration;
use the_loop::github::{Client, Error, EtagCache, RetryPolicy, Token, TokenResolver};
use the_loop::guard::{MARKER, mark_self_authored};
use wiremock::matchers::{
    body_partial_json, header, header_exists, method, path, query_param, query_param_is_missing,
};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

const TOKEN: &str = "ghp_clienttestsecret_0123456789abcdef";
const REPO: &str = "octo/repo";
const ISSUES: &str = "/repos/octo/repo/issues";

/// Retries that take milliseconds, not seconds.
fn fast_retries() -> RetryPolicy {
    RetryPolicy {
        max_retries: 3,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_secs(2),
        max_total_delay: Duration::from_secs(5),
    }
}

fn client_for(server: &MockServer, token: Option<&str>) -> Client {
    Client::builder(&server.uri())
        .token(token)
        .retry_policy(fast_retries())
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap()
}

fn fixture(name: &str) -> Value {
    let text = match name {
        "issues.list" => include_str!("../fixtures/rest/issues.list.json"),
        "comments.create" => include_str!("../fixtures/rest/issues.comments.create.response.json"),
        _ => panic!("unknown fixture {name}"),
    };
    serde_json::from_str(text).unwrap()
}

async fn requests(server: &MockServer) -> Vec<Request> {
    server.received_requests().await.unwrap()
}

#[tokio::test]
async fn sends_githubs_headers_and_the_bearer_token() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(ISSUES))
        .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
        .and(header("accept", "application/vnd.github+json"))
        .and(header("x-github-api-version", "2022-11-28"))
        .and(header_exists("user-agent"))
        .and(query_param("state", "open"))
        .and(query_param("labels", "the-loop"))
        .and(query_param("per_page", "100"))
        .respond_with(ResponseTemplate::new(200).set_body_json(fixture("issues.list")))
        .expect(1)
        .mount(&server)
        .await;
    let client = client_for(&server, Some(TOKEN));
    let fetched = client.list_watched_items(REPO, "the-loop").await.unwrap();
    let items = fetched.value.unwrap();
    assert_eq!(items.len(), 2);
    assert!(!the_loop::github::models::is_pull_request(&items[0]));
    assert!(the_loop::github::models::is_pull_request(&items[1]));
    let ua = requests(&server).await[0].headers["user-agent"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(ua.starts_with("the-loop/"), "{ua}");
}

#[tokio::test]
async fn not_modified_uses_the_etag_and_reports_unchanged() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(ISSUES))
        .and(header("if-none-match", "\"v1\""))
        .respond_with(ResponseTemplate::new(304).insert_header("etag", "\"v1\""))
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(ISSUES))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("etag", "\"v1\"")
                .insert_header("date", "Mon, 02 Nov 2026 10:00:00 GMT")
                .set_body_json(fixture("issues.list")),
        )
        .with_priority(2)
        .mount(&server)
        .await;

    let client = client_for(&server, Some(TOKEN));
    let first = client.list_watched_items(REPO, "the-loop").await.unwrap();
    assert_eq!(first.value.as_ref().map(Vec::len), Some(2));
    assert_eq!((first.requests, first.not_modified), (1, 0));
    assert_eq!(
        first.date.map(|d| d.unix_timestamp()),
        Some(
            the_loop::time::parse_ts("2026-11-02T10:00:00Z")
                .unwrap()
                .unix_timestamp()
        )
    );

    let second = client.list_watched_items(REPO, "the-loop").await.unwrap();
    assert!(second.is_not_modified());
    assert_eq!((second.requests, second.not_modified), (1, 1));
    assert_eq!(client.counters().not_modified, 1);
    let sent = requests(&server).await;
    assert!(sent[0].headers.get("if-none-match").is_none());
    assert_eq!(sent[1].headers["if-none-match"], "\"v1\"");
}

#[tokio::test]
async fn etags_are_keyed_by_token_identity() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(ISSUES))
        .and(header("if-none-match", "\"v1\""))
        .respond_with(ResponseTemplate::new(304))
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(ISSUES))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("etag", "\"v1\"")
                .set_body_json(json!([])),
        )
        .with_priority(2)
        .mount(&server)
        .await;

    let first = client_for(&server, Some(TOKEN));
    first.list_watched_items(REPO, "").await.unwrap();
    let persisted = serde_json::to_string(&first.etags()).unwrap();
    assert!(
        !persisted.contains(TOKEN),
        "the ETag store must not hold the token"
    );
    let restored: EtagCache = serde_json::from_str(&persisted).unwrap();

    // Same token, fresh process: the persisted ETag applies.
    let same = Client::builder(&server.uri())
        .token(Some(TOKEN))
        .etags(restored.clone())
        .build()
        .unwrap();
    assert!(
        same.list_watched_items(REPO, "")
            .await
            .unwrap()
            .is_not_modified()
    );

    // Another token (or none) may see other items: no If-None-Match, a full answer.
    for other in [Some("ghp_someoneelse_0000000000"), None] {
        let c = Client::builder(&server.uri())
            .token(other)
            .etags(restored.clone())
            .build()
            .unwrap();
        let fetched = c.list_watched_items(REPO, "").await.unwrap();
        assert_eq!(fetched.value, Some(vec![]));
    }
    let sent = requests(&server).await;
    let conditional: Vec<bool> = sent
        .iter()
        .map(|r| r.headers.contains_key("if-none-match"))
        .collect();
    assert_eq!(conditional, vec![false, true, false, false]);
}

/// Three pages linked by `Link: rel="next"`; page 2's ETag can be switched.
async fn mount_three_pages(server: &MockServer, page2_tag: &str, page2_ids: &[u64]) {
    let base = server.uri();
    let page = |ids: &[u64]| json!(ids.iter().map(|id| json!({"id": id})).collect::<Vec<_>>());
    let url = |n: u32| format!("{base}{ISSUES}/comments?per_page=3&page={n}");
    let pages: [(Option<&str>, String, Value, Option<String>); 3] = [
        (None, "\"p1\"".into(), page(&[1, 2, 3]), Some(url(2))),
        (
            Some("2"),
            page2_tag.to_string(),
            page(page2_ids),
            Some(url(3)),
        ),
        (Some("3"), "\"p3\"".into(), page(&[7]), None),
    ];
    for (n, tag, body, next) in pages {
        let matcher = |m: wiremock::MockBuilder| match n {
            None => m.and(query_param_is_missing("page")),
            Some(n) => m.and(query_param("page", n)),
        };
        Mock::given(method("GET"))
            .and(path(format!("{ISSUES}/comments")))
            .and(header("if-none-match", tag.as_str()))
            .and(query_param("per_page", "3"))
            .pipe(matcher)
            .respond_with(ResponseTemplate::new(304))
            .with_priority(1)
            .mount(server)
            .await;
        let mut ok = ResponseTemplate::new(200)
            .insert_header("etag", tag.as_str())
            .set_body_json(body);
        if let Some(next) = next {
            ok = ok.insert_header(
                "link",
                format!("<{next}>; rel=\"next\", <{}>; rel=\"last\"", url(3)).as_str(),
            );
        }
        Mock::given(method("GET"))
            .and(path(format!("{ISSUES}/comments")))
            .and(query_param("per_page", "3"))
            .pipe(matcher)
            .respond_with(ok)
            .with_priority(2)
            .mount(server)
            .await;
    }
}

/// `MockBuilder` has no way to add a matcher conditionally; this keeps the chain.
trait Pipe: Sized {
    fn pipe<T>(self, f: impl FnOnce(Self) -> T) -> T {
        f(self)
    }
}
impl<T> Pipe for T {}

#[tokio::test]
async fn pagination_collects_every_page_and_revalidates_them_all() {
    let server = MockServer::start().await;
    mount_three_pages(&server, "\"p2\"", &[4, 5, 6]).await;
    let client = client_for(&server, Some(TOKEN));
    let url_path = format!("{ISSUES}/comments");
    let get = || async {
        // per_page=3 so that three small pages stand in for GitHub's 100.
        client
            .get_paginated(&url_path, &[("per_page", "3")])
            .await
            .unwrap()
    };
    let first = get().await;
    let ids: Vec<u64> = first
        .value
        .unwrap()
        .iter()
        .map(|v| v["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, vec![1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(first.requests, 3);

    // Nothing changed: every stored page answers 304, and the list is "unchanged".
    let second = get().await;
    assert!(second.is_not_modified());
    assert_eq!((second.requests, second.not_modified), (3, 3));

    // Page 2 changes while page 1 does not: the whole list is fetched again, so the
    // caller never gets page 1 as "unchanged" next to a new page 2.
    server.reset().await;
    mount_three_pages(&server, "\"p2-new\"", &[4, 5, 66]).await;
    let third = get().await;
    let ids: Vec<u64> = third
        .value
        .unwrap()
        .iter()
        .map(|v| v["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, vec![1, 2, 3, 4, 5, 66, 7]);
    // 304 on page 1, 200 on page 2, then pages 1-3 again.
    assert_eq!((third.requests, third.not_modified), (5, 1));
}

#[tokio::test]
async fn a_full_last_page_is_never_declared_unchanged() {
    let server = MockServer::start().await;
    // One page holding exactly per_page items: a 101st could appear on a page 2
    // without changing this page's body, so its ETag must not be trusted.
    Mock::given(method("GET"))
        .and(path(format!("{ISSUES}/comments")))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("etag", "\"full\"")
                .set_body_json(json!([{"id": 1}, {"id": 2}, {"id": 3}])),
        )
        .mount(&server)
        .await;
    let client = client_for(&server, Some(TOKEN));
    for _ in 0..2 {
        let f = client
            .get_paginated(&format!("{ISSUES}/comments"), &[("per_page", "3")])
            .await
            .unwrap();
        assert_eq!(f.value.map(|v| v.len()), Some(3));
    }
    assert!(
        requests(&server)
            .await
            .iter()
            .all(|r| !r.headers.contains_key("if-none-match"))
    );
}

#[tokio::test]
async fn pagination_never_follows_a_link_to_another_host() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("{ISSUES}/comments")))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header(
                    "link",
                    "<https://evil.example.com/steal?page=2>; rel=\"next\"",
                )
                .set_body_json(json!([{"id": 1}])),
        )
        .mount(&server)
        .await;
    let client = client_for(&server, Some(TOKEN));
    let since = the_loop::time::parse_ts("2026-11-01T00:00:00Z").unwrap();
    let err = client
        .list_issue_comments_since(REPO, since)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Decode { .. }), "{err:?}");
    assert_eq!(requests(&server).await.len(), 1);
}

#[tokio::test]
async fn since_listings_ask_for_updated_ascending() {
    let server = MockServer::start().await;
    for p in [
        "/repos/octo/repo/issues/comments",
        "/repos/octo/repo/pulls/comments",
    ] {
        Mock::given(method("GET"))
            .and(path(p))
            .and(query_param("since", "2026-11-02T11:00:05Z"))
            .and(query_param("sort", "updated"))
            .and(query_param("direction", "asc"))
            .and(query_param("per_page", "100"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
            .expect(1)
            .mount(&server)
            .await;
    }
    let client = client_for(&server, Some(TOKEN));
    let since = the_loop::time::parse_ts("2026-11-02T11:00:05.750Z").unwrap();
    client.list_issue_comments_since(REPO, since).await.unwrap();
    client
        .list_review_comments_since(REPO, since)
        .await
        .unwrap();
}

#[tokio::test]
async fn throttled_429_waits_for_retry_after_then_succeeds() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(ISSUES))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "1")
                .set_body_json(json!({"message": "You have exceeded a secondary rate limit"})),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(ISSUES))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([{"number": 1}])))
        .with_priority(2)
        .mount(&server)
        .await;
    let client = client_for(&server, Some(TOKEN));
    let started = std::time::Instant::now();
    let fetched = client.list_watched_items(REPO, "").await.unwrap();
    assert_eq!(fetched.value.map(|v| v.len()), Some(1));
    assert_eq!(fetched.requests, 2);
    // The retry honoured retry-after rather than the 5 ms backoff.
    assert!(started.elapsed() >= Duration::from_millis(900));
}

#[tokio::test]
async fn server_errors_are_retried_then_succeed() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(ISSUES))
        .respond_with(ResponseTemplate::new(502))
        .up_to_n_times(2)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(ISSUES))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
        .with_priority(2)
        .mount(&server)
        .await;
    let client = client_for(&server, Some(TOKEN));
    let fetched = client.list_watched_items(REPO, "").await.unwrap();
    assert_eq!(fetched.value, Some(vec![]));
    assert_eq!(fetched.requests, 3);
}

#[tokio::test]
async fn exhausted_retries_end_in_a_typed_error() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(ISSUES))
        .respond_with(
            ResponseTemplate::new(503).set_body_json(json!({"message": "down for maintenance"})),
        )
        .mount(&server)
        .await;
    let client = client_for(&server, Some(TOKEN));
    let err = client.list_watched_items(REPO, "").await.unwrap_err();
    match &err {
        Error::Http {
            status, message, ..
        } => {
            assert_eq!(*status, 503);
            assert_eq!(message, "down for maintenance");
        }
        other => panic!("expected Http, got {other:?}"),
    }
    assert!(err.is_transient());
    // One attempt plus max_retries.
    assert_eq!(requests(&server).await.len(), 4);
}

#[tokio::test]
async fn a_long_rate_limit_returns_at_once_and_blocks_further_calls() {
    let server = MockServer::start().await;
    let reset = time::OffsetDateTime::now_utc().unix_timestamp() + 1800;
    Mock::given(method("GET"))
        .respond_with(
            ResponseTemplate::new(403)
                .insert_header("x-ratelimit-remaining", "0")
                .insert_header("x-ratelimit-limit", "5000")
                .insert_header("x-ratelimit-reset", reset.to_string().as_str())
                .set_body_json(json!({"message": "API rate limit exceeded"})),
        )
        .mount(&server)
        .await;
    let client = client_for(&server, Some(TOKEN));
    let err = client.list_watched_items(REPO, "").await.unwrap_err();
    let Error::RateLimited { reset: until } = err else {
        panic!("expected RateLimited, got {err:?}")
    };
    assert!(
        (until.unix_timestamp() - reset).abs() <= 5,
        "reset {until} vs {reset}"
    );
    assert_eq!(client.rate_info().remaining, Some(0));
    // Never hammer: the next call fails fast without touching the server.
    let again = client.get_issue(REPO, 1).await.unwrap_err();
    assert!(matches!(again, Error::RateLimited { .. }), "{again:?}");
    assert_eq!(requests(&server).await.len(), 1);
}

#[tokio::test]
async fn rate_limit_headers_are_readable_after_a_call() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("x-ratelimit-limit", "5000")
                .insert_header("x-ratelimit-remaining", "4321")
                .insert_header("x-ratelimit-reset", "1800000000")
                .insert_header("x-poll-interval", "60")
                .set_body_json(json!({"number": 15, "state": "open"})),
        )
        .mount(&server)
        .await;
    let client = client_for(&server, Some(TOKEN));
    let issue = client.get_issue(REPO, 15).await.unwrap();
    assert_eq!(issue["number"], 15);
    let rate = client.rate_info();
    assert_eq!(rate.limit, Some(5000));
    assert_eq!(rate.remaining, Some(4321));
    assert_eq!(rate.reset.unwrap().unix_timestamp(), 1_800_000_000);
    assert_eq!(rate.poll_interval, Some(Duration::from_secs(60)));
}

#[tokio::test]
async fn timeouts_are_retried_then_reported() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(3)))
        .mount(&server)
        .await;
    let client = Client::builder(&server.uri())
        .token(Some(TOKEN))
        .timeout(Duration::from_millis(200))
        .retry_policy(RetryPolicy {
            max_retries: 1,
            ..fast_retries()
        })
        .build()
        .unwrap();
    let err = client.get_issue(REPO, 1).await.unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
    assert!(err.is_transient());
    assert_eq!(requests(&server).await.len(), 2);
}

#[tokio::test]
async fn status_codes_map_to_errors_callers_match_on() {
    let server = MockServer::start().await;
    Mock::given(path("/repos/octo/repo/issues/404"))
        .respond_with(ResponseTemplate::new(404).set_body_json(json!({"message": "Not Found"})))
        .mount(&server)
        .await;
    Mock::given(path("/repos/octo/repo/issues/401"))
        .respond_with(
            ResponseTemplate::new(401).set_body_json(json!({"message": "Bad credentials"})),
        )
        .mount(&server)
        .await;
    Mock::given(path("/repos/octo/repo/issues/403"))
        .respond_with(
            ResponseTemplate::new(403)
                .set_body_json(json!({"message": "Resource not accessible by integration"})),
        )
        .mount(&server)
        .await;
    let client = client_for(&server, Some(TOKEN));
    assert!(matches!(
        client.get_issue(REPO, 404).await,
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        client.get_issue(REPO, 401).await,
        Err(Error::Unauthorized { .. })
    ));
    // A plain 403 is "forbidden", not throttling: no retries.
    assert!(matches!(
        client.get_issue(REPO, 403).await,
        Err(Error::Http { status: 403, .. })
    ));
    assert_eq!(requests(&server).await.len(), 3);
    // Anonymous and refused: the fix is a token.
    let anonymous = client_for(&server, None);
    assert!(matches!(
        anonymous.get_issue(REPO, 401).await,
        Err(Error::NoToken { .. })
    ));
    assert!(matches!(
        client.get_issue("not-a-repo", 1).await,
        Err(Error::InvalidRequest(_))
    ));
}

#[tokio::test]
async fn post_comment_stamps_the_marker_exactly_once() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/repos/octo/repo/issues/15/comments"))
        .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
        .and(body_partial_json(json!({})))
        .respond_with(ResponseTemplate::new(201).set_body_json(fixture("comments.create")))
        .mount(&server)
        .await;
    let client = client_for(&server, Some(TOKEN));
    let plain = "Should the retry cap be per repo or global?";
    let created = client.post_comment(REPO, 15, plain).await.unwrap();
    assert_eq!(created.id, 2100);
    assert_eq!(
        created.html_url,
        "https://github.com/octo/repo/issues/15#issuecomment-2100"
    );
    client
        .post_comment(REPO, 15, &mark_self_authored("already marked"))
        .await
        .unwrap();

    let sent = requests(&server).await;
    let bodies: Vec<String> = sent
        .iter()
        .map(|r| {
            let v: Value = serde_json::from_slice(&r.body).unwrap();
            v["body"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(bodies[0], mark_self_authored(plain));
    assert_eq!(bodies[1], mark_self_authored("already marked"));
    for b in &bodies {
        assert_eq!(b.matches(MARKER).count(), 1, "{b}");
    }
}

#[tokio::test]
async fn a_post_that_may_have_landed_is_not_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(502))
        .mount(&server)
        .await;
    let client = client_for(&server, Some(TOKEN));
    let err = client.post_comment(REPO, 15, "hello").await.unwrap_err();
    assert!(matches!(err, Error::Http { status: 502, .. }), "{err:?}");
    // Retrying could post the comment twice.
    assert_eq!(requests(&server).await.len(), 1);
}

/// Echoes the request's Authorization header into the error message, as a careless
/// proxy might.
struct EchoAuth(u16);

impl Respond for EchoAuth {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let auth = request
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        ResponseTemplate::new(self.0).set_body_json(json!({"message": format!("rejected {auth}")}))
    }
}

#[tokio::test]
async fn the_token_never_appears_in_errors_or_debug_output() {
    let server = MockServer::start().await;
    let token = "ghp_neverprintme_9f8e7d6c5b4a";
    for (p, status) in [
        ("/repos/octo/repo/issues/1", 422),
        ("/repos/octo/repo/issues/2", 500),
        ("/repos/octo/repo/issues/3", 401),
    ] {
        Mock::given(path(p))
            .respond_with(EchoAuth(status))
            .mount(&server)
            .await;
    }
    let client = Client::builder(&server.uri())
        .token(Some(token))
        .retry_policy(RetryPolicy::none())
        .build()
        .unwrap();
    for n in 1..=3 {
        let err = client.get_issue(REPO, n).await.unwrap_err();
        let shown = format!("{err} / {err:?}");
        assert!(
            shown.contains("rejected Bearer"),
            "the echo reached the error: {shown}"
        );
        assert!(!shown.contains(token), "token leaked: {shown}");
    }
    let debug = format!("{client:?} {:?}", Token::new(token).unwrap());
    assert!(!debug.contains(token), "{debug}");
    let resolver = TokenResolver {
        gh_token: Token::new(token),
        github_token: None,
        gh_program: "gh".into(),
        gh_host: None,
        gh_timeout: Duration::from_secs(1),
    };
    assert!(!format!("{resolver:?}").contains(token));
}

fn resolver_without_env(gh_program: &str) -> TokenResolver {
    TokenResolver {
        gh_token: None,
        github_token: None,
        gh_program: gh_program.into(),
        gh_host: None,
        gh_timeout: Duration::from_secs(5),
    }
}

#[tokio::test]
async fn without_env_tokens_or_gh_there_is_no_token() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
        .mount(&server)
        .await;
    let client = Client::builder(&server.uri())
        .token_resolver(resolver_without_env("/nonexistent/bin/gh"))
        .build()
        .unwrap();
    assert!(!client.has_token().await);
    // A write needs a token: a clear error, and nothing is sent.
    let err = client.post_comment(REPO, 15, "hi").await.unwrap_err();
    assert!(matches!(err, Error::NoToken { .. }), "{err:?}");
    assert!(err.to_string().contains("GH_TOKEN"), "{err}");
    // A read goes out anonymously.
    client.list_watched_items(REPO, "").await.unwrap();
    let sent = requests(&server).await;
    assert_eq!(sent.len(), 1);
    assert!(sent[0].headers.get("authorization").is_none());
}

#[cfg(unix)]
#[tokio::test]
async fn gh_auth_token_is_the_last_resort_and_env_comes_first() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let gh = dir.path().join("gh");
    let args_file = dir.path().join("args");
    std::fs::write(
        &gh,
        format!(
            "#!/bin/sh\necho \"$@\" > '{}'\necho ghp_fromghcli_1234567890\n",
            args_file.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let gh = gh.to_str().unwrap();

    let mut resolver = resolver_without_env(gh);
    resolver.gh_host = Some("ghe.example.com".into());
    let found = resolver.resolve().await.unwrap();
    assert_eq!(found, Token::new("ghp_fromghcli_1234567890").unwrap());
    assert_eq!(
        std::fs::read_to_string(&args_file).unwrap().trim(),
        "auth token --hostname ghe.example.com"
    );

    let mut resolver = resolver_without_env(gh);
    resolver.github_token = Token::new("ghp_github_token_value");
    assert_eq!(
        resolver.resolve().await,
        Token::new("ghp_github_token_value")
    );
    resolver.gh_token = Token::new("ghp_gh_token_value_wins");
    assert_eq!(
        resolver.resolve().await,
        Token::new("ghp_gh_token_value_wins")
    );

    // A gh that fails (not logged in) means no token, not an error.
    let failing = dir.path().join("gh-fail");
    std::fs::write(&failing, "#!/bin/sh\necho 'not logged in' >&2\nexit 1\n").unwrap();
    std::fs::set_permissions(&failing, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(
        resolver_without_env(failing.to_str().unwrap())
            .resolve()
            .await,
        None
    );
}
