//! Limits (issue 43), a burst: five sessions of the real Claude Code on one fake model,
//! all rate limited (429, `retry-after: 3`; the tests' Claude Code retries nothing itself,
//! `CLAUDE_CODE_MAX_RETRIES=0`), twenty comments over them and a labeled issue, all
//! through the dispatcher as the supervisor sends them.
//!
//! What the gate allows while a session's limit stands: nothing, until its back-off
//! step ends; then one delivery, the head of its lane (the try), and nothing more until
//! that try's turn ended. So during the limit the model gets, per session, one request
//! per failed turn (the turn that hit the limit, then one per try), and each try brings
//! one comment, the next in order. Counted here, not timed: while no back-off step can
//! end (600 s) none goes; with 2 s steps the tries go, and the counts must match what
//! the hooks recorded. A start waits while the account's limit stands. After, every
//! comment is in its session's conversation once, in order, and the labeled issue's
//! session starts, its boot prompt reaching the model once.

use crate::support::claude_world::{ClaudeWorld, PATIENCE};
use crate::support::fake_model::{ApiError, Recorded};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use the_loop::ingress::{Disposition, InboundEvent, Ingest};
use the_loop::work_item::WorkItemRef;

/// The five sessions' issues, and the issue labeled during the limit.
const SESSIONS: [u64; 5] = [41, 42, 43, 44, 45];
const LABELED: u64 = 46;
/// Comments per session during the limit.
const EACH: usize = 4;

fn item(n: u64) -> WorkItemRef {
    WorkItemRef::new("octo", "repo", n)
}

fn issue(n: u64) -> Value {
    json!({
        "number": n, "title": format!("Burst {n}"), "state": "open",
        "html_url": format!("https://github.com/octo/repo/issues/{n}"),
        "user": {"login": "alice"}, "labels": [{"name": "the-loop"}]
    })
}

/// `alice`'s comment on issue `n`, as a webhook brings it.
pub(crate) fn comment_event(n: u64, id: &str, body: &str) -> InboundEvent {
    InboundEvent::from_webhook(
        "issue_comment",
        id,
        json!({
            "action": "created",
            "comment": {"id": 1, "user": {"login": "alice"}, "body": body},
            "issue": issue(n),
            "repository": {"full_name": "octo/repo"},
            "sender": {"login": "alice"},
        }),
    )
}

/// Issue `n` labeled `the-loop` by `alice`.
fn labeled_event(n: u64) -> InboundEvent {
    InboundEvent::from_webhook(
        "issues",
        &format!("label-{n}"),
        json!({
            "action": "labeled",
            "label": {"name": "the-loop"},
            "issue": issue(n),
            "repository": {"full_name": "octo/repo"},
            "sender": {"login": "alice"},
        }),
    )
}

/// Comment `k` of session `n`: its delivery id and its text.
fn burst_comment(n: u64, k: usize) -> (String, String) {
    (
        format!("c-{n}-{k}"),
        format!("BURST-S{n}-C{k} please go on."),
    )
}

/// Every text of a request's messages, in order.
fn conversation(request: &Recorded) -> String {
    request.body["messages"].to_string()
}

/// The session a request belongs to: its conversation names the issue (the boot prompt
/// does).
fn session_of(request: &Recorded) -> Option<u64> {
    let text = conversation(request);
    SESSIONS
        .iter()
        .chain([&LABELED])
        .copied()
        .find(|n| text.contains(&format!("octo/repo#{n}")))
}

/// The sessions' back-off, live (the in-process sessions and the hooks read it).
fn backoff(world: &ClaudeWorld, seconds: u64) {
    let config = std::fs::read_to_string(&world.config).unwrap();
    let start = config.find("  limitBackoffSeconds:").unwrap();
    let end = config[start..].find("  harness:").unwrap() + start;
    let lines = format!(
        "  limitBackoffSeconds: {seconds}\n  limitBackoffMaxSeconds: {seconds}\n  limitResetMarginSeconds: 1\n"
    );
    std::fs::write(
        &world.config,
        format!("{}{lines}{}", &config[..start], &config[end..]),
    )
    .unwrap();
    world.configure("");
}

/// The limit on `n`'s record: (failed turns in a row, whether its try is out).
fn limit_of(world: &ClaudeWorld, n: u64) -> Option<(u32, bool)> {
    let record = world.sessions.registry().get(&item(n)).unwrap()?;
    record.limit.map(|l| (l.failures, l.released.is_some()))
}

