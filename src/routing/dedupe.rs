//! The delivery-id dedupe (SPEC §3.3, §4.2): the router's only state. GitHub redelivers
//! webhooks and the poller re-reads an overlap window, so the same delivery can arrive
//! twice; the second one is dropped as `duplicate-delivery`.

use std::collections::{HashSet, VecDeque};

use serde_json::Value;

/// The dedupe key of a CI result (SPEC §14.3): `ci:<event kind>:<run or check id>:<conclusion>`,
/// so one run's result is delivered once however many deliveries carry it — a webhook
/// replayed under new delivery ids, or the polled `check_run` twin
/// (`poll-check-run-<id>`), which is shaped like the webhook and so gets the same key.
/// A re-run of a workflow (`run_attempt`) is a new result. `None` when the payload
/// names no id: only the delivery id dedupes it then.
///
/// Kept in the same bounded, persisted store as delivery ids (the prefix keeps the two
/// apart: GitHub's delivery ids are GUIDs, the poller's start with `poll-`).
pub fn ci_dedupe_key(gh_event: &str, payload: &Value) -> Option<String> {
    let (object, result) = match gh_event {
        "workflow_run" | "check_run" | "check_suite" => (&payload[gh_event], "conclusion"),
        "status" => (payload, "state"),
        _ => return None,
    };
    let id = object["id"].as_u64()?;
    let result = object[result].as_str().unwrap_or("");
    let run = match object["run_attempt"].as_u64() {
        Some(attempt) if gh_event == "workflow_run" => format!("{id}.{attempt}"),
        _ => id.to_string(),
    };
    Some(format!(
        "ci:{gh_event}:{run}:{}",
        result.to_ascii_lowercase()
    ))
}

/// How many recent delivery ids are remembered (and persisted).
pub const DEDUPE_CAPACITY: usize = 1024;

/// A bounded least-recently-seen set of delivery ids. Recording a new id is O(1);
/// seeing a duplicate again refreshes it (O(capacity), and duplicates are rare).
///
/// Persist it with [`DeliveryDedupe::export`] / [`DeliveryDedupe::import`] (or serde,
/// which writes the same list, oldest first).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(from = "Vec<String>", into = "Vec<String>")]
pub struct DeliveryDedupe {
    capacity: usize,
    /// Oldest first.
    order: VecDeque<Box<str>>,
    seen: HashSet<Box<str>>,
}

impl Default for DeliveryDedupe {
    fn default() -> Self {
        Self::new()
    }
}

impl DeliveryDedupe {
    /// Remembers the last [`DEDUPE_CAPACITY`] ids.
    pub fn new() -> Self {
        Self::with_capacity(DEDUPE_CAPACITY)
    }

    /// Remembers the last `capacity` ids (at least one).
    pub fn with_capacity(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Self {
            capacity,
            order: VecDeque::with_capacity(capacity),
            seen: HashSet::with_capacity(capacity),
        }
    }

    /// Restores a persisted list (oldest first), keeping the newest [`DEDUPE_CAPACITY`].
    pub fn import<I, S>(ids: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut dedupe = Self::new();
        for id in ids {
            dedupe.first_sighting(id.as_ref());
        }
        dedupe
    }

    /// The remembered ids, oldest first, for persistence.
    pub fn export(&self) -> Vec<String> {
        self.order.iter().map(|id| id.to_string()).collect()
    }

    /// Records `id` and returns true the first time; returns false (and refreshes the id)
    /// when it is already remembered. The least recently seen id is evicted when full.
    pub fn first_sighting(&mut self, id: &str) -> bool {
        if self.seen.contains(id) {
            if let Some(at) = self.order.iter().position(|seen| &**seen == id)
                && let Some(existing) = self.order.remove(at)
            {
                self.order.push_back(existing);
            }
            return false;
        }
        while self.order.len() >= self.capacity {
            match self.order.pop_front() {
                Some(oldest) => {
                    self.seen.remove(&oldest);
                }
                None => break,
            }
        }
        let id: Box<str> = id.into();
        self.seen.insert(id.clone());
        self.order.push_back(id);
        true
    }

