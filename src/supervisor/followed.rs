//! What the poller follows besides the watched items, from one read of the session
//! records per cycle: the items with open sessions (for their closure) and the pull
//! requests shipping opened for them (SPEC §19.4).

use crate::ingress::poller::Followed;
use crate::session::Registry;
use crate::work_item::WorkItemRef;

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
            .filter_map(|r| {
                let pull = r.pull_request.as_ref()?;
                Some(WorkItemRef::new(
                    &r.work_item.owner,
                    &r.work_item.repo,
                    pull.number,
                ))
            })
            .collect(),
        sessions: open.into_iter().map(|r| r.work_item).collect(),
    }
}
