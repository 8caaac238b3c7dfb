//! Limits (issue 43) over the fake tmux and a stand-in for Claude Code's screen: a
//! burst of comments to sessions whose turns failed on a limit — nothing reaches a
//! pane while the limit stands, one delivery per session tries once it is over, the
//! rest wait for that turn to end well and then go out, in order, each once.

use crate::ingress::{Disposition, Ingest};
use crate::session::delivery::HoldReason;
use crate::session::hooks::state::Signal;
use crate::session::limits::{self, Backoff, Standing};
use crate::session::test_support::*;
use std::time::Duration;

const SESSIONS: u64 = 5;
const PER_SESSION: u64 = 4;

async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..1000 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for {what}");
}

/// What the `StopFailure` hook records (`hooks::report`), for `n`'s session.
fn fail_turn(f: &Fixture, n: u64, error: &str, message: &str) {
    let signal = Signal::TurnFailed {
        error: error.into(),
        message: message.into(),
    };
    f.sessions
        .registry()
        .update(&item(n), |r| {
            limits::on_signal(&mut r.limit, &signal, &crate::time::now_ts())
        })
        .unwrap();
}

fn end_turn_well(f: &Fixture, n: u64) {
    f.sessions
        .registry()
        .update(&item(n), |r| {
            limits::on_signal(&mut r.limit, &Signal::TurnEnded, &crate::time::now_ts())
        })
        .unwrap();
}

