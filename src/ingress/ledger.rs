//! The poll ledger, one per repository at `poll/<owner>-<repo>.json` (SPEC §4.1): what
//! the poller has already seen and settled, so that no comment is delivered twice and
//! none is lost across cycles, faults and restarts.
//!
//! It holds the cursors of the three `since` streams, the ETags (only together with the
//! data they vouch for: the tracked items, the open pulls, and the ids below), the
//! tracked items with, per item, the resolved comment / review-comment / review ids
//! (bounded) and give-ups, and the **pending** events: every event the poller is about to
//! feed is written here with its full payload *before* it is fed (a write-ahead list), and
//! leaves it only when the `Ingest` settles it or it is given up. A crash therefore costs
//! at most a second delivery of the events that were in flight, and a cursor can move
//! past a comment as soon as it is recorded here.
//!
//! Writers: the poller (through [`LedgerStore`]), the webhook path in the same process
//! (its claims, [`crate::ingress::claims`]) and `sessions reset` in any process
//! ([`forget_item`], a note the poller applies at its next cycle). Everyone else only
//! reads it, through [`read`].

mod notes;
mod reader;
mod store;

pub use notes::{forget_item, pending_forgets};
pub use reader::{ReadError, read, read_file};
pub use store::LedgerStore;

use crate::events::Source;
use crate::github::EtagCache;
use crate::github::models;
use crate::ingress::InboundEvent;
use crate::ingress::claims::{Claim, ClaimState, ItemKind};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::PathBuf;
use time::OffsetDateTime;

/// The file format; a ledger written by a newer binary is moved aside, not misread.
pub const LEDGER_VERSION: u32 = 1;
/// Resolved ids kept per item and kind. The streams only re-read a short overlap window,
/// so only recent ids are ever looked up; an edit of an evicted comment is still
/// recognised by its `created_at` (see the poller).
pub const RESOLVED_PER_ITEM: usize = 256;
/// Given-up ids kept per item (for the operator's eyes; they are also resolved).
pub const GIVEN_UP_PER_ITEM: usize = 32;
/// A give-up notice that cannot be posted is retried this many times, then dropped.
pub const NOTICE_ATTEMPTS: u32 = 5;

/// The path of a repository's ledger: `poll/<owner>-<repo>.json`, lower-cased (GitHub
/// names are case-insensitive, so `Octo/Repo` and `octo/repo` share one ledger).
pub fn ledger_path(paths: &crate::paths::StatePaths, repo: &str) -> PathBuf {
    paths.poll_dir().join(format!("{}.json", file_stem(repo)))
}

/// Where earlier releases kept `repo`'s ledger, when that is not [`ledger_path`]: the
/// readable name alone, which `a-b/c` and `a/b-c` shared.
pub(crate) fn legacy_ledger_path(paths: &crate::paths::StatePaths, repo: &str) -> Option<PathBuf> {
    let legacy = paths
        .poll_dir()
        .join(format!("{}.json", readable_stem(repo)));
    (legacy != ledger_path(paths, repo)).then_some(legacy)
}

/// `<owner>-<repo>` lower-cased, and — when a name holds a `-`, so that two repositories
/// could meet in it (`a-b/c`, `a/b-c`) — the hash of the whole name after it.
pub(crate) fn file_stem(repo: &str) -> String {
    let readable = readable_stem(repo);
    if repo.contains('-') {
        format!("{readable}-{}", crate::work_item::name_hash(repo))
    } else {
        readable
    }
}

fn readable_stem(repo: &str) -> String {
    repo.replace('/', "-").to_ascii_lowercase()
}

/// A GitHub timestamp (whole seconds, UTC), stored as GitHub writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Stamp(pub OffsetDateTime);

impl Stamp {
    pub fn of(t: OffsetDateTime) -> Self {
        Self(t)
    }
}

impl Serialize for Stamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&models::format_timestamp(self.0))
    }
}

impl<'de> Deserialize<'de> for Stamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        crate::time::parse_ts(&text)
            .map(Stamp)
            .ok_or_else(|| serde::de::Error::custom(format!("`{text}` is not an RFC 3339 time")))
    }
}

