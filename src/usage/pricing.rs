//! What tokens cost (SPEC §20.2): a per-model table in USD per million tokens,
//! embedded with its as-of date and source, extended or overridden by
//! `pricing.models.<id>` in the config. A model neither knows is priced as unknown —
//! never guessed, never 0.
//!
//! An id matches an entry equal to it or starting with it followed by `-` (so
//! `claude-sonnet-4` prices `claude-sonnet-4-5-20250929`); the longest match wins, the
//! config's before the table's.

use super::tally::Tally;
use super::tokens::Tokens;
use crate::config::ModelPrice;
use serde::Serialize;
use std::collections::BTreeMap;

/// When the embedded table was checked against its source.
pub const AS_OF: &str = "2026-12-03";

/// Where the embedded prices come from.
pub const SOURCE: &str = "Anthropic's published API prices, https://www.anthropic.com/pricing#api \
     (cache write 5 m = 1.25 × input, 1 h = 2 × input, cache read = 0.1 × input)";

/// `(id prefix, input, output)` in USD per million tokens.
const TABLE: &[(&str, f64, f64)] = &[
    ("claude-opus-4-5", 5.0, 25.0),
    ("claude-opus-4-6", 5.0, 25.0),
    ("claude-opus-4-7", 5.0, 25.0),
    ("claude-opus-4-8", 5.0, 25.0),
    ("claude-opus-4-9", 5.0, 25.0),
    ("claude-opus-4-1", 15.0, 75.0),
    ("claude-opus-4-0", 15.0, 75.0),
    ("claude-opus-4-20250514", 15.0, 75.0),
    ("claude-sonnet-4", 3.0, 15.0),
    ("claude-haiku-4-5", 1.0, 5.0),
];

/// USD per million tokens of each kind.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Price {
    pub input: f64,
    pub output: f64,
    pub cache_write5m: f64,
    pub cache_write1h: f64,
    pub cache_read: f64,
}

impl Price {
    /// Anthropic's rule: cache writes 1.25 × and 2 × input, cache reads 0.1 × input.
    pub fn from_input_output(input: f64, output: f64) -> Self {
        Self {
            input,
            output,
            cache_write5m: input * 1.25,
            cache_write1h: input * 2.0,
            cache_read: input * 0.1,
        }
    }

    fn from_config(p: &ModelPrice) -> Self {
        let base = Self::from_input_output(p.input, p.output);
        Self {
            cache_write5m: p.cache_write5m.unwrap_or(base.cache_write5m),
            cache_write1h: p.cache_write1h.unwrap_or(base.cache_write1h),
            cache_read: p.cache_read.unwrap_or(base.cache_read),
            ..base
        }
    }

    /// USD for `tokens`.
    #[allow(clippy::cast_precision_loss)]
    pub fn cost(&self, tokens: &Tokens) -> f64 {
        (tokens.input as f64 * self.input
            + tokens.output as f64 * self.output
            + tokens.cache_write5m as f64 * self.cache_write5m
            + tokens.cache_write1h as f64 * self.cache_write1h
            + tokens.cache_read as f64 * self.cache_read)
            / 1_000_000.0
    }
}

/// The prices in force: the embedded table under the config's entries.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prices {
    configured: BTreeMap<String, ModelPrice>,
}

impl Prices {
    pub fn new(configured: &BTreeMap<String, ModelPrice>) -> Self {
        Self {
            configured: configured.clone(),
        }
    }

    /// The embedded table alone.
    pub fn embedded() -> Self {
        Self::default()
    }

    /// The price of `model`, `None` when neither the config nor the table knows it.
    pub fn of(&self, model: &str) -> Option<Price> {
        let configured = longest(self.configured.iter().map(|(k, v)| (k.as_str(), v)), model)
            .map(Price::from_config);
        configured.or_else(|| {
            longest(TABLE.iter().map(|(k, i, o)| (*k, (i, o))), model)
                .map(|(i, o)| Price::from_input_output(*i, *o))
        })
    }

    /// The cost of a tally, model by model.
    pub fn cost(&self, tally: &Tally) -> Costed {
        let models: Vec<ModelCost> = tally
            .by_model()
            .into_iter()
            .map(|(model, tokens)| {
                let cost_usd = self.of(&model).map(|p| p.cost(&tokens));
                ModelCost {
                    model,
                    tokens,
                    cost_usd,
                    known: cost_usd.is_some(),
                }
            })
            .collect();
        Costed::new(models)
    }
}

fn longest<'a, V>(entries: impl Iterator<Item = (&'a str, V)>, model: &str) -> Option<V> {
    entries
        .filter(|(prefix, _)| matches(prefix, model))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, v)| v)
}

/// `model` is `prefix`, or `prefix` then `-` and more.
pub fn matches(prefix: &str, model: &str) -> bool {
    model
        .strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
}

/// A tally priced.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Costed {
    pub models: Vec<ModelCost>,
    /// Every model's tokens.
    pub tokens: Tokens,
    /// The priced models' cost.
    pub known_usd: f64,
    /// `false` when some model has no price: the total cost is then unknown.
    pub known: bool,
}

/// One model's tokens and cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCost {
    pub model: String,
    #[serde(flatten)]
    pub tokens: Tokens,
    /// `null` when the model has no price.
    pub cost_usd: Option<f64>,
    pub known: bool,
}

impl Costed {
    pub fn new(models: Vec<ModelCost>) -> Self {
        let mut tokens = Tokens::default();
        for m in &models {
            tokens.add(&m.tokens);
        }
        Self {
            known_usd: models.iter().filter_map(|m| m.cost_usd).sum(),
            known: models.iter().all(|m| m.known),
            tokens,
            models,
        }
    }

    /// The whole cost, `None` when some model has no price.
    pub fn cost_usd(&self) -> Option<f64> {
        self.known.then_some(self.known_usd)
    }

    /// The models without a price.
    pub fn unpriced(&self) -> impl Iterator<Item = &str> {
        self.models
            .iter()
            .filter(|m| !m.known)
            .map(|m| m.model.as_str())
    }

    /// As `sessions list --json` and `the-loop usage --json` show it: per model the four
    /// token kinds (cache writes by lifetime), `costUsd` and `known`; then the totals.
    pub fn to_json(&self) -> serde_json::Value {
        let t = &self.tokens;
        serde_json::json!({
            "models": self.models,
            "tokens": t.total(),
            "input": t.input,
            "output": t.output,
            "cacheWrite5m": t.cache_write5m,
            "cacheWrite1h": t.cache_write1h,
            "cacheRead": t.cache_read,
            "costUsd": self.cost_usd(),
            "known": self.known,
        })
    }

    /// `1.2M $3.41`; `1.2M $?` when nothing is priced, `1.2M $3.41+?` when part is.
    pub fn label(&self) -> String {
        let tokens = super::tokens::short(self.tokens.total());
        let priced = self.models.iter().any(|m| m.known);
        match (self.known, priced) {
            (true, _) => format!("{tokens} ${:.2}", self.known_usd),
            (false, true) => format!("{tokens} ${:.2}+?", self.known_usd),
            (false, false) => format!("{tokens} $?"),
        }
    }
}

#[cfg(test)]
#[path = "pricing_tests.rs"]
mod tests;
