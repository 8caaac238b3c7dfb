//! `sessions.opencode` and `repos[].opencode` (issue 44): the model opencode sessions
//! run, the OpenAI-compatible providers written into the config the-loop gives them,
//! and their permission policy — when opencode asks before a command, an edit, or a
//! path outside the session's directory — passed on every start, so a GitHub-steered
//! agent's freedom never depends on the operator's own opencode config. Named as
//! opencode 1.18.33's `permission` config names them.

use serde::{Deserialize, Serialize};

/// What opencode does with one kind of tool call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PermissionAction {
    /// It asks the operator first (Questions pane, `sessions approve`/`deny`).
    #[default]
    Ask,
    /// It runs unasked. Needs `sessions.allowBypass`.
    Allow,
    /// It is refused, never asked about.
    Deny,
}

impl PermissionAction {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ask => "ask",
            Self::Allow => "allow",
            Self::Deny => "deny",
        }
    }
}

/// opencode's permission policy for a session: every kind asks by default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct OpencodePolicy {
    /// Shell commands (opencode's `bash`).
    pub bash: PermissionAction,
    /// File edits and writes (`edit`).
    pub edit: PermissionAction,
    /// Paths outside the session's directory (`external_directory`).
    pub external_directory: PermissionAction,
}

/// A repo's own opencode policy: each key given replaces the one of
/// `sessions.opencode.permission`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct OpencodePolicyOverride {
    pub bash: Option<PermissionAction>,
    pub edit: Option<PermissionAction>,
    pub external_directory: Option<PermissionAction>,
}

impl OpencodePolicy {
    /// opencode's `permission` object for it.
    pub fn config(self) -> serde_json::Value {
        serde_json::json!({
            "bash": self.bash.as_str(),
            "edit": self.edit.as_str(),
            "external_directory": self.external_directory.as_str(),
        })
    }

    /// Some tool call runs without the operator being asked.
    pub fn never_asks(self) -> bool {
        [self.bash, self.edit, self.external_directory].contains(&PermissionAction::Allow)
    }

    /// `self` with a repo's keys over it.
    pub fn with(self, over: OpencodePolicyOverride) -> Self {
        Self {
            bash: over.bash.unwrap_or(self.bash),
            edit: over.edit.unwrap_or(self.edit),
            external_directory: over.external_directory.unwrap_or(self.external_directory),
        }
    }
}

impl std::fmt::Display for OpencodePolicy {
    /// `bash ask, edit ask, external ask`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "bash {}, edit {}, external {}",
            self.bash.as_str(),
            self.edit.as_str(),
            self.external_directory.as_str()
        )
    }
}

/// An OpenAI-compatible provider opencode's sessions may use (opencode's built-in
/// `@ai-sdk/openai-compatible`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct OpencodeProvider {
    /// Its id in opencode (`<id>/<model>` names a model).
    pub id: String,
    /// Its `…/v1` URL.
    pub base_url: String,
    /// The variable holding its API key (passed with `sessions.passEnv`); `""`: none.
    pub api_key_env: String,
    /// The model ids it serves.
    pub models: Vec<String>,
}

/// `sessions.opencode`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct OpencodeConfig {
    /// `provider/model`; `""`: opencode's own choice.
    pub model: String,
    pub providers: Vec<OpencodeProvider>,
    pub permission: OpencodePolicy,
}

