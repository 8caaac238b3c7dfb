//! The fetch phase of one repository's cycle: every GitHub request of SPEC §4.1, and
//! nothing else. It reads the ledger only through a [`Plan`] and changes nothing; if any
//! request fails the caller discards the whole [`Snapshot`] (and rolls the client's
//! ETags back), so no answer is ever marked "seen" without being processed.

use super::{CURSOR_OVERLAP, checks, labels};
use crate::config::RepoConfig;
use crate::github::{Client, Error, models, repo_path};
use crate::ingress::ledger::{Cursors, Ledger, Stamp};
use futures::{StreamExt, TryStreamExt, stream};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use time::OffsetDateTime;

/// Requests of one kind that may run at once (reviews, baselines).
const CONCURRENCY: usize = 8;

/// A full watched-items listing (SPEC §4.1 step 1) is made on the first cycle and then
/// this often (server time) to reconcile; other cycles ask only for what changed.
pub const FULL_LISTING_EVERY: time::Duration = time::Duration::hours(1);

/// What the fetch needs to know from the ledger.
#[derive(Debug, Clone)]
pub(super) struct Plan {
    pub first: bool,
    pub full_listing: bool,
    pub started_at: Option<Stamp>,
    pub cursors: Cursors,
    pub known: BTreeMap<u64, Known>,
    /// `routing.spawn: labeled`: look up who labeled items that enter the list.
    pub labeled: bool,
    /// Watched PRs whose CI concerns a session → their head sha (`checks`).
    pub ci: BTreeMap<u64, String>,
    /// PRs whose head sha's checks are settled → that sha.
    pub settled_shas: BTreeMap<u64, String>,
}

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Known {
    pub watched: bool,
    pub is_pr: bool,
    pub baselined: bool,
    pub reviews_baselined: bool,
    pub comments: u64,
    /// The item's `updated_at` as last listed.
    pub updated_at: Option<OffsetDateTime>,
    pub reviews_read_at: Option<Stamp>,
}

impl Known {
    /// SPEC §15.3: a PR's reviews are read when it is new (its reviews are the
    /// baseline) and when its `updated_at` moved since they were last read — a review
    /// moves it — plus the cursor overlap, as GitHub may show a review a little after
    /// the time it carries. Otherwise an idle PR costs nothing.
    pub fn needs_reviews(&self) -> bool {
        match (self.reviews_baselined, self.reviews_read_at) {
            (true, Some(read)) => self
                .updated_at
                .is_none_or(|updated| updated + CURSOR_OVERLAP > read.0),
            _ => true,
        }
    }
}

impl Plan {
    pub fn new(
        ledger: &Ledger,
        server_now: OffsetDateTime,
        sessions: &BTreeSet<u64>,
        labeled: bool,
    ) -> Self {
        let first = ledger.started_at.is_none();
        let full_listing = first
            || ledger
                .last_full_listing
                .is_none_or(|t| server_now - t.0 >= FULL_LISTING_EVERY);
        let known = ledger
            .items
            .iter()
            .map(|(n, e)| {
                let known = Known {
                    watched: e.watched,
                    is_pr: e.is_pull_request(),
                    baselined: e.baseline_at.is_some(),
                    reviews_baselined: e.reviews_baselined,
                    comments: e.item["comments"].as_u64().unwrap_or(1),
                    updated_at: models::updated_at(&e.item),
                    reviews_read_at: e.reviews_read_at,
                };
                (*n, known)
            })
            .collect();
        let settled_shas = ledger
            .items
            .iter()
            .filter_map(|(n, e)| {
                let checks = e.checks.as_ref().filter(|c| c.settled)?;
                Some((*n, checks.sha.clone()))
            })
            .collect();
        Self {
            first,
            full_listing,
            started_at: ledger.started_at,
            cursors: ledger.cursors.clone(),
            known,
            labeled,
            ci: checks::targets(ledger, sessions),
            settled_shas,
        }
    }

    /// The `since` to ask for: the cursor less a small overlap (GitHub may make a write
    /// visible a little after its timestamp; ids dedupe the re-read), never before the
    /// repo's first cycle (which read no history).
    pub fn since(&self, cursor: Option<Stamp>) -> OffsetDateTime {
        let floor = self.started_at.map_or(OffsetDateTime::UNIX_EPOCH, |s| s.0);
        cursor.map_or(floor, |c| (c.0 - CURSOR_OVERLAP).max(floor))
    }
}

