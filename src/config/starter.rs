//! The commented starter file `config init` writes. Kept as YAML (embedded) so the
//! comments read naturally; a test keeps it valid and complete.

/// Every section and key with its default, an example repo and an allowlist placeholder.
pub const STARTER_YAML: &str = include_str!("starter.yaml");

/// The starter's placeholders: values only the operator can fill in. A config that still
/// holds one is refused by `config check`, `run` and `tui` (`validate::placeholders`).
pub const OWNER_PLACEHOLDER: &str = "your-github-user";
pub const REPO_PLACEHOLDER: &str = "your-repo";
pub const LOGIN_PLACEHOLDER: &str = "your-github-login";
