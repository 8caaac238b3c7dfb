//! The poller (SPEC §4.1, §15): per configured repository, per cycle, the conditional
//! GETs that find new comments, review comments, reviews and closes on watched items,
//! who labeled an issue that entered the watched list (`labels.rs`) and the failed
//! check runs of watched PRs whose CI concerns a session (`checks.rs`); each shaped like
//! its webhook twin and fed to the [`Ingest`]. The ledger ([`super::ledger`]) makes it
//! exactly-once across cycles and restarts.
//!
//! A repository's cycle runs in three phases:
//! 1. **fetch** (`fetch.rs`): the requests, nothing else; any failure discards the lot and
//!    rolls the client's ETags back, so no answer is marked seen unprocessed;
//! 2. **apply** (`apply.rs`): the answers folded into the ledger; every new event is
//!    recorded as pending (with its payload) and the cursors and ETags move, in one write;
//! 3. **settle** (`settle.rs`): the pending events go to the `Ingest` in order, each outcome
//!    written as it settles; failures are retried next cycle, then given up.
//!
//! Idle cost (SPEC §15.3): after the first cycle the watched items are not listed in
//! full but asked for `since` the items cursor (closes, labels, comments and reviews all
//! move an item's `updated_at`), and only PRs that moved have their reviews read, so an
//! idle cycle is one 304 for the items, one for the open pulls and one per comment
//! stream — whatever the number of watched issues and open PRs. A PR's checks cost a
//! request per cycle only until every run of its head sha has completed. The full
//! listing runs on the first cycle and hourly to reconcile.

mod apply;
mod checks;
mod fetch;
mod labels;
mod settle;

use crate::config::{Config, RepoConfig, SpawnPolicy};
use crate::events::{Event, EventLog, EventType, Level, Source};
use crate::github::{Client, Error, EtagCache, models};
use crate::guard::Allowlist;
use crate::ingress::ledger::{LedgerStore, Pending};
use crate::ingress::{Ingest, claims};
use crate::paths::StatePaths;
use crate::routing::ControlKeywords;
use crate::work_item::WorkItemRef;
use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};
use time::OffsetDateTime;

/// How far before its cursor a stream is re-read (ids dedupe the overlap): GitHub can
/// make a write visible a little after the timestamp it carries.
pub const CURSOR_OVERLAP: time::Duration = time::Duration::seconds(30);
/// The longest wait between cycles after repeated failures (a rate-limit reset may be
/// later; it is honoured in full).
pub const MAX_BACKOFF: Duration = Duration::from_secs(600);

/// What the poller follows beyond its watch, read once per cycle.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Followed {
    /// Items with a session: watched for closure even after they leave the watched
    /// list.
    pub sessions: Vec<WorkItemRef>,
    /// The pull requests shipping opened for a session (SPEC §19.4 step 6): read while
    /// open whatever the repo's label, so their reviews and comments reach the session.
    pub linked: Vec<WorkItemRef>,
}

impl From<Vec<WorkItemRef>> for Followed {
    /// Sessions only, no linked pull request.
    fn from(sessions: Vec<WorkItemRef>) -> Self {
        Self {
            sessions,
            linked: Vec::new(),
        }
    }
}

/// Where [`Followed`] comes from. Called once per cycle.
pub type SessionsFn = Arc<dyn Fn() -> Followed + Send + Sync>;

/// What one cycle did (also logged as `poll.cycle`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CycleReport {
    pub repos: usize,
    /// Watched items across repos.
    pub items: usize,
    /// HTTP requests made by the client during the cycle (304s included).
    pub requests: u64,
    pub not_modified: u64,
    pub delivered: usize,
    pub dropped: usize,
    /// Deliveries that failed and will be retried.
    pub failed: usize,
    pub given_up: usize,
    /// GitHub errors (`poll.error`) and ledger write failures.
    pub errors: usize,
    pub rate_remaining: Option<u64>,
    pub duration: Duration,
    /// GitHub asked us to wait until then.
    pub rate_limited_until: Option<OffsetDateTime>,
}

