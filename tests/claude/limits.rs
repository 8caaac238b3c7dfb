//! Limits (issue 43) against the real Claude Code and the fake model: a turn that fails
//! on a rate limit (429, `retry-after`), then on a usage limit with its reset, then
//! turns that end well. The `StopFailure` hook records each limit; comments during it
//! are held and none reaches the model while it lasts; once it is over they arrive, in
//! order, each once.

use crate::support::claude_world::{ClaudeWorld, PATIENCE};
use crate::support::fake_model::ApiError;
use std::time::{Duration, Instant};
use the_loop::session::{DeliveryFailure, PromptInputs};

pub(crate) fn comment(id: &str, body: &str) -> PromptInputs {
    let excerpt = serde_json::json!({"comment": {"user": {"login": "alice"}, "body": body}});
    PromptInputs {
        event: "issue_comment".into(),
        action: "created".into(),
        delivery_id: id.into(),
        repository: "octo/repo".into(),
        excerpt: excerpt.to_string(),
    }
}

/// Claude Code logged in to a plan rather than with an API key: only then does it say
/// a usage limit as one, with its reset (`You've hit your session limit · resets
/// 12:10am (UTC)`; with a key, 2.1.197 says `API Error: Request rejected (429) · …`).
/// An OAuth token in the environment, the fake model taking any credential.
pub(crate) fn subscriber(world: &ClaudeWorld) {
    for args in [
        &["set-environment", "-g", "-u", "ANTHROPIC_API_KEY"][..],
        &[
            "set-environment",
            "-g",
            "CLAUDE_CODE_OAUTH_TOKEN",
            "sk-ant-oat01-the-loop-tests",
        ],
    ] {
        assert!(world.tmux.raw(args).status.success(), "{args:?}");
    }
}

/// Delivers `id` expecting it held on the limit.
async fn held_on_limit(world: &ClaudeWorld, id: &str, body: &str) {
    let item = crate::support::claude_world::item();
    let held = world
        .sessions
        .deliver_event(&item, &comment(id, body))
        .await;
    assert!(
        matches!(&held, Err(DeliveryFailure::Held(h)) if h.reason.as_str() == "limit"),
        "{id}: {held:?}"
    );
}

