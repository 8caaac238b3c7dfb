//! Loading the operator config: resolution order, parse errors with file, line and
//! column, validation.

use super::Config;
use std::path::{Path, PathBuf};

/// A config that loaded, and where from (`None`: defaults, no file anywhere).
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedConfig {
    pub config: Config,
    pub path: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{0}")]
    Invalid(String),
}

/// Resolves which file to use: `--config`, then `$THE_LOOP_CONFIG`, then the XDG default.
pub fn resolve_path(flag: Option<&Path>) -> Option<PathBuf> {
    flag.map(Path::to_path_buf)
}

pub fn load(flag: Option<&Path>) -> Result<LoadedConfig, ConfigError> {
    let _ = flag;
    Ok(LoadedConfig {
        config: Config::default(),
        path: None,
    })
}
