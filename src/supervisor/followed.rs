//! What the poller follows besides the watched items: the items with open sessions
//! (for their closure) and the pull requests shipping opened for them (SPEC §19.4).

use crate::session::Registry;

/// The items whose sessions are open: the poller follows them for their closure.
pub(super) fn items_with_open_sessions(registry: &Registry) -> Vec<crate::work_item::WorkItemRef> {
    match registry.list() {
        Ok(records) => records
            .into_iter()
            .filter(|r| r.status.is_open())
            .map(|r| r.work_item)
            .collect(),
        Err(e) => {
            tracing::warn!(error = %e, "session registry unreadable; closes not followed this cycle");
            Vec::new()
        }
    }
}

/// The pull requests shipping opened for open sessions (SPEC §19.4 step 6): the poller
/// reads them whatever the repo's label, so their reviews reach the session.
pub(super) fn linked_pulls(registry: &Registry) -> Vec<crate::work_item::WorkItemRef> {
    registry
        .list()
        .unwrap_or_default()
        .into_iter()
        .filter(|r| r.status.is_open())
        .filter_map(|r| {
            let pull = r.pull_request?;
            Some(crate::work_item::WorkItemRef::new(
                &r.work_item.owner,
                &r.work_item.repo,
                pull.number,
            ))
        })
        .collect()
}
