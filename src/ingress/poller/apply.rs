//! The apply phase: one [`Snapshot`] folded into the ledger, with no I/O. Tracked items
//! and pulls are updated, new items baselined, and every new comment, review comment,
//! review and close is shaped and **recorded as pending** (in time order) before anything
//! is fed — so the cursors and ETags can move in the same write.

use super::fetch::{Listing, Snapshot, Stream};
use super::{checks, labels};
use crate::config::RepoConfig;
use crate::github::{EtagCache, models};
use crate::guard::{self, Allowlist};
use crate::ingress::InboundEvent;
use crate::ingress::ItemKind;
use crate::ingress::ledger::{Enqueued, ItemEntry, Ledger, Pending, PendingKind, Stamp};
use crate::ingress::shape;
use crate::routing::{ControlKeywords, ControlMatch};
use serde_json::Value;
use std::collections::BTreeSet;
use time::OffsetDateTime;

/// What apply needs besides the snapshot.
pub(super) struct Ctx<'a> {
    pub rc: &'a RepoConfig,
    pub allowlist: &'a Allowlist,
    pub keywords: &'a ControlKeywords,
    /// Numbers of this repo's items that have a session.
    pub sessions: &'a BTreeSet<u64>,
    /// Pull requests sessions follow (`poller::Followed::linked`).
    pub linked: &'a BTreeSet<u64>,
    /// The client's ETags for this repo after the fetch (already pruned).
    pub etags: EtagCache,
}

/// What apply did, for the cycle's counters and log.
#[derive(Debug, Default)]
pub(super) struct Applied {
    pub queued: usize,
    /// Handled first by the webhook path: settled as `duplicate-delivery`.
    pub duplicates: Vec<Pending>,
    pub baselined: Vec<u64>,
    /// Whether the ledger changed (an idle cycle is not written to disk).
    pub changed: bool,
}

/// How a stream entry relates to what the ledger knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Seen {
    /// Already settled at this `updated_at` (the overlap re-read).
    Skip,
    /// Older than the item's baseline and never resolved: record, never feed.
    History,
    New,
    /// A change to a comment already resolved (or created before the window read).
    Edited,
}

/// Classifies a stream entry. `since`: what the request asked for. A comment created
/// before `since` but not resolved was either settled and evicted from the bounded id
/// set, or is history: either way it is an edit, never a new comment.
pub(super) fn classify(
    resolved: Option<Stamp>,
    created: OffsetDateTime,
    updated: OffsetDateTime,
    baseline_at: OffsetDateTime,
    since: OffsetDateTime,
) -> Seen {
    match resolved {
        Some(seen) if updated <= seen.0 => Seen::Skip,
        Some(_) => Seen::Edited,
        None if updated < baseline_at => Seen::History,
        None if created < since => Seen::Edited,
        None => Seen::New,
    }
}

/// The control command still waiting in a thread (oldest comment first): the latest
/// comment written by the tool or by an authorized user, when it is an authorized
/// command. A later marked comment (the tool acknowledged it) or a later authorized
/// comment (the operator moved on) answers it; strangers' comments do not count.
pub(super) fn pending_command<'a>(
    thread: &'a [Value],
    allowlist: &Allowlist,
    keywords: &ControlKeywords,
) -> Option<&'a Value> {
    for comment in thread.iter().rev() {
        let body = models::body(comment);
        if guard::is_self_authored(body) {
            return None;
        }
        let authorized = models::user_login(comment).is_some_and(|l| allowlist.allows(l));
        if !authorized {
            continue;
        }
        return matches!(keywords.find(body.unwrap_or("")), ControlMatch::Command(_))
            .then_some(comment);
    }
    None
}

/// One event to record, with what settling it will record.
struct Candidate {
    at: OffsetDateTime,
    pending: Pending,
}

fn candidate(
    kind: PendingKind,
    number: u64,
    source: &Value,
    at: OffsetDateTime,
    event: InboundEvent,
) -> Candidate {
    let id = models::id(source).unwrap_or(0);
    let url = models::html_url(source).unwrap_or("");
    candidate_with(kind, number, (id, url), at, event)
}

/// A candidate whose id and web URL (for a give-up notice) are given.
fn candidate_with(
    kind: PendingKind,
    number: u64,
    (id, url): (u64, &str),
    at: OffsetDateTime,
    event: InboundEvent,
) -> Candidate {
    Candidate {
        at,
        pending: Pending {
            kind,
            id,
            number,
            updated_at: Stamp(at),
            url: url.to_string(),
            attempts: 0,
            last_error: None,
            parked: false,
            gh_event: event.gh_event,
            action: event.action,
            delivery_id: event.delivery_id,
            payload: event.payload,
        },
    }
}

