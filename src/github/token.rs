//! Where the GitHub token comes from (`GH_TOKEN`, then `GITHUB_TOKEN`, then
//! `gh auth token`) and the type that keeps it out of every log line and `Debug` dump.

use sha2::{Digest, Sha256};
use std::ffi::OsString;
use std::fmt;
use std::process::Stdio;
use std::time::Duration;

/// A GitHub token. `Debug` never shows it and there is no `Display`; the only way to
/// read it is [`Token::expose`], used when building the `Authorization` header.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// A trimmed, non-empty token; registered with [`crate::secrets`] so the event log
    /// and the log file scrub it even if some path ever tried to print it.
    pub fn new(value: &str) -> Option<Self> {
        let value = value.trim();
        if value.is_empty() {
            return None;
        }
        crate::secrets::register(value);
        Some(Self(value.to_string()))
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// A short hash that tells tokens apart (ETag keys, logs) without revealing them.
    pub fn identity(&self) -> String {
        let digest = Sha256::digest(self.0.as_bytes());
        hex::encode(&digest[..6])
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Token(<redacted> id={})", self.identity())
    }
}

/// The identity used for anonymous requests in ETag keys.
pub const ANONYMOUS: &str = "anon";

/// How to find a token. [`TokenResolver::from_env`] is the product's; tests build one
/// explicitly because the process environment is shared between parallel tests.
#[derive(Debug, Clone)]
pub struct TokenResolver {
    pub gh_token: Option<Token>,
    pub github_token: Option<Token>,
    /// The `gh` executable (looked up on `PATH` when it is a bare name).
    pub gh_program: OsString,
    /// `--hostname` for `gh auth token` (GitHub Enterprise); `None` for github.com.
    pub gh_host: Option<String>,
    /// `gh` gets this long to answer; a hung credential helper must not stall polling.
    pub gh_timeout: Duration,
}

impl TokenResolver {
    /// `GH_TOKEN`, `GITHUB_TOKEN` and `gh` for the host of `api_url`.
    pub fn from_env(api_url: &str) -> Self {
        let var = |name: &str| std::env::var(name).ok().and_then(|v| Token::new(&v));
        Self {
            gh_token: var("GH_TOKEN"),
            github_token: var("GITHUB_TOKEN"),
            gh_program: OsString::from("gh"),
            gh_host: gh_host_for(api_url),
            gh_timeout: Duration::from_secs(5),
        }
    }

    /// The first token found, in order; `None` when there is none (not an error: only a
    /// request that needs a token fails, with [`super::Error::NoToken`]).
    pub async fn resolve(&self) -> Option<Token> {
        if let Some(t) = self.gh_token.clone().or_else(|| self.github_token.clone()) {
            return Some(t);
        }
        self.via_gh().await
    }

    /// `gh auth token [--hostname H]`: argv only, no shell, stdin closed, killed on
    /// timeout. Any failure (not installed, not logged in, hung) means "no token".
    async fn via_gh(&self) -> Option<Token> {
        let mut cmd = tokio::process::Command::new(&self.gh_program);
        cmd.args(["auth", "token"]);
        if let Some(host) = &self.gh_host {
            cmd.args(["--hostname", host]);
        }
        cmd.env("GH_PROMPT_DISABLED", "1")
            .env("GH_NO_UPDATE_NOTIFIER", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let output = tokio::time::timeout(self.gh_timeout, cmd.output())
            .await
            .ok()?
            .ok()?;
        if !output.status.success() {
            return None;
        }
        Token::new(std::str::from_utf8(&output.stdout).ok()?)
    }
}

/// The `gh --hostname` for an API base URL: none for github.com, the host for GHE.
pub fn gh_host_for(api_url: &str) -> Option<String> {
    let url = reqwest::Url::parse(api_url).ok()?;
    let host = url.host_str()?.to_ascii_lowercase();
    (host != "api.github.com" && host != "github.com").then_some(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_token() {
        let t = Token::new("  ghp_debugsecret_0123456789 \n").unwrap();
        let shown = format!("{t:?}");
        assert!(!shown.contains("ghp_debugsecret"), "{shown}");
        assert_eq!(t.expose(), "ghp_debugsecret_0123456789");
        assert_eq!(t.identity().len(), 12);
        assert_ne!(
            t.identity(),
            Token::new("other-token-value").unwrap().identity()
        );
    }

    #[test]
    fn empty_values_are_no_token() {
        assert!(Token::new("   ").is_none());
    }

    #[test]
    fn gh_host_only_for_enterprise() {
        assert_eq!(gh_host_for("https://api.github.com"), None);
        assert_eq!(
            gh_host_for("https://GHE.example.com/api/v3").as_deref(),
            Some("ghe.example.com")
        );
    }
}
