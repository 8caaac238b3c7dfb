//! Live reload: editing `routing.authorizedUsers` while the supervisor runs changes who
//! is obeyed, without a restart; a broken edit keeps the old config.

use crate::support::e2e::{Setup, World};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn editing_authorized_users_changes_who_is_obeyed() {
    let w = World::supervising(Setup::default(), 15).await;

    let before = w.comment(15, "bob", "BOB-BEFORE-TEXT");
    let delivery = format!("poll-comment-{before}");
    w.wait_event("routing.dropped", |e| {
        e["delivery_id"] == delivery.as_str() && e["reason"] == "unauthorized-actor"
    })
    .await;

    // Bob in, alice out.
    w.write_config(&Setup {
        authorized: vec!["bob".into()],
        ..Setup::default()
    });
    let reloaded = w
        .wait_event("config.reloaded", |e| e["sections"][0] == "routing")
        .await;
    assert_eq!(reloaded["authorized_users"], 1);
    w.comment(15, "bob", "BOB-AFTER-TEXT");
    let alice = w.comment(15, "alice", "ALICE-AFTER-TEXT");
    w.wait_pasted("BOB-AFTER-TEXT").await;
    let delivery = format!("poll-comment-{alice}");
    w.wait_event("routing.dropped", |e| {
        e["delivery_id"] == delivery.as_str() && e["reason"] == "unauthorized-actor"
    })
    .await;

    // A broken file changes nothing: bob is still obeyed.
    std::fs::write(&w.config, "routing:\n  authorizedUsers: alice, [\n").unwrap();
    w.wait_event("config.reload_failed", |_| true).await;
    w.comment(15, "bob", "BOB-STILL-TEXT");
    w.wait_pasted("BOB-STILL-TEXT").await;

    assert_eq!(w.pasted_count("BOB-BEFORE-TEXT"), 0);
    assert_eq!(w.pasted_count("ALICE-AFTER-TEXT"), 0);
    assert_eq!(w.pasted_count("BOB-AFTER-TEXT"), 1);
}

/// Lowering a budget below what is spent (SPEC §20.4, issue 42): the reload itself tells
/// the crossing — `session.over_budget`, logged by the supervisor that reloaded — as a
/// turn's usage crossing it would, not only the next delivery's hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lowering_the_daily_budget_below_todays_cost_tells_the_crossing() {
    use the_loop::events::{EventLog, Source};
    use the_loop::paths::StatePaths;
    use the_loop::session::Registry;
    use the_loop::work_item::WorkItemRef;
    let budget = |usd: &str| Setup {
        extra_yaml: format!("budgets:\n  dailyUsd: {usd}\n"),
        ..Setup::default()
    };
    let w = World::supervising(budget("10"), 15).await;
    // Today the session spent $1.00: a million input tokens of Haiku 4.5 ($1 / M).
    let transcript = w.home.join("transcript.jsonl");
    let line = format!(
        r#"{{"isSidechain":false,"message":{{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{{"type":"text","text":"ok"}}],"usage":{{"input_tokens":1000000,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}}},"requestId":"req_1","type":"assistant","timestamp":"{}"}}"#,
        the_loop::time::now_ts()
    );
    std::fs::write(&transcript, line + "\n").unwrap();
    let paths = StatePaths::new(&w.home);
    let registry = Registry::new(&paths, EventLog::open(&paths), Source::Cli);
    let item = WorkItemRef::new("octo", "repo", 15);
    registry
        .update(&item, |r| {
            r.usage
                .follow(transcript.clone(), the_loop::usage::reader::Format::Claude);
        })
        .unwrap();
    let read = the_loop::session::usage::refresh(&registry, &item, None)
        .unwrap()
        .unwrap();
    assert_eq!(read.after.tokens().input, 1_000_000);
    assert!(w.events_named("session.over_budget").is_empty());

    w.write_config(&budget("0.9"));
    let over = w
        .wait_event("session.over_budget", |e| e["scope"] == "daily")
        .await;
    assert_eq!(over["work_item"], "github:octo/repo#15");
    assert_eq!(over["budget_usd"], 0.9);
    assert_eq!(over["source"], "cli", "the supervisor's reload told it");
    assert_eq!(w.events_named("session.budget_warning").len(), 0);
}
