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