    /// The length and the newest id: changes whenever an id is recorded (or a
    /// duplicate refreshed), so a caller knows when to persist.
    pub fn fingerprint(&self) -> (usize, Option<Box<str>>) {
        (self.order.len(), self.order.back().cloned())
    }

    pub fn contains(&self, id: &str) -> bool {
        self.seen.contains(id)
    }

    /// Forgets `id` so a later redelivery is routed again: the dispatcher releases the id
    /// of a delivery that failed transiently, so the poller's retry is not a duplicate.
    pub fn release(&mut self, id: &str) -> bool {
        if !self.seen.remove(id) {
            return false;
        }
        self.order.retain(|seen| &**seen != id);
        true
    }

    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

impl From<Vec<String>> for DeliveryDedupe {
    fn from(ids: Vec<String>) -> Self {
        Self::import(ids)
    }
}

impl From<DeliveryDedupe> for Vec<String> {
    fn from(dedupe: DeliveryDedupe) -> Self {
        dedupe.export()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: usize) -> String {
        format!("delivery-{n}")
    }

    #[test]
    fn second_sighting_is_a_duplicate() {
        let mut d = DeliveryDedupe::new();
        assert!(d.first_sighting("a"));
        assert!(!d.first_sighting("a"));
        assert!(d.first_sighting("b"));
        assert!(d.first_sighting("A"), "ids are case-sensitive");
        assert_eq!(d.len(), 3);
    }

    #[test]
    fn the_1025th_id_evicts_the_first() {
        let mut d = DeliveryDedupe::new();
        for n in 1..=DEDUPE_CAPACITY {
            assert!(d.first_sighting(&id(n)));
        }
        assert_eq!(d.len(), 1024);
        assert!(d.contains(&id(1)));
        assert!(d.first_sighting(&id(1025)));
        assert_eq!(d.len(), 1024);
        assert!(!d.contains(&id(1)), "the first id was evicted");
        assert!(d.contains(&id(2)));
        assert!(d.contains(&id(1025)));
        assert!(d.first_sighting(&id(1)), "an evicted id is new again");
        assert!(!d.contains(&id(2)));
    }

    #[test]
    fn a_duplicate_is_refreshed() {
        let mut d = DeliveryDedupe::with_capacity(3);
        for n in 1..=3 {
            d.first_sighting(&id(n));
        }
        assert!(!d.first_sighting(&id(1)));
        d.first_sighting(&id(4));
        assert!(d.contains(&id(1)), "recently seen ids survive");
        assert!(!d.contains(&id(2)), "the least recently seen id goes");
        assert_eq!(d.export(), vec![id(3), id(1), id(4)]);
    }

    #[test]
    fn export_and_import_round_trip() {
        let mut d = DeliveryDedupe::new();
        for n in 0..10 {
            d.first_sighting(&id(n));
        }
        let list = d.export();
        assert_eq!(list.first(), Some(&id(0)));
        let back = DeliveryDedupe::import(&list);
        assert_eq!(back, d);
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(json, serde_json::to_string(&list).unwrap());
        let parsed: DeliveryDedupe = serde_json::from_str(&json).unwrap();
        assert_eq!(parsed, d);
    }

    #[test]
    fn import_keeps_the_newest() {
        let list: Vec<String> = (0..2000).map(id).collect();
        let d = DeliveryDedupe::import(&list);
        assert_eq!(d.len(), DEDUPE_CAPACITY);
        assert!(!d.contains(&id(975)));
        assert!(d.contains(&id(976)));
        assert!(d.contains(&id(1999)));
        let dupes = DeliveryDedupe::import(["x", "y", "x"]);
        assert_eq!(dupes.export(), vec!["y", "x"]);
    }

    #[test]
    fn release_forgets_an_id() {
        let mut d = DeliveryDedupe::new();
        d.first_sighting("a");
        d.first_sighting("b");
        assert!(d.release("a"));
        assert!(!d.release("a"));
        assert_eq!(d.export(), vec!["b"]);
        assert!(d.first_sighting("a"));
    }
}
