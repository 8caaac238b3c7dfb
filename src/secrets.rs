//! A process-wide registry of secret values (the GitHub token, the webhook secret), so
//! the event log and the log file can scrub them as defence in depth: no code path should
//! log a secret, and if one ever does, this catches it.

use std::borrow::Cow;
use std::sync::RwLock;

static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Values shorter than this are not registered: redacting them would mangle ordinary text.
pub const MIN_SECRET_LEN: usize = 8;

/// Registers a secret value to be redacted from logs and events.
pub fn register(value: &str) {
    let value = value.trim();
    if value.len() < MIN_SECRET_LEN {
        return;
    }
    if let Ok(mut secrets) = SECRETS.write()
        && !secrets.iter().any(|s| s == value)
    {
        secrets.push(value.to_string());
    }
}

/// Replaces every registered secret in `text` with `[redacted]`.
pub fn redact(text: &str) -> Cow<'_, str> {
    let Ok(secrets) = SECRETS.read() else {
        return Cow::Borrowed(text);
    };
    let mut out = Cow::Borrowed(text);
    for s in secrets.iter() {
        if out.contains(s.as_str()) {
            out = Cow::Owned(out.replace(s.as_str(), "[redacted]"));
        }
    }
    out
}

/// Environment variables that hold secrets whatever the config says: the GitHub token
/// and the default webhook secret. Registered at startup so even a log line written
/// before the GitHub client exists is scrubbed.
pub const SECRET_ENV_VARS: [&str; 3] = ["GH_TOKEN", "GITHUB_TOKEN", "THE_LOOP_WEBHOOK_SECRET"];

/// Registers the values of [`SECRET_ENV_VARS`] that are set.
pub fn register_from_env() {
    for name in SECRET_ENV_VARS {
        if let Ok(value) = std::env::var(name) {
            register(&value);
        }
    }
}

/// Redacts every string inside a JSON value, in place. Used on event fields before they
/// are serialized, because a secret containing `"` or `\` no longer appears verbatim
/// once JSON-escaped, so redacting the finished line alone could miss it.
pub fn redact_json(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::String(s) => {
            if let Cow::Owned(r) = redact(s) {
                *s = r;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_json),
        Value::Object(map) => map.values_mut().for_each(redact_json),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_registered_values_only() {
        register("ghp_examplesecret123");
        register("short");
        assert_eq!(
            redact("token=ghp_examplesecret123; x=short"),
            "token=[redacted]; x=short"
        );
        assert!(matches!(redact("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn redacts_strings_nested_in_json() {
        register("json\"nested\"secret");
        let mut v = serde_json::json!({"a": ["pre json\"nested\"secret post", 1, null], "b": {"c": "json\"nested\"secret"}});
        redact_json(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"a": ["pre [redacted] post", 1, null], "b": {"c": "[redacted]"}})
        );
    }
}