impl OpencodeConfig {
    /// The config file opencode's sessions get (`OPENCODE_CONFIG`): the model, the
    /// providers, the permission policy, and nothing that leaves loopback on its own
    /// (no autoupdate, no sharing).
    pub fn file(&self, policy: OpencodePolicy) -> serde_json::Value {
        let mut config = serde_json::json!({
            "autoupdate": false,
            "share": "disabled",
            "permission": policy.config(),
        });
        if !self.model.is_empty() {
            config["model"] = self.model.clone().into();
            config["small_model"] = self.model.clone().into();
        }
        let mut providers = serde_json::Map::new();
        for provider in &self.providers {
            let mut options = serde_json::json!({"baseURL": provider.base_url});
            if !provider.api_key_env.is_empty() {
                options["apiKey"] = format!("{{env:{}}}", provider.api_key_env).into();
            }
            let models: serde_json::Map<String, serde_json::Value> = provider
                .models
                .iter()
                .map(|m| (m.clone(), serde_json::json!({"name": m})))
                .collect();
            providers.insert(
                provider.id.clone(),
                serde_json::json!({
                    "npm": "@ai-sdk/openai-compatible",
                    "name": provider.id,
                    "options": options,
                    "models": models,
                }),
            );
        }
        if !providers.is_empty() {
            config["provider"] = providers.into();
        }
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_asks_for_everything_and_a_repo_replaces_keys() {
        let default = OpencodePolicy::default();
        assert_eq!(
            default.config(),
            serde_json::json!({"bash": "ask", "edit": "ask", "external_directory": "ask"})
        );
        assert!(!default.never_asks());
        assert_eq!(default.to_string(), "bash ask, edit ask, external ask");
        let denied = default.with(OpencodePolicyOverride {
            edit: Some(PermissionAction::Deny),
            ..Default::default()
        });
        assert_eq!(denied.to_string(), "bash ask, edit deny, external ask");
        assert!(!denied.never_asks());
        let allowed = default.with(OpencodePolicyOverride {
            bash: Some(PermissionAction::Allow),
            ..Default::default()
        });
        assert!(allowed.never_asks());
        assert!(serde_norway::from_str::<OpencodePolicy>("{bash: sometimes}").is_err());
    }

    #[test]
    fn a_policy_that_runs_tool_calls_unasked_needs_allow_bypass() {
        use crate::config::{Config, RepoConfig, validate};
        let mut config = Config::default();
        let mut repo = RepoConfig::named("octo/web");
        repo.opencode = Some(OpencodePolicyOverride {
            bash: Some(PermissionAction::Allow),
            ..Default::default()
        });
        config.repos.push(repo);
        let refused: Vec<String> = validate::errors(&config)
            .iter()
            .map(|p| p.path.to_string())
            .collect();
        assert!(
            refused.contains(&"repos[0].opencode".to_string()),
            "{refused:?}"
        );
        config.sessions.allow_bypass = true;
        assert!(
            !validate::errors(&config)
                .iter()
                .any(|p| p.path.to_string() == "repos[0].opencode")
        );
        assert!(
            validate::warnings(&config)
                .iter()
                .any(|p| p.path.to_string() == "repos[0].opencode")
        );
    }

    #[test]
    fn the_file_names_the_model_its_providers_and_keeps_keys_in_the_environment() {
        let config = OpencodeConfig {
            model: "fake/fake-model".into(),
            providers: vec![OpencodeProvider {
                id: "fake".into(),
                base_url: "http://127.0.0.1:9/v1".into(),
                api_key_env: "FAKE_KEY".into(),
                models: vec!["fake-model".into()],
            }],
            permission: OpencodePolicy::default(),
        };
        let file = config.file(config.permission);
        assert_eq!(file["model"], "fake/fake-model");
        assert_eq!(file["autoupdate"], false);
        assert_eq!(file["share"], "disabled");
        assert_eq!(file["permission"]["bash"], "ask");
        let fake = &file["provider"]["fake"];
        assert_eq!(fake["npm"], "@ai-sdk/openai-compatible");
        assert_eq!(fake["options"]["baseURL"], "http://127.0.0.1:9/v1");
        assert_eq!(fake["options"]["apiKey"], "{env:FAKE_KEY}");
        assert_eq!(fake["models"]["fake-model"]["name"], "fake-model");
        let bare = OpencodeConfig::default().file(OpencodePolicy::default());
        assert!(bare.get("model").is_none() && bare.get("provider").is_none());
    }
}