/// Waits for `check`, failing with the sessions' panes when it never holds.
async fn until(world: &ClaudeWorld, what: &str, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        if start.elapsed() > PATIENCE * 2 {
            let panes: Vec<String> = SESSIONS
                .iter()
                .map(|n| format!("#{n}:\n{}", world.screen_of(&item(*n))))
                .collect();
            panic!(
                "timed out waiting for {what}\n{}\nthe events: {:#?}",
                panes.join("\n"),
                world.events()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_over_five_limited_sessions_waits_then_arrives_once_in_order() {
    let Some(world) = ClaudeWorld::new().await else {
        return;
    };
    let config = std::fs::read_to_string(&world.config).unwrap();
    let config = config
        .replacen(
            "sessions:\n",
            "sessions:\n  limitBackoffSeconds: 600\n  limitBackoffMaxSeconds: 600\n  limitResetMarginSeconds: 1\n",
            1,
        )
        .replacen(
            "routing: {authorizedUsers: [alice]}",
            "routing: {authorizedUsers: [alice], spawn: labeled}",
            1,
        );
    std::fs::write(&world.config, config).unwrap();
    world.configure("");
    crate::limits::subscriber(&world);
    let dispatcher = world.dispatcher();

    // Five sessions, each through its boot turn.
    let booted = Instant::now();
    for n in SESSIONS {
        let inputs = the_loop::session::PromptInputs::manual(&item(n), "test");
        let outcome = world
            .sessions
            .start(&item(n), &inputs, &the_loop::session::Origin::cli())
            .await
            .unwrap();
        assert!(
            matches!(outcome, the_loop::session::StartOutcome::Spawned(_)),
            "{outcome:?}"
        );
    }
    world
        .wait_events("session.turn_ended", SESSIONS.len())
        .await;
    eprintln!("five Claude Code sessions booted in {:?}", booted.elapsed());

    // Every session's next turn hits the API's rate limit.
    world.model.fail_with(Some(ApiError::rate_limit(3)));
    let before = world.model.agent_requests().len();
    for n in SESSIONS {
        let event = comment_event(n, &format!("hit-{n}"), &format!("HIT-S{n} rate limited"));
        assert_eq!(dispatcher.ingest(event).await, Disposition::Delivered);
    }
    let hits = world.wait_events("session.limit_hit", SESSIONS.len()).await;
    assert!(hits.iter().all(|h| h["kind"] == "rate-limit"), "{hits:#?}");
    let hit_requests = world.model.agent_requests().len() - before;
    assert_eq!(
        hit_requests,
        SESSIONS.len(),
        "one request per turn: no client retry"
    );

    // Twenty comments, round the sessions, as the supervisor sends them: each lane's
    // head is held and looked at again every 500 ms; the rest wait behind it.
    let mut pending = Vec::new();
    for k in 0..EACH {
        for n in SESSIONS {
            let (id, body) = burst_comment(n, k);
            pending.push(tokio::spawn(
                dispatcher.ingest(comment_event(n, &id, &body)),
            ));
        }
    }
    until(&world, "every lane held", || {
        SESSIONS
            .iter()
            .all(|n| dispatcher.holding(&burst_comment(*n, 0).0))
    })
    .await;
    // No back-off step can end (600 s): the gate lets nothing go, however often the
    // lanes look.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let requests = world.model.agent_requests();
    assert_eq!(
        requests.len(),
        before + SESSIONS.len(),
        "nothing while held"
    );

    // 2 s steps, the API still answering 429: each session gets its try, one comment,
    // which fails; then nothing more than one per step.
    backoff(&world, 2);
    until(&world, "a failed try in every session", || {
        SESSIONS
            .iter()
            .all(|n| limit_of(&world, *n).is_some_and(|(failures, _)| failures >= 2))
    })
    .await;
    backoff(&world, 600);
    until(&world, "no try out", || {
        SESSIONS
            .iter()
            .all(|n| limit_of(&world, *n).is_some_and(|(_, trying)| !trying))
    })
    .await;
    let during = world.model.agent_requests()[before..].to_vec();
    let mut tried = BTreeMap::new();
    for n in SESSIONS {
        let (failures, _) = limit_of(&world, n).unwrap();
        let own: Vec<&Recorded> = during.iter().filter(|r| session_of(r) == Some(n)).collect();
        // Each request of the limit a failed turn the hook recorded: no request beyond
        // the turn that hit it and one per try.
        assert_eq!(own.len(), failures as usize, "#{n}: {own:#?}");
        // Each try brought one comment, the next in order: the comments the model saw
        // are the first `failures - 1`.
        let seen: Vec<usize> = (0..EACH)
            .filter(|k| {
                let needle = format!("BURST-S{n}-C{k} ");
                own.iter().any(|r| conversation(r).contains(&needle))
            })
            .collect();
        assert_eq!(seen, (0..failures as usize - 1).collect::<Vec<_>>(), "#{n}");
        tried.insert(n, failures - 1);
    }
    let limited_requests = world.model.agent_requests().len();
    eprintln!(
        "during the limit: {} requests for {} sessions (hit: {hit_requests}, tries: {tried:?}), {} comments delivered by the dispatcher",
        limited_requests - before,
        SESSIONS.len(),
        SESSIONS.len() * EACH
    );

    // A labeled issue now: its start waits for the account's limit.
    let labeled = tokio::spawn(dispatcher.ingest(labeled_event(LABELED)));
    let held = world.wait_events("session.spawn_held", 1).await;
    assert_eq!(held[0]["work_item"], item(LABELED).to_string(), "{held:?}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        world
            .sessions
            .registry()
            .get(&item(LABELED))
            .unwrap()
            .is_none()
    );
    assert_eq!(world.model.agent_requests().len(), limited_requests);

    // The API answers again; the back-off steps end: each session's try goes, ends
    // well, and the rest follow; the labeled issue's session starts.
    world.model.fail_with(None);
    let answered = world.model.agent_requests().len();
    backoff(&world, 2);
    for delivered in pending {
        assert_eq!(delivered.await.unwrap(), Disposition::Delivered);
    }
    assert_eq!(labeled.await.unwrap(), Disposition::Delivered);
    world
        .wait_events("session.limit_cleared", SESSIONS.len())
        .await;
    let last_of = |n: u64| {
        world
            .model
            .agent_requests()
            .into_iter()
            .rfind(|r| session_of(r) == Some(n))
    };
    until(&world, "every comment in its conversation", || {
        SESSIONS.iter().all(|n| {
            last_of(*n)
                .is_some_and(|r| conversation(&r).contains(&format!("BURST-S{n}-C{} ", EACH - 1)))
        }) && last_of(LABELED).is_some()
    })
    .await;
    // A second copy would have come by now.
    tokio::time::sleep(Duration::from_secs(3)).await;

    let after = world.model.agent_requests()[answered..].to_vec();
    for n in SESSIONS {
        // Once each, in order, in the session's conversation as it stands.
        let text = conversation(&last_of(n).unwrap());
        let mut last = 0;
        for k in 0..EACH {
            let needle = format!("BURST-S{n}-C{k} ");
            assert_eq!(
                text.matches(&needle).count(),
                1,
                "#{n}: {needle} once: {text}"
            );
            let at = text.find(&needle).unwrap();
            assert!(at > last, "#{n}: {needle} in order: {text}");
            last = at;
        }
        // The first request after the limit brought the next comment alone: one try.
        let first = after.iter().find(|r| session_of(r) == Some(n)).unwrap();
        let next = tried[&n] as usize;
        let fresh = first.fresh_text().unwrap_or_default();
        let brought: Vec<usize> = (0..EACH)
            .filter(|k| fresh.contains(&format!("BURST-S{n}-C{k} ")))
            .collect();
        assert!(brought.contains(&next), "#{n}: the try: {fresh}");
        assert_eq!(
            brought.iter().filter(|k| **k > next).count(),
            0,
            "#{n}: the try alone: {fresh}"
        );
    }
    let succeeded = world.events_named("dispatch.succeeded");
    for n in SESSIONS {
        for k in 0..EACH {
            let id = burst_comment(n, k).0;
            let count = succeeded.iter().filter(|e| e["delivery_id"] == id).count();
            assert_eq!(count, 1, "{id} delivered once");
        }
    }
    // The labeled issue's session started once, after the limit; its boot prompt
    // reached the model once.
    let spawned: Vec<Value> = world
        .events_named("session.spawned")
        .into_iter()
        .filter(|e| e["work_item"] == item(LABELED).to_string())
        .collect();
    assert_eq!(spawned.len(), 1, "{spawned:#?}");
    let labeled_requests: Vec<Recorded> = world
        .model
        .agent_requests()
        .into_iter()
        .filter(|r| session_of(r) == Some(LABELED))
        .collect();
    // Its first turn: no answer of the model's yet in the conversation.
    let boots = labeled_requests
        .iter()
        .filter(|r| !conversation(r).contains("\"assistant\""))
        .count();
    assert_eq!(boots, 1, "the boot prompt once: {labeled_requests:#?}");
    assert!(
        world.model.agent_requests()[..answered]
            .iter()
            .all(|r| session_of(r) != Some(LABELED)),
        "nothing of the labeled issue during the limit"
    );
    eprintln!(
        "after the limit: {} requests ({} comments not tried during it, 1 boot prompt)",
        after.len(),
        SESSIONS.len() * EACH - tried.values().sum::<u32>() as usize,
    );
    assert_eq!(world.shut_down(), Vec::<i32>::new(), "processes left");
}