fn upsert(ledger: &mut Ledger, ctx: &Ctx<'_>, raw: &Value) {
    let Some(n) = models::number(raw) else {
        return;
    };
    let watched = super::fetch::watches(ctx.rc, raw, ctx.linked);
    let item = shape::trim_item(raw);
    match ledger.items.get_mut(&n) {
        Some(entry) => {
            entry.item = item;
            entry.watched = watched;
        }
        None if watched || ctx.sessions.contains(&n) || ctx.linked.contains(&n) => {
            ledger.items.insert(n, ItemEntry::new(item, watched));
        }
        None => {}
    }
}

fn max_updated(items: &[Value]) -> Option<Stamp> {
    items.iter().filter_map(models::updated_at).max().map(Stamp)
}

fn advance(cursor: &mut Option<Stamp>, seen: Option<Stamp>) {
    if let Some(seen) = seen {
        *cursor = Some(cursor.map_or(seen, |c| c.max(seen)));
    }
}

pub(super) fn apply(ledger: &mut Ledger, snap: Snapshot, ctx: Ctx<'_>) -> Applied {
    let repo = ledger.repo.clone();
    let date = Stamp(snap.date);
    let mut applied = Applied::default();
    let mut candidates: Vec<Candidate> = Vec::new();
    // Reading reviews moves their `reviewsReadAt`, which must reach the disk too.
    let answered = snap.has_answers() || !snap.reviews.is_empty();
    let sizes = |l: &Ledger| (l.items.len(), l.pending.len());
    let before = sizes(ledger);

    if snap.first {
        ledger.started_at = Some(date);
        ledger.cursors.items = Some(date);
        ledger.cursors.issue_comments = Some(date);
        ledger.cursors.review_comments = Some(date);
    }

    match &snap.listing {
        Listing::Full(items) => {
            if let Some(items) = items {
                let listed: BTreeSet<u64> = items.iter().filter_map(models::number).collect();
                for (n, entry) in ledger.items.iter_mut() {
                    if !listed.contains(n) {
                        entry.watched = false;
                    }
                }
                items.iter().for_each(|i| upsert(ledger, &ctx, i));
            }
            ledger.last_full_listing = Some(date);
        }
        Listing::Since(items) => {
            if let Some(items) = items {
                items.iter().for_each(|i| upsert(ledger, &ctx, i));
                advance(&mut ledger.cursors.items, max_updated(items));
            }
        }
    }
    snap.lookups.iter().for_each(|i| upsert(ledger, &ctx, i));
    if let Some(pulls) = &snap.pulls {
        ledger.pulls = pulls
            .iter()
            .filter_map(|p| Some((models::number(p)?, shape::trim_pull(p))))
            .collect();
    }

    // Baselines: the existing thread is recorded, except a pending control command.
    for (n, thread) in &snap.baselines {
        let Some(entry) = ledger.items.get_mut(n) else {
            continue;
        };
        if !entry.watched || entry.baseline_at.is_some() {
            continue;
        }
        let command = pending_command(thread, ctx.allowlist, ctx.keywords);
        let command_id = command.and_then(models::id);
        for c in thread {
            if let (Some(id), Some(at)) = (models::id(c), models::updated_at(c))
                && Some(id) != command_id
            {
                entry.resolve(ItemKind::Comment, id, Stamp(at));
            }
        }
        entry.baseline_at = Some(date);
        applied.baselined.push(*n);
        if let Some(c) = command {
            let at = models::updated_at(c).unwrap_or(snap.date);
            let pull = ledger.pulls.get(n);
            let event = shape::comment(ItemKind::Comment, &repo, &entry.item, pull, c, None);
            candidates.push(candidate(PendingKind::Comment, *n, c, at, event));
        }
    }

    // Reviews: the first full read of a PR's reviews is its baseline.
    for (n, list) in &snap.reviews {
        let Some(entry) = ledger.items.get_mut(n) else {
            continue;
        };
        entry.reviews_read_at = Some(date);
        let Some(list) = list else {
            continue;
        };
        if !entry.watched {
            continue;
        }
        let baselining = !entry.reviews_baselined;
        for review in list.iter().filter(|r| !shape::is_pending_review(r)) {
            let Some(id) = models::id(review) else {
                continue;
            };
            if baselining {
                entry.resolve(ItemKind::Review, id, date);
            } else if entry.resolved(ItemKind::Review, id).is_none()
                && let Some(event) = shape::review(&repo, &entry.item, ledger.pulls.get(n), review)
            {
                let at = models::submitted_at(review).unwrap_or(snap.date);
                candidates.push(candidate(PendingKind::Review, *n, review, at, event));
            }
        }
        entry.reviews_baselined = true;
    }

    // The repo-wide streams.
    for (stream, kind) in [
        (&snap.issue_comments, ItemKind::Comment),
        (&snap.review_comments, ItemKind::ReviewComment),
    ] {
        let Some(Stream {
            since,
            items: Some(items),
        }) = stream
        else {
            continue;
        };
        for c in items {
            if let Some(cand) = stream_entry(ledger, &repo, kind, c, *since) {
                candidates.push(cand);
            }
        }
        let cursor = match kind {
            ItemKind::Comment => &mut ledger.cursors.issue_comments,
            _ => &mut ledger.cursors.review_comments,
        };
        advance(cursor, max_updated(items));
    }

    // Issues that entered the watched list: their `labeled` (or `opened`) twin.
    for (n, timeline) in &snap.timelines {
        let Some(entry) = ledger.items.get(n).filter(|e| e.watched) else {
            continue;
        };
        let twin = labels::twin(
            &repo,
            &ctx.rc.label,
            &entry.item,
            timeline.as_deref(),
            snap.entered_since,
        );
        if let Some((id, at, event)) = twin {
            let url = models::html_url(&entry.item).unwrap_or("");
            candidates.push(candidate_with(
                PendingKind::Labeled,
                *n,
                (id, url),
                at,
                event,
            ));
        }
    }

    // Check runs of PRs whose CI concerns a session: failures, once each.
    for (n, at, event, run) in checks::apply(ledger, &snap.checks, date) {
        candidates.push(candidate(PendingKind::CheckRun, n, &run, at, event));
    }

    candidates.sort_by_key(|c| c.at);
    for c in candidates {
        match ledger.enqueue(c.pending) {
            Enqueued::Queued => applied.queued += 1,
            Enqueued::AlreadyPending | Enqueued::Parked => {}
            Enqueued::Duplicate(p) => applied.duplicates.push(*p),
        }
    }

    queue_closes(ledger, &repo, ctx.sessions, &mut applied);
    ledger.etags = ctx.etags;
    // Keep only what is watched, has a session, or still has something pending.
    let pending: BTreeSet<u64> = ledger.pending.iter().map(|p| p.number).collect();
    ledger
        .items
        .retain(|n, e| e.watched || ctx.sessions.contains(n) || pending.contains(n));
    applied.changed =
        answered || applied.queued > 0 || !applied.duplicates.is_empty() || sizes(ledger) != before;
    applied
}

