//! Reading a poll ledger from outside the poller: the TUI's Sessions pane (the watched
//! items) and `sessions reset` in a process without a poller (did the item have an
//! entry). One schema — the [`Ledger`] the poller writes — and one rule for a bad file:
//! it is reported, never moved aside or rewritten, since the file belongs to the
//! poller (which moves a corrupt one aside itself, with a `state.corrupt` event, when
//! it next loads it).

use super::{LEDGER_VERSION, Ledger, ledger_path, legacy_ledger_path};
use crate::paths::StatePaths;
use std::io;
use std::path::{Path, PathBuf};

/// Why a ledger file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read the poll ledger {}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("the poll ledger {} does not parse: {source}", path.display())]
    Corrupt {
        path: PathBuf,
        source: serde_json::Error,
    },
    /// Written by a newer binary: not misread.
    #[error(
        "the poll ledger {} has version {version}, newer than this binary understands ({LEDGER_VERSION})",
        path.display()
    )]
    Newer { path: PathBuf, version: u32 },
}

/// `repo`'s ledger as it is on disk; `None` when the poller has written none yet.
pub fn read(paths: &StatePaths, repo: &str) -> Result<Option<Ledger>, ReadError> {
    let mut ledger = read_file(&ledger_path(paths, repo))?;
    if ledger.is_none()
        && let Some(legacy) = legacy_ledger_path(paths, repo)
    {
        // Not yet moved by a poller of this release: the old name, if it is this repo's.
        ledger = read_file(&legacy)?.filter(|l| l.repo.eq_ignore_ascii_case(repo));
    }
    if let Some(ledger) = ledger.as_mut() {
        ledger.repo = repo.to_string();
    }
    Ok(ledger)
}

/// The ledger file at `path` (a [`ledger_path`]); `None` when there is none.
pub fn read_file(path: &Path) -> Result<Option<Ledger>, ReadError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(ReadError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let ledger: Ledger = serde_json::from_slice(&bytes).map_err(|source| ReadError::Corrupt {
        path: path.to_path_buf(),
        source,
    })?;
    if ledger.version > LEDGER_VERSION {
        return Err(ReadError::Newer {
            path: path.to_path_buf(),
            version: ledger.version,
        });
    }
    Ok(Some(ledger))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::EventLog;
    use crate::ingress::ledger::{ItemEntry, LedgerStore, Stamp};
    use serde_json::json;

    #[test]
    fn a_missing_ledger_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        assert!(matches!(read(&paths, "octo/repo"), Ok(None)));
    }

    #[test]
    fn a_corrupt_ledger_is_reported_and_left_where_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        let path = ledger_path(&paths, "octo/repo");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "{not json").unwrap();
        let err = read(&paths, "octo/repo").unwrap_err();
        assert!(matches!(err, ReadError::Corrupt { .. }), "{err:?}");
        assert!(err.to_string().contains("does not parse"), "{err}");
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"{not json",
            "not moved aside"
        );
        let entries = std::fs::read_dir(paths.poll_dir()).unwrap().count();
        assert_eq!(entries, 1, "nothing written beside it");
    }

    #[test]
    fn a_ledger_from_a_newer_binary_is_not_misread() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("octo-repo.json");
        let newer = json!({"version": LEDGER_VERSION + 1, "items": {}});
        std::fs::write(&path, newer.to_string()).unwrap();
        let err = read_file(&path).unwrap_err();
        assert!(
            matches!(err, ReadError::Newer { version, .. } if version == LEDGER_VERSION + 1),
            "{err:?}"
        );
        assert!(path.exists());
    }

    #[tokio::test]
    async fn what_the_ledger_writer_saved_reads_back_equal() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        let store = LedgerStore::new(paths.clone(), EventLog::open(&paths));
        let (_, saved) = store.update("Octo/Repo", |l| {
            let mut entry = ItemEntry::new(
                json!({"number": 15, "title": "Retry cap", "state": "open",
                       "html_url": "https://github.com/octo/repo/issues/15"}),
                true,
            );
            entry
                .comments
                .insert(7, Stamp(time::OffsetDateTime::UNIX_EPOCH));
            l.items.insert(15, entry);
            l.items
                .insert(16, ItemEntry::new(json!({"state": "closed"}), true));
        });
        saved.wait().await.unwrap();
        let read_back = read(&paths, "Octo/Repo").unwrap().unwrap();
        assert_eq!(read_back, store.snapshot("Octo/Repo"));
        let entry = &read_back.items[&15];
        assert_eq!(entry.title(), Some("Retry cap"));
        assert_eq!(
            entry.html_url(),
            Some("https://github.com/octo/repo/issues/15")
        );
        assert!(read_back.items[&16].is_closed());
        // The same file by its path; the name is lower-cased, so either spelling finds it.
        assert!(read(&paths, "octo/repo").unwrap().is_some());
    }
}
