//! `spawn: labeled` without a webhook (SPEC §15.1). An issue that enters the watched
//! list after the repo's first cycle — opened with the label, or labeled later — is
//! looked up once in its timeline (`GET issues/{n}/events`) to find who applied the
//! label, and becomes the `issues` `labeled` twin with that `sender`: the router then
//! applies the webhook's rules (labeler and author both authorized). Items present at
//! the first cycle never spawn on their own. With `label: ""` (every open item is
//! watched) a new issue is the `opened` twin, its author the sender; no lookup.
//!
//! Only a label applied since the previous listing counts, so an item that enters the
//! list for another reason (a config reload changed the label, a long-gone label
//! event) does not spawn. PRs are not looked up: GitHub sends a PR's label as a
//! `pull_request` event, which never spawns.

use super::fetch::{Known, Plan};
use crate::config::RepoConfig;
use crate::github::{Client, Error, models};
use crate::ingress::InboundEvent;
use crate::ingress::shape;
use futures::{StreamExt, TryStreamExt, stream};
use serde_json::Value;
use std::collections::BTreeMap;
use time::OffsetDateTime;

/// Requests that may run at once.
const CONCURRENCY: usize = 8;

/// The issues that just entered the watched list and may spawn: watched now, not
/// watched (or unknown) when the cycle began, after the first cycle, when the policy
/// is `labeled`.
pub(super) fn entered(plan: &Plan, view: &BTreeMap<u64, Known>) -> Vec<u64> {
    if !plan.labeled || plan.first {
        return Vec::new();
    }
    view.iter()
        .filter(|(n, k)| k.watched && !k.is_pr && plan.known.get(n).is_none_or(|was| !was.watched))
        .map(|(n, _)| *n)
        .collect()
}

/// One entered item's timeline (`None` when the repo watches every item: no lookup).
pub(super) type Timeline = (u64, Option<Vec<Value>>);

pub(super) async fn fetch(
    client: &Client,
    rc: &RepoConfig,
    entered: Vec<u64>,
) -> Result<Vec<Timeline>, Error> {
    if rc.label.is_empty() {
        return Ok(entered.into_iter().map(|n| (n, None)).collect());
    }
    let repo = rc.name.as_str();
    stream::iter(entered)
        .map(|n| async move {
            match client.list_issue_events(repo, n).await {
                Ok(events) => Ok((n, Some(events))),
                // Deleted or transferred meanwhile: nobody to name.
                Err(Error::NotFound { .. }) => Ok((n, Some(Vec::new()))),
                Err(e) => Err(e),
            }
        })
        .buffered(CONCURRENCY)
        .try_collect()
        .await
}

/// The latest `labeled` event of `label` (case-insensitively) at or after `floor`:
/// `(event id, labeler, when)`.
pub(super) fn labeler<'a>(
    events: &'a [Value],
    label: &str,
    floor: OffsetDateTime,
) -> Option<(u64, &'a str, OffsetDateTime)> {
    events
        .iter()
        .filter(|e| e["event"].as_str() == Some("labeled"))
        .filter(|e| {
            e["label"]["name"]
                .as_str()
                .is_some_and(|l| l.eq_ignore_ascii_case(label))
        })
        .filter_map(|e| {
            let at = e["created_at"].as_str().and_then(crate::time::parse_ts)?;
            let login = e["actor"]["login"].as_str()?;
            Some((models::id(e)?, login, at))
        })
        .filter(|(_, _, at)| *at >= floor)
        .max_by_key(|(id, _, at)| (*at, *id))
}

/// The twin of an entered item, if it has one: `(event id, when, twin)`.
pub(super) fn twin(
    repo: &str,
    label: &str,
    item: &Value,
    timeline: Option<&[Value]>,
    floor: OffsetDateTime,
) -> Option<(u64, OffsetDateTime, InboundEvent)> {
    match timeline {
        None => {
            let created = models::created_at(item)?;
            (created >= floor).then(|| {
                let id = models::id(item).unwrap_or(0);
                (id, created, shape::opened(repo, item))
            })
        }
        Some(events) => {
            let (id, login, at) = labeler(events, label, floor)?;
            Some((id, at, shape::labeled(repo, item, label, login, id)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn t(secs: i64) -> OffsetDateTime {
        OffsetDateTime::UNIX_EPOCH + time::Duration::seconds(secs)
    }

    fn event(id: u64, what: &str, label: &str, actor: &str, secs: i64) -> Value {
        json!({"id": id, "event": what, "label": {"name": label}, "actor": {"login": actor},
               "created_at": crate::github::models::format_timestamp(t(secs))})
    }

    #[test]
    fn the_latest_labeling_since_the_floor_names_the_labeler() {
        let events = vec![
            event(1, "labeled", "the-loop", "alice", 10),
            event(2, "unlabeled", "the-loop", "bob", 20),
            event(3, "labeled", "bug", "mallory", 30),
            event(4, "labeled", "The-Loop", "carol", 40),
        ];
        assert_eq!(
            labeler(&events, "the-loop", t(0)).map(|l| l.1),
            Some("carol")
        );
        assert_eq!(labeler(&events, "the-loop", t(41)), None, "too old");
        assert_eq!(labeler(&events, "bug", t(0)).map(|l| l.0), Some(3));
        assert_eq!(labeler(&[json!({"event": "labeled"})], "bug", t(0)), None);
    }

    #[test]
    fn the_twin_is_labeled_by_the_labeler_or_opened_by_the_author() {
        let item = json!({"number": 30, "id": 777, "user": {"login": "carol"},
                          "created_at": "2026-12-01T10:00:00Z",
                          "html_url": "https://github.com/octo/repo/issues/30"});
        let events = vec![event(9, "labeled", "the-loop", "alice", 50)];
        let (id, _, labeled) = twin("octo/repo", "the-loop", &item, Some(&events), t(0)).unwrap();
        assert_eq!(id, 9);
        assert_eq!(
            (labeled.gh_event.as_str(), labeled.action.as_str()),
            ("issues", "labeled")
        );
        assert_eq!(labeled.delivery_id, "poll-labeled-9");
        assert_eq!(labeled.payload["sender"]["login"], "alice");
        assert_eq!(labeled.payload["label"]["name"], "the-loop");
        assert_eq!(labeled.payload["issue"]["user"]["login"], "carol");

        let floor = crate::time::parse_ts("2026-12-01T09:00:00Z").unwrap();
        let (_, _, opened) = twin("octo/repo", "", &item, None, floor).unwrap();
        assert_eq!(opened.action, "opened");
        assert_eq!(opened.payload["sender"]["login"], "carol");
        let later = crate::time::parse_ts("2026-12-01T11:00:00Z").unwrap();
        assert!(
            twin("octo/repo", "", &item, None, later).is_none(),
            "an old item reopened"
        );
    }
}
