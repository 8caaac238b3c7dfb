//! The HTTP core of the GitHub client: headers, the token, retries with backoff,
//! rate-limit bookkeeping, conditional GETs and `Link` pagination. The typed calls the
//! rest of the product uses are in `api.rs`.

use super::Error;
use super::etag::EtagCache;
use super::rate::{RateInfo, RetryPolicy};
use super::token::{Token, TokenResolver};
use reqwest::header::{ACCEPT, HeaderMap, HeaderValue};
use reqwest::{Method, StatusCode, Url};
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;
use time::OffsetDateTime;
use tokio::sync::OnceCell;

pub const API_VERSION: &str = "2022-11-28";
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// A paginated answer stops here (10,000 items at 100 a page) rather than loop forever
/// on a misbehaving server; the result says it was truncated.
pub const MAX_PAGES: usize = 100;
/// The result of a conditional GET.
#[derive(Debug, Clone, PartialEq)]
pub struct Fetched<T> {
    /// `None`: GitHub answered 304 Not Modified; nothing changed since the stored ETag.
    pub value: Option<T>,
    /// The `Date` header of the first response (a new repo's cursor starts there).
    pub date: Option<OffsetDateTime>,
    /// HTTP requests this call made (pages and retries included) and how many of them
    /// were 304s (which cost no rate limit).
    pub requests: u32,
    pub not_modified: u32,
    /// Pagination stopped at [`MAX_PAGES`] before the last page.
    pub truncated: bool,
}

impl<T> Fetched<T> {
    pub fn is_not_modified(&self) -> bool {
        self.value.is_none()
    }
}

/// Cumulative request counts of one client (for `poll.cycle`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestCounters {
    pub requests: u64,
    pub not_modified: u64,
}

#[derive(Debug)]
enum TokenChoice {
    Resolve(TokenResolver),
    Fixed(Option<Token>),
}

/// Configures a [`Client`]; see [`Client::builder`].
#[derive(Debug)]
pub struct ClientBuilder {
    api_url: String,
    token: TokenChoice,
    timeout: Duration,
    retry: RetryPolicy,
    etags: EtagCache,
    user_agent: String,
}

impl ClientBuilder {
    /// Use exactly this token (`None`: anonymous), skipping the environment and `gh`.
    pub fn token(mut self, token: Option<&str>) -> Self {
        self.token = TokenChoice::Fixed(token.and_then(Token::new));
        self
    }

    /// Resolve the token lazily, on the first request, with this resolver.
    pub fn token_resolver(mut self, resolver: TokenResolver) -> Self {
        self.token = TokenChoice::Resolve(resolver);
        self
    }

    /// Per-request timeout (connect included).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    pub fn retry_policy(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Start from ETags persisted by an earlier run.
    pub fn etags(mut self, etags: EtagCache) -> Self {
        self.etags = etags;
        self
    }

    pub fn user_agent(mut self, user_agent: &str) -> Self {
        self.user_agent = user_agent.to_string();
        self
    }

    pub fn build(self) -> Result<Client, Error> {
        // reqwest is built with `rustls-no-provider`: install ring once per process.
        // An error only means a provider is already installed, which is what we want.
        let _ = rustls::crypto::ring::default_provider().install_default();

        let trimmed = self.api_url.trim().trim_end_matches('/').to_string();
        let base = Url::parse(&trimmed)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
            .ok_or_else(|| {
                Error::InvalidRequest(format!(
                    "github.apiUrl `{}` is not an http(s) URL; expected e.g. https://api.github.com or https://ghe.example.com/api/v3",
                    self.api_url
                ))
            })?;

        let mut headers = HeaderMap::new();
        headers.insert(
            ACCEPT,
            HeaderValue::from_static("application/vnd.github+json"),
        );
        headers.insert(
            "x-github-api-version",
            HeaderValue::from_static(API_VERSION),
        );
        let http = reqwest::Client::builder()
            .tls_backend_rustls()
            .user_agent(self.user_agent)
            .default_headers(headers)
            .timeout(self.timeout)
            .connect_timeout(self.timeout.min(Duration::from_secs(10)))
            .build()
            .map_err(|e| Error::InvalidRequest(format!("cannot build the HTTP client: {e}")))?;

        let (token, resolver) = match self.token {
            TokenChoice::Fixed(t) => (OnceCell::new_with(Some(t)), None),
            TokenChoice::Resolve(r) => (OnceCell::new(), Some(r)),
        };
        Ok(Client {
            http,
            base,
            base_str: trimmed,
            token,
            resolver,
            timeout: self.timeout,
            retry: self.retry,
            state: Mutex::new(State {
                etags: self.etags,
                rate: RateInfo::default(),
                blocked_until: None,
            }),
            requests: AtomicU64::new(0),
            not_modified: AtomicU64::new(0),
            own_login: OnceCell::new(),
        })
    }
}

