//! CI failures without a webhook (SPEC §15.2). For each watched PR whose CI concerns an
//! item with a session (the PR itself, or the issue it links to, by the router's own
//! §5.2 rules), while its head sha is new or any of its checks is incomplete, the
//! check runs of the head commit are read (`GET commits/{sha}/check-runs`, with an
//! ETag). A run that completes with a failure becomes a `check_run` `completed` twin,
//! queued once (by check-run id, `poll-check-run-<id>`); a passing run is recorded and
//! never delivered. Once every run of a sha has completed and been handled, the sha is
//! settled and costs nothing more; a new push (a new head sha) starts over.
//!
//! A run that completed before the repo's first cycle is history: recorded, never
//! delivered (the first cycle never reads history).

use super::fetch::Plan;
use crate::github::{Client, Error, models};
use crate::ingress::ledger::{Ledger, ShaChecks, Stamp};
use crate::ingress::shape;
use crate::routing::extract;
use futures::{StreamExt, TryStreamExt, stream};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use time::OffsetDateTime;

/// The conclusions an agent hears about (SPEC §15.2).
pub const FAILURES: [&str; 4] = ["failure", "timed_out", "action_required", "startup_failure"];

/// A commit without any check run stops being asked after this long: CI would have
/// started by then, and a repo without CI must not cost a request per cycle forever.
pub const NO_CHECKS_GRACE: time::Duration = time::Duration::minutes(10);

/// Requests that may run at once.
const CONCURRENCY: usize = 8;

/// The PRs to ask about this cycle: number → head sha.
pub(super) type Wanted = BTreeMap<u64, String>;

/// The watched PRs whose CI concerns an item with a session, with their head sha as the
/// ledger knows it: what the router would link a check run of the PR to (the PR
/// itself, the issue its branch or body names) is asked of the router's own extraction.
pub(super) fn targets(ledger: &Ledger, sessions: &BTreeSet<u64>) -> BTreeMap<u64, String> {
    let mut out = BTreeMap::new();
    if sessions.is_empty() {
        return out;
    }
    for (n, entry) in ledger.watched().filter(|(_, e)| e.is_pull_request()) {
        let Some(pull) = ledger.pulls.get(&n) else {
            continue;
        };
        let probe = shape::check_run(&ledger.repo, &entry.item, Some(pull), &json!({}));
        let concerned = extract::work_items(&probe.gh_event, &probe.payload)
            .iter()
            .any(|r| {
                r.repo_full_name().eq_ignore_ascii_case(&ledger.repo)
                    && sessions.contains(&r.number)
            });
        if let Some(sha) = pull["head"]["sha"].as_str().filter(|_| concerned) {
            out.insert(n, sha.to_string());
        }
    }
    out
}

/// Which of the plan's targets need a request: a head sha not settled yet. `pulls`:
/// this cycle's pulls listing, whose head shas are newer than the ledger's.
pub(super) fn wanted(plan: &Plan, pulls: Option<&Vec<Value>>) -> Wanted {
    let fresh: BTreeMap<u64, &str> = pulls
        .into_iter()
        .flatten()
        .filter_map(|p| Some((models::number(p)?, p["head"]["sha"].as_str()?)))
        .collect();
    plan.ci
        .iter()
        .filter_map(|(n, sha)| {
            let sha = fresh.get(n).copied().unwrap_or(sha.as_str());
            let settled = plan.settled_shas.get(n).is_some_and(|s| s == sha);
            (!settled).then(|| (*n, sha.to_string()))
        })
        .collect()
}

/// One PR's answer: its head sha and the runs (`None`: 304, unchanged).
pub(super) type Answer = (u64, String, Option<Vec<Value>>);

pub(super) async fn fetch(
    client: &Client,
    repo: &str,
    wanted: Wanted,
) -> Result<Vec<Answer>, Error> {
    stream::iter(wanted)
        .map(|(n, sha)| async move {
            match client.list_check_runs(repo, &sha).await {
                Ok(f) => Ok((n, sha, f.value)),
                // The commit is gone (a force-push): nothing to report on it.
                Err(Error::NotFound { .. }) => Ok((n, sha, Some(Vec::new()))),
                Err(e) => Err(e),
            }
        })
        .buffered(CONCURRENCY)
        .try_collect()
        .await
}

/// A check-run twin to queue: `(pr number, completed_at, twin)`.
pub(super) type Failure = (u64, OffsetDateTime, crate::ingress::InboundEvent, Value);

/// Folds the answers into the PRs' check state; returns the failures to queue.
pub(super) fn apply(ledger: &mut Ledger, answers: &[Answer], date: Stamp) -> Vec<Failure> {
    let mut failures = Vec::new();
    let repo = ledger.repo.clone();
    let started = ledger.started_at.unwrap_or(date);
    for (n, sha, runs) in answers {
        let pull = ledger.pulls.get(n).cloned();
        let Some(entry) = ledger.items.get_mut(n) else {
            continue;
        };
        let checks = entry.checks.get_or_insert_with(ShaChecks::default);
        if checks.sha != *sha {
            *checks = ShaChecks {
                sha: sha.clone(),
                seen_at: Some(date),
                ..ShaChecks::default()
            };
        }
        for run in runs.iter().flatten() {
            let Some(id) = models::id(run) else {
                continue;
            };
            let completed = run["status"].as_str() == Some("completed");
            let handled = checks.runs.get(&id).copied().unwrap_or(false);
            if completed && !handled {
                let conclusion = run["conclusion"].as_str().unwrap_or("");
                let at = run["completed_at"]
                    .as_str()
                    .and_then(crate::time::parse_ts)
                    .unwrap_or(date.0);
                if at >= started.0 && FAILURES.contains(&conclusion) {
                    let twin = shape::check_run(&repo, &entry.item, pull.as_ref(), run);
                    failures.push((*n, at, twin, run.clone()));
                }
            }
            checks.runs.insert(id, completed);
        }
        let all_done = !checks.runs.is_empty() && checks.runs.values().all(|done| *done);
        let gave_up_waiting = checks.runs.is_empty()
            && checks
                .seen_at
                .is_some_and(|seen| date.0 - seen.0 >= NO_CHECKS_GRACE);
        checks.settled = all_done || gave_up_waiting;
    }
    failures
}

