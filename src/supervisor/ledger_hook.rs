//! `sessions reset` forgets the item's poll-ledger entry (SPEC §7.5) through this hook.
//!
//! The ledger may be held in memory by a running supervisor that rewrites it every
//! cycle, so the hook never edits the file: it leaves the poller a note
//! (`ingress::ledger::forget_item`) that the next cycle applies — the same way from the
//! CLI and from inside the supervisor.

use crate::ingress::ledger::{self, LedgerStore};
use crate::paths::StatePaths;
use crate::session::LedgerHook;
use crate::work_item::WorkItemRef;

/// The poller's [`LedgerHook`]: pass it to `Sessions::with_ledger`.
pub struct PollLedgerHook {
    paths: StatePaths,
    /// The supervisor's in-memory ledgers (to answer "did an entry exist" from what the
    /// poller holds); `None` in a CLI process, which reads the file instead.
    store: Option<LedgerStore>,
}

impl PollLedgerHook {
    /// For a process without a poller (`the-loop sessions reset`).
    pub fn new(paths: StatePaths) -> Self {
        Self { paths, store: None }
    }

    /// For the supervisor, sharing the poller's ledgers.
    pub fn with_store(paths: StatePaths, store: LedgerStore) -> Self {
        Self {
            paths,
            store: Some(store),
        }
    }

    fn has_entry(&self, repo: &str, number: u64) -> bool {
        match &self.store {
            Some(store) => store.read(repo, |l| l.items.contains_key(&number)),
            // Read only: moving a corrupt file aside is the poller's business.
            None => ledger::read(&self.paths, repo)
                .ok()
                .flatten()
                .is_some_and(|l| l.items.contains_key(&number)),
        }
    }
}

impl LedgerHook for PollLedgerHook {
    fn forget_item(&self, item: &WorkItemRef) -> Result<bool, String> {
        let repo = item.repo_full_name();
        let existed = self.has_entry(&repo, item.number);
        ledger::forget_item(&self.paths, &repo, item.number).map_err(|e| {
            format!(
                "cannot leave a forget note in {}: {e}",
                self.paths.poll_dir().display()
            )
        })?;
        Ok(existed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::EventLog;
    use crate::ingress::ledger::ItemEntry;
    use serde_json::json;

    #[tokio::test]
    async fn reset_leaves_a_note_the_poller_applies() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        let store = LedgerStore::new(paths.clone(), EventLog::open(&paths));
        let (_, saved) = store.update("octo/repo", |l| {
            let mut entry = ItemEntry::new(json!({"number": 15}), true);
            entry
                .comments
                .insert(1, ledger::Stamp(time::OffsetDateTime::UNIX_EPOCH));
            l.items.insert(15, entry);
        });
        saved.wait().await.unwrap();
        let item: WorkItemRef = "github:octo/repo#15".parse().unwrap();

        // From the CLI (file) and from the supervisor (memory): both see the entry.
        assert_eq!(
            PollLedgerHook::new(paths.clone()).forget_item(&item),
            Ok(true)
        );
        let hook = PollLedgerHook::with_store(paths.clone(), store.clone());
        assert_eq!(hook.forget_item(&item), Ok(true));
        assert_eq!(ledger::pending_forgets(&paths, "octo/repo").len(), 2);

        assert_eq!(
            store.apply_forget_notes("octo/repo").await.unwrap(),
            vec![15, 15]
        );
        assert!(store.read("octo/repo", |l| l.items[&15].comments.is_empty()));
        assert!(ledger::pending_forgets(&paths, "octo/repo").is_empty());

        let other: WorkItemRef = "github:octo/repo#99".parse().unwrap();
        assert_eq!(hook.forget_item(&other), Ok(false));
    }
}