/// What a pending event is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PendingKind {
    Comment,
    ReviewComment,
    Review,
    /// An item with a session closed or merged (`issues` / `pull_request` `closed`).
    Close,
    /// An item entered the watched list after the first cycle: the `issues` `labeled`
    /// twin (SPEC §15.1); `id` is the label event's id.
    Labeled,
    /// A check run of a watched PR completed with a failure (SPEC §15.2); `id` is the
    /// check run's id.
    CheckRun,
}

impl PendingKind {
    /// The id space of the comment or review a pending event carries.
    pub fn item_kind(self) -> Option<ItemKind> {
        match self {
            Self::Comment => Some(ItemKind::Comment),
            Self::ReviewComment => Some(ItemKind::ReviewComment),
            Self::Review => Some(ItemKind::Review),
            Self::Close | Self::Labeled | Self::CheckRun => None,
        }
    }
}

impl From<ItemKind> for PendingKind {
    fn from(kind: ItemKind) -> Self {
        match kind {
            ItemKind::Comment => Self::Comment,
            ItemKind::ReviewComment => Self::ReviewComment,
            ItemKind::Review => Self::Review,
        }
    }
}

/// The `since` cursors: the latest `updated_at` seen in each stream.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Cursors {
    pub items: Option<Stamp>,
    pub issue_comments: Option<Stamp>,
    pub review_comments: Option<Stamp>,
}

/// One tracked item: watched, or carrying a session (for its closure).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ItemEntry {
    /// The item as the last listing (or lookup) returned it, trimmed of URL noise.
    pub item: Value,
    pub watched: bool,
    /// When the item was baselined (server time); `None`: not yet, or forgotten.
    /// Stream entries older than this that were never resolved are history.
    #[serde(default)]
    pub baseline_at: Option<Stamp>,
    /// Resolved conversation comments: id → the `updated_at` that was settled.
    #[serde(default)]
    pub comments: BTreeMap<u64, Stamp>,
    #[serde(default)]
    pub review_comments: BTreeMap<u64, Stamp>,
    #[serde(default)]
    pub reviews: BTreeSet<u64>,
    #[serde(default)]
    pub reviews_baselined: bool,
    /// Server time of the last reviews read (SPEC §15.3: reviews are read again only
    /// when the PR's `updated_at` moved past it, less the cursor overlap).
    #[serde(default)]
    pub reviews_read_at: Option<Stamp>,
    /// Ids whose delivery was given up, newest last.
    #[serde(default)]
    pub given_up: Vec<u64>,
    /// The `closed_at` of the close already queued for this item's session.
    #[serde(default)]
    pub close_fed: Option<String>,
    /// A PR's checks on its head commit, while its CI concerns a session (SPEC §15.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<ShaChecks>,
}

/// The check runs of one head commit of a PR (`poller::checks`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShaChecks {
    pub sha: String,
    /// Server time the sha was first seen (a commit without any check run settles
    /// after a grace period).
    pub seen_at: Option<Stamp>,
    /// Check-run id → completed (and handled: a failure is queued once).
    pub runs: BTreeMap<u64, bool>,
    /// Every run completed and handled: the sha costs nothing more.
    pub settled: bool,
}

impl ItemEntry {
    pub fn new(item: Value, watched: bool) -> Self {
        Self {
            item,
            watched,
            baseline_at: None,
            comments: BTreeMap::new(),
            review_comments: BTreeMap::new(),
            reviews: BTreeSet::new(),
            reviews_baselined: false,
            reviews_read_at: None,
            given_up: Vec::new(),
            close_fed: None,
            checks: None,
        }
    }

    pub fn is_pull_request(&self) -> bool {
        models::is_pull_request(&self.item)
    }

    pub fn is_closed(&self) -> bool {
        models::is_closed(&self.item)
    }

    pub fn title(&self) -> Option<&str> {
        models::title(&self.item)
    }

    pub fn html_url(&self) -> Option<&str> {
        models::html_url(&self.item)
    }

    /// The `updated_at` at which `id` was settled, if it was.
    pub fn resolved(&self, kind: ItemKind, id: u64) -> Option<Stamp> {
        match kind {
            ItemKind::Comment => self.comments.get(&id).copied(),
            ItemKind::ReviewComment => self.review_comments.get(&id).copied(),
            ItemKind::Review => self
                .reviews
                .contains(&id)
                .then_some(Stamp(OffsetDateTime::UNIX_EPOCH)),
        }
    }

