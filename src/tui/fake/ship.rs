//! The fake's ship: like the engine, it refuses a moved head, else opens pull request
//! #7, links it to the session and closes the request.

use super::{Call, FakeBackend};
use crate::events::{Event, EventType, Source};
use crate::tui::action::Request;
use crate::tui::backend::{ActionError, ActionResult};
use crate::tui::text::short_ref;
use crate::work_item::WorkItemRef;

impl FakeBackend {
    pub(super) fn ship_now(&self, work_item: &WorkItemRef, seen_head: &str) -> ActionResult {
        let request = Request::Ship {
            work_item: work_item.clone(),
            seen_head: seen_head.into(),
        };
        if let Some(e) = self.record(Call::Action(request)) {
            return Err(e);
        }
        let now = self.lock().ships.get(work_item).map(|p| p.head.clone());
        match now {
            None => {
                return Err(ActionError::Refused(format!(
                    "no open session for {}",
                    short_ref(work_item)
                )));
            }
            Some(now) if now != seen_head => {
                return Err(ActionError::Refused(format!(
                    "the head moved since it was shown: {seen_head} then, {now} now"
                )));
            }
            Some(_) => {}
        }
        let url = format!("https://github.com/{}/pull/7", work_item.repo_full_name());
        self.lock()
            .snapshot
            .ships
            .retain(|s| &s.work_item != work_item);
        self.set_state(work_item, |s| s.pull_request = Some(7));
        self.emit(
            Event::new(Source::Tui, EventType::ShipPrOpened)
                .with("work_item", work_item.to_string())
                .with("number", 7)
                .with("url", url.as_str()),
        );
        Ok(format!(
            "Shipped {}: pull request #7: {url}",
            short_ref(work_item)
        ))
    }
}
