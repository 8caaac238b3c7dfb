//! Loading the operator config (SPEC §1, §2): which file, reading it, environment
//! overrides and warnings. Parsing and validation live in `parse`.

use super::Config;
use super::parse::{Diagnostic, locate_all, parse_str};
use super::validate;
use crate::paths;
use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// A config that loaded, and where from (`None`: defaults, no file anywhere).
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedConfig {
    /// The effective config: the file (or defaults) with environment overrides applied.
    pub config: Config,
    pub path: Option<PathBuf>,
    /// Legal but risky or useless settings, one line each, located like errors.
    pub warnings: Vec<String>,
    /// The starter's placeholders still in the file: [`LoadedConfig::check_placeholders`]
    /// refuses them where the config is about to be used against GitHub.
    pub placeholders: Vec<Diagnostic>,
}

impl LoadedConfig {
    /// Err naming each placeholder of the starter still in the file (file:line, what to
    /// put there): `config check`, `run`, `tui` and a live reload refuse such a config —
    /// it would poll `your-github-user/your-repo`, which does not exist.
    pub fn check_placeholders(&self) -> Result<(), ConfigError> {
        match &self.path {
            Some(path) if !self.placeholders.is_empty() => Err(ConfigError::Placeholders {
                path: path.clone(),
                diagnostics: self.placeholders.clone(),
            }),
            _ => Ok(()),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A file named explicitly (flag or env) is missing: never silently use defaults
    /// when the operator asked for a specific file.
    #[error(
        "config file {} (named by {named_by}) does not exist; create it with `the-loop config init --path {}`",
        .path.display(), .path.display()
    )]
    NotFound { path: PathBuf, named_by: PathSource },
    #[error("cannot read config file {}: {error}", .path.display())]
    Read { path: PathBuf, error: io::Error },
    /// The file parsed badly or broke a rule; one diagnostic per problem.
    #[error("{}", render(.diagnostics))]
    Invalid {
        path: PathBuf,
        diagnostics: Vec<Diagnostic>,
    },
    /// The file still holds the starter's placeholders; one diagnostic each.
    #[error(
        "{}\n{} still holds {} placeholder(s) from `the-loop config init`; replace each with your own value, then run `the-loop config check`",
        render(.diagnostics), .path.display(), .diagnostics.len()
    )]
    Placeholders {
        path: PathBuf,
        diagnostics: Vec<Diagnostic>,
    },
}

fn render(diagnostics: &[Diagnostic]) -> String {
    let lines: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
    lines.join("\n")
}

/// Which resolution rule chose the config file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathSource {
    Flag,
    Env,
    Default,
}

impl fmt::Display for PathSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PathSource::Flag => "--config",
            PathSource::Env => "$THE_LOOP_CONFIG",
            PathSource::Default => "the default location",
        })
    }
}

/// The config file a command would use, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    pub path: PathBuf,
    pub source: PathSource,
}

/// What loading reads from the process environment, captured once so the logic can be
/// tested without mutating the environment.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    /// `$THE_LOOP_CONFIG`.
    pub config_file: Option<OsString>,
    /// `$THE_LOOP_GITHUB_API_URL`.
    pub api_url: Option<String>,
    /// `$THE_LOOP_TMUX_SOCKET`.
    pub tmux_socket: Option<String>,
    /// The XDG default (`paths::default_config_file`).
    pub default_file: Option<PathBuf>,
}

impl Environment {
    /// Reads the real environment. Empty variables count as unset.
    pub fn from_process() -> Self {
        let text = |name| std::env::var(name).ok().filter(|v| !v.is_empty());
        Self {
            config_file: std::env::var_os(paths::ENV_CONFIG).filter(|v| !v.is_empty()),
            api_url: text(paths::ENV_API_URL),
            tmux_socket: text(paths::ENV_TMUX_SOCKET),
            default_file: paths::default_config_file(),
        }
    }

    /// `--config`, then `$THE_LOOP_CONFIG`, then the XDG default.
    pub fn resolve(&self, flag: Option<&Path>) -> Option<ResolvedPath> {
        let (path, source) = if let Some(flag) = flag {
            (flag.to_path_buf(), PathSource::Flag)
        } else if let Some(env) = &self.config_file {
            (PathBuf::from(env), PathSource::Env)
        } else {
            (self.default_file.clone()?, PathSource::Default)
        };
        Some(ResolvedPath { path, source })
    }

    /// Resolves and loads; a missing default file means defaults, a missing named file
    /// is an error.
    pub fn load(&self, flag: Option<&Path>) -> Result<LoadedConfig, ConfigError> {
        let resolved = self.resolve(flag);
        let Some(ResolvedPath { path, source }) = resolved else {
            return Ok(self.defaults());
        };
        match std::fs::metadata(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => match source {
                PathSource::Default => Ok(self.defaults()),
                PathSource::Flag | PathSource::Env => Err(ConfigError::NotFound {
                    path,
                    named_by: source,
                }),
            },
            _ => self.load_file(&path),
        }
    }

    /// Reads, parses and validates one file, then applies overrides and collects warnings.
    pub fn load_file(&self, path: &Path) -> Result<LoadedConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Read {
            path: path.to_path_buf(),
            error,
        })?;
        let mut config = parse_str(&text, path)?;
        let warnings = locate_all(&text, path, validate::warnings(&config))
            .iter()
            .map(ToString::to_string)
            .collect();
        let placeholders = locate_all(&text, path, validate::placeholders(&config));
        self.apply_overrides(&mut config);
        Ok(LoadedConfig {
            config,
            path: Some(path.to_path_buf()),
            warnings,
            placeholders,
        })
    }

    fn defaults(&self) -> LoadedConfig {
        let mut config = Config::default();
        let warnings = validate::warnings(&config)
            .into_iter()
            .map(|p| format!("{}: {}", p.path, p.message))
            .collect();
        self.apply_overrides(&mut config);
        LoadedConfig {
            config,
            path: None,
            warnings,
            placeholders: Vec::new(),
        }
    }

    /// The environment wins over the file (tests, the demo and spawned sessions rely on it).
    pub fn apply_overrides(&self, config: &mut Config) {
        if let Some(url) = &self.api_url {
            config.github.api_url = url.clone();
        }
        if let Some(socket) = &self.tmux_socket {
            config.sessions.tmux.socket = socket.clone();
        }
    }
}

/// Resolves which file to use: `--config`, then `$THE_LOOP_CONFIG`, then the XDG default.
/// `None` only when no home directory is known and nothing was named.
pub fn resolve_path(flag: Option<&Path>) -> Option<PathBuf> {
    resolve(flag).map(|r| r.path)
}

/// Like [`resolve_path`], also saying which rule chose the file.
pub fn resolve(flag: Option<&Path>) -> Option<ResolvedPath> {
    Environment::from_process().resolve(flag)
}

/// The effective operator config for a command: the resolved file (or defaults when
/// there is none at the default location), validated, with environment overrides.
pub fn load(flag: Option<&Path>) -> Result<LoadedConfig, ConfigError> {
    Environment::from_process().load(flag)
}

/// The effective config of one file (the live reload reads through this, so overrides
/// and warnings match a fresh start).
pub fn load_file(path: &Path) -> Result<LoadedConfig, ConfigError> {
    Environment::from_process().load_file(path)
}

#[cfg(test)]
#[path = "load_tests.rs"]
mod tests;
