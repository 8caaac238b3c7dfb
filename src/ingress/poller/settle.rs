//! The settle phase: every pending event of a repo goes to the `Ingest`, in order (those
//! parked behind a webhook claim in flight wait for it, `ingress::claims`), and
//! each outcome is written to the ledger the moment it settles (so a crash re-feeds only
//! what was in flight). A delivery that fails `maxRetries` times more is given up: a
//! `poll.comment_failed` event and a marked notice on the item naming the comment URL —
//! never its body, which may be what made it fail.

use crate::events::{Event, EventLog, EventType, Level, Source};
use crate::github::Client;
use crate::ingress::Ingest;
use crate::ingress::ledger::{LedgerStore, NOTICE_ATTEMPTS, Notice, Pending, Settled};
use crate::work_item::WorkItemRef;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use std::sync::Arc;

/// Counts of one repo's feed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct FeedTally {
    pub delivered: usize,
    pub dropped: usize,
    pub failed: usize,
    pub given_up: usize,
}

pub(super) async fn feed(
    store: &LedgerStore,
    ingest: &Arc<dyn Ingest>,
    repo: &str,
    max_retries: u32,
) -> (FeedTally, Vec<Pending>) {
    let batch = store.read(repo, |l| {
        l.pending
            .iter()
            .filter(|p| !p.parked)
            .map(|p| (p.delivery_id.clone(), p.to_event()))
            .collect::<Vec<_>>()
    });
    let mut tally = FeedTally::default();
    let mut gave_up = Vec::new();
    if batch.is_empty() {
        return (tally, gave_up);
    }
    // `ingest` queues synchronously, so calling it in order keeps the order.
    let mut running: FuturesUnordered<_> = batch
        .into_iter()
        .map(|(id, event)| {
            let settled = ingest.ingest(event);
            async move { (id, settled.await) }
        })
        .collect();
    while let Some((id, disposition)) = running.next().await {
        let (settled, saved) = store.update(repo, |l| l.settle(&id, &disposition, max_retries));
        if let Err(e) = saved.wait().await {
            tracing::warn!(repo, error = %e, "poll ledger not written after a settlement");
        }
        match settled {
            Settled::Delivered => tally.delivered += 1,
            Settled::Dropped => tally.dropped += 1,
            Settled::Retry { .. } => tally.failed += 1,
            Settled::GaveUp(p) => {
                tally.given_up += 1;
                gave_up.push(*p);
            }
            Settled::Unknown => {}
        }
    }
    (tally, gave_up)
}

/// The notice posted on an item when one of its comments is given up. It names the
/// comment by URL and never quotes it.
pub(super) fn notice_body(p: &Pending) -> String {
    format!(
        "the-loop could not deliver {} to the agent session after {} attempts and has \
         stopped retrying.\n\nThe comment was not passed on: post it again, or send its \
         content with `the-loop reply`.",
        if p.url.is_empty() {
            format!("{} {}", p.kind_label(), p.id)
        } else {
            p.url.clone()
        },
        p.attempts
    )
}

impl Pending {
    fn kind_label(&self) -> &'static str {
        self.kind.item_kind().map_or("event", |k| k.as_str())
    }
}

/// Reports each give-up and posts its notice; a notice that cannot be posted now is kept
/// in the ledger and tried again on later cycles.
pub(super) async fn give_up(
    client: &Client,
    store: &LedgerStore,
    events: &EventLog,
    repo: &str,
    gave_up: Vec<Pending>,
) {
    for p in gave_up {
        let body = notice_body(&p);
        let posted = client.post_comment(repo, p.number, &body).await;
        let work_item = crate::routing::extract::subject(&p.gh_event, &p.payload)
            .map_or_else(|| work_item(repo, p.number), |r| r.to_string());
        let _ = events.emit(
            Event::new(Source::Poll, EventType::PollCommentFailed)
                .level(Level::Error)
                .with("work_item", work_item)
                .with("comment_id", p.id)
                .with("comment_url", p.url.clone())
                .with("attempts", p.attempts)
                .with("error", p.last_error.clone().unwrap_or_default())
                .with("notice_posted", posted.is_ok()),
        );
        if let Err(e) = posted {
            tracing::warn!(repo, number = p.number, error = %e, "give-up notice not posted; will retry");
            let notice = Notice {
                number: p.number,
                body,
                attempts: 1,
            };
            let (_, saved) = store.update(repo, |l| l.notices.push(notice));
            if let Err(e) = saved.wait().await {
                tracing::warn!(repo, error = %e, "poll ledger not written");
            }
        }
    }
}

/// Retries the notices that could not be posted earlier.
pub(super) async fn retry_notices(client: &Client, store: &LedgerStore, repo: &str) {
    let notices = store.read(repo, |l| l.notices.clone());
    if notices.is_empty() {
        return;
    }
    let mut keep = Vec::new();
    for mut n in notices {
        match client.post_comment(repo, n.number, &n.body).await {
            Ok(_) => {}
            Err(e) => {
                n.attempts += 1;
                if n.attempts < NOTICE_ATTEMPTS {
                    keep.push(n);
                } else {
                    tracing::warn!(repo, number = n.number, error = %e, "give-up notice dropped after repeated failures");
                }
            }
        }
    }
    let (_, saved) = store.update(repo, |l| l.notices = keep);
    if let Err(e) = saved.wait().await {
        tracing::warn!(repo, error = %e, "poll ledger not written");
    }
}

/// `github:owner/repo#N` (the host is the API's, which the poller does not restate).
pub(super) fn work_item(repo: &str, number: u64) -> String {
    let (owner, name) = repo.split_once('/').unwrap_or((repo, ""));
    WorkItemRef::new(owner, name, number).to_string()
}
