//! The router on typical events: an authorized comment on a PR that closes an issue (the
//! longest path: extraction with closing keywords, both guards, the keyword scan), a
//! refused stranger's comment, and a CI failure. Run:
//! `cargo bench --bench router -- --measurement-time 3`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::Value;
use the_loop::config::RoutingConfig;
use the_loop::routing::extract::work_items;
use the_loop::routing::{DeliveryDedupe, EnabledEvents, Inbound, RouterConfig, route};

fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/webhook/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(&path).expect(&path)).unwrap()
}

fn bench_router(c: &mut Criterion) {
    let routing = RoutingConfig {
        authorized_users: vec!["alice".into(), "bob".into(), "carol-ops".into()],
        ..RoutingConfig::default()
    };
    let config = RouterConfig::new(&routing, EnabledEvents::all()).watching(["octo/repo"]);
    let cases = [
        ("issue_comment", "issue_comment.created.on_pr"),
        ("issue_comment", "issue_comment.created.unauthorized"),
        ("check_run", "check_run.completed.failure"),
    ];
    for (event, name) in cases {
        let payload = fixture(name);
        // 4096 ids in rotation against a 1024-id dedupe: every id has been evicted before
        // it comes back, so each event takes the full path, and the dedupe stays full (and
        // evicting) as in a long-running supervisor.
        let ids: Vec<String> = (0..4096).map(|n| format!("delivery-{n}")).collect();
        let mut dedupe = DeliveryDedupe::new();
        let mut next = 0usize;
        c.bench_function(&format!("route/{name}"), |b| {
            b.iter(|| {
                let id = &ids[next % ids.len()];
                next += 1;
                let inbound = Inbound::from_webhook(event, id, black_box(&payload));
                black_box(route(&inbound, &config, &mut dedupe))
            })
        });
    }
    let pr = fixture("pull_request.closed.merged");
    c.bench_function("work_items/pull_request", |b| {
        b.iter(|| black_box(work_items("pull_request", black_box(&pr))))
    });
}

criterion_group!(benches, bench_router);
criterion_main!(benches);
