//! Token counts of the four kinds a response is billed for, with the cache writes of
//! its two lifetimes apart (SPEC §20.1).

use serde::{Deserialize, Serialize};

/// Tokens of one response, or a sum of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    /// Cache writes kept 5 minutes (billed 1.25 × input).
    pub cache_write5m: u64,
    /// Cache writes kept 1 hour (billed 2 × input).
    pub cache_write1h: u64,
    pub cache_read: u64,
}

impl Tokens {
    /// Every token of every kind.
    pub fn total(&self) -> u64 {
        self.input
            .saturating_add(self.output)
            .saturating_add(self.cache_write5m)
            .saturating_add(self.cache_write1h)
            .saturating_add(self.cache_read)
    }

    pub fn is_zero(&self) -> bool {
        self.total() == 0
    }

    pub fn add(&mut self, other: &Tokens) {
        self.input = self.input.saturating_add(other.input);
        self.output = self.output.saturating_add(other.output);
        self.cache_write5m = self.cache_write5m.saturating_add(other.cache_write5m);
        self.cache_write1h = self.cache_write1h.saturating_add(other.cache_write1h);
        self.cache_read = self.cache_read.saturating_add(other.cache_read);
    }

    /// What `later` holds beyond `self`, kind by kind (never below zero): the part of a
    /// repeated response's usage not counted yet.
    pub fn growth_to(&self, later: &Tokens) -> Tokens {
        Tokens {
            input: later.input.saturating_sub(self.input),
            output: later.output.saturating_sub(self.output),
            cache_write5m: later.cache_write5m.saturating_sub(self.cache_write5m),
            cache_write1h: later.cache_write1h.saturating_sub(self.cache_write1h),
            cache_read: later.cache_read.saturating_sub(self.cache_read),
        }
    }

    /// The larger of each kind.
    pub fn max(&self, other: &Tokens) -> Tokens {
        Tokens {
            input: self.input.max(other.input),
            output: self.output.max(other.output),
            cache_write5m: self.cache_write5m.max(other.cache_write5m),
            cache_write1h: self.cache_write1h.max(other.cache_write1h),
            cache_read: self.cache_read.max(other.cache_read),
        }
    }
}

/// `1.2M`, `34.5k`, `812`: a token count in a few characters.
pub fn short(n: u64) -> String {
    #[allow(clippy::cast_precision_loss)]
    let f = n as f64;
    if n >= 1_000_000 {
        format!("{:.1}M", f / 1_000_000.0)
    } else if n >= 1_000 {
        format!("{:.1}k", f / 1_000.0)
    } else {
        n.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_growth_and_short_forms() {
        let a = Tokens {
            input: 10,
            output: 5,
            cache_write5m: 1,
            cache_write1h: 2,
            cache_read: 3,
        };
        assert_eq!(a.total(), 21);
        let mut b = a;
        b.add(&a);
        assert_eq!(b.input, 20);
        let grown = Tokens { output: 9, ..a };
        assert_eq!(
            a.growth_to(&grown),
            Tokens {
                output: 4,
                ..Tokens::default()
            }
        );
        assert_eq!(grown.growth_to(&a), Tokens::default());
        assert_eq!(short(812), "812");
        assert_eq!(short(34_567), "34.6k");
        assert_eq!(short(1_234_567), "1.2M");
        let json = serde_json::to_value(a).unwrap();
        assert_eq!(json["cacheWrite5m"], 1);
        assert_eq!(json["cacheWrite1h"], 2);
        assert_eq!(json["cacheRead"], 3);
    }
}
