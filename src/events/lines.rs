//! The event log as JSON values, for tests: every complete line of a log file (a line
//! still being written, or one that is not JSON, is skipped), and those of one type.
//! Compiled for tests and the `test-support` feature only.

use serde_json::Value;
use std::path::Path;

/// Every event in the log at `path` so far (none when there is no file).
pub fn all(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The events in the log at `path` whose `event` is `name`.
pub fn named(path: &Path, name: &str) -> Vec<Value> {
    all(path)
        .into_iter()
        .filter(|e| e["event"] == name)
        .collect()
}
