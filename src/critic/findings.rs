//! Findings anchored to lines (SPEC §21.3): places a critic names, `path:line` inside
//! the work item's worktree. The envelope carries the ones that were checked against
//! the worktree; everything else stays in the general output only.
//!
//! Two steps, both bounded: [`named`] reads what the critic said (text lines of the
//! compilers' form, and a `json` critic's `findings` array) without judging it;
//! [`check`] keeps, in order, the first [`MAX_FINDINGS`] whose path is a file inside the
//! worktree (no `..`, nothing absolute, no symlink leading out) and whose lines the file
//! has. The rules are written down in docs/decisions/2026-12-03-findings.md.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::sync::LazyLock;

/// The most findings one envelope keeps; the rest are counted in a note in the output.
pub const MAX_FINDINGS: usize = 200;
/// The longest message kept, in characters (the rest is cut with `…`).
pub const MAX_MESSAGE_CHARS: usize = 2_000;
/// How much of one file is read to count its lines: a line past this is not known to
/// the file.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// How much one round reads in all; a file met after that is not read (its places are
/// refused), so 10 000 places in 10 000 large files cost no more than this.
pub const MAX_READ_BYTES: u64 = 64 * 1024 * 1024;
/// How many distinct paths one round looks up; the places in any further path are
/// refused without a lookup.
pub const MAX_PATHS: usize = 1_000;

/// How serious a finding is, as the critic said (`note` when it said nothing).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    #[default]
    Note,
    Warning,
    Error,
}

impl Severity {
    /// The critic's word for it: `error`, `warning`/`warn`, `note`/`info`/`hint`/`help`
    /// (any case); anything else is not a severity.
    pub fn parse(word: &str) -> Option<Self> {
        match word.trim().to_ascii_lowercase().as_str() {
            "error" | "err" | "fatal" | "critical" => Some(Self::Error),
            "warning" | "warn" => Some(Self::Warning),
            "note" | "info" | "hint" | "help" | "notice" => Some(Self::Note),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Note => "note",
            Self::Warning => "warning",
            Self::Error => "error",
        }
    }
}

/// One finding: a path relative to the worktree, a 1-based line that the file has, and
/// the critic's message (review material: rendered inert like every critic output).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    pub path: String,
    pub line: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    #[serde(default)]
    pub severity: Severity,
    pub message: String,
}

impl Finding {
    /// A finding on one line, at no column.
    pub fn new(path: &str, line: u32, severity: Severity, message: &str) -> Self {
        Self {
            path: path.into(),
            line,
            end_line: None,
            column: None,
            severity,
            message: message.into(),
        }
    }

    /// `path:line` (`path:line-end` for a range): how the pane and a review body name it.
    pub fn place(&self) -> String {
        match self.end_line.filter(|end| *end > self.line) {
            Some(end) => format!("{}:{}-{end}", self.path, self.line),
            None => format!("{}:{}", self.path, self.line),
        }
    }
}

/// A place as the critic named it, not yet checked against the worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    pub path: String,
    /// As written: 0 and numbers past `u32` are kept here to be refused by [`check`].
    pub line: u64,
    pub end_line: Option<u64>,
    pub column: Option<u64>,
    pub severity: Severity,
    pub message: String,
    /// Whether the critic's output already shows it (a text line), so a refused one
    /// need not be listed again.
    pub in_output: bool,
}

impl Named {
    /// The compilers' form, for a named place that did not hold and is listed in the
    /// output instead.
    pub fn as_text(&self) -> String {
        format!(
            "{}:{}: {}",
            self.path,
            self.line,
            self.message.replace('\n', " ")
        )
    }
}

/// `path:line[:col]: message`, at the start of a line (leading spaces allowed). The
/// path has no whitespace and no `:`; the numbers are at most 10 digits.
static TEXT_FINDING: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"^\s*([^\s:]+):([0-9]{1,10})(?::([0-9]{1,10}))?:[ \t]+(\S.*)$")
        .expect("the finding pattern compiles")
});

