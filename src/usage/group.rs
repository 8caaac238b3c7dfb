//! `the-loop usage --by item|repo|day|model`: sessions' tallies grouped (pure).

use super::tally::Tally;
use crate::work_item::WorkItemRef;
use std::collections::BTreeMap;

/// What rows are keyed by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum By {
    #[default]
    Item,
    Repo,
    Day,
    Model,
}

impl By {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Item => "item",
            Self::Repo => "repo",
            Self::Day => "day",
            Self::Model => "model",
        }
    }
}

/// Each session's tally from `since` on (a local day), grouped `by`; rows in key order.
pub fn group(
    sessions: &[(WorkItemRef, Tally)],
    by: By,
    since: Option<&str>,
) -> Vec<(String, Tally)> {
    let mut out: BTreeMap<String, Tally> = BTreeMap::new();
    for (item, tally) in sessions {
        let tally = tally.since(since);
        match by {
            By::Item => out.entry(item.to_string()).or_default().merge(&tally),
            By::Repo => out.entry(item.repo_full_name()).or_default().merge(&tally),
            By::Day | By::Model => {
                for (day, models) in &tally.0 {
                    for (model, tokens) in models {
                        let key = if by == By::Day { day } else { model };
                        out.entry(key.clone()).or_default().add(day, model, tokens);
                    }
                }
            }
        }
    }
    out.into_iter().filter(|(_, t)| !t.is_empty()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::Tokens;

    #[test]
    fn rows_by_each_key_and_since_a_day() {
        let t = |day: &str, model: &str, input: u64| {
            let mut tally = Tally::default();
            tally.add(
                day,
                model,
                &Tokens {
                    input,
                    ..Tokens::default()
                },
            );
            tally
        };
        let mut a = t("2026-12-01", "claude-opus-4-8", 10);
        a.merge(&t("2026-12-02", "claude-haiku-4-5", 5));
        let b = t("2026-12-02", "claude-opus-4-8", 7);
        let c = t("2026-12-02", "claude-opus-4-8", 1);
        let sessions = vec![
            (WorkItemRef::new("octo", "repo", 1), a),
            (WorkItemRef::new("octo", "repo", 2), b),
            (WorkItemRef::new("octo", "other", 3), c),
        ];
        let keys = |rows: Vec<(String, Tally)>| -> Vec<(String, u64)> {
            rows.into_iter()
                .map(|(k, t)| (k, t.tokens().input))
                .collect()
        };
        assert_eq!(
            keys(group(&sessions, By::Item, None)),
            [
                ("github:octo/other#3".into(), 1),
                ("github:octo/repo#1".into(), 15),
                ("github:octo/repo#2".into(), 7)
            ]
        );
        assert_eq!(
            keys(group(&sessions, By::Repo, None)),
            [("octo/other".into(), 1), ("octo/repo".into(), 22)]
        );
        assert_eq!(
            keys(group(&sessions, By::Day, None)),
            [("2026-12-01".into(), 10), ("2026-12-02".into(), 13)]
        );
        assert_eq!(
            keys(group(&sessions, By::Model, Some("2026-12-02"))),
            [
                ("claude-haiku-4-5".into(), 5),
                ("claude-opus-4-8".into(), 8)
            ]
        );
    }
}