    /// Records `id` as settled at `updated_at`, evicting the oldest beyond the bound.
    pub fn resolve(&mut self, kind: ItemKind, id: u64, updated_at: Stamp) {
        match kind {
            ItemKind::Comment => bounded_insert(&mut self.comments, id, updated_at),
            ItemKind::ReviewComment => bounded_insert(&mut self.review_comments, id, updated_at),
            ItemKind::Review => {
                self.reviews.insert(id);
                while self.reviews.len() > RESOLVED_PER_ITEM {
                    self.reviews.pop_first();
                }
            }
        }
    }

    /// Forgets everything learned about the item's threads (`sessions reset`): the next
    /// cycle baselines it again, as if it were first seen.
    pub fn forget(&mut self) {
        let item = std::mem::take(&mut self.item);
        *self = Self::new(item, self.watched);
    }
}

fn bounded_insert(map: &mut BTreeMap<u64, Stamp>, id: u64, at: Stamp) {
    let slot = map.entry(id).or_insert(at);
    *slot = (*slot).max(at);
    while map.len() > RESOLVED_PER_ITEM {
        let oldest = map
            .iter()
            .min_by_key(|(id, at)| (**at, **id))
            .map(|(id, _)| *id);
        match oldest {
            Some(id) => map.remove(&id),
            None => break,
        };
    }
}

/// An event recorded before it is fed, with everything needed to feed it again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pending {
    pub kind: PendingKind,
    /// The comment or review id (the issue id for a close).
    pub id: u64,
    pub number: u64,
    /// The `updated_at` (or `submitted_at`) recorded once it is settled.
    pub updated_at: Stamp,
    /// The web URL the give-up notice names.
    pub url: String,
    /// Failed attempts so far.
    #[serde(default)]
    pub attempts: u32,
    #[serde(default)]
    pub last_error: Option<String>,
    /// Waiting behind the webhook's claim on the same id (not fed while it is).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub parked: bool,
    pub gh_event: String,
    pub action: String,
    pub delivery_id: String,
    pub payload: Value,
}

impl Pending {
    pub fn to_event(&self) -> InboundEvent {
        InboundEvent {
            source: Source::Poll,
            gh_event: self.gh_event.clone(),
            action: self.action.clone(),
            delivery_id: self.delivery_id.clone(),
            payload: self.payload.clone(),
        }
    }
}

/// A give-up notice that could not be posted yet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Notice {
    pub number: u64,
    pub body: String,
    pub attempts: u32,
}

/// One repository's ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Ledger {
    pub version: u32,
    pub repo: String,
    /// Server time of the first cycle (the `Date` of its first answer); `None`: the
    /// next cycle is a first cycle and reads no history.
    pub started_at: Option<Stamp>,
    pub cursors: Cursors,
    /// Server time of the last full watched-items listing.
    pub last_full_listing: Option<Stamp>,
    pub etags: EtagCache,
    pub items: BTreeMap<u64, ItemEntry>,
    /// The open pulls (trimmed): head branches and bodies for §5.2 linking.
    pub pulls: BTreeMap<u64, Value>,
    /// Recorded, not yet settled, in the order they are fed.
    pub pending: Vec<Pending>,
    pub claims: VecDeque<Claim>,
    pub notices: Vec<Notice>,
}

impl Default for Ledger {
    fn default() -> Self {
        Self::fresh("")
    }
}

/// What settling one pending event did.
#[derive(Debug, Clone, PartialEq)]
pub enum Settled {
    Delivered,
    Dropped,
    /// Failed; it stays pending and is fed again next cycle.
    Retry {
        attempts: u32,
    },
    /// Failed for the last time: resolved, recorded as given up.
    GaveUp(Box<Pending>),
    /// Not pending any more (forgotten meanwhile).
    Unknown,
}

impl Ledger {
    pub fn fresh(repo: &str) -> Self {
        Self {
            version: LEDGER_VERSION,
            repo: repo.to_string(),
            started_at: None,
            cursors: Cursors::default(),
            last_full_listing: None,
            etags: EtagCache::default(),
            items: BTreeMap::new(),
            pulls: BTreeMap::new(),
            pending: Vec::new(),
            claims: VecDeque::new(),
            notices: Vec::new(),
        }
    }

