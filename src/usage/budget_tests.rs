use super::*;
use crate::usage::Tokens;

fn tally(model: &str, input: u64) -> Tally {
    let mut t = Tally::default();
    t.add(
        "2026-12-03",
        model,
        &Tokens {
            input,
            ..Tokens::default()
        },
    );
    t
}

#[test]
fn standing_warns_at_80_and_holds_at_100_percent() {
    assert_eq!(Standing::of(7.99, Some(10.0)), Standing::Under);
    assert_eq!(Standing::of(8.0, Some(10.0)), Standing::Warning);
    assert_eq!(Standing::of(10.0, Some(10.0)), Standing::Over);
    assert_eq!(Standing::of(1e9, None), Standing::Under);
    // Sonnet input at $3 per million: 1M = $3.
    let budgets = Budgets {
        session_usd: Some(5.0),
        daily_usd: Some(100.0),
        prices: Prices::embedded(),
    };
    let small = tally("claude-sonnet-4-5", 1_000_000);
    let big = tally("claude-sonnet-4-5", 2_000_000);
    assert_eq!(budgets.standing(&small, &small), Standing::Under);
    assert_eq!(budgets.standing(&big, &big), Standing::Over);
    // The day's total over its budget holds a cheap session too.
    let day = tally("claude-sonnet-4-5", 40_000_000);
    assert_eq!(budgets.standing(&small, &day), Standing::Over);
    // An unknown cost neither warns nor holds.
    let unknown = tally("mystery", 1_000_000_000);
    assert_eq!(budgets.standing(&unknown, &unknown), Standing::Under);
}

#[test]
fn crossings_are_told_once_as_the_standing_rises() {
    let budgets = Budgets {
        session_usd: Some(5.0),
        daily_usd: None,
        prices: Prices::embedded(),
    };
    let a = tally("claude-sonnet-4-5", 1_000_000); // $3
    let b = tally("claude-sonnet-4-5", 1_400_000); // $4.20: warning
    let c = tally("claude-sonnet-4-5", 1_500_000); // $4.50: still warning
    let d = tally("claude-sonnet-4-5", 2_000_000); // $6: over
    let crossed = budgets.crossings((&a, &b), (&a, &b));
    assert_eq!(crossed.len(), 1);
    assert_eq!(crossed[0].scope, Scope::Session);
    assert_eq!(crossed[0].standing, Standing::Warning);
    assert!((crossed[0].cost_usd - 4.2).abs() < 1e-9);
    assert!(budgets.crossings((&b, &c), (&b, &c)).is_empty());
    let crossed = budgets.crossings((&c, &d), (&c, &d));
    assert_eq!(crossed[0].standing, Standing::Over);
    // Straight past both: told as over.
    let crossed = budgets.crossings((&a, &d), (&a, &d));
    assert_eq!(crossed.len(), 1);
    assert_eq!(crossed[0].standing, Standing::Over);
}

#[test]
fn an_unpriced_model_never_hides_a_budget_the_priced_part_reached() {
    let budgets = Budgets {
        session_usd: None,
        daily_usd: Some(5.0),
        prices: Prices::embedded(),
    };
    // $6 of Sonnet today, and a codex model without a price beside it.
    let mut day = tally("claude-sonnet-4-5", 2_000_000);
    day.merge(&tally("gpt-5-codex", 9_000_000));
    let session = tally("gpt-5-codex", 9_000_000);
    assert_eq!(budgets.standing(&session, &day), Standing::Over);
    assert_eq!(budgets.over(&session, &day), Some(Scope::Daily));
    let before = tally("claude-sonnet-4-5", 1_000_000);
    let crossed = budgets.crossings((&session, &session), (&before, &day));
    assert_eq!(crossed.len(), 1, "{crossed:?}");
    assert_eq!(crossed[0].scope, Scope::Daily);
}
