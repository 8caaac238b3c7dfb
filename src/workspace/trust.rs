//! Claude Code's trust mark for the directories the-loop starts it in (SPEC §16.6).
//!
//! On its first start in a directory Claude Code asks whether to trust it, and that
//! dialog would swallow every new worktree's boot prompt. Claude Code keeps the answer
//! in its own global config, `~/.claude.json` → `projects.<dir>.hasTrustDialogAccepted`
//! (2.1.197 also accepts a trusted parent). Before starting `claude` in a directory the
//! operator configured or the-loop created, that key is set — and nothing else:
//!
//! - **Under Claude Code's own lock.** Claude Code (proper-lockfile) takes
//!   `<config>.lock` as a directory made with `mkdir` and treats one older than 10 s as
//!   stale; this edit takes the same lock the same way, so neither overwrites the other.
//! - **Key-preserving.** The file is read as raw JSON: every value other than the one
//!   project entry is written back exactly as it was read (numbers, escapes, order), and
//!   inside that entry only `hasTrustDialogAccepted` changes.
//! - **Atomic.** A temp file next to the real one (a symlinked config is followed, the
//!   link kept), same permissions, fsync, rename.

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::fmt;
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Claude Code's lock is stale after this long (proper-lockfile's default).
const LOCK_STALE: Duration = Duration::from_secs(10);
/// How long to wait for Claude Code to release its lock.
const LOCK_WAIT: Duration = Duration::from_secs(5);
const TRUST_KEY: &str = "hasTrustDialogAccepted";

#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("{} is not a JSON object ({why}); not changing it: fix or move it, then start again", file.display())]
    NotAnObject { file: PathBuf, why: String },
    #[error("{} is held by another program (lock {} for over {}s); try again", file.display(), lock.display(), LOCK_WAIT.as_secs())]
    Locked { file: PathBuf, lock: PathBuf },
    #[error("cannot {action} {}: {error}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        error: io::Error,
    },
    #[error("the directory {} has a name Claude Code's config cannot hold (not UTF-8)", .0.display())]
    NotUtf8(PathBuf),
}

/// What marking did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marked {
    /// The directory was trusted already; the file was not written.
    Already,
    Marked,
}

/// Claude Code's global config file, as Claude Code 2.1.197 finds it:
/// `$CLAUDE_CONFIG_DIR/.claude.json` or `~/.claude.json`, unless a legacy
/// `<claude dir>/.config.json` exists.
pub fn config_file() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .or_else(|| directories::BaseDirs::new().map(|b| b.home_dir().to_path_buf()))?;
    let config_dir = std::env::var_os("CLAUDE_CONFIG_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from);
    let legacy = config_dir
        .clone()
        .unwrap_or_else(|| home.join(".claude"))
        .join(".config.json");
    if legacy.is_file() {
        return Some(legacy);
    }
    Some(config_dir.unwrap_or(home).join(".claude.json"))
}

/// Marks `dir` trusted in Claude Code's config `file` (created when missing).
pub fn trust(file: &Path, dir: &Path) -> Result<Marked, TrustError> {
    let dir = fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let key = dir
        .to_str()
        .ok_or_else(|| TrustError::NotUtf8(dir.clone()))?
        .to_string();
    let _lock = ClaudeLock::take(file)?;
    let target = fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    let (text, mode) = match fs::read_to_string(&target) {
        Ok(text) => {
            let mode = fs::metadata(&target)
                .map(|m| m.permissions().mode() & 0o777)
                .unwrap_or(0o600);
            (text, mode)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => ("{}".to_string(), 0o600),
        Err(error) => {
            return Err(TrustError::Io {
                action: "read",
                path: target,
                error,
            });
        }
    };
    let not_object = |why: String| TrustError::NotAnObject {
        file: target.clone(),
        why,
    };
    let mut top: Ordered = serde_json::from_str(&text).map_err(|e| not_object(e.to_string()))?;
    let mut projects: Ordered = match top.get("projects") {
        Some(raw) => {
            serde_json::from_str(raw.get()).map_err(|e| not_object(format!("`projects`: {e}")))?
        }
        None => Ordered::default(),
    };
    let mut entry: Ordered = match projects.get(&key) {
        Some(raw) => serde_json::from_str(raw.get())
            .map_err(|e| not_object(format!("`projects.{key}`: {e}")))?,
        None => Ordered::default(),
    };
    if entry.get(TRUST_KEY).is_some_and(|v| v.get() == "true") {
        return Ok(Marked::Already);
    }
    entry.set(TRUST_KEY, Node::Raw(json_true()));
    projects.set(&key, Node::Object(entry));
    top.set("projects", Node::Object(projects));
    let mut bytes = pretty(&top).map_err(|e| not_object(e.to_string()))?;
    if text.ends_with('\n') {
        bytes.push(b'\n');
    }
    write_atomic(&target, &bytes, mode)?;
    Ok(Marked::Marked)
}

/// The JSON literal `true`.
fn json_true() -> Box<RawValue> {
    serde_json::value::to_raw_value(&true).unwrap_or_else(|_| RawValue::NULL.to_owned())
}

/// Two-space indentation, as Claude Code writes the file.
fn pretty(map: &Ordered) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"  ");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    map.serialize(&mut ser)?;
    Ok(out)
}

