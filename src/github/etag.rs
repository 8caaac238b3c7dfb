//! The ETag store behind conditional GETs. Serializable so the poller's ledger can
//! persist it; bounded (least recently used entries go first) because `since` URLs
//! change every time a cursor moves.
//!
//! Keys are `<token identity> <url>`: an answer fetched with one token must not be
//! declared "unchanged" for another token that may see different items. The identity
//! is a short hash, never the token.
//!
//! An entry holds the ETag of every page of a paginated answer, in order. It is only
//! stored when the walk was complete and its last page was not full: then a 304 on every
//! stored page proves nothing was added after it. (A full last page could gain a
//! successor without changing its own body, so such an answer is not cached.)

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const DEFAULT_CAPACITY: usize = 256;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EtagCache {
    #[serde(default = "default_capacity")]
    capacity: usize,
    #[serde(default)]
    entries: BTreeMap<String, EtagEntry>,
    /// A use counter for LRU eviction (persisted so order survives restarts).
    #[serde(default)]
    clock: u64,
}

fn default_capacity() -> usize {
    DEFAULT_CAPACITY
}

/// One cached answer: the ETag of each page, first page first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EtagEntry {
    pub pages: Vec<PageTag>,
    #[serde(default)]
    pub last_used: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageTag {
    pub url: String,
    pub etag: String,
}

impl Default for EtagCache {
    fn default() -> Self {
        Self::with_capacity(DEFAULT_CAPACITY)
    }
}

impl EtagCache {
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            entries: BTreeMap::new(),
            clock: 0,
        }
    }

    pub fn key(identity: &str, url: &str) -> String {
        format!("{identity} {url}")
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The pages stored for `key`, marking the entry as recently used.
    pub fn get(&mut self, key: &str) -> Option<Vec<PageTag>> {
        self.clock += 1;
        let clock = self.clock;
        self.entries.get_mut(key).map(|e| {
            e.last_used = clock;
            e.pages.clone()
        })
    }

    pub fn insert(&mut self, key: String, pages: Vec<PageTag>) {
        if pages.is_empty() {
            self.entries.remove(&key);
            return;
        }
        self.clock += 1;
        let last_used = self.clock;
        self.entries.insert(key, EtagEntry { pages, last_used });
        self.evict_over_capacity();
    }

    fn evict_over_capacity(&mut self) {
        while self.entries.len() > self.capacity {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => self.entries.remove(&k),
                None => break,
            };
        }
    }

    pub fn remove(&mut self, key: &str) {
        self.entries.remove(key);
    }

    /// The entries for one repository (`owner/name`, case-insensitive), for a per-repo
    /// ledger.
    pub fn for_repo(&self, repo: &str) -> EtagCache {
        let needle = format!("/repos/{}/", repo.to_ascii_lowercase());
        Self {
            capacity: self.capacity,
            entries: self
                .entries
                .iter()
                .filter(|(k, _)| k.to_ascii_lowercase().contains(&needle))
                .map(|(k, e)| (k.clone(), e.clone()))
                .collect(),
            clock: self.clock,
        }
    }

    /// Drops every entry for one repository (e.g. when the caller no longer holds the
    /// answers those ETags vouch for).
    pub fn forget_repo(&mut self, repo: &str) {
        let needle = format!("/repos/{}/", repo.to_ascii_lowercase());
        self.entries
            .retain(|k, _| !k.to_ascii_lowercase().contains(&needle));
    }

    /// Keeps only the entries whose key (`<identity> <url>`) passes `keep`: the poller
    /// drops the ETag of one URL whose answer it must read in full, and stale `since=`
    /// URLs its cursors have moved past.
    pub fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.entries.retain(|k, _| keep(k));
    }

    /// Adds `other`'s entries (a ledger loaded from disk); `other` wins on conflicts.
    pub fn merge(&mut self, other: EtagCache) {
        self.clock = self.clock.max(other.clock);
        for (k, e) in other.entries {
            self.entries.insert(k, e);
        }
        self.evict_over_capacity();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(url: &str) -> Vec<PageTag> {
        vec![PageTag {
            url: url.into(),
            etag: format!("\"{url}\""),
        }]
    }

    #[test]
    fn evicts_the_least_recently_used() {
        let mut c = EtagCache::with_capacity(2);
        c.insert("a".into(), page("a"));
        c.insert("b".into(), page("b"));
        assert!(c.get("a").is_some()); // a is now newer than b
        c.insert("c".into(), page("c"));
        assert_eq!(c.len(), 2);
        assert!(c.get("b").is_none());
        assert!(c.get("a").is_some() && c.get("c").is_some());
    }

    #[test]
    fn round_trips_through_json_and_splits_by_repo() {
        let mut c = EtagCache::default();
        c.insert(
            EtagCache::key("abc", "https://h/repos/Octo/Repo/issues"),
            page("1"),
        );
        c.insert(
            EtagCache::key("abc", "https://h/repos/octo/other/issues"),
            page("2"),
        );
        let json = serde_json::to_string(&c).unwrap();
        let back: EtagCache = serde_json::from_str(&json).unwrap();
        assert_eq!(back, c);
        let sub = c.for_repo("octo/repo");
        assert_eq!(sub.len(), 1);
        let mut merged = EtagCache::default();
        merged.merge(sub);
        assert_eq!(merged.len(), 1);
        c.forget_repo("OCTO/REPO");
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn retain_filters_by_key() {
        let mut c = EtagCache::default();
        c.insert("id https://h/repos/o/r/pulls/1/reviews".into(), page("1"));
        c.insert("id https://h/repos/o/r/pulls/2/reviews".into(), page("2"));
        c.retain(|k| !k.contains("/pulls/1/"));
        assert_eq!(c.len(), 1);
        assert!(c.get("id https://h/repos/o/r/pulls/2/reviews").is_some());
    }

    #[test]
    fn empty_pages_remove_the_entry() {
        let mut c = EtagCache::default();
        c.insert("k".into(), page("k"));
        c.insert("k".into(), Vec::new());
        assert!(c.is_empty());
    }
}
