//! Figures for issue 43, run by hand (`cargo test --test claude -- --ignored
//! limits_figures --nocapture`), on the real Claude Code and the fake model: a rate
//! limit that lasts 60 s (every turn answered 429, `retry-after: 60`), ten comments
//! arriving in it, one every 6 s, to one session.
//!
//! - before: the-loop before issue 43 pasted each comment as it came (into the pane,
//!   submitted after `submitDelayMs`); here they are pasted into the pane that way, the
//!   gate out of the path;
//! - after: each goes through the dispatcher, as the supervisor sends it, with the
//!   default back-off (30 s, doubling, at most 15 min).
//!
//! Counted: the model's requests during the 60 s; timed: from the limit's `until` (the
//! back-off's end on record) and from the API answering again to the first comment
//! reaching the model. Printed, never asserted: speed is not a test's verdict.

use crate::limits_burst::comment_event;
use crate::support::claude_world::{ClaudeWorld, PATIENCE, item};
use crate::support::fake_model::ApiError;
use std::time::{Duration, Instant};
use the_loop::ingress::{Disposition, Ingest};
use the_loop::session::limits::Backoff;

/// How long the API refuses, and the comments that arrive meanwhile.
const LIMIT: Duration = Duration::from_secs(60);
const COMMENTS: usize = 10;

fn body(k: usize) -> String {
    format!("FIGURE-C{k} please go on.")
}

/// `text` pasted into the session's pane and submitted, as the-loop did before.
fn paste_by_hand(world: &ClaudeWorld, text: &str) {
    let pane = format!("={}:", item().tmux_session_name());
    for args in [
        &["set-buffer", "-b", "figure", text][..],
        &["paste-buffer", "-d", "-p", "-b", "figure", "-t", &pane],
    ] {
        assert!(world.tmux.raw(args).status.success(), "{args:?}");
    }
    std::thread::sleep(Duration::from_millis(150));
    assert!(
        world
            .tmux
            .raw(&["send-keys", "-t", &pane, "Enter"])
            .status
            .success()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "figures, run by hand"]
async fn limits_figures_requests_during_a_60s_rate_limit() {
    for how in ["before", "after"] {
        let Some(world) = ClaudeWorld::new().await else {
            return;
        };
        crate::limits::subscriber(&world);
        let dispatcher = world.dispatcher();
        world.start().await;

        world.model.fail_with(Some(ApiError::rate_limit(60)));
        let from = world.model.agent_requests().len();
        let started = Instant::now();
        let mut pending = Vec::new();
        for k in 0..=COMMENTS {
            let at = started + LIMIT * u32::try_from(k).unwrap() / (COMMENTS as u32 + 1);
            tokio::time::sleep_until(at.into()).await;
            // The first is the turn that hits the limit; the rest arrive during it.
            let (id, text) = (format!("f-{k}"), body(k));
            if how == "before" {
                paste_by_hand(&world, &text);
            } else {
                let event = comment_event(item().number, &id, &text);
                pending.push(tokio::spawn(dispatcher.ingest(event)));
            }
        }
        tokio::time::sleep_until((started + LIMIT).into()).await;
        let during = world.model.agent_requests().len() - from;
        world.model.fail_with(None);
        let answering = Instant::now();
        eprintln!(
            "figure: {how}: {during} requests reached the model during the {LIMIT:?} rate limit, {} comments arriving in it (the client's own requests per failed turn: 1, CLAUDE_CODE_MAX_RETRIES=0)",
            COMMENTS + 1
        );
        if how == "before" {
            assert_eq!(world.shut_down(), Vec::<i32>::new(), "processes left");
            continue;
        }
        // The back-off on record as the API answers again: when the gate lets the
        // next try go.
        let record = world.sessions.registry().get(&item()).unwrap().unwrap();
        let backoff = Backoff::from_config(&world.sessions.settings().sessions);
        let until = record.limit.as_ref().and_then(|l| l.until(&backoff));
        // The back-off may run two minutes more (three failed turns: 60–120 s).
        let first = loop {
            let found = world.model.agent_requests()[from + during..]
                .iter()
                .find(|r| r.fresh_text().is_some_and(|t| t.contains("FIGURE-C")))
                .map(|r| r.at);
            if let Some(at) = found {
                break at;
            }
            assert!(
                answering.elapsed() < PATIENCE * 3,
                "no comment reached the model"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let from_until = until.map(|until| {
            let left = until - time::OffsetDateTime::now_utc();
            let until_instant = if left.is_negative() {
                Instant::now() - left.unsigned_abs()
            } else {
                Instant::now() + left.unsigned_abs()
            };
            first.saturating_duration_since(until_instant)
        });
        eprintln!(
            "figure: after: from the limit's until (the back-off on record, {} failed turns) to the first comment reaching the model: {from_until:?}; from the API answering again: {:?}",
            record.limit.as_ref().map_or(0, |l| l.failures),
            first.saturating_duration_since(answering),
        );
        let start = Instant::now();
        for delivered in pending {
            let left = (PATIENCE * 3).saturating_sub(start.elapsed());
            let settled = tokio::time::timeout(left, delivered).await;
            assert_eq!(settled.unwrap().unwrap(), Disposition::Delivered);
        }
        eprintln!(
            "figure: after: all {} delivered {:?} after the API answered again; requests then: {}",
            COMMENTS + 1,
            answering.elapsed(),
            world.model.agent_requests().len() - from - during
        );
        assert_eq!(world.shut_down(), Vec::<i32>::new(), "processes left");
    }
}
