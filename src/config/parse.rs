//! From YAML text to a validated [`Config`], with every problem reported as
//! `<file>:<line>:<column>: <key path>: <what was wrong / what was expected>`.

use super::locate::{KeyPath, Position, locate};
use super::validate::{self, Problem};
use super::{Config, ConfigError};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// One located problem in a config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub file: PathBuf,
    /// `None` only for the rare errors the YAML parser reports without a position.
    pub position: Option<Position>,
    /// Where in the document, e.g. `routing.keywords.strat` (`(top level)` for the root).
    pub key_path: String,
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:", self.file.display())?;
        if let Some(p) = self.position {
            write!(f, "{}:{}:", p.line, p.column)?;
        }
        write!(f, " {}: {}", self.key_path, self.message)
    }
}

/// Parses and validates config text. `origin` names the file in messages.
///
/// This is the pure part of loading: no environment overrides, no warnings. To get the
/// effective config of a file (e.g. on a live reload) call [`super::load_file`].
pub fn parse_str(text: &str, origin: &Path) -> Result<Config, ConfigError> {
    let config = deserialize(text, origin)?;
    let problems = validate::errors(&config);
    if problems.is_empty() {
        Ok(config)
    } else {
        Err(ConfigError::Invalid {
            path: origin.to_path_buf(),
            diagnostics: locate_all(text, origin, problems),
        })
    }
}

/// Locates rule violations (or warnings) found on a parsed config, in file order.
pub(super) fn locate_all(text: &str, origin: &Path, problems: Vec<Problem>) -> Vec<Diagnostic> {
    let mut diagnostics: Vec<Diagnostic> = problems
        .into_iter()
        .map(|p| Diagnostic {
            file: origin.to_path_buf(),
            position: locate(text, &p.path),
            key_path: p.path.to_string(),
            message: p.message,
        })
        .collect();
    diagnostics.sort_by_key(|d| d.position);
    diagnostics
}

fn deserialize(text: &str, origin: &Path) -> Result<Config, ConfigError> {
    let invalid = |e: serde_path_to_error::Error<serde_norway::Error>, prefix: &str| {
        let key_path = tracked_path(e.path());
        ConfigError::Invalid {
            path: origin.to_path_buf(),
            diagnostics: vec![Diagnostic {
                file: origin.to_path_buf(),
                position: Position::of(e.inner()),
                message: format!("{prefix}{}", clean_message(e.inner(), &key_path)),
                key_path: key_path.to_string(),
            }],
        }
    };
    // First as plain YAML, so that malformed text is reported as such rather than as
    // whatever type error the typed pass happens to hit first.
    let de = serde_norway::Deserializer::from_str(text);
    serde_path_to_error::deserialize::<_, serde_norway::Value>(de)
        .map_err(|e| invalid(e, "invalid YAML: "))?;
    let de = serde_norway::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| invalid(e, ""))
}

/// serde_path_to_error's path as a [`KeyPath`]. A segment it could not name (a key that
/// failed to parse) ends the path: the enclosing section is the useful part.
fn tracked_path(path: &serde_path_to_error::Path) -> KeyPath {
    use serde_path_to_error::Segment as Tracked;
    let mut out = KeyPath::root();
    for segment in path {
        out = match segment {
            Tracked::Seq { index } => out.index(*index),
            Tracked::Map { key } => out.key(key.as_str()),
            Tracked::Enum { variant } => out.key(variant.as_str()),
            Tracked::Unknown => break,
        };
    }
    out
}

static LOCATION_SUFFIX: LazyLock<regex::Regex> = LazyLock::new(|| {
    #[allow(clippy::expect_used)] // a constant pattern, covered by the tests
    regex::Regex::new(r" at line \d+ column \d+").expect("valid regex")
});

/// serde_norway's text repeats the position and its own idea of the path; both are
/// reported separately, so strip them, and say what is expected in YAML terms rather
/// than Rust ones.
fn clean_message(error: &serde_norway::Error, key_path: &KeyPath) -> String {
    let text = error.to_string();
    let mut message = LOCATION_SUFFIX.replace_all(&text, "").into_owned();
    let mut prefix = key_path.clone();
    loop {
        if let Some(rest) = message.strip_prefix(&format!("{prefix}: ")) {
            message = rest.to_string();
            break;
        }
        if prefix.is_root() {
            break;
        }
        prefix = prefix.parent();
    }
    humanize(&message)
}

fn humanize(message: &str) -> String {
    static STRUCT: LazyLock<regex::Regex> = LazyLock::new(|| {
        #[allow(clippy::expect_used)] // a constant pattern, covered by the tests
        regex::Regex::new(r"expected struct \w+").expect("valid regex")
    });
    let message = STRUCT.replace_all(message, "expected a mapping of `key: value` entries");
    let mut message = message.into_owned();
    for (from, to) in [
        ("expected u64", "expected a whole number (0 or more)"),
        ("expected u32", "expected a whole number (0 or more)"),
        ("expected usize", "expected a whole number (0 or more)"),
        ("expected a sequence", "expected a list"),
        (
            "expected a map",
            "expected a mapping of `key: value` entries",
        ),
        ("expected a boolean", "expected true or false"),
        ("unit value", "an empty value (null)"),
    ] {
        message = message.replace(from, to);
    }
    message
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
