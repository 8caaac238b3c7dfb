//! The session registry (SPEC §7.5): one JSON file per session, `sessions/<slug>.json`
//! under the state root, shared by every process (the supervisor, the CLI, a viewer).
//!
//! Writes are atomic (temp file, fsync, rename), so a reader never sees a torn file.
//! Every change is a re-read-modify-write under an exclusive `flock` on a sibling lock
//! file (`<slug>.lock`; never the JSON itself, which the rename replaces), so two
//! processes changing different fields of one record keep each other's changes. Fields
//! this build does not know are kept as they are (a newer the-loop may have written
//! them). A file that does not parse is moved aside, reported as `state.corrupt`, and
//! treated as absent.

use crate::events::{Event, EventLog, EventType, Level, Source};
use crate::fsutil::{self, StateRead};
use crate::paths::StatePaths;
use crate::work_item::WorkItemRef;
use nix::fcntl::Flock;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

/// How many recent delivery ids a record keeps.
pub const RECENT_DELIVERIES: usize = 50;

/// Whether a session takes deliveries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Active,
    /// Events are dropped (`session-paused`) and not replayed; the pane is untouched.
    Paused,
    /// Stopped, or its item closed: no harness runs and nothing is delivered.
    Closed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Paused => "paused",
            Self::Closed => "closed",
        }
    }

    /// Active or paused: the item "has a session" for routing.
    pub fn is_open(self) -> bool {
        self != Self::Closed
    }
}

/// The last activity observation of a session (see `session::activity`), kept so a
/// one-shot reader (`sessions list`) can tell "changed since" without a history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivitySnapshot {
    /// `working`, `idle`, `awaiting-input`, `dead`, `paused`, `closed` or `unknown`.
    pub state: String,
    /// `#{window_activity}` when observed (Unix seconds).
    pub window_activity: u64,
    /// A hash of the pane's visible text when observed.
    pub capture_hash: String,
    /// When the visible text last changed (Unix seconds).
    pub changed_at: u64,
    /// The permission mode the screen last named (issue 30; Claude Code's footer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shown_mode: Option<crate::config::PermissionMode>,
}

/// One session. Field names are the file's (camelCase).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord {
    #[serde(rename = "ref")]
    pub work_item: WorkItemRef,
    pub url: String,
    pub harness: String,
    /// The harness's conversation id, when known (for resume on respawn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness_session_id: Option<String>,
    /// The permission mode the harness was last started in (`claude` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<crate::config::PermissionMode>,
    /// Codex's approval policy and sandbox it was last started under (`codex` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codex_policy: Option<crate::config::CodexPolicy>,
    /// opencode's permission policy it was last started under (`opencode` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opencode_policy: Option<crate::config::OpencodePolicy>,
    /// The harness's own protocol the session is reached through besides its pane
    /// (`channel`; codex's app server), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<crate::channel::ChannelRecord>,
    /// The release the harness binary named when it was last started (`claude
    /// --version`): the-loop reads a screen only of releases it has recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness_version: Option<String>,
    /// The `hosts:` entry the session runs on; `None` is this machine. Its `cwd` and
    /// pane are on that host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    pub cwd: PathBuf,
    pub tmux_session: String,
    /// `#{pane_id}` at spawn. Only meaningful while that tmux server lives: callers
    /// look the pane up by `tmux_session` before using it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pane_id: Option<String>,
    pub status: Status,
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_event_at: Option<String>,
    /// The last [`RECENT_DELIVERIES`] delivery ids pasted into this session, oldest first.
    #[serde(default)]
    pub recent_deliveries: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity: Option<ActivitySnapshot>,
    /// The session's own git worktree (SPEC §16), while it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<PathBuf>,
    /// The worktree's branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Why the worktree was kept when the session ended (`2 changed files`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_kept: Option<String>,
    /// What the harness last reported about itself (SPEC §17; `session::hooks`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported: Option<crate::session::hooks::Reported>,
    /// What waits for the session's input box to be ready (SPEC §18; `session::delivery`).
    #[serde(
        default,
        skip_serializing_if = "crate::session::delivery::Hold::is_empty"
    )]
    pub hold: crate::session::delivery::Hold,
    /// The agent's open request to ship its work (SPEC §19.3; `session::ship`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ship_request: Option<crate::session::records::ShipRequest>,
    /// The last push the operator's ship made, so a retry does not push again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pushed: Option<crate::session::records::Pushed>,
    /// The pull request the session's work went to (SPEC §19.4 step 6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_request: Option<crate::session::records::LinkedPull>,
    /// When the session's agent last tried to comment (`the-loop comment`), Unix
    /// milliseconds, the last minute's only: its rate limit (SPEC §19.2,
    /// `session::comment`), seen by every process that comments for it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recent_comments: Vec<u64>,
    /// What the session's model responses used, read from its transcripts (SPEC §20;
    /// `session::usage`).
    /// The limit its turns last failed on (issue 43), until a turn ends well.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<crate::session::limits::Limit>,
    #[serde(default, skip_serializing_if = "is_default_usage")]
    pub usage: crate::usage::SessionUsage,
    /// Fields written by another version, kept untouched.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn is_default_usage(usage: &crate::usage::SessionUsage) -> bool {
    *usage == crate::usage::SessionUsage::default()
}