pub(super) struct State {
    pub(super) etags: EtagCache,
    pub(super) rate: RateInfo,
    /// No request is sent before this (local clock): the budget is known to be empty.
    pub(super) blocked_until: Option<OffsetDateTime>,
}

/// A GitHub REST client (github.com or Enterprise). Cheap to share behind an `Arc`;
/// every method takes `&self`.
pub struct Client {
    pub(super) http: reqwest::Client,
    pub(super) base: Url,
    pub(super) base_str: String,
    pub(super) token: OnceCell<Option<Token>>,
    pub(super) resolver: Option<TokenResolver>,
    pub(super) timeout: Duration,
    pub(super) retry: RetryPolicy,
    pub(super) state: Mutex<State>,
    pub(super) requests: AtomicU64,
    pub(super) not_modified: AtomicU64,
    /// The token's login (`GET /user`), once asked successfully.
    pub(super) own_login: OnceCell<String>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let token = match self.token.get() {
            None => "unresolved".to_string(),
            Some(None) => "none".to_string(),
            Some(Some(t)) => format!("id={}", t.identity()),
        };
        f.debug_struct("Client")
            .field("api_url", &self.base_str)
            .field("token", &token)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// One HTTP answer that is a success or a 304.
pub(crate) struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

/// Per-call bookkeeping that ends up in [`Fetched`].
#[derive(Default)]
pub(crate) struct CallMeta {
    pub(super) date: Option<OffsetDateTime>,
    pub(super) requests: u32,
    pub(super) not_modified: u32,
}

impl CallMeta {
    pub(super) fn finish<T>(self, value: Option<T>, truncated: bool) -> Fetched<T> {
        Fetched {
            value,
            date: self.date,
            requests: self.requests,
            not_modified: self.not_modified,
            truncated,
        }
    }
}

impl Client {
    /// A builder for `api_url` whose token comes from `GH_TOKEN`, `GITHUB_TOKEN` or
    /// `gh auth token` (resolved on the first request).
    pub fn builder(api_url: &str) -> ClientBuilder {
        ClientBuilder {
            api_url: api_url.to_string(),
            token: TokenChoice::Resolve(TokenResolver::from_env(api_url)),
            timeout: DEFAULT_TIMEOUT,
            retry: RetryPolicy::default(),
            etags: EtagCache::default(),
            user_agent: format!("the-loop/{}", env!("CARGO_PKG_VERSION")),
        }
    }

    /// The product's client: `github.apiUrl` (already env-overridden), token from the
    /// environment.
    pub fn from_config(config: &crate::config::GithubConfig) -> Result<Self, Error> {
        Self::builder(&config.api_url).build()
    }

    pub fn api_url(&self) -> &str {
        &self.base_str
    }

    /// What the most recent response said about the rate limit.
    pub fn rate_info(&self) -> RateInfo {
        self.lock().rate.clone()
    }

    pub fn counters(&self) -> RequestCounters {
        RequestCounters {
            requests: self.requests.load(Ordering::Relaxed),
            not_modified: self.not_modified.load(Ordering::Relaxed),
        }
    }

    /// A snapshot of the ETag store (to persist).
    pub fn etags(&self) -> EtagCache {
        self.lock().etags.clone()
    }

    /// The ETags of one repository's URLs (for that repo's ledger).
    pub fn etags_for_repo(&self, repo: &str) -> EtagCache {
        self.lock().etags.for_repo(repo)
    }

    /// Adds persisted ETags (e.g. a repo ledger loaded at start).
    pub fn restore_etags(&self, etags: EtagCache) {
        self.lock().etags.merge(etags);
    }

    /// Forgets one repository's ETags: use it when the answers they vouch for are no
    /// longer at hand, or the next call would only hear "unchanged".
    pub fn forget_etags(&self, repo: &str) {
        self.lock().etags.forget_repo(repo);
    }

    /// Whether a token is available (resolving it if needed).
    pub async fn has_token(&self) -> bool {
        self.token().await.is_some()
    }