pub struct Poller {
    client: Arc<Client>,
    config: Arc<Config>,
    events: EventLog,
    ingest: Arc<dyn Ingest>,
    sessions: SessionsFn,
    ledgers: LedgerStore,
    /// Repos whose persisted ETags were handed to the client.
    synced: HashSet<String>,
    /// Events fed and not settled yet (held sessions, SPEC §18.3): not fed again.
    in_flight: settle::InFlight,
}

impl Poller {
    pub fn new(
        client: Arc<Client>,
        config: Arc<Config>,
        paths: StatePaths,
        events: EventLog,
        ingest: Arc<dyn Ingest>,
    ) -> Self {
        Self {
            client,
            config,
            ledgers: LedgerStore::new(paths, events.clone()),
            events,
            ingest,
            sessions: Arc::new(Followed::default),
            synced: HashSet::new(),
            in_flight: settle::InFlight::default(),
        }
    }

    /// Where the followed items come from (default: none).
    pub fn with_sessions(mut self, sessions: SessionsFn) -> Self {
        self.sessions = sessions;
        self
    }

    /// Shares a ledger store created elsewhere (e.g. before the webhook route).
    pub fn with_ledgers(mut self, ledgers: LedgerStore) -> Self {
        self.ledgers = ledgers;
        self.synced.clear();
        self
    }

    /// Events fed and not settled yet: they wait on held sessions (SPEC §18.3).
    pub fn in_flight(&self) -> usize {
        self.in_flight.open()
    }

    /// The ledgers, for the webhook path's shared dedupe.
    pub fn ledgers(&self) -> &LedgerStore {
        &self.ledgers
    }

    pub fn config(&self) -> &Arc<Config> {
        &self.config
    }

    /// Applied from the next cycle on (the supervisor's poll loop pushes reloads here).
    pub fn set_config(&mut self, config: Arc<Config>) {
        self.config = config;
    }

    /// One cycle over every configured repo. Never fails: errors are counted, logged
    /// (`poll.error`) and the next repo goes on.
    pub async fn cycle(&mut self) -> CycleReport {
        let started = Instant::now();
        let before = self.client.counters();
        let config = self.config.clone();
        let allowlist = Allowlist::new(&config.routing.authorized_users);
        let keywords = ControlKeywords::new(&config.routing.keywords);
        let followed = (self.sessions)();
        let mut report = CycleReport {
            repos: config.repos.len(),
            ..CycleReport::default()
        };
        for rc in &config.repos {
            let of_repo = |items: &[WorkItemRef]| -> BTreeSet<u64> {
                items
                    .iter()
                    .filter(|r| r.repo_full_name().eq_ignore_ascii_case(&rc.name))
                    .map(|r| r.number)
                    .collect()
            };
            let sessions = of_repo(&followed.sessions);
            let linked = of_repo(&followed.linked);
            let repo = Repo {
                rc,
                sessions: &sessions,
                linked: &linked,
                allowlist: &allowlist,
                keywords: &keywords,
                max_retries: config.polling.max_retries,
                labeled: config.routing.spawn == SpawnPolicy::Labeled,
            };
            self.poll_repo(repo, &mut report).await;
        }
        let after = self.client.counters();
        report.requests = after.requests.saturating_sub(before.requests);
        report.not_modified = after.not_modified.saturating_sub(before.not_modified);
        report.rate_remaining = self.client.rate_info().remaining;
        report.duration = started.elapsed();
        let _ = self.events.emit(
            Event::new(Source::Poll, EventType::PollCycle)
                .with("repos", report.repos)
                .with("items", report.items)
                .with("requests", report.requests)
                .with("not_modified", report.not_modified)
                .with("delivered", report.delivered)
                .with("dropped", report.dropped)
                .with("errors", report.errors)
                .with_opt("rate_remaining", report.rate_remaining)
                .with("duration_ms", report.duration.as_millis() as u64),
        );
        report
    }