/// The named places of a critic's answer: its `path:line[:col]: message` lines, then
/// (for a `json` critic, `stdout` given) the entries of its `findings` array. A message
/// that starts with a severity word and a colon (`warning: …`) gives the severity.
pub fn named(output: &str, json_stdout: Option<&str>) -> Vec<Named> {
    let mut found: Vec<Named> = output.lines().filter_map(text_line).collect();
    if let Some(stdout) = json_stdout {
        found.extend(json_findings(stdout));
    }
    found
}

fn text_line(line: &str) -> Option<Named> {
    let caps = TEXT_FINDING.captures(line.trim_end_matches('\r'))?;
    let number = |i: usize| caps.get(i).and_then(|m| m.as_str().parse::<u64>().ok());
    let (severity, message) = severity_prefix(&caps[4]);
    Some(Named {
        path: caps[1].to_string(),
        line: number(2)?,
        end_line: None,
        column: number(3),
        severity,
        message,
        in_output: true,
    })
}

/// `warning: text` → (warning, `text`); a message without a severity word is a note.
fn severity_prefix(message: &str) -> (Severity, String) {
    if let Some((word, rest)) = message.split_once(':')
        && let Some(severity) = Severity::parse(word)
        && !rest.trim().is_empty()
    {
        return (severity, rest.trim().to_string());
    }
    (Severity::Note, message.trim().to_string())
}

/// `findings` of the JSON document (or, in JSON Lines, of the last line that has them).
fn json_findings(stdout: &str) -> Vec<Named> {
    let trimmed = stdout.trim();
    let array = match serde_json::from_str::<Value>(trimmed) {
        Ok(Value::Object(doc)) => doc.get("findings").cloned(),
        _ => trimmed
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|v| v.get("findings").cloned())
            .next_back(),
    };
    let Some(Value::Array(entries)) = array else {
        return Vec::new();
    };
    entries.iter().filter_map(json_entry).collect()
}

fn json_entry(entry: &Value) -> Option<Named> {
    let field = |keys: &[&str]| keys.iter().find_map(|k| entry.get(*k));
    let count = |keys: &[&str]| field(keys).and_then(Value::as_u64);
    let path = field(&["path", "file"])?.as_str()?.to_string();
    let message = field(&["message", "text", "body"])?
        .as_str()?
        .trim()
        .to_string();
    if message.is_empty() {
        return None;
    }
    Some(Named {
        path,
        line: count(&["line", "startLine", "start_line"])?,
        end_line: count(&["endLine", "end_line"]),
        column: count(&["column", "col"]),
        severity: field(&["severity", "level"])
            .and_then(Value::as_str)
            .and_then(Severity::parse)
            .unwrap_or_default(),
        message,
        in_output: false,
    })
}

/// What [`check`] made of the named places.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checked {
    /// The first [`MAX_FINDINGS`] that hold, in the critic's order, without repeats.
    pub findings: Vec<Finding>,
    /// Those that did not hold (outside the worktree, no such file or line).
    pub refused: Vec<Named>,
    /// How many were not looked at because [`MAX_FINDINGS`] were kept already.
    pub dropped: usize,
}

