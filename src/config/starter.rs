//! The commented starter file `config init` writes. Kept as YAML (embedded) so the
//! comments read naturally; a test keeps it valid and complete.

/// Every section and key with its default, an example repo and an allowlist placeholder.
pub const STARTER_YAML: &str = include_str!("starter.yaml");