    /// The watched items, in number order.
    pub fn watched(&self) -> impl Iterator<Item = (u64, &ItemEntry)> {
        self.items
            .iter()
            .filter(|(_, e)| e.watched)
            .map(|(n, e)| (*n, e))
    }

    pub fn is_pending(&self, delivery_id: &str) -> bool {
        self.pending.iter().any(|p| p.delivery_id == delivery_id)
    }

    /// Queues an event unless it is already pending or the webhook handled it first
    /// (SPEC §15.4: behind a claim still in flight it is **parked** — kept, not fed —
    /// until that paste settles). Returns what happened so the caller can log a
    /// duplicate.
    pub fn enqueue(&mut self, mut pending: Pending) -> Enqueued {
        if self.is_pending(&pending.delivery_id) {
            return Enqueued::AlreadyPending;
        }
        // Edits carry the id of the comment they change: the claim was for its creation.
        let claim = pending
            .kind
            .item_kind()
            .filter(|_| pending.action != "edited")
            .and_then(|kind| Some((kind, self.claim_state(kind, pending.id)?)));
        match claim {
            Some((kind, ClaimState::Settled)) => {
                if let Some(entry) = self.items.get_mut(&pending.number) {
                    entry.resolve(kind, pending.id, pending.updated_at);
                }
                Enqueued::Duplicate(Box::new(pending))
            }
            Some((_, ClaimState::InFlight)) => {
                pending.parked = true;
                self.pending.push(pending);
                Enqueued::Parked
            }
            None => {
                self.pending.push(pending);
                Enqueued::Queued
            }
        }
    }

    /// Records the outcome of feeding the pending event `delivery_id`.
    pub fn settle(
        &mut self,
        delivery_id: &str,
        disposition: &crate::ingress::Disposition,
        max_retries: u32,
    ) -> Settled {
        use crate::ingress::Disposition;
        let Some(at) = self
            .pending
            .iter()
            .position(|p| p.delivery_id == delivery_id)
        else {
            return Settled::Unknown;
        };
        match disposition {
            Disposition::Interrupted => Settled::Retry {
                attempts: self.pending[at].attempts,
            },
            Disposition::Failed { error } => {
                let p = &mut self.pending[at];
                p.attempts += 1;
                p.last_error = Some(error.clone());
                if p.attempts <= max_retries || p.kind == PendingKind::Close {
                    // A close is retried as long as the session exists (the poller
                    // drops it when the session is gone): there is nobody to notify.
                    return Settled::Retry {
                        attempts: p.attempts,
                    };
                }
                let p = self.pending.remove(at);
                self.record_resolved(&p);
                if let Some(entry) = self.items.get_mut(&p.number) {
                    entry.given_up.push(p.id);
                    let excess = entry.given_up.len().saturating_sub(GIVEN_UP_PER_ITEM);
                    entry.given_up.drain(..excess);
                }
                Settled::GaveUp(Box::new(p))
            }
            settled => {
                let p = self.pending.remove(at);
                self.record_resolved(&p);
                if matches!(settled, Disposition::Delivered) {
                    Settled::Delivered
                } else {
                    Settled::Dropped
                }
            }
        }
    }

    fn record_resolved(&mut self, p: &Pending) {
        if let (Some(kind), Some(entry)) = (p.kind.item_kind(), self.items.get_mut(&p.number)) {
            entry.resolve(kind, p.id, p.updated_at);
        }
    }

    /// `sessions reset`: forget the item's threads and anything pending for it.
    pub fn forget_item(&mut self, number: u64) {
        if let Some(entry) = self.items.get_mut(&number) {
            entry.forget();
        }
        self.pending.retain(|p| p.number != number);
        // The reviews ETag vouches for ids just forgotten: the next read must be full.
        let needle = format!("/pulls/{number}/reviews");
        self.etags.retain(|k| !k.contains(&needle));
    }
}

/// The result of [`Ledger::enqueue`].
#[derive(Debug, Clone, PartialEq)]
pub enum Enqueued {
    Queued,
    AlreadyPending,
    /// The webhook path handled it first: recorded as resolved, not queued.
    Duplicate(Box<Pending>),
    /// The webhook path is handling it: kept, not fed, until that settles.
    Parked,
}

#[cfg(test)]
#[path = "ledger_tests.rs"]
mod tests;
