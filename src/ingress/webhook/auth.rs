//! How the webhook route authenticates (SPEC §4.2, §13): the secret from the environment,
//! what happens without one, and the constant-time signature check.

use std::sync::Arc;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::config::ServerConfig;

/// How the webhook route authenticates, decided once from the config and the environment.
#[derive(Clone)]
pub enum WebhookAuth {
    /// Every request must carry a valid `X-Hub-Signature-256`.
    Secret(WebhookSecret),
    /// No secret, `server.allowUnsigned: true`: anyone who can reach the port can inject.
    Unsigned,
    /// No secret and unsigned not allowed: the route answers 404 (SPEC §4.2).
    Off,
}

/// The webhook secret's bytes; `Debug` never shows them.
#[derive(Clone)]
pub struct WebhookSecret(Arc<[u8]>);

impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecret([redacted])")
    }
}

impl WebhookSecret {
    /// Whether `header` (`X-Hub-Signature-256`) signs `body` with this secret.
    pub fn verifies(&self, body: &[u8], header: &str) -> bool {
        signature_matches(&self.0, body, header)
    }
}

impl std::fmt::Debug for WebhookAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.status().as_str())
    }
}

impl WebhookAuth {
    /// Reads the secret from the variable named by `server.webhookSecretEnv`.
    pub fn from_env(cfg: &ServerConfig) -> Self {
        let secret = std::env::var(&cfg.webhook_secret_env).ok();
        Self::resolve(cfg, secret.as_deref())
    }

    /// `secret` is the variable's value (`None` or blank: not configured). A configured
    /// secret is registered for redaction and used exactly as given (GitHub signs with
    /// the bytes it was given).
    pub fn resolve(cfg: &ServerConfig, secret: Option<&str>) -> Self {
        match secret.filter(|s| !s.trim().is_empty()) {
            Some(secret) => {
                crate::secrets::register(secret);
                Self::Secret(WebhookSecret(Arc::from(secret.as_bytes())))
            }
            None if cfg.allow_unsigned => Self::Unsigned,
            None => Self::Off,
        }
    }

    pub fn status(&self) -> WebhookStatus {
        match self {
            Self::Secret(_) => WebhookStatus::Signed,
            Self::Unsigned => WebhookStatus::Unsigned,
            Self::Off => WebhookStatus::Off,
        }
    }
}

/// What the status bar and `server.started` say about the webhook route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebhookStatus {
    Signed,
    Unsigned,
    Off,
}

impl WebhookStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Signed => "signed",
            Self::Unsigned => "unsigned",
            Self::Off => "off",
        }
    }

    /// The warning the supervisor shows, if any.
    pub fn warning(self, cfg: &ServerConfig) -> Option<String> {
        match self {
            Self::Signed => None,
            Self::Unsigned => Some(format!(
                "the webhook route accepts unsigned requests (server.allowUnsigned); set ${} to a secret",
                cfg.webhook_secret_env
            )),
            Self::Off => Some(format!(
                "the webhook route is off: ${} is not set; set it to the secret configured on GitHub",
                cfg.webhook_secret_env
            )),
        }
    }
}

/// `sha256=<hex>` over the raw body, compared in constant time by `verify_slice`
/// (`subtle` underneath): how many leading bytes match is never observable.
pub fn signature_matches(secret: &[u8], body: &[u8], header: &str) -> bool {
    let Some(hex_digest) = header.trim().strip_prefix("sha256=") else {
        return false;
    };
    let Ok(claimed) = hex::decode(hex_digest) else {
        return false;
    };
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else {
        return false;
    };
    mac.update(body);
    mac.verify_slice(&claimed).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign(secret: &[u8], body: &[u8]) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret).unwrap();
        mac.update(body);
        format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
    }

    #[test]
    fn signature_checks() {
        let good = sign(b"s3cret", b"{}");
        assert!(signature_matches(b"s3cret", b"{}", &good));
        assert!(signature_matches(
            b"s3cret",
            b"{}",
            &good.to_uppercase().replace("SHA256=", "sha256=")
        ));
        let cases = [
            ("wrong secret", sign(b"other", b"{}")),
            ("no prefix", good.trim_start_matches("sha256=").to_string()),
            ("sha1 prefix", good.replace("sha256=", "sha1=")),
            ("not hex", "sha256=zz".to_string()),
            ("truncated", good[..good.len() - 2].to_string()),
            ("empty", String::new()),
        ];
        for (what, header) in cases {
            assert!(!signature_matches(b"s3cret", b"{}", &header), "{what}");
        }
        assert!(!signature_matches(b"s3cret", b"{ }", &good), "other body");
    }

    #[test]
    fn auth_resolution() {
        let mut cfg = ServerConfig::default();
        assert_eq!(
            WebhookAuth::resolve(&cfg, None).status(),
            WebhookStatus::Off
        );
        assert_eq!(
            WebhookAuth::resolve(&cfg, Some("  ")).status(),
            WebhookStatus::Off
        );
        cfg.allow_unsigned = true;
        assert_eq!(
            WebhookAuth::resolve(&cfg, None).status(),
            WebhookStatus::Unsigned
        );
        let auth = WebhookAuth::resolve(&cfg, Some("hook-secret-value-1"));
        assert_eq!(auth.status(), WebhookStatus::Signed);
        assert!(!format!("{auth:?}").contains("hook-secret"));
        assert_eq!(
            crate::secrets::redact("x hook-secret-value-1"),
            "x [redacted]"
        );
    }
}