/// Delivers a probe, as the held lane does, while the limit holds it; after the reset,
/// Claude Code's limit menu holds it, named so (`limit-menu`), never pasted into it.
async fn menu_holds_after_the_reset(world: &ClaudeWorld, reset_at: time::OffsetDateTime) {
    let item = crate::support::claude_world::item();
    let start = Instant::now();
    loop {
        let held = world
            .sessions
            .deliver_event(&item, &comment("d-5", "fifth, during the usage limit"))
            .await;
        match &held {
            Err(DeliveryFailure::Held(h)) if h.reason.as_str() == "limit" => {}
            Err(DeliveryFailure::Held(h)) if h.reason.as_str() == "limit-menu" => {
                assert!(
                    time::OffsetDateTime::now_utc() >= reset_at,
                    "after the reset"
                );
                return;
            }
            other => panic!("held on the limit, then on the menu: {other:?}"),
        }
        assert!(start.elapsed() < PATIENCE * 2, "{}", world.screen());
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Delivers `id` again, as the held lane does, until it goes out.
async fn deliver_once_released(world: &ClaudeWorld, id: &str, body: &str) {
    let item = crate::support::claude_world::item();
    let start = Instant::now();
    loop {
        match world
            .sessions
            .deliver_event(&item, &comment(id, body))
            .await
        {
            Ok(_) => return,
            Err(DeliveryFailure::Held(held)) => {
                assert!(
                    start.elapsed() < PATIENCE * 2,
                    "{id}: still held {held:?}; the record: {:#?}\n{}\n{}",
                    world.listed(),
                    world.screen(),
                    world.screen_with_attributes()
                );
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => panic!("{id}: {e}"),
        }
    }
}

/// The fresh texts of the agent requests after the first `from`.
fn texts(world: &ClaudeWorld, from: usize) -> Vec<String> {
    world.model.agent_requests()[from..]
        .iter()
        .filter_map(|r| r.fresh_text())
        .collect()
}

/// Each of `needles` reached the model once, in this order, among `texts`.
fn once_in_order(texts: &[String], needles: &[&str]) {
    let mut last = None;
    for needle in needles {
        let at: Vec<usize> = (0..texts.len())
            .filter(|i| texts[*i].contains(needle))
            .collect();
        assert_eq!(at.len(), 1, "`{needle}` once: {texts:#?}");
        assert!(last < Some(at[0]), "`{needle}` in order: {texts:#?}");
        last = Some(at[0]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limited_session_holds_its_comments_then_delivers_them_once_in_order() {
    let Some(world) = ClaudeWorld::new().await else {
        return;
    };
    let config = std::fs::read_to_string(&world.config).unwrap();
    let config = config.replacen(
        "sessions:\n",
        "sessions:\n  limitBackoffSeconds: 4\n  limitBackoffMaxSeconds: 4\n  limitResetMarginSeconds: 1\n",
        1,
    );
    std::fs::write(&world.config, config).unwrap();
    world.configure("");
    subscriber(&world);
    world.start().await;

    // The API rate-limits every turn: the tests' Claude Code does not retry on its own
    // (CLAUDE_CODE_MAX_RETRIES=0).
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
    held_on_limit(&world, "d-2", "second, during the rate limit").await;
    held_on_limit(&world, "d-3", "third, during the rate limit").await;
    assert_eq!(world.model.agent_requests().len(), during, "no request");

    // The API answers again; the held comments go out as the held lane sends them.
    world.model.fail_with(None);
    deliver_once_released(&world, "d-2", "second, during the rate limit").await;
    deliver_once_released(&world, "d-3", "third, during the rate limit").await;
    world.wait_events("session.limit_cleared", 1).await;
    world.wait_agent_requests(during + 2).await;

    // A usage limit: Claude Code prints its reset to the minute, so the test's is a
    // whole minute, at least 5 s ahead.
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let mut reset = (now / 60 + 1) * 60;
    if reset - now < 5 {
        reset += 60;
    }
    world.model.fail_with(Some(ApiError::usage_limit(reset)));
    world.deliver("d-4", "fourth, usage limited").await;
    let hit = world.wait_events("session.limit_hit", 2).await;
    let reset_at = time::OffsetDateTime::from_unix_timestamp(reset).unwrap();
    assert_eq!(hit[1]["kind"], "usage-limit", "{hit:?}");
    assert_eq!(
        hit[1]["resets"],
        the_loop::time::format_ts(reset_at),
        "{hit:?}"
    );
    // Claude Code 2.1.197 opens its `/rate-limit-options` menu on a session's first usage
    // limit (2.1.332 and 2.1.337 do not), and it holds deliveries (a dialog) until
    // someone answers: the-loop names it (`limit-menu`) once the limit itself is over,
    // and the operator answers it, choosing its first option (the-loop presses nothing).
    let menu = "Stop and wait for limit to reset";
    let shown = Instant::now();
    while !world.screen().contains(menu) && shown.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let menu_up = world.screen().contains(menu);
    let during_usage = world.model.agent_requests().len();
    held_on_limit(&world, "d-5", "fifth, during the usage limit").await;
    held_on_limit(&world, "d-6", "sixth, during the usage limit").await;
    assert_eq!(world.model.agent_requests().len(), during_usage);
    // The API would answer now; the-loop still waits for the reset Claude Code printed.
    world.model.fail_with(None);
    if menu_up {
        menu_holds_after_the_reset(&world, reset_at).await;
        let pane = format!(
            "={}:",
            crate::support::claude_world::item().tmux_session_name()
        );
        assert!(
            world
                .tmux
                .raw(&["send-keys", "-t", &pane, "Enter"])
                .status
                .success()
        );
    }
    deliver_once_released(&world, "d-5", "fifth, during the usage limit").await;
    assert!(
        time::OffsetDateTime::now_utc() >= reset_at,
        "held until the reset Claude Code printed"
    );
    deliver_once_released(&world, "d-6", "sixth, during the usage limit").await;
    world.wait_events("session.limit_cleared", 2).await;
    world.wait_agent_requests(during_usage + 2).await;
    // A second copy would have come by now.
    tokio::time::sleep(Duration::from_secs(2)).await;
    once_in_order(
        &texts(&world, during),
        &[
            "second, during the rate limit",
            "third, during the rate limit",
            "fifth, during the usage limit",
            "sixth, during the usage limit",
        ],
    );
}
