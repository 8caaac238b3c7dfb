//! Budgets (SPEC §20.4): `sessions.budgetUsd` per session and `budgets.dailyUsd` over
//! every session's cost today (local time). At 80 % the operator is warned; at 100 %
//! the session's deliveries are held. Only a cost known in full is held against a
//! budget: an unpriced model makes the figure unknown, and an unknown figure neither
//! warns nor holds (`config check` names the model to price).

use super::pricing::Prices;
use super::tally::Tally;
use crate::config::Config;

/// The share of a budget that warns.
pub const WARN_AT: f64 = 0.8;

/// Where a cost stands against a budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Standing {
    Under,
    /// 80 % or more.
    Warning,
    /// 100 % or more: deliveries are held.
    Over,
}

impl Standing {
    pub fn of(cost: f64, budget: Option<f64>) -> Self {
        match budget {
            Some(b) if cost >= b => Self::Over,
            Some(b) if cost >= b * WARN_AT => Self::Warning,
            _ => Self::Under,
        }
    }
}

/// The budgets and prices in force.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Budgets {
    pub session_usd: Option<f64>,
    pub daily_usd: Option<f64>,
    pub prices: Prices,
}

/// Which budget a figure is held against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Session,
    Daily,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Session => "session",
            Self::Daily => "daily",
        }
    }
}

/// A budget whose standing rose.
#[derive(Debug, Clone, PartialEq)]
pub struct Crossing {
    pub scope: Scope,
    pub standing: Standing,
    pub cost_usd: f64,
    pub budget_usd: f64,
}

impl Budgets {
    pub fn from_config(config: &Config) -> Self {
        Self {
            session_usd: config.sessions.budget_usd,
            daily_usd: config.budgets.daily_usd,
            prices: Prices::new(&config.pricing.models),
        }
    }

    /// How a session stands: the worse of its own budget (its whole cost) and the
    /// daily one (every session's cost today, `day_total`).
    pub fn standing(&self, session: &Tally, day_total: &Tally) -> Standing {
        let own = self.known_cost(session);
        let daily = self.known_cost(day_total);
        let own = own.map_or(Standing::Under, |c| Standing::of(c, self.session_usd));
        let daily = daily.map_or(Standing::Under, |c| Standing::of(c, self.daily_usd));
        own.max(daily)
    }

    /// The cost of `tally`, `None` when a model in it has no price.
    pub fn known_cost(&self, tally: &Tally) -> Option<f64> {
        self.prices.cost(tally).cost_usd()
    }

    /// The budgets whose standing rose from `before` to `after` (a session's tally and
    /// the day's total, each before and after a refresh).
    pub fn crossings(&self, session: (&Tally, &Tally), daily: (&Tally, &Tally)) -> Vec<Crossing> {
        let mut out = Vec::new();
        for (scope, (before, after), budget) in [
            (Scope::Session, session, self.session_usd),
            (Scope::Daily, daily, self.daily_usd),
        ] {
            let Some(budget_usd) = budget else { continue };
            let (Some(was), Some(now)) = (self.known_cost(before), self.known_cost(after)) else {
                continue;
            };
            let standing = Standing::of(now, Some(budget_usd));
            if standing > Standing::of(was, Some(budget_usd)) {
                out.push(Crossing {
                    scope,
                    standing,
                    cost_usd: now,
                    budget_usd,
                });
            }
        }
        out
    }
}

#[cfg(test)]
#[path = "budget_tests.rs"]
mod tests;
