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

    /// How a session stands against each budget: its own (its whole cost) and the
    /// daily one (every session's cost today, `day_total`).
    fn standings(&self, session: &Tally, day_total: &Tally) -> [(Scope, Standing); 2] {
        [
            (Scope::Session, session, self.session_usd),
            (Scope::Daily, day_total, self.daily_usd),
        ]
        .map(|(scope, tally, budget)| (scope, Standing::of(self.priced_cost(tally), budget)))
    }

    /// How a session stands: the worse of its two standings.
    pub fn standing(&self, session: &Tally, day_total: &Tally) -> Standing {
        let [(_, own), (_, daily)] = self.standings(session, day_total);
        own.max(daily)
    }

    /// The budget that holds a session's deliveries, if one is reached: its own first.
    pub fn over(&self, session: &Tally, day_total: &Tally) -> Option<Scope> {
        self.standings(session, day_total)
            .into_iter()
            .find(|(_, standing)| *standing == Standing::Over)
            .map(|(scope, _)| scope)
    }

    /// What `tally` is known to cost: its priced models' cost. A model without a price
    /// adds nothing (never guessed), so a budget the priced part reaches is reached for
    /// certain, and a cost wholly unknown never warns nor holds.
    pub fn priced_cost(&self, tally: &Tally) -> f64 {
        self.prices.cost(tally).known_usd
    }

    /// The budgets whose standing rose from `before` to `after` (a session's tally and
    /// the day's total, each before and after a refresh).
    pub fn crossings(&self, session: (&Tally, &Tally), daily: (&Tally, &Tally)) -> Vec<Crossing> {
        [(Scope::Session, session), (Scope::Daily, daily)]
            .into_iter()
            .filter_map(|(scope, (before, after))| {
                let budget = self.budget(scope);
                let was = Standing::of(self.priced_cost(before), budget);
                crossing(scope, was, self.priced_cost(after), budget)
            })
            .collect()
    }

    /// The crossing of `scope`'s budget by the same figures (`tally`: the session's, or
    /// the day's total) when the budgets in force became these from `old`: a reload that
    /// lowered a budget, or priced a model.
    pub fn crossed_by_change(
        &self,
        old: &Budgets,
        scope: Scope,
        tally: &Tally,
    ) -> Option<Crossing> {
        let was = Standing::of(old.priced_cost(tally), old.budget(scope));
        crossing(scope, was, self.priced_cost(tally), self.budget(scope))
    }

    fn budget(&self, scope: Scope) -> Option<f64> {
        match scope {
            Scope::Session => self.session_usd,
            Scope::Daily => self.daily_usd,
        }
    }
}

/// `cost_usd` against `budget`, when that stands higher than `was`.
fn crossing(scope: Scope, was: Standing, cost_usd: f64, budget: Option<f64>) -> Option<Crossing> {
    let budget_usd = budget?;
    let standing = Standing::of(cost_usd, Some(budget_usd));
    (standing > was).then_some(Crossing {
        scope,
        standing,
        cost_usd,
        budget_usd,
    })
}

#[cfg(test)]
#[path = "budget_tests.rs"]
mod tests;
