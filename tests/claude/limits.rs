//! Limits (issue 43) against the real Claude Code and the fake model answering 429:
//! the turn fails (its own retries spent), the `StopFailure` hook records the limit,
//! comments during it are held and none reaches the model, and once it is over they
//! arrive, in order, each once.

use crate::support::claude_world::ClaudeWorld;
use crate::support::fake_model::ApiError;
use the_loop::session::{DeliveryFailure, PromptInputs};

fn comment(id: &str, body: &str) -> PromptInputs {
    let excerpt = serde_json::json!({"comment": {"user": {"login": "alice"}, "body": body}});
    PromptInputs {
        event: "issue_comment".into(),
        action: "created".into(),
        delivery_id: id.into(),
        repository: "octo/repo".into(),
        excerpt: excerpt.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_session_holds_its_comments_then_delivers_them_once_in_order() {
    let Some(world) = ClaudeWorld::new().await else {
        return;
    };
    let config = std::fs::read_to_string(&world.config).unwrap();
    let config = config.replacen(
        "sessions:\n",
        "sessions:\n  limitBackoffSeconds: 4\n  limitBackoffMaxSeconds: 4\n",
        1,
    );
    std::fs::write(&world.config, config).unwrap();
    world.configure("");
    world.start().await;
    let item = crate::support::claude_world::item();

    // The API rate-limits every turn: Claude Code retries on its own (it waits the `retry-after`: 1 s), then gives up.
    world.model.fail_with(Some(ApiError::rate_limit(1)));
    let before = world.model.agent_requests().len();
    world.deliver("d-1", "first, rate limited").await;
    let hit = world.wait_events("session.limit_hit", 1).await;
    assert_eq!(hit[0]["kind"], "rate-limit", "{hit:?}");
    assert_eq!(hit[0]["witness"], "hook:StopFailure", "{hit:?}");
    let client_retries = world.model.agent_requests().len() - before;
    eprintln!("the client's own requests for the failed turn: {client_retries}");

    // During the limit: both comments held, nothing reaches the model.
    let during = world.model.agent_requests().len();
    for (id, body) in [
        ("d-2", "second, during the limit"),
        ("d-3", "third, during"),
    ] {
        let held = world
            .sessions
            .deliver_event(&item, &comment(id, body))
            .await;
        assert!(
            matches!(held, Err(DeliveryFailure::Held(h)) if h.reason.as_str() == "limit"),
            "{held:?}"
        );
    }
    assert_eq!(
        world.model.agent_requests().len(),
        during,
        "no request from the-loop"
    );

    // The API answers again; the held comments go out as the held lane sends them.
    world.model.fail_with(None);
    for (id, body) in [
        ("d-2", "second, during the limit"),
        ("d-3", "third, during"),
    ] {
        let start = std::time::Instant::now();
        loop {
            match world
                .sessions
                .deliver_event(&item, &comment(id, body))
                .await
            {
                Ok(_) => break,
                Err(DeliveryFailure::Held(held)) => {
                    assert!(
                        start.elapsed() < crate::support::claude_world::PATIENCE,
                        "{id}: still held {held:?}; the record: {:#?}\n{}",
                        world.listed(),
                        world.screen()
                    );
                    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
                }
                Err(e) => panic!("{id}: {e}"),
            }
        }
    }
    world.wait_events("session.limit_cleared", 1).await;
    let texts: Vec<String> = world
        .model
        .wait_agent_requests(during + 2, crate::support::claude_world::PATIENCE)
        .await[during..]
        .iter()
        .filter_map(|r| r.fresh_text())
        .collect();
    let second = texts
        .iter()
        .position(|t| t.contains("second, during the limit"));
    let third = texts.iter().position(|t| t.contains("third, during"));
    assert!(
        matches!((second, third), (Some(a), Some(b)) if a < b),
        "{texts:#?}"
    );
    assert_eq!(
        texts
            .iter()
            .filter(|t| t.contains("second, during the limit"))
            .count(),
        1,
        "once"
    );
}