/// Keeps the named places that hold in the worktree at `root`: a relative path of plain
/// components (no `..`, no root, no control characters) to a regular file whose real
/// location (symlinks followed) is inside `root`, a line from 1 to the file's last, an
/// end line (kept only when from `line` to the last). Messages are made inert
/// ([`crate::guard::sanitize`]) and cut at [`MAX_MESSAGE_CHARS`]. Each file is read
/// once, at most [`MAX_FILE_BYTES`] of it, [`MAX_READ_BYTES`] in all, and at most
/// [`MAX_PATHS`] paths are looked up.
pub fn check(named: Vec<Named>, root: &Path) -> Checked {
    let mut checked = Checked::default();
    let Ok(root) = root.canonicalize() else {
        checked.refused = named;
        return checked;
    };
    let mut lines_of: HashMap<String, Option<u64>> = HashMap::new();
    let mut budget = MAX_READ_BYTES;
    let mut seen = HashSet::new();
    for place in named {
        if checked.findings.len() == MAX_FINDINGS {
            checked.dropped += 1;
            continue;
        }
        let Some(path) = relative(&place.path) else {
            checked.refused.push(place);
            continue;
        };
        let last = match lines_of.get(&path) {
            Some(last) => *last,
            None if lines_of.len() >= MAX_PATHS => None,
            None => {
                let last = line_count(&root, &path, &mut budget);
                lines_of.insert(path.clone(), last);
                last
            }
        };
        let holds = |n: u64| n >= 1 && last.is_some_and(|last| n <= last);
        if !holds(place.line) || u32::try_from(place.line).is_err() {
            checked.refused.push(place);
            continue;
        }
        let message = inert(&place.message);
        if !seen.insert((path.clone(), place.line, message.clone())) {
            continue;
        }
        checked.findings.push(Finding {
            line: place.line as u32,
            end_line: place
                .end_line
                .filter(|end| *end >= place.line && holds(*end))
                .map(|end| end as u32),
            column: place
                .column
                .filter(|c| *c >= 1)
                .and_then(|c| u32::try_from(c).ok()),
            severity: place.severity,
            message,
            path,
        });
    }
    checked
}

/// `path` as plain components joined with `/` (`./` dropped), or `None` when it is
/// absolute, climbs (`..`), is empty or carries a control character.
fn relative(path: &str) -> Option<String> {
    if path.is_empty() || path.chars().any(char::is_control) || path.starts_with('/') {
        return None;
    }
    let mut parts = Vec::new();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(part) => parts.push(part.to_str()?),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// How many lines the regular file at `root/path` has, when its real location is
/// inside `root` (`root` already canonical) and `budget` allows reading it; what is
/// read is taken from `budget`.
fn line_count(root: &Path, path: &str, budget: &mut u64) -> Option<u64> {
    let real: PathBuf = root.join(path).canonicalize().ok()?;
    if !real.starts_with(root) || !real.is_file() || *budget == 0 {
        return None;
    }
    let file = std::fs::File::open(&real).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES.min(*budget))
        .read_to_end(&mut bytes)
        .ok()?;
    *budget -= bytes.len() as u64;
    let newlines = bytes.iter().filter(|b| **b == b'\n').count() as u64;
    let unterminated = u64::from(bytes.last().is_some_and(|b| *b != b'\n'));
    Some(newlines + unterminated)
}

/// A message as it may be shown and posted: no controls or hidden characters, at most
/// [`MAX_MESSAGE_CHARS`].
fn inert(message: &str) -> String {
    let clean = crate::guard::sanitize(message);
    let clean = clean.trim();
    if clean.chars().count() <= MAX_MESSAGE_CHARS {
        return clean.to_string();
    }
    let mut cut: String = clean.chars().take(MAX_MESSAGE_CHARS).collect();
    cut.push('…');
    cut
}

/// The note the output gets: the refused places the output does not show already (a
/// `json` critic's `findings` entries, so they stay in the general output), at most
/// [`MAX_FINDINGS`] of them, and how many were dropped over the cap. Empty when there
/// is nothing to say.
pub fn output_note(checked: &Checked) -> String {
    let mut note = String::new();
    let unseen: Vec<&Named> = checked.refused.iter().filter(|p| !p.in_output).collect();
    if !unseen.is_empty() {
        note.push_str(
            "\n\n[the-loop: places the critic named that are not lines of the worktree]\n",
        );
        for place in unseen.iter().take(MAX_FINDINGS) {
            note.push_str(&inert(&place.as_text()));
            note.push('\n');
        }
        let more = unseen.len().saturating_sub(MAX_FINDINGS);
        if more > 0 {
            note.push_str(&format!("[the-loop: {more} more not listed]\n"));
        }
    }
    if checked.dropped > 0 {
        note.push_str(&format!(
            "\n[the-loop: {} more findings were not kept: at most {MAX_FINDINGS} per round]",
            checked.dropped
        ));
    }
    note
}

#[cfg(test)]
#[path = "findings_tests.rs"]
mod tests;
