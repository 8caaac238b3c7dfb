//! Limits (issue 43) against the real Codex 0.171.0 and the fake Responses API: a turn
//! that fails on a rate limit (429, `retry-after`), then on a usage limit with its
//! reset. Codex runs no hook and no `notify` on such a turn: the-loop reads the failure
//! in its rollout. Comments during the limit are held and none reaches the model while
//! it lasts; after it, they arrive in order, each once.

use crate::codex_delivery::CodexWorld;
use crate::support::fake_openai::OpenAiError;
use std::time::Duration;
use the_loop::session::DeliveryFailure;

/// Delivers `id` expecting it held on the limit.
async fn held_on_limit(world: &CodexWorld, id: &str, body: &str) {
    let held = world.deliver(id, body).await;
    assert!(
        matches!(&held, Err(DeliveryFailure::Held(h)) if h.reason.as_str() == "limit"),
        "{id}: {held:?}\n{}",
        world.screen()
    );
}

/// The positions of the agent requests that brought `needle`, in order.
fn reached(world: &CodexWorld, needle: &str) -> Vec<usize> {
    world
        .model
        .fresh()
        .iter()
        .enumerate()
        .filter(|(_, texts)| texts.iter().any(|t| t.contains(needle)))
        .map(|(i, _)| i)
        .collect()
}

/// Sends `id` into a failing turn: pasted, refused by the API, and written in the
/// rollout as codex showed it.
async fn fail_a_turn(world: &CodexWorld, id: &str, body: &str, shown: &str) {
    let refused = world.model.refused().len();
    world.deliver(id, body).await.unwrap();
    world
        .wait("the API to refuse the turn", || {
            (world.model.refused().len() > refused).then_some(())
        })
        .await;
    world.wait_screen(shown).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_session_in_a_limit_holds_its_comments_then_delivers_them_once_in_order() {
    let Some(world) = CodexWorld::limited().await else {
        return;
    };
    world.start().await;

    // A rate limit: codex gives up at once (its retries are off) and records the turn's
    // error in its rollout.
    world.model.fail_with(Some(OpenAiError::rate_limit(2)));
    fail_a_turn(
        &world,
        "d-1",
        "first, rate limited",
        "429 Too Many Requests",
    )
    .await;
    let during = world.model.requests();
    held_on_limit(&world, "d-2", "second, during the rate limit").await;
    let hit = world.wait_events("session.limit_hit", 1).await;
    assert_eq!(hit[0]["kind"], "rate-limit", "{hit:?}");
    assert_eq!(hit[0]["witness"], "rollout", "{hit:?}");
    held_on_limit(&world, "d-3", "third, during the rate limit").await;
    assert_eq!(world.model.requests(), during, "no request while it stands");

    // The API answers again; after the back-off the held comments go out, in order.
    world.model.fail_with(None);
    world
        .deliver_once_released("d-2", "second, during the rate limit")
        .await;
    world
        .deliver_once_released("d-3", "third, during the rate limit")
        .await;
    world
        .wait("both to reach the model", || {
            (!reached(&world, "third, during").is_empty()).then_some(())
        })
        .await;
    world.wait_events("session.limit_cleared", 1).await;

    // A usage limit, its reset a few seconds ahead: read from what codex recorded.
    let resets = time::OffsetDateTime::now_utc().unix_timestamp() + 8;
    world
        .model
        .fail_with(Some(OpenAiError::usage_limit(resets)));
    fail_a_turn(&world, "d-4", "fourth, usage limited", "usage limit").await;
    let during = world.model.requests();
    held_on_limit(&world, "d-5", "fifth, during the usage limit").await;
    let hit = world.wait_events("session.limit_hit", 2).await;
    assert_eq!(hit[1]["kind"], "usage-limit", "{hit:?}");
    let reset = time::OffsetDateTime::from_unix_timestamp(resets).unwrap();
    assert_eq!(
        hit[1]["resets"],
        the_loop::time::format_ts(reset),
        "the reset codex recorded"
    );
    held_on_limit(&world, "d-6", "sixth, during the usage limit").await;
    assert_eq!(world.model.requests(), during, "no request while it stands");
    world.model.fail_with(None);
    world
        .deliver_once_released("d-5", "fifth, during the usage limit")
        .await;
    assert!(
        time::OffsetDateTime::now_utc() >= reset,
        "held until the reset codex recorded"
    );
    world
        .deliver_once_released("d-6", "sixth, during the usage limit")
        .await;
    world
        .wait("both to reach the model", || {
            (!reached(&world, "sixth, during").is_empty()).then_some(())
        })
        .await;
    world.wait_events("session.limit_cleared", 2).await;
    // A second copy would have come by now.
    tokio::time::sleep(Duration::from_secs(2)).await;

    let order: Vec<Vec<usize>> = ["second", "third", "fifth", "sixth"]
        .iter()
        .map(|n| reached(&world, &format!("{n}, during")))
        .collect();
    assert!(
        order.iter().all(|at| at.len() == 1),
        "each once: {order:?}\n{:#?}",
        world.model.fresh()
    );
    assert!(
        order.windows(2).all(|w| w[0][0] < w[1][0]),
        "in order: {order:?}"
    );
    for refused in world.model.refused() {
        let later = refused.1.iter().any(|t| {
            ["second", "third", "fifth", "sixth"]
                .iter()
                .any(|n| t.contains(&format!("{n}, during")))
        });
        assert!(
            !later,
            "a held comment reached the limited API: {refused:?}"
        );
    }
    assert!(world.shut_down().is_empty(), "processes left");
}
