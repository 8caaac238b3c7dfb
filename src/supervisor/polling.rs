//! The supervisor's poll loop: `Poller::cycle` at the configured interval (backing off
//! as `poller::next_delay` says), with the newest config applied before each cycle, the
//! result published to the status, and a shutdown that loses nothing.
//!
//! The poller only runs single cycles; this loop decides when, and what a shutdown
//! mid-cycle does. A cycle that was still reading GitHub is dropped at once (what it had
//! not settled stays pending in the ledger). One that has handed events to the
//! dispatcher is allowed to finish within the grace period, so a queued delivery is not
//! cut in half and delivered again on the next start.

use super::health::StatusCell;
use super::ingest::PollIngest;
use crate::config::Config;
use crate::github::Client;
use crate::ingress::poller::{CycleReport, MAX_BACKOFF, Poller, next_delay};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use time::OffsetDateTime;
use tokio::sync::{Mutex, Notify, watch};

/// How a poll loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LoopEnd {
    /// Between cycles, or in a cycle that had not handed anything over yet.
    Clean,
    /// A cycle with queued deliveries finished within the grace period.
    Drained,
    /// The grace period ran out: what had not settled stays pending in the ledger and
    /// is fed again on the next start.
    CutShort,
}

pub(crate) struct PollLoop {
    /// Cycles are serialised: the loop and `poll_once` take turns.
    poller: Mutex<Poller>,
    ingest: Arc<PollIngest>,
    client: Arc<Client>,
    config: watch::Receiver<Arc<Config>>,
    status: StatusCell,
    wake: Notify,
}

impl PollLoop {
    pub fn new(
        poller: Poller,
        ingest: Arc<PollIngest>,
        client: Arc<Client>,
        config: watch::Receiver<Arc<Config>>,
        status: StatusCell,
    ) -> Self {
        Self {
            poller: Mutex::new(poller),
            ingest,
            client,
            config,
            status,
            wake: Notify::new(),
        }
    }

    /// One cycle over every configured repo, with the config in force now. Returns once
    /// every event it fed has settled (or failed).
    pub async fn cycle(&self) -> CycleReport {
        let mut poller = self.poller.lock().await;
        let config = self.config.borrow().clone();
        if !Arc::ptr_eq(poller.config(), &config) {
            poller.set_config(config);
        }
        self.ingest.reset();
        let report = poller.cycle().await;
        self.status.set_cycle(&report, self.client.rate_info());
        report
    }

    /// Starts the next cycle now instead of after the interval.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Cycles until `stop` turns true. A config change starts a cycle at once.
    pub async fn run(&self, mut stop: watch::Receiver<bool>, grace: Duration) -> LoopEnd {
        let mut config_rx = self.config.clone();
        let mut failures: u32 = 0;
        loop {
            let config = config_rx.borrow_and_update().clone();
            let delay = if config.polling.enabled && !config.repos.is_empty() {
                let cycle = self.cycle();
                tokio::pin!(cycle);
                let report = tokio::select! {
                    report = &mut cycle => report,
                    _ = stopped(&mut stop) => return self.finish(cycle, grace).await,
                };
                failures = if report.errors > 0 {
                    failures.saturating_add(1)
                } else {
                    0
                };
                self.delay(&config, &report, failures)
            } else {
                MAX_BACKOFF
            };
            tokio::select! {
                _ = stopped(&mut stop) => return LoopEnd::Clean,
                _ = tokio::time::sleep(delay) => {}
                _ = self.wake.notified() => {}
                changed = config_rx.changed() => {
                    if changed.is_err() {
                        return LoopEnd::Clean; // the supervisor is gone
                    }
                }
            }
        }
    }

    /// Shutdown arrived mid-cycle: drop it if it only read GitHub, else let it settle.
    async fn finish(
        &self,
        cycle: std::pin::Pin<&mut impl Future<Output = CycleReport>>,
        grace: Duration,
    ) -> LoopEnd {
        if self.ingest.submitted() == 0 {
            return LoopEnd::Clean;
        }
        match tokio::time::timeout(grace, cycle).await {
            Ok(_) => LoopEnd::Drained,
            Err(_) => LoopEnd::CutShort,
        }
    }

    fn delay(&self, config: &Config, report: &CycleReport, failures: u32) -> Duration {
        let rate = self.client.rate_info();
        let reset_wait = report.rate_limited_until.map(until).or_else(|| {
            (rate.remaining == Some(0))
                .then(|| rate.wait_for_reset())
                .flatten()
        });
        next_delay(
            Duration::from_secs(config.polling.interval_seconds),
            rate.poll_interval,
            failures,
            reset_wait,
            rand::random::<f64>(),
        )
    }
}

/// Resolves when `stop` is (or becomes) true, or its sender is gone.
pub(crate) async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

fn until(t: OffsetDateTime) -> Duration {
    Duration::try_from(t - OffsetDateTime::now_utc()).unwrap_or(Duration::ZERO)
}