    async fn poll_repo(&mut self, r: Repo<'_>, report: &mut CycleReport) {
        let name = r.rc.name.as_str();
        if let Err(e) = self.ledgers.apply_forget_notes(name).await {
            tracing::warn!(repo = name, error = %e, "could not apply forget notes");
            report.errors += 1;
        }
        if self.synced.insert(name.to_ascii_lowercase()) {
            // ETags are trusted only together with the ledger that holds their data.
            let etags = self.ledgers.read(name, |l| l.etags.clone());
            self.client.forget_etags(name);
            self.client.restore_etags(etags);
        }
        let server_now = self
            .client
            .rate_info()
            .date
            .unwrap_or_else(OffsetDateTime::now_utc);
        let plan = self.ledgers.read(name, |l| {
            fetch::Plan::new(l, server_now, r.sessions, r.labeled)
        });
        if plan.first {
            self.client.forget_etags(name);
        }
        settle::retry_notices(&self.client, &self.ledgers, name).await;

        match fetch::fetch(&self.client, r.rc, &plan, r.sessions, r.linked).await {
            Ok(snap) => {
                for e in &snap.lookup_errors {
                    self.report_error(name, e, report);
                }
                let etags = prune_etags(self.client.etags_for_repo(name), &plan, &snap);
                self.client.forget_etags(name);
                self.client.restore_etags(etags.clone());
                let ctx = apply::Ctx {
                    rc: r.rc,
                    allowlist: r.allowlist,
                    keywords: r.keywords,
                    sessions: r.sessions,
                    linked: r.linked,
                    etags,
                };
                let applied = self.ledgers.modify(name, |l| apply::apply(l, snap, ctx));
                if applied.changed
                    && let Err(e) = self.ledgers.save(name).wait().await
                {
                    tracing::warn!(repo = name, error = %e, "poll ledger not written");
                    report.errors += 1;
                }
                for p in &applied.duplicates {
                    self.log_duplicate(p);
                    report.dropped += 1;
                }
            }
            Err(e) => {
                let etags = self.ledgers.read(name, |l| l.etags.clone());
                self.client.forget_etags(name);
                self.client.restore_etags(etags);
                self.report_error(name, &e, report);
            }
        }

        // Pending events need no GitHub: they are fed even when the fetch failed.
        let (tally, gave_up) = settle::feed(
            &self.ledgers,
            &self.ingest,
            &self.in_flight,
            name,
            r.max_retries,
        )
        .await;
        settle::give_up(&self.client, &self.ledgers, &self.events, name, gave_up).await;
        report.delivered += tally.delivered;
        report.dropped += tally.dropped;
        report.failed += tally.failed;
        report.given_up += tally.given_up;
        report.items += self.ledgers.read(name, |l| l.watched().count());
    }

    fn report_error(&self, repo: &str, e: &Error, report: &mut CycleReport) {
        report.errors += 1;
        let (status, what) = describe_error(e);
        let mut retry_in = None;
        if let Error::RateLimited { reset } = e {
            report.rate_limited_until =
                Some(report.rate_limited_until.map_or(*reset, |r| r.max(*reset)));
            retry_in = Some(until(*reset).as_millis() as u64);
        }
        let level = if e.is_transient() {
            Level::Warning
        } else {
            Level::Error
        };
        let _ = self.events.emit(
            Event::new(Source::Poll, EventType::PollError)
                .level(level)
                .with("repo", repo)
                .with_opt("url", what)
                .with_opt("status", status)
                .with("error", e.to_string())
                .with_opt("retry_in_ms", retry_in)
                .with_opt("rate_remaining", self.client.rate_info().remaining),
        );
    }

    /// The webhook path handled this comment first: logged as the router would.
    fn log_duplicate(&self, p: &Pending) {
        let _ = self.events.emit(claims::duplicate_event(&p.to_event()));
    }
}

/// One repo's inputs for a cycle.
struct Repo<'a> {
    rc: &'a RepoConfig,
    sessions: &'a BTreeSet<u64>,
    linked: &'a BTreeSet<u64>,
    allowlist: &'a Allowlist,
    keywords: &'a ControlKeywords,
    max_retries: u32,
    labeled: bool,
}

