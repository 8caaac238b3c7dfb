use super::*;
use crate::config::ModelPrice;

fn tokens(input: u64, output: u64, w5m: u64, w1h: u64, read: u64) -> Tokens {
    Tokens {
        input,
        output,
        cache_write5m: w5m,
        cache_write1h: w1h,
        cache_read: read,
    }
}

#[test]
fn the_embedded_table_prices_anthropic_models_by_prefix() {
    let prices = Prices::embedded();
    let cases = [
        ("claude-opus-4-8", Some((5.0, 25.0))),
        ("claude-opus-4-5-20251101", Some((5.0, 25.0))),
        ("claude-opus-4-1-20250805", Some((15.0, 75.0))),
        ("claude-opus-4-20250514", Some((15.0, 75.0))),
        ("claude-sonnet-4-5-20250929", Some((3.0, 15.0))),
        ("claude-sonnet-4", Some((3.0, 15.0))),
        ("claude-haiku-4-5-20251001", Some((1.0, 5.0))),
        // Never guessed: a prefix matches only up to a `-`.
        ("claude-opus-4-10", None),
        ("claude-sonnet-45", None),
        ("gpt-5-codex", None),
        ("<synthetic>", None),
    ];
    for (model, want) in cases {
        let got = prices.of(model).map(|p| (p.input, p.output));
        assert_eq!(got, want, "{model}");
    }
    let sonnet = prices.of("claude-sonnet-4-5").unwrap();
    assert_eq!(sonnet.cache_write5m, 3.75);
    assert_eq!(sonnet.cache_write1h, 6.0);
    assert!((sonnet.cache_read - 0.3).abs() < 1e-12);
    // 1M of each kind on Sonnet: 3 + 15 + 3.75 + 6 + 0.3.
    let m = 1_000_000;
    assert!((sonnet.cost(&tokens(m, m, m, m, m)) - 28.05).abs() < 1e-9);
}

#[test]
fn the_config_extends_and_overrides_the_table() {
    let configured = std::collections::BTreeMap::from([
        (
            "claude-sonnet-4-5".to_string(),
            ModelPrice {
                input: 2.0,
                output: 10.0,
                cache_read: Some(0.0),
                ..ModelPrice::default()
            },
        ),
        (
            "gpt-5".to_string(),
            ModelPrice {
                input: 1.25,
                output: 10.0,
                ..ModelPrice::default()
            },
        ),
    ]);
    let prices = Prices::new(&configured);
    let sonnet = prices.of("claude-sonnet-4-5-20250929").unwrap();
    assert_eq!(
        (sonnet.input, sonnet.cache_write5m, sonnet.cache_read),
        (2.0, 2.5, 0.0)
    );
    // Other Sonnets keep the table's price.
    assert_eq!(prices.of("claude-sonnet-4-6").unwrap().input, 3.0);
    assert_eq!(prices.of("gpt-5-codex").unwrap().output, 10.0);
}

#[test]
fn an_unknown_model_makes_the_cost_unknown_never_zero() {
    let mut tally = Tally::default();
    tally.add(
        "2026-12-03",
        "claude-sonnet-4-5",
        &tokens(1_000_000, 0, 0, 0, 0),
    );
    let costed = Prices::embedded().cost(&tally);
    assert_eq!(costed.cost_usd(), Some(3.0));
    assert_eq!(costed.label(), "1.0M $3.00");
    tally.add("2026-12-03", "mystery-1", &tokens(200_000, 0, 0, 0, 0));
    let costed = Prices::embedded().cost(&tally);
    assert_eq!(costed.cost_usd(), None);
    assert!(!costed.known);
    assert_eq!(costed.unpriced().collect::<Vec<_>>(), ["mystery-1"]);
    assert_eq!(costed.label(), "1.2M $3.00+?");
    let json = serde_json::to_value(&costed).unwrap();
    assert_eq!(json["models"][1]["costUsd"], serde_json::Value::Null);
    assert_eq!(json["models"][1]["known"], false);
    assert_eq!(json["models"][1]["input"], 200_000);
    let mut only = Tally::default();
    only.add("2026-12-03", "mystery-1", &tokens(5, 0, 0, 0, 0));
    assert_eq!(Prices::embedded().cost(&only).label(), "5 $?");
}
