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

/// The variables a GitHub token is read from, by the-loop or by `gh` (SPEC §14.4).
pub const TOKEN_ENV_VARS: [&str; 4] = [
    "GH_TOKEN",
    "GITHUB_TOKEN",
    "GH_ENTERPRISE_TOKEN",
    "GITHUB_ENTERPRISE_TOKEN",
];

/// `server.webhookSecretEnv`'s default.
pub const DEFAULT_WEBHOOK_SECRET_ENV: &str = "THE_LOOP_WEBHOOK_SECRET";

/// Environment variables that hold secrets whatever the config says: the GitHub token
/// and the default webhook secret. Registered at startup so even a log line written
/// before the GitHub client exists is scrubbed.
pub const SECRET_ENV_VARS: [&str; 5] = [
    TOKEN_ENV_VARS[0],
    TOKEN_ENV_VARS[1],
    TOKEN_ENV_VARS[2],
    TOKEN_ENV_VARS[3],
    DEFAULT_WEBHOOK_SECRET_ENV,
];

/// Registers the values of [`SECRET_ENV_VARS`] that are set.
pub fn register_from_env() {
    for name in SECRET_ENV_VARS {
        if let Ok(value) = std::env::var(name) {
            register(&value);
        }
    }
}

/// What a child process — the tmux server, an agent's pane, a critic, git — gets of
/// the-loop's environment (SPEC §14.4): everything but the secrets. The token variables
/// and the variable `server.webhookSecretEnv` names are withheld unless the operator
/// lists them in `sessions.passEnv`; a variable listed there is handed to sessions
/// explicitly, so it reaches them even through a tmux server started elsewhere.
///
/// The default withholds the token variables and the default webhook-secret variable:
/// a child started without a config is still safe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildEnv {
    withheld: Vec<String>,
    passed: Vec<String>,
}

impl Default for ChildEnv {
    fn default() -> Self {
        Self::new(DEFAULT_WEBHOOK_SECRET_ENV, &[])
    }
}

impl ChildEnv {
    /// `webhook_secret_env` is `server.webhookSecretEnv`; `pass_env` is `sessions.passEnv`.
    pub fn new(webhook_secret_env: &str, pass_env: &[String]) -> Self {
        let passed: Vec<String> = pass_env
            .iter()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect();
        let mut withheld: Vec<String> = TOKEN_ENV_VARS.iter().map(|v| v.to_string()).collect();
        let secret = webhook_secret_env.trim();
        if !secret.is_empty() && !withheld.iter().any(|v| v == secret) {
            withheld.push(secret.to_string());
        }
        withheld.retain(|v| !passed.contains(v));
        Self { withheld, passed }
    }

    /// The variables no child receives.
    pub fn withheld(&self) -> impl Iterator<Item = &str> {
        self.withheld.iter().map(String::as_str)
    }

    /// Removes the withheld variables from `command`'s environment.
    pub fn scrub<C: ChildCommand + ?Sized>(&self, command: &mut C) {
        for name in &self.withheld {
            command.remove_env(name);
        }
    }

    /// What a new tmux session's environment must say (see [`SessionEntries`]).
    pub fn session_entries(&self) -> SessionEntries {
        self.session_entries_from(|name| std::env::var(name).ok())
    }

    fn session_entries_from(&self, var: impl Fn(&str) -> Option<String>) -> SessionEntries {
        SessionEntries {
            cleared: self
                .withheld
                .iter()
                .map(|n| (n.clone(), String::new()))
                .collect(),
            passed: self
                .passed
                .iter()
                .filter_map(|n| var(n).map(|value| (n.clone(), value)))
                .collect(),
        }
    }
}

/// The environment entries a new tmux session gets from [`ChildEnv`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionEntries {
    /// Each withheld variable, set empty: a tmux server the-loop did not start may hold
    /// it in its global environment, and `-e` cannot unset.
    pub cleared: Vec<(String, String)>,
    /// Each passed variable with its value from this process's environment, when it has
    /// one. These are secrets: they reach the session off argv (`tmux::env_handoff`).
    pub passed: Vec<(String, String)>,
}

/// A command builder whose environment [`ChildEnv::scrub`] can edit: the std and tokio
/// `Command`s.
pub trait ChildCommand {
    fn remove_env(&mut self, name: &str);
}

impl ChildCommand for std::process::Command {
    fn remove_env(&mut self, name: &str) {
        self.env_remove(name);
    }
}

impl ChildCommand for tokio::process::Command {
    fn remove_env(&mut self, name: &str) {
        self.env_remove(name);
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
    fn children_get_no_token_and_no_webhook_secret_unless_passed() {
        let env = ChildEnv::new("MY_HOOK_SECRET", &[]);
        let withheld: Vec<&str> = env.withheld().collect();
        assert_eq!(
            withheld,
            [
                "GH_TOKEN",
                "GITHUB_TOKEN",
                "GH_ENTERPRISE_TOKEN",
                "GITHUB_ENTERPRISE_TOKEN",
                "MY_HOOK_SECRET"
            ]
        );
        let env = ChildEnv::new(" GH_TOKEN ", &["GITHUB_TOKEN".into(), "AWS_PROFILE".into()]);
        let withheld: Vec<&str> = env.withheld().collect();
        assert_eq!(
            withheld,
            ["GH_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN"]
        );
        let entries = env.session_entries_from(|name| match name {
            "GITHUB_TOKEN" => Some("tok-passed".into()),
            _ => None,
        });
        assert_eq!(
            entries,
            SessionEntries {
                cleared: vec![
                    ("GH_TOKEN".to_string(), String::new()),
                    ("GH_ENTERPRISE_TOKEN".to_string(), String::new()),
                    ("GITHUB_ENTERPRISE_TOKEN".to_string(), String::new()),
                ],
                passed: vec![("GITHUB_TOKEN".to_string(), "tok-passed".to_string())],
            },
            "withheld set empty; passed with its value; unset AWS_PROFILE left out"
        );
        assert!(
            ChildEnv::default()
                .withheld()
                .any(|v| v == DEFAULT_WEBHOOK_SECRET_ENV)
        );
    }

    #[test]
    fn scrub_removes_withheld_variables_from_a_command() {
        let mut cmd = std::process::Command::new("env");
        cmd.env("GH_TOKEN", "x").env("KEEP", "y");
        ChildEnv::default().scrub(&mut cmd);
        let envs: Vec<_> = cmd.get_envs().collect();
        assert!(
            envs.contains(&(std::ffi::OsStr::new("GH_TOKEN"), None)),
            "{envs:?}"
        );
        assert!(envs.contains(&(
            std::ffi::OsStr::new("KEEP"),
            Some(std::ffi::OsStr::new("y"))
        )));
    }

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
