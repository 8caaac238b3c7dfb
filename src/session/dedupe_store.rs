//! The router's delivery-id dedupe, persisted in `<state>/dedupe.json` (the last 1024
//! ids, oldest first) so a restarted supervisor still drops GitHub's redeliveries.

use crate::events::{Event, EventLog, EventType, Level, Source};
use crate::fsutil::{self, StateRead};
use crate::routing::DeliveryDedupe;
use std::path::PathBuf;

pub(crate) struct DedupeStore {
    path: PathBuf,
    pub dedupe: DeliveryDedupe,
}

impl DedupeStore {
    /// Loads the store; a missing file is empty, a corrupt one is moved aside and
    /// reported (`state.corrupt`), an unreadable one is logged and starts empty.
    pub fn load(path: PathBuf, events: &EventLog) -> Self {
        let dedupe = match fsutil::read_json_state::<DeliveryDedupe>(&path) {
            Ok(StateRead::Ok(dedupe)) => dedupe,
            Ok(StateRead::Missing) => DeliveryDedupe::new(),
            Ok(StateRead::Corrupt { moved_to, error }) => {
                let _ = events.emit(
                    Event::new(Source::Dispatch, EventType::StateCorrupt)
                        .level(Level::Warning)
                        .with("path", path.display().to_string())
                        .with("moved_to", moved_to.display().to_string())
                        .with("error", error),
                );
                DeliveryDedupe::new()
            }
            Err(error) => {
                tracing::warn!(path = %path.display(), "dedupe store unreadable, starting empty: {error}");
                DeliveryDedupe::new()
            }
        };
        Self { path, dedupe }
    }

    /// Hands the store to the state writer (SPEC §15.6: the fsync runs on its thread,
    /// never on the router's caller). Nobody waits: the in-memory dedupe is the
    /// authority for this run, and the file — written in order, newest state winning —
    /// is for the next one. A failure is logged by the writer.
    pub fn save(&self) {
        drop(crate::state_writer::write_json(&self.path, &self.dedupe));
    }

    /// Forgets a delivery id so a retry is routed again, and saves.
    pub fn release(&mut self, id: &str) {
        if !id.is_empty() && self.dedupe.release(id) {
            self.save();
        }
    }
}