/// A watched-items answer. `None` items: 304, unchanged.
#[derive(Debug, Clone)]
pub(super) enum Listing {
    /// `issues?state=open&labels=…`: every watched item.
    Full(Option<Vec<Value>>),
    /// `issues?state=all&since=…`: every item of the repo that changed (closed,
    /// unlabeled, labeled, commented…), whether watched or not.
    Since(Option<Vec<Value>>),
}

/// One `since` stream's answer.
#[derive(Debug, Clone)]
pub(super) struct Stream {
    pub since: OffsetDateTime,
    pub items: Option<Vec<Value>>,
}

/// Everything one cycle read for one repository.
#[derive(Debug)]
pub(super) struct Snapshot {
    /// Server time of the first answer.
    pub date: OffsetDateTime,
    pub first: bool,
    pub listing: Listing,
    /// Items with a session that the ledger did not track (`GET issues/{n}`).
    pub lookups: Vec<Value>,
    /// Lookups that failed: reported, not fatal (a deleted item must not stall a repo).
    pub lookup_errors: Vec<Error>,
    /// The open pulls; `None`: 304, or no watched PR.
    pub pulls: Option<Vec<Value>>,
    /// Baseline threads of newly watched items (empty when the item has no comments).
    pub baselines: BTreeMap<u64, Vec<Value>>,
    /// `None` on the first cycle.
    pub issue_comments: Option<Stream>,
    pub review_comments: Option<Stream>,
    /// Per watched PR that moved (or is new); `None` answer: 304.
    pub reviews: Vec<(u64, Option<Vec<Value>>)>,
    /// Issues that entered the watched list, with their timeline (`labels`).
    pub timelines: Vec<labels::Timeline>,
    /// Only label events at or after this count (the listing's `since`).
    pub entered_since: OffsetDateTime,
    /// Check runs of PRs whose CI concerns a session (`checks`).
    pub checks: Vec<checks::Answer>,
}

impl Snapshot {
    /// Whether GitHub answered anything but "unchanged" (an idle cycle changes nothing).
    pub fn has_answers(&self) -> bool {
        let listed = match &self.listing {
            Listing::Full(_) => true,
            Listing::Since(items) => items.is_some(),
        };
        let streamed = [&self.issue_comments, &self.review_comments]
            .into_iter()
            .flatten()
            .any(|s| s.items.is_some());
        self.first
            || listed
            || streamed
            || !self.lookups.is_empty()
            || self.pulls.is_some()
            || !self.baselines.is_empty()
            || self.reviews.iter().any(|(_, r)| r.is_some())
            || !self.timelines.is_empty()
            || self.checks.iter().any(|(_, _, r)| r.is_some())
    }
}

/// Whether the poller reads an item's conversation: the repo's watch says so, or it is
/// an open pull request a session follows — the one shipping opened for it (SPEC §19.4
/// step 6: it carries no label), or the session's own.
pub(super) fn watches(rc: &RepoConfig, item: &Value, followed: &BTreeSet<u64>) -> bool {
    rc.watches(item)
        || (models::number(item).is_some_and(|n| followed.contains(&n))
            && models::is_pull_request(item)
            && item["state"].as_str() == Some("open"))
}

fn upsert(
    view: &mut BTreeMap<u64, Known>,
    rc: &RepoConfig,
    item: &Value,
    followed: &BTreeSet<u64>,
) {
    let Some(n) = models::number(item) else {
        return;
    };
    let k = view.entry(n).or_default();
    k.watched = watches(rc, item, followed);
    k.is_pr = models::is_pull_request(item);
    k.comments = item["comments"].as_u64().unwrap_or(1);
    k.updated_at = models::updated_at(item);
}

