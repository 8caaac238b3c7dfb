//! What was counted, by local day and model: the unit every view sums (the Sessions
//! column, `the-loop usage --by day|model`, the daily budget).

use super::tokens::Tokens;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Tokens by day (`YYYY-MM-DD`, local) and model.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Tally(pub BTreeMap<String, BTreeMap<String, Tokens>>);

impl Tally {
    pub fn add(&mut self, day: &str, model: &str, tokens: &Tokens) {
        if tokens.is_zero() {
            return;
        }
        self.0
            .entry(day.to_string())
            .or_default()
            .entry(model.to_string())
            .or_default()
            .add(tokens);
    }

    pub fn merge(&mut self, other: &Tally) {
        for (day, models) in &other.0 {
            for (model, tokens) in models {
                self.add(day, model, tokens);
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The days from `since` on (`None`: every day).
    pub fn since(&self, since: Option<&str>) -> Tally {
        Tally(
            self.0
                .iter()
                .filter(|(day, _)| since.is_none_or(|s| day.as_str() >= s))
                .map(|(d, m)| (d.clone(), m.clone()))
                .collect(),
        )
    }

    /// One day only.
    pub fn day(&self, day: &str) -> Tally {
        Tally(
            self.0
                .get(day)
                .map(|m| BTreeMap::from([(day.to_string(), m.clone())]))
                .unwrap_or_default(),
        )
    }

    /// Tokens by model, over every day.
    pub fn by_model(&self) -> BTreeMap<String, Tokens> {
        let mut out: BTreeMap<String, Tokens> = BTreeMap::new();
        for models in self.0.values() {
            for (model, tokens) in models {
                out.entry(model.clone()).or_default().add(tokens);
            }
        }
        out
    }

    /// Every token counted.
    pub fn tokens(&self) -> Tokens {
        let mut out = Tokens::default();
        for t in self.by_model().values() {
            out.add(t);
        }
        out
    }
}
