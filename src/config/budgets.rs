//! The config of usage and budgets (SPEC §20.2, §20.4): `budgets.dailyUsd` and
//! `pricing.models.<model id>`. (`sessions.budgetUsd` sits with the sessions.)

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct BudgetsConfig {
    /// Every session's cost today (local time), in USD; none when unset.
    pub daily_usd: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct PricingConfig {
    /// Prices by model id or id prefix (`claude-sonnet-4` matches dated ids), over the
    /// embedded table.
    pub models: BTreeMap<String, ModelPrice>,
}

/// USD per million tokens. The cache prices default to Anthropic's rule: writes 1.25 ×
/// (5 m) and 2 × (1 h) the input price, reads 0.1 ×.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelPrice {
    pub input: f64,
    pub output: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write5m: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write1h: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<f64>,
}

impl ModelPrice {
    /// Every price given, with its key.
    pub fn fields(&self) -> Vec<(&'static str, f64)> {
        let mut out = vec![("input", self.input), ("output", self.output)];
        for (k, v) in [
            ("cacheWrite5m", self.cache_write5m),
            ("cacheWrite1h", self.cache_write1h),
            ("cacheRead", self.cache_read),
        ] {
            if let Some(v) = v {
                out.push((k, v));
            }
        }
        out
    }
}