impl SessionRecord {
    /// A fresh, active record for `item` (tmux name from SPEC §5.1).
    pub fn new(item: &WorkItemRef, harness: &str, cwd: PathBuf) -> Self {
        Self {
            work_item: item.clone(),
            url: item.html_url(),
            harness: harness.to_string(),
            harness_session_id: None,
            permission_mode: None,
            codex_policy: None,
            opencode_policy: None,
            channel: None,
            harness_version: None,
            host: None,
            cwd,
            tmux_session: item.tmux_session_name(),
            pane_id: None,
            status: Status::Active,
            created_at: crate::time::now_ts(),
            last_event_at: None,
            recent_deliveries: Vec::new(),
            activity: None,
            workspace: None,
            branch: None,
            workspace_kept: None,
            reported: None,
            hold: Default::default(),
            ship_request: None,
            pushed: None,
            pull_request: None,
            recent_comments: Vec::new(),
            limit: None,
            usage: Default::default(),
            extra: Map::new(),
        }
    }

    /// The pull requests this session owns — the one rule for "the session's own pull
    /// request" (SPEC §19.2, §19.4): its work item (when that is a pull request; an
    /// issue's number is never a pull request's, so it is listed as it is), then the
    /// pull request its ship opened or found for it (`pullRequest`), which is also the
    /// one the poller follows for it (`supervisor::followed`) and routes events on to it
    /// (`Dispatcher::owner_of`). All in the work item's repository, duplicates merged.
    ///
    /// Nothing else counts: a pull request whose body or branch names the item (SPEC
    /// §5.2) may route events here when its author is trusted (§14.3), but its text is
    /// never read back as ownership — only an operator's ship records `pullRequest`.
    pub fn own_pulls(&self) -> Vec<WorkItemRef> {
        let item = &self.work_item;
        let mut own = vec![item.clone()];
        if let Some(pull) = self
            .pull_request
            .as_ref()
            .filter(|p| p.number != item.number)
        {
            own.push(WorkItemRef::on_host(
                &item.host,
                &item.owner,
                &item.repo,
                pull.number,
            ));
        }
        own
    }

    /// What waits on the session (SPEC §18.3), naming its client's release when that
    /// is why (`screen unread (Claude Code 2.1.400)`).
    pub fn held(&self) -> Option<crate::session::delivery::HeldSummary> {
        let mut summary = self.hold.summary()?;
        use crate::session::delivery::HoldReason;
        match summary.reason {
            HoldReason::ScreenUnread => summary.client = Some(self.client_release()),
            HoldReason::Limit | HoldReason::Login | HoldReason::LimitMenu => {
                summary.limit = self.limit.as_ref().map(|l| l.note());
                summary.limit_since = self.limit.as_ref().map(|l| l.hit_at().to_string());
            }
            _ => {}
        }
        Some(summary)
    }

    /// The client and release the session runs, as people name them: `Claude Code
    /// 2.1.400`, `Codex 0.171.0`, `Claude Code, release unread`.
    pub fn client_release(&self) -> String {
        use crate::session::delivery::ScreenReader;
        let client = [ScreenReader::Claude, ScreenReader::Codex]
            .into_iter()
            .find(|r| r.key() == self.harness)
            .map_or(self.harness.as_str(), |r| r.client());
        match &self.harness_version {
            Some(version) => format!("{client} {version}"),
            None => format!("{client}, release unread"),
        }
    }