/// One entry of a repo-wide stream: a candidate to feed, or a note in the ledger.
fn stream_entry(
    ledger: &mut Ledger,
    repo: &str,
    kind: ItemKind,
    c: &Value,
    since: OffsetDateTime,
) -> Option<Candidate> {
    let n = models::parent_number(c)?;
    let id = models::id(c)?;
    let updated = models::updated_at(c)?;
    let created = models::created_at(c).unwrap_or(updated);
    let entry = ledger.items.get_mut(&n).filter(|e| e.watched)?;
    // Not baselined yet (its baseline failed to load): wait for it.
    let baseline_at = entry.baseline_at?;
    let edited_at = match classify(
        entry.resolved(kind, id),
        created,
        updated,
        baseline_at.0,
        since,
    ) {
        Seen::Skip => return None,
        Seen::History => {
            entry.resolve(kind, id, Stamp(updated));
            return None;
        }
        Seen::New => None,
        Seen::Edited => Some(updated),
    };
    let pull = ledger.pulls.get(&n);
    let event = shape::comment(kind, repo, &entry.item, pull, c, edited_at);
    Some(candidate(kind.into(), n, c, updated, event))
}

/// Closes of items with a session, once per closing; and no close is kept pending for
/// an item whose session is gone.
fn queue_closes(ledger: &mut Ledger, repo: &str, sessions: &BTreeSet<u64>, applied: &mut Applied) {
    ledger
        .pending
        .retain(|p| p.kind != PendingKind::Close || sessions.contains(&p.number));
    let mut closes = Vec::new();
    for n in sessions {
        let Some(entry) = ledger.items.get_mut(n) else {
            continue;
        };
        let closed_at = entry.item["closed_at"].as_str().unwrap_or("").to_string();
        if !entry.is_closed() || entry.close_fed.as_deref() == Some(closed_at.as_str()) {
            continue;
        }
        entry.close_fed = Some(closed_at);
        let event = shape::close(repo, &entry.item, ledger.pulls.get(n));
        let at = entry.item["closed_at"]
            .as_str()
            .and_then(crate::time::parse_ts)
            .unwrap_or(OffsetDateTime::UNIX_EPOCH);
        closes.push(candidate(PendingKind::Close, *n, &entry.item, at, event));
    }
    for c in closes {
        if ledger.enqueue(c.pending) == Enqueued::Queued {
            applied.queued += 1;
        }
    }
}

#[cfg(test)]
#[path = "apply_tests.rs"]
mod tests;