#[tokio::test]
async fn a_burst_over_five_limited_sessions_waits_then_goes_out_once_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let f = Fixture::with_config(dir, |c| {
        c.sessions.limit_backoff_seconds = 1;
        c.sessions.limit_backoff_max_seconds = 1;
    });
    let backoff = Backoff::from_config(&f.config.sessions);
    let panes: Vec<_> = (1..=SESSIONS).map(|n| f.claude_session(n).0).collect();
    for n in 1..=SESSIONS {
        fail_turn(
            &f,
            n,
            "rate_limit",
            "API Error: Request rejected (429) · rate limited",
        );
    }
    let mut settled = Vec::new();
    for k in 0..PER_SESSION {
        for n in 1..=SESSIONS {
            let id = k * SESSIONS + n;
            let body = format!("comment {k} to #{n}");
            settled.push(tokio::spawn(
                f.dispatcher.ingest(comment_by("alice", id, n, &body)),
            ));
        }
    }
    eventually("every lane held on the limit", || {
        (1..=SESSIONS).all(|n| {
            f.record(n)
                .and_then(|r| r.hold.events)
                .is_some_and(|e| e.reason == HoldReason::Limit && e.waiting == 4)
        })
    })
    .await;
    // Nothing reached a pane while the limit stood (checked before it was over).
    let pasted: usize = panes.iter().map(|p| f.pasted(p).len()).sum();
    let still = (1..=SESSIONS).all(|n| {
        let limit = f.record(n).unwrap().limit.unwrap();
        matches!(
            limits::standing(&limit, &backoff, time::OffsetDateTime::now_utc()),
            Standing::Holds { .. }
        )
    });
    assert!(still, "the check ran while every limit stood");
    assert_eq!(pasted, 0, "no paste during the limit");
    assert_eq!(f.events_named("session.delivery_held").len(), 5);

    // Over: one delivery per session tries, the rest wait for its turn.
    eventually("one try per session", || {
        panes.iter().all(|p| f.pasted(p).len() == 1)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    for (i, pane) in panes.iter().enumerate() {
        assert_eq!(f.pasted(pane).len(), 1, "#{}: only the try", i + 1);
        let limit = f.record(i as u64 + 1).unwrap().limit.unwrap();
        assert!(limit.released.is_some());
    }

    // The tries' turns end well: the limits clear and the rest follow.
    for n in 1..=SESSIONS {
        end_turn_well(&f, n);
    }
    for s in settled {
        assert_eq!(s.await.unwrap(), Disposition::Delivered);
    }
    for (i, pane) in panes.iter().enumerate() {
        let n = i as u64 + 1;
        let pasted = f.pasted(pane);
        assert_eq!(pasted.len(), PER_SESSION as usize, "#{n}: each once");
        for (k, text) in pasted.iter().enumerate() {
            assert!(
                text.contains(&format!("comment {k} to #{n}")),
                "#{n} in order: {pasted:?}"
            );
        }
        let record = f.record(n).unwrap();
        assert!(record.limit.is_none() && record.hold.is_empty());
    }
}

#[tokio::test]
async fn an_expired_login_holds_until_a_turn_succeeds_and_a_usage_limit_until_its_reset() {
    let f = Fixture::new();
    let (pane, _claude) = f.claude_session(1);
    fail_turn(
        &f,
        1,
        "authentication_failed",
        "Invalid API key · Fix external API key",
    );
    let inputs = crate::session::PromptInputs {
        delivery_id: "d-1".into(),
        ..crate::session::PromptInputs::manual(&item(1), "test")
    };
    let held = f
        .sessions
        .deliver_event(&item(1), &inputs)
        .await
        .unwrap_err();
    assert!(
        matches!(held, crate::session::DeliveryFailure::Held(h) if h.reason == HoldReason::Login),
        "{held:?}"
    );
    end_turn_well(&f, 1);
    assert_eq!(
        f.events_named("session.limit_hit").len(),
        0,
        "the hook logs, not this"
    );
    f.sessions.deliver_event(&item(1), &inputs).await.unwrap();
    assert_eq!(f.pasted(&pane).len(), 1);

    // A usage limit an hour away holds; none is guessed when none was printed.
    fail_turn(
        &f,
        1,
        "rate_limit",
        "You've hit your session limit · resets 9:56pm (UTC)",
    );
    let limit = f.record(1).unwrap().limit.unwrap();
    assert!(limit.resets.is_some());
    let held = f
        .sessions
        .deliver_event(&item(1), &inputs)
        .await
        .unwrap_err();
    assert!(
        matches!(held, crate::session::DeliveryFailure::Held(h) if h.reason == HoldReason::Limit),
        "{held:?}"
    );
}

#[tokio::test]
async fn the_try_after_a_limit_carries_one_note_only_when_the_operator_asked() {
    let dir = tempfile::tempdir().unwrap();
    let f = Fixture::with_config(dir, |c| {
        c.sessions.limit_backoff_seconds = 1;
        c.sessions.limit_backoff_max_seconds = 1;
        c.sessions.resume_after_limit = true;
    });
    let (pane, _claude) = f.claude_session(1);
    fail_turn(&f, 1, "server_error", "API Error: 529 Overloaded.");
    let limit = f.record(1).unwrap().limit.unwrap();
    let json = limit.to_json(&Backoff::from_config(&f.config.sessions));
    assert_eq!(json["kind"], "overloaded");
    assert_eq!(json["source"], "hook:StopFailure");
    assert!(json["until"].is_string(), "{json}");
    let inputs = |id: &str| crate::session::PromptInputs {
        delivery_id: id.into(),
        ..crate::session::PromptInputs::manual(&item(1), "test")
    };
    let settled = tokio::spawn({
        let sessions = std::sync::Arc::clone(&f.sessions);
        async move {
            loop {
                match sessions.deliver_event(&item(1), &inputs("d-1")).await {
                    Err(crate::session::DeliveryFailure::Held(_)) => {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    other => return other.map(|_| ()),
                }
            }
        }
    });
    settled.await.unwrap().unwrap();
    end_turn_well(&f, 1);
    f.sessions
        .deliver_event(&item(1), &inputs("d-2"))
        .await
        .unwrap();
    let pasted = f.pasted(&pane);
    assert_eq!(pasted.len(), 2);
    assert!(
        pasted[0].starts_with("[the-loop] The previous turn ended with: API overloaded at "),
        "{pasted:?}"
    );
    assert!(!pasted[1].contains("[the-loop] The previous turn"), "once");
}

/// A delivery whose own turn fails on a limit is not that limit's one try: the limit
/// it started stands whole (the real Claude Code reports `StopFailure` before the-loop
/// records the delivery that started the turn).
#[tokio::test]
async fn a_delivery_whose_own_turn_failed_is_not_the_try() {
    let f = Fixture::new();
    f.live_session(1);
    fail_turn(&f, 1, "rate_limit", "API Error: Request rejected (429)");
    let mut record = f.record(1).unwrap();
    super::mark_try(&mut record, None);
    assert_eq!(record.limit.as_ref().unwrap().released, None, "not a try");
    // The gate let it through with this limit on record: it is.
    let passed = record.limit.clone();
    super::mark_try(&mut record, passed.as_ref());
    assert!(record.limit.as_ref().unwrap().released.is_some());
}