    /// Records a delivery id (keeping the last [`RECENT_DELIVERIES`]) and its time.
    pub fn record_delivery(&mut self, delivery_id: &str) {
        if !delivery_id.is_empty() {
            self.recent_deliveries.retain(|id| id != delivery_id);
            self.recent_deliveries.push(delivery_id.to_string());
            let excess = self
                .recent_deliveries
                .len()
                .saturating_sub(RECENT_DELIVERIES);
            self.recent_deliveries.drain(..excess);
        }
        self.last_event_at = Some(crate::time::now_ts());
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error(
        "cannot {action} the session registry at {}: {source}; check that the state directory (THE_LOOP_HOME) is writable",
        path.display()
    )]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// Two refs share a slug (e.g. `a-b/c#1` and `a/b-c#1`); the file belongs to the other.
    #[error(
        "the session file {} belongs to {owner}, whose name collides with {wanted}; reset that session first",
        path.display()
    )]
    SlugTaken {
        path: PathBuf,
        owner: String,
        wanted: String,
    },
}

/// The registry of a state root. Cheap to clone; holds no open files.
#[derive(Debug, Clone)]
pub struct Registry {
    dir: PathBuf,
    events: EventLog,
    source: Source,
}

impl Registry {
    /// The registry under `paths`, reporting corrupt files to `events` as `source`.
    pub fn new(paths: &StatePaths, events: EventLog, source: Source) -> Self {
        Self {
            dir: paths.sessions_dir(),
            events,
            source,
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of `item`'s record.
    pub fn path_of(&self, item: &WorkItemRef) -> PathBuf {
        self.dir.join(format!("{}.json", item.slug()))
    }

    /// The record of `item`, read fresh from disk. A ref typed in another case than
    /// the record's (`Octo/Repo` for `octo/repo`) finds it too: GitHub names are
    /// case-insensitive.
    pub fn get(&self, item: &WorkItemRef) -> Result<Option<SessionRecord>, RegistryError> {
        let path = self.path_of(item);
        match self.read(&path)? {
            Some(record) => self.owned_by(record, item, &path).map(Some),
            None => match self.case_insensitive_match(&format!("{}.json", item.slug()))? {
                Some(other) => match self.read(&other)? {
                    Some(record) => self.owned_by(record, item, &other).map(Some),
                    None => Ok(None),
                },
                None => self.migrate_legacy(item),
            },
        }
    }

    /// A record written before names were made injective (SPEC §14.7) lives under the
    /// item's legacy slug, which another item may share: it is this item's only if the
    /// record says so, and then it moves to the item's current file. The tmux session
    /// name it recorded is kept, so a running session is still found.
    fn migrate_legacy(&self, item: &WorkItemRef) -> Result<Option<SessionRecord>, RegistryError> {
        if item.legacy_slug() == item.slug() {
            return Ok(None);
        }
        let Some(old) = self.case_insensitive_match(&format!("{}.json", item.legacy_slug()))?
        else {
            return Ok(None);
        };
        let Some(record) = self.read(&old)? else {
            return Ok(None);
        };
        if !same_item(&record.work_item, item) {
            return Ok(None); // another item's legacy file
        }
        let new = self.path_of(&record.work_item);
        let _lock = self.lock(&record.work_item)?;
        match fs::rename(&old, &new) {
            Ok(()) => Ok(Some(record)),
            Err(source) => Err(io_error("move", &old, source)),
        }
    }

    /// Every record, sorted by ref. Corrupt files are moved aside and skipped.
    pub fn list(&self) -> Result<Vec<SessionRecord>, RegistryError> {
        let mut records = Vec::new();
        for path in self.json_files()? {
            if let Some(record) = self.read(&path)? {
                records.push(record);
            }
        }
        records.sort_by_key(|r| r.work_item.to_string());
        Ok(records)
    }

    /// Writes `record` whole (a new session), replacing any previous record of its item.
    pub fn put(&self, record: &SessionRecord) -> Result<(), RegistryError> {
        let path = self.path_of(&record.work_item);
        let _lock = self.lock(&record.work_item)?;
        if let Some(existing) = self.read(&path)? {
            self.owned_by(existing, &record.work_item, &path)?;
        }
        self.write(&path, record)
    }

    /// Changes `item`'s record under its lock: the file is re-read, `change` applied and
    /// the result written, so concurrent writers never lose each other's fields. `None`
    /// (and nothing written) when there is no record.
    pub fn update<R>(
        &self,
        item: &WorkItemRef,
        change: impl FnOnce(&mut SessionRecord) -> R,
    ) -> Result<Option<R>, RegistryError> {
        let Some(found) = self.get(item)? else {
            return Ok(None);
        };
        let item = &found.work_item;
        let path = self.path_of(item);
        let _lock = self.lock(item)?;
        let Some(mut record) = self.read(&path)? else {
            return Ok(None); // removed between the two reads
        };
        let out = change(&mut record);
        self.write(&path, &record)?;
        Ok(Some(out))
    }

    /// [`Self::update`] off the async runtime (an fsync'd write, SPEC §15.6), for the
    /// paste path and the hold bookkeeping.
    pub async fn update_async<R: Send + 'static>(
        &self,
        item: &WorkItemRef,
        change: impl FnOnce(&mut SessionRecord) -> R + Send + 'static,
    ) -> Result<Option<R>, RegistryError> {
        let (registry, work_item) = (self.clone(), item.clone());
        tokio::task::spawn_blocking(move || registry.update(&work_item, change))
            .await
            .unwrap_or_else(|join| {
                Err(io_error(
                    "update",
                    &self.path_of(item),
                    io::Error::other(join.to_string()),
                ))
            })
    }

    /// Forgets `item`'s record; true when there was one.
    pub fn remove(&self, item: &WorkItemRef) -> Result<bool, RegistryError> {
        let Some(found) = self.get(item)? else {
            return Ok(false);
        };
        let path = self.path_of(&found.work_item);
        let _lock = self.lock(&found.work_item)?;
        match fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(io_error("remove", &path, source)),
        }
    }