/// The wait before the next cycle: the configured interval or GitHub's
/// `x-poll-interval`, whichever is longer; doubled per consecutive failing cycle up to
/// [`MAX_BACKOFF`]; at least until a rate-limit reset; plus up to 10% jitter
/// (`jitter` in `0..1`) so that restarted supervisors do not poll in step.
pub fn next_delay(
    interval: Duration,
    server_interval: Option<Duration>,
    failures: u32,
    rate_limit_wait: Option<Duration>,
    jitter: f64,
) -> Duration {
    let base = interval
        .max(server_interval.unwrap_or_default())
        .max(Duration::from_secs(1));
    let backoff = if failures == 0 {
        base
    } else {
        base.saturating_mul(1 << failures.min(6))
            .min(MAX_BACKOFF.max(base))
    };
    let wait = backoff.max(rate_limit_wait.unwrap_or_default());
    wait + wait.mul_f64(0.1 * jitter.clamp(0.0, 1.0))
}

fn until(t: OffsetDateTime) -> Duration {
    Duration::try_from(t - OffsetDateTime::now_utc()).unwrap_or(Duration::ZERO)
}

/// The status and request an error names (never a host or a token).
fn describe_error(e: &Error) -> (Option<u16>, Option<String>) {
    match e {
        Error::Http { status, what, .. } => (Some(*status), Some(what.clone())),
        Error::NotFound { what } => (Some(404), Some(what.clone())),
        Error::Unauthorized { what, .. } => (Some(401), Some(what.clone())),
        Error::NoToken { what } => (None, Some(what.clone())),
        Error::Timeout { what, .. }
        | Error::Transport { what, .. }
        | Error::Decode { what, .. } => (None, Some(what.clone())),
        Error::RateLimited { .. } | Error::InvalidRequest(_) => (None, None),
    }
}

/// The repo's ETags without the `since=` URLs this cycle did not ask for (the cursors
/// moved past them: they would never be sent again), nor the check runs of shas it did
/// not ask about (settled, or superseded by a push).
fn prune_etags(mut etags: EtagCache, plan: &fetch::Plan, snap: &fetch::Snapshot) -> EtagCache {
    let asked: BTreeSet<&str> = snap.checks.iter().map(|(_, sha, _)| sha.as_str()).collect();
    etags.retain(|key| !checks::is_stale_etag(key, &asked));
    let mut current: Vec<String> = [&snap.issue_comments, &snap.review_comments]
        .into_iter()
        .flatten()
        .map(|s| models::format_timestamp(s.since))
        .collect();
    if matches!(snap.listing, fetch::Listing::Since(_)) {
        current.push(models::format_timestamp(plan.since(plan.cursors.items)));
    }
    etags.retain(|key| {
        let Some(url) = key
            .split_once(' ')
            .and_then(|(_, url)| reqwest::Url::parse(url).ok())
        else {
            return true;
        };
        let since = url.query_pairs().find(|(k, _)| k == "since");
        since.is_none_or(|(_, v)| current.iter().any(|c| *c == v))
    });
    etags
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_is_the_interval_plus_jitter() {
        let i = Duration::from_secs(30);
        assert_eq!(next_delay(i, None, 0, None, 0.0), i);
        assert_eq!(next_delay(i, None, 0, None, 1.0), Duration::from_secs(33));
        let d = next_delay(i, None, 0, None, 0.5);
        assert!(d > i && d < Duration::from_secs(33));
    }

    #[test]
    fn delay_honours_the_server_interval_and_the_reset() {
        let i = Duration::from_secs(30);
        assert_eq!(
            next_delay(i, Some(Duration::from_secs(60)), 0, None, 0.0),
            Duration::from_secs(60)
        );
        assert_eq!(
            next_delay(i, Some(Duration::from_secs(10)), 0, None, 0.0),
            i
        );
        assert_eq!(
            next_delay(i, None, 0, Some(Duration::from_secs(900)), 0.0),
            Duration::from_secs(900)
        );
    }

    #[test]
    fn delay_backs_off_and_is_capped() {
        let i = Duration::from_secs(30);
        assert_eq!(next_delay(i, None, 1, None, 0.0), Duration::from_secs(60));
        assert_eq!(next_delay(i, None, 2, None, 0.0), Duration::from_secs(120));
        assert_eq!(next_delay(i, None, 30, None, 0.0), MAX_BACKOFF);
        // An interval longer than the cap is never shortened.
        let long = Duration::from_secs(3600);
        assert_eq!(next_delay(long, None, 3, None, 0.0), long);
    }
}