fn write_atomic(target: &Path, bytes: &[u8], mode: u32) -> Result<(), TrustError> {
    let dir = target.parent().unwrap_or(Path::new("."));
    let io_err = |action, path: &Path| {
        let path = path.to_path_buf();
        move |error| TrustError::Io {
            action,
            path,
            error,
        }
    };
    fs::create_dir_all(dir).map_err(io_err("create", dir))?;
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "claude.json".into());
    let tmp = dir.join(format!(
        ".{name}.the-loop-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let result = (|| {
        let mut f = File::options().write(true).create_new(true).open(&tmp)?;
        f.set_permissions(fs::Permissions::from_mode(mode))?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, target)?;
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(io_err("write", target))
}

/// Claude Code's `<config>.lock` directory, held until dropped.
struct ClaudeLock {
    path: PathBuf,
}

impl ClaudeLock {
    fn take(file: &Path) -> Result<Self, TrustError> {
        let mut name = file.as_os_str().to_owned();
        name.push(".lock");
        let path = PathBuf::from(name);
        if let Some(parent) = path.parent() {
            let _ = fs::create_dir_all(parent);
        }
        let deadline = std::time::Instant::now() + LOCK_WAIT;
        loop {
            match fs::create_dir(&path) {
                Ok(()) => return Ok(Self { path }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    let age = fs::metadata(&path)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| SystemTime::now().duration_since(t).ok());
                    if age.is_some_and(|a| a > LOCK_STALE) {
                        // Left by a process that died; proper-lockfile takes it over too.
                        let _ = fs::remove_dir(&path);
                        continue;
                    }
                    if std::time::Instant::now() >= deadline {
                        return Err(TrustError::Locked {
                            file: file.to_path_buf(),
                            lock: path,
                        });
                    }
                    std::thread::sleep(Duration::from_millis(25));
                }
                Err(error) => {
                    return Err(TrustError::Io {
                        action: "lock",
                        path,
                        error,
                    });
                }
            }
        }
    }
}

impl Drop for ClaudeLock {
    fn drop(&mut self) {
        let _ = fs::remove_dir(&self.path);
    }
}

/// A JSON object as read: keys in file order, values untouched until replaced.
#[derive(Default)]
struct Ordered(Vec<(String, Node)>);

/// A value read and written back verbatim, or an object being edited.
enum Node {
    Raw(Box<RawValue>),
    Object(Ordered),
}

impl Serialize for Node {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Node::Raw(raw) => raw.serialize(s),
            Node::Object(map) => map.serialize(s),
        }
    }
}

impl Ordered {
    /// The raw value JavaScript would see (the last of duplicate keys).
    fn get(&self, key: &str) -> Option<&RawValue> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| match v {
                Node::Raw(raw) => Some(raw.as_ref()),
                Node::Object(_) => None,
            })
    }

    fn set(&mut self, key: &str, value: Node) {
        match self.0.iter_mut().rev().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value,
            None => self.0.push((key.to_string(), value)),
        }
    }
}

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = Ordered;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Box<RawValue>>()? {
                    out.push((k, Node::Raw(v)));
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(Entries)
    }
}

impl Serialize for Ordered {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

#[cfg(test)]
#[path = "trust_tests.rs"]
mod tests;