pub(super) async fn fetch(
    client: &Client,
    rc: &RepoConfig,
    plan: &Plan,
    sessions: &BTreeSet<u64>,
    linked: &BTreeSet<u64>,
) -> Result<Snapshot, Error> {
    let repo = rc.name.as_str();
    let fmt = models::format_timestamp;

    let (listing, date) = if plan.full_listing {
        let f = client.list_watched_items(repo, &rc.label).await?;
        (Listing::Full(f.value), f.date)
    } else {
        let since = fmt(plan.since(plan.cursors.items));
        let f = client
            .get_paginated(
                &format!("{}/issues", repo_path(repo)?),
                &[
                    ("state", "all"),
                    ("since", &since),
                    ("sort", "updated"),
                    ("direction", "asc"),
                    ("per_page", "100"),
                ],
            )
            .await?;
        (Listing::Since(f.value), f.date)
    };
    let date = date
        .or(client.rate_info().date)
        .unwrap_or_else(OffsetDateTime::now_utc);

    // The tracked items as they will be after this listing.
    let mut view = plan.known.clone();
    let mut left_silently = Vec::new();
    match &listing {
        Listing::Full(Some(items)) => {
            let listed: BTreeSet<u64> = items.iter().filter_map(models::number).collect();
            for (n, k) in view.iter_mut() {
                if k.watched && !listed.contains(n) {
                    k.watched = false;
                    left_silently.push(*n);
                }
            }
            items.iter().for_each(|i| upsert(&mut view, rc, i, linked));
        }
        Listing::Since(Some(items)) => items.iter().for_each(|i| upsert(&mut view, rc, i, linked)),
        Listing::Full(None) | Listing::Since(None) => {}
    }

    // Items with a session the ledger cannot vouch for: look them up once (closure).
    let to_look_up: Vec<u64> = sessions
        .union(linked)
        .copied()
        .filter(|n| !view.contains_key(n) || left_silently.contains(n))
        .collect();
    let mut lookups = Vec::new();
    let mut lookup_errors = Vec::new();
    for n in to_look_up {
        match client.get_issue(repo, n).await {
            Ok(item) => {
                upsert(&mut view, rc, &item, linked);
                lookups.push(item);
            }
            Err(e @ Error::RateLimited { .. }) => return Err(e),
            Err(e) => lookup_errors.push(e),
        }
    }

    let watched: Vec<(u64, Known)> = view
        .iter()
        .filter(|(_, k)| k.watched)
        .map(|(n, k)| (*n, *k))
        .collect();
    let any_pr = watched.iter().any(|(_, k)| k.is_pr);
    let pulls = if any_pr {
        client.list_open_pulls(repo).await?.value
    } else {
        None
    };

    // Baselines of newly watched items: their existing thread.
    let new_items: Vec<(u64, u64)> = watched
        .iter()
        .filter(|(_, k)| !k.baselined)
        .map(|(n, k)| (*n, k.comments))
        .collect();
    let baselines: BTreeMap<u64, Vec<Value>> = stream::iter(new_items)
        .map(|(n, comments)| async move {
            if comments == 0 {
                return Ok((n, Vec::new()));
            }
            client.list_item_comments(repo, n).await.map(|c| (n, c))
        })
        .buffered(CONCURRENCY)
        .try_collect()
        .await?;

    let (issue_comments, review_comments) = if plan.first {
        (None, None)
    } else {
        let since = plan.since(plan.cursors.issue_comments);
        let items = client.list_issue_comments_since(repo, since).await?.value;
        let issue = Stream { since, items };
        let since = plan.since(plan.cursors.review_comments);
        let items = client.list_review_comments_since(repo, since).await?.value;
        (Some(issue), Some(Stream { since, items }))
    };

    let prs: Vec<(u64, bool)> = watched
        .iter()
        .filter(|(_, k)| k.is_pr && k.needs_reviews())
        .map(|(n, k)| (*n, k.reviews_baselined))
        .collect();
    // A PR seen for the first time (or forgotten) must read its reviews in full: its
    // old reviews are the baseline, and an ETag would answer "unchanged" with nothing.
    for (n, _) in prs.iter().filter(|(_, baselined)| !baselined) {
        forget_etag(client, repo, &format!("/pulls/{n}/reviews"));
    }
    let reviews: Vec<(u64, Option<Vec<Value>>)> = stream::iter(prs)
        .map(|(n, _)| async move { client.list_reviews(repo, n).await.map(|f| (n, f.value)) })
        .buffered(CONCURRENCY)
        .try_collect()
        .await?;

    let entered = labels::entered(plan, &view);
    let timelines = labels::fetch(client, rc, entered).await?;
    let wanted = checks::wanted(plan, pulls.as_ref());
    let checks = checks::fetch(client, repo, wanted).await?;

    Ok(Snapshot {
        date,
        first: plan.first,
        listing,
        lookups,
        lookup_errors,
        pulls,
        baselines,
        issue_comments,
        review_comments,
        reviews,
        timelines,
        entered_since: plan.since(plan.cursors.items),
        checks,
    })
}

/// Drops the client's ETags whose URL contains `needle` within `repo`.
pub(super) fn forget_etag(client: &Client, repo: &str, needle: &str) {
    let mut etags = client.etags_for_repo(repo);
    let before = etags.len();
    etags.retain(|k| !k.contains(needle));
    if etags.len() != before {
        client.forget_etags(repo);
        client.restore_etags(etags);
    }
}