/// Check-run ETags of shas no longer asked about (settled, or superseded by a push):
/// they would never be sent again.
pub(super) fn is_stale_etag(key: &str, asked: &BTreeSet<&str>) -> bool {
    key.split_once("/commits/")
        .and_then(|(_, rest)| rest.split_once("/check-runs"))
        .is_some_and(|(sha, _)| !asked.contains(sha))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: u64, status: &str, conclusion: Option<&str>) -> Value {
        json!({"id": id, "status": status, "conclusion": conclusion, "name": format!("ci {id}"),
               "completed_at": "2026-12-01T10:00:00Z", "check_suite": {"id": 9}})
    }

    fn ledger() -> Ledger {
        let mut l = Ledger::fresh("octo/repo");
        let item = json!({"number": 16, "id": 500, "state": "open",
                          "html_url": "https://github.com/octo/repo/pull/16",
                          "pull_request": {"url": "x"}});
        l.items
            .insert(16, crate::ingress::ledger::ItemEntry::new(item, true));
        l.pulls.insert(
            16,
            json!({"number": 16, "head": {"ref": "issue-15-fix", "sha": "abc"}, "body": ""}),
        );
        l
    }

    fn at(secs: i64) -> Stamp {
        Stamp(OffsetDateTime::UNIX_EPOCH + time::Duration::seconds(secs))
    }

    #[test]
    fn failures_are_queued_once_and_passes_never() {
        let mut l = ledger();
        let answer = |runs| vec![(16, "abc".to_string(), Some(runs))];
        let got = apply(
            &mut l,
            &answer(vec![
                run(1, "in_progress", None),
                run(2, "completed", Some("success")),
            ]),
            at(0),
        );
        assert!(got.is_empty());
        assert!(!l.items[&16].checks.as_ref().unwrap().settled);
        let got = apply(
            &mut l,
            &answer(vec![
                run(1, "completed", Some("failure")),
                run(2, "completed", Some("success")),
            ]),
            at(10),
        );
        assert_eq!(got.len(), 1);
        let twin = &got[0].2;
        assert_eq!(twin.delivery_id, "poll-check-run-1");
        assert_eq!(
            twin.payload["check_run"]["check_suite"]["head_branch"],
            "issue-15-fix"
        );
        assert_eq!(twin.payload["check_run"]["pull_requests"][0]["number"], 16);
        assert!(l.items[&16].checks.as_ref().unwrap().settled);
        // The same answer again (or a 304) queues nothing more.
        assert!(
            apply(
                &mut l,
                &answer(vec![run(1, "completed", Some("failure"))]),
                at(20)
            )
            .is_empty()
        );
        // A push starts over.
        let got = apply(
            &mut l,
            &[(
                16,
                "def".to_string(),
                Some(vec![run(3, "completed", Some("timed_out"))]),
            )],
            at(30),
        );
        assert_eq!(got.len(), 1);
    }

    #[test]
    fn runs_completed_before_the_first_cycle_are_history() {
        let mut l = ledger();
        let completed = OffsetDateTime::UNIX_EPOCH + time::Duration::seconds(100);
        l.started_at = Some(Stamp(completed + time::Duration::SECOND));
        let mut old = run(1, "completed", Some("failure"));
        old["completed_at"] = json!(crate::github::models::format_timestamp(completed));
        assert!(apply(&mut l, &[(16, "abc".into(), Some(vec![old]))], at(200)).is_empty());
        assert!(l.items[&16].checks.as_ref().unwrap().settled);
    }

    #[test]
    fn a_commit_without_checks_settles_after_the_grace() {
        let mut l = ledger();
        let none = || vec![(16, "abc".to_string(), Some(Vec::new()))];
        apply(&mut l, &none(), at(0));
        assert!(!l.items[&16].checks.as_ref().unwrap().settled);
        apply(&mut l, &[(16, "abc".into(), None)], at(599));
        assert!(!l.items[&16].checks.as_ref().unwrap().settled);
        apply(&mut l, &[(16, "abc".into(), None)], at(600));
        assert!(l.items[&16].checks.as_ref().unwrap().settled);
    }

    #[test]
    fn targets_follow_the_routers_links() {
        let l = ledger();
        // A session on the issue the PR's branch names, or on the PR itself.
        for sessions in [[15].into(), [16].into()] {
            assert_eq!(targets(&l, &sessions), [(16, "abc".to_string())].into());
        }
        assert!(targets(&l, &[99].into()).is_empty());
        assert!(targets(&l, &BTreeSet::new()).is_empty());
    }

    #[test]
    fn stale_check_run_etags_are_recognised() {
        let asked: BTreeSet<&str> = ["abc"].into();
        let key =
            |sha: &str| format!("tok http://x/repos/o/r/commits/{sha}/check-runs?per_page=100");
        assert!(!is_stale_etag(&key("abc"), &asked));
        assert!(is_stale_etag(&key("old"), &asked));
        assert!(!is_stale_etag(
            "tok http://x/repos/o/r/pulls?state=open",
            &asked
        ));
    }
}
