//! The excerpt is on the delivery hot path. Targets: under ~1.8 µs for a typical comment
//! and ~9 µs for one with a 200 KB body (10× the Python reference), payloads already
//! parsed into a `Value`.

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::Value;
use std::hint::black_box;
use the_loop::routing::excerpt::excerpt;

const COMMENT: &str = include_str!("../tests/fixtures/webhook/issue_comment.created.json");

fn comment_with_body(body: String) -> Value {
    let mut payload: Value = serde_json::from_str(COMMENT).expect("fixture parses");
    payload["comment"]["body"] = Value::String(body);
    payload
}

fn bench(c: &mut Criterion) {
    let typical: Value = serde_json::from_str(COMMENT).expect("fixture parses");
    c.bench_function("excerpt/typical_comment", |b| {
        b.iter(|| excerpt(black_box("issue_comment"), black_box(&typical)))
    });

    // Prose as people write it: lines, punctuation, the odd backtick and accent.
    let line = "Retry with `backoff` when the API says 429 — see the logs above.\n";
    let prose = line.repeat(200_000 / line.len() + 1);
    let big = comment_with_body(prose);
    c.bench_function("excerpt/comment_200kb_body", |b| {
        b.iter(|| excerpt(black_box("issue_comment"), black_box(&big)))
    });

    // Worst case for the fitting loop: every character escapes, so the cap halves.
    let quotes = comment_with_body("\"".repeat(200_000));
    c.bench_function("excerpt/comment_200kb_escaped_body", |b| {
        b.iter(|| excerpt(black_box("issue_comment"), black_box(&quotes)))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