    /// The short hash identifying the token, if there is one.
    pub async fn token_identity(&self) -> Option<String> {
        self.token().await.map(Token::identity)
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The token this client authenticates with (resolving it if needed). Crate-private:
    /// the one caller outside the client is the ship path, which hands it to one `git
    /// push` through a credential helper's environment (SPEC §19.4 step 2). [`Token`]
    /// prints as a hash only; never log [`Token::expose`].
    pub(crate) async fn token(&self) -> Option<&Token> {
        self.token
            .get_or_init(|| async {
                match &self.resolver {
                    Some(r) => r.resolve().await,
                    None => None,
                }
            })
            .await
            .as_ref()
    }

    /// `base + path` with query pairs appended (percent-encoded).
    pub(crate) fn url(&self, path: &str, query: &[(&str, String)]) -> Result<Url, Error> {
        let mut url = Url::parse(&format!("{}{}", self.base_str, path))
            .map_err(|e| Error::InvalidRequest(format!("bad request path `{path}`: {e}")))?;
        if !query.is_empty() {
            let mut pairs = url.query_pairs_mut();
            for (k, v) in query {
                pairs.append_pair(k, v);
            }
        }
        Ok(url)
    }

    /// Removes the token (and every registered secret) from text that came back from
    /// the network before it goes into an error.
    pub(super) fn scrub(&self, text: &str) -> String {
        let mut out = crate::secrets::redact(text).into_owned();
        if let Some(Some(t)) = self.token.get() {
            out = out.replace(t.expose(), "[redacted]");
        }
        out
    }

    pub(super) fn same_origin(&self, url: &Url) -> bool {
        url.scheme() == self.base.scheme()
            && url.host_str() == self.base.host_str()
            && url.port_or_known_default() == self.base.port_or_known_default()
    }

    /// GET one JSON document, unconditionally.
    pub(crate) async fn get_value(&self, url: &Url) -> Result<Value, Error> {
        let mut meta = CallMeta::default();
        let reply = self.send(Method::GET, url, None, None, &mut meta).await?;
        decode(&describe(&Method::GET, url), &reply)
    }

    /// POST/PATCH a JSON body, returning the JSON answer.
    pub(crate) async fn write_value(
        &self,
        method: Method,
        url: &Url,
        body: &Value,
    ) -> Result<Value, Error> {
        let mut meta = CallMeta::default();
        let reply = self
            .send(method.clone(), url, Some(body), None, &mut meta)
            .await?;
        decode(&describe(&method, url), &reply)
    }
}

/// `GET /repos/o/r/issues?…`: the method and the path with query, never the host
/// (or anything else that could carry a credential).
pub(crate) fn describe(method: &Method, url: &Url) -> String {
    match url.query() {
        Some(q) => format!("{method} {}?{q}", url.path()),
        None => format!("{method} {}", url.path()),
    }
}

pub(super) fn decode<T: serde::de::DeserializeOwned>(
    what: &str,
    reply: &Reply,
) -> Result<T, Error> {
    serde_json::from_slice(&reply.body).map_err(|e| Error::Decode {
        what: what.to_string(),
        message: format!("invalid JSON: {e}"),
    })
}

pub(super) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_never_shows_the_host() {
        let u =
            Url::parse("https://user:pw@ghe.example.com/api/v3/repos/o/r/issues?page=2").unwrap();
        assert_eq!(
            describe(&Method::GET, &u),
            "GET /api/v3/repos/o/r/issues?page=2"
        );
    }

    #[tokio::test]
    async fn the_token_is_the_one_it_authenticates_with() {
        let c = Client::builder("http://127.0.0.1:9")
            .token(Some(" ghp_clientunit_token "))
            .build()
            .unwrap();
        assert_eq!(
            c.token().await.map(Token::expose),
            Some("ghp_clientunit_token")
        );
        assert!(!format!("{c:?}").contains("ghp_clientunit_token"));
        let anon = Client::builder("http://127.0.0.1:9")
            .token(None)
            .build()
            .unwrap();
        assert!(anon.token().await.is_none());
    }

    #[test]
    fn rejects_non_http_base_urls() {
        assert!(matches!(
            Client::builder("ftp://example.com").token(None).build(),
            Err(Error::InvalidRequest(_))
        ));
        let c = Client::builder("http://127.0.0.1:9/api/v3/")
            .token(None)
            .build()
            .unwrap();
        assert_eq!(
            c.url("/repos/o/r/issues", &[("labels", "a b".into())])
                .unwrap()
                .as_str(),
            "http://127.0.0.1:9/api/v3/repos/o/r/issues?labels=a+b"
        );
    }
}
