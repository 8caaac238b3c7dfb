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
}
