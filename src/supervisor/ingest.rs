//! The supervisor's side of the poll path: [`PollIngest`] counts what a poll cycle has
//! handed over, so shutdown knows whether an unfinished cycle may be dropped at once (it
//! was only reading GitHub) or must be waited for (deliveries are queued and their
//! outcomes not yet in the ledger). The webhook side — claims taken before routing and
//! settled by the delivery's outcome — is `ingress::claims`.

use crate::ingress::{Disposition, InboundEvent, Ingest};
use futures::future::BoxFuture;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The dispatcher, counting the events a poll cycle submits.
pub(crate) struct PollIngest {
    inner: Arc<dyn Ingest>,
    submitted: AtomicUsize,
}

impl PollIngest {
    pub fn new(inner: Arc<dyn Ingest>) -> Self {
        Self {
            inner,
            submitted: AtomicUsize::new(0),
        }
    }

    /// Called when a cycle starts.
    pub fn reset(&self) {
        self.submitted.store(0, Ordering::SeqCst);
    }

    /// Events handed to the dispatcher since the cycle started.
    pub fn submitted(&self) -> usize {
        self.submitted.load(Ordering::SeqCst)
    }
}

impl Ingest for PollIngest {
    fn ingest(&self, event: InboundEvent) -> BoxFuture<'static, Disposition> {
        self.submitted.fetch_add(1, Ordering::SeqCst);
        self.inner.ingest(event)
    }

    fn holding(&self, delivery_id: &str) -> bool {
        self.inner.holding(delivery_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Never;

    impl Ingest for Never {
        fn ingest(&self, _event: InboundEvent) -> BoxFuture<'static, Disposition> {
            Box::pin(std::future::pending())
        }
    }

    #[test]
    fn the_poll_side_counts_submissions_per_cycle() {
        let poll = PollIngest::new(Arc::new(Never));
        assert_eq!(poll.submitted(), 0);
        let event = InboundEvent::from_webhook("issue_comment", "d", json!({}));
        drop(poll.ingest(event));
        assert_eq!(poll.submitted(), 1);
        poll.reset();
        assert_eq!(poll.submitted(), 0);
    }
}
