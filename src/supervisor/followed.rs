//! What the poller follows besides the watched items, from one read of the session
//! records per cycle: the items with open sessions (for their closure) and the pull
//! requests shipping opened for them (SPEC §19.4) — a session's own pull requests
//! ([`SessionRecord::own_pulls`]) other than its work item.
//!
//! [`SessionRecord::own_pulls`]: crate::session::SessionRecord::own_pulls

use crate::ingress::poller::Followed;
use crate::session::Registry;

pub(super) fn followed(registry: &Registry) -> Followed {
    let records = match registry.list() {
        Ok(records) => records,
        Err(e) => {
            tracing::warn!(error = %e, "session registry unreadable; closes not followed this cycle");
            return Followed::default();
        }
    };
    let open: Vec<_> = records.into_iter().filter(|r| r.status.is_open()).collect();
    Followed {
        linked: open
            .iter()
            .flat_map(|r| {
                r.own_pulls()
                    .into_iter()
                    .filter(|pull| pull.number != r.work_item.number)
            })
            .collect(),
        sessions: open.into_iter().map(|r| r.work_item).collect(),
    }
}