    fn owned_by(
        &self,
        record: SessionRecord,
        wanted: &WorkItemRef,
        path: &Path,
    ) -> Result<SessionRecord, RegistryError> {
        if same_item(&record.work_item, wanted) {
            Ok(record)
        } else {
            Err(RegistryError::SlugTaken {
                path: path.to_path_buf(),
                owner: record.work_item.to_string(),
                wanted: wanted.to_string(),
            })
        }
    }

    fn case_insensitive_match(&self, file_name: &str) -> Result<Option<PathBuf>, RegistryError> {
        let wanted = file_name.to_lowercase();
        Ok(self.json_files()?.into_iter().find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().to_lowercase() == wanted)
        }))
    }

    fn json_files(&self) -> Result<Vec<PathBuf>, RegistryError> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(io_error("list", &self.dir, source)),
        };
        let mut files = Vec::new();
        for entry in entries {
            let path = entry
                .map_err(|source| io_error("list", &self.dir, source))?
                .path();
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            if name.is_some_and(|n| n.ends_with(".json") && !n.starts_with('.')) {
                files.push(path);
            }
        }
        Ok(files)
    }

    /// Reads one record; a corrupt file is moved aside, reported, and reads as absent.
    fn read(&self, path: &Path) -> Result<Option<SessionRecord>, RegistryError> {
        match fsutil::read_json_state(path).map_err(|source| io_error("read", path, source))? {
            StateRead::Missing => Ok(None),
            StateRead::Ok(record) => Ok(Some(record)),
            StateRead::Corrupt { moved_to, error } => {
                tracing::warn!(path = %path.display(), "corrupt session record moved aside: {error}");
                let _ = self.events.emit(
                    Event::new(self.source, EventType::StateCorrupt)
                        .level(Level::Warning)
                        .with("path", path.display().to_string())
                        .with("moved_to", moved_to.display().to_string())
                        .with("error", error),
                );
                Ok(None)
            }
        }
    }

    fn write(&self, path: &Path, record: &SessionRecord) -> Result<(), RegistryError> {
        fsutil::atomic_write_json(path, record).map_err(|source| io_error("write", path, source))
    }

    /// An exclusive lock on `item`'s lock file, held until dropped (blocks while another
    /// writer holds it; writers hold it for one read and one write).
    fn lock(&self, item: &WorkItemRef) -> Result<Flock<File>, RegistryError> {
        let path = self.dir.join(format!("{}.lock", item.slug()));
        fsutil::lock_exclusive(&path).map_err(|source| io_error("lock", &path, source))
    }
}

fn io_error(action: &'static str, path: &Path, source: io::Error) -> RegistryError {
    RegistryError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// The same issue or PR (owner and repo compared case-insensitively, as GitHub does).
pub fn same_item(a: &WorkItemRef, b: &WorkItemRef) -> bool {
    a.number == b.number && a.same_repo(b)
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
