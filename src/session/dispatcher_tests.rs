//! Dispatcher decisions over the fake tmux: where an event goes, FIFO and concurrency,
//! liveness, respawn, and what a failure does to the delivery id.

use crate::ingress::{Disposition, InboundEvent};
use crate::session::registry::Status;
use crate::session::test_support::*;
use crate::tmux::Tmux;
use crate::tmux::fake::{Call, Failure, Op};
use serde_json::json;
use std::time::Duration;

fn dropped(reason: &str) -> Disposition {
    Disposition::Dropped {
        reason: reason.into(),
    }
}

fn creates(f: &Fixture) -> Vec<crate::tmux::SpawnSpec> {
    f.tmux
        .fake
        .calls()
        .iter()
        .filter_map(|c| match c {
            Call::CreateSession(name) => f.tmux.fake.session(name).and_then(|s| s.spec),
            _ => None,
        })
        .collect()
}

fn count(f: &Fixture, pred: impl Fn(&Call) -> bool) -> usize {
    f.tmux.fake.calls().iter().filter(|c| pred(c)).count()
}

#[tokio::test]
async fn an_item_without_a_session_is_dropped_and_settled() {
    let f = Fixture::new();
    let got = f.ingest(comment(1, 1, "hello")).await;
    assert_eq!(got, dropped("no-session"));
    assert!(got.is_settled());
    let drops = f.events_named("dispatch.dropped");
    assert_eq!(drops.len(), 1);
    assert_eq!(drops[0]["reason"], "no-session");
    assert_eq!(drops[0]["work_item"], "github:octo/repo#1");
    assert_eq!(drops[0]["delivery_id"], "d-1");
    assert_eq!(f.events_named("routing.routed").len(), 1);
    assert_eq!(count(&f, |c| matches!(c, Call::PasteText { .. })), 0);
}

#[tokio::test]
async fn a_closed_session_is_dropped_as_closed() {
    let f = Fixture::new();
    f.live_session(1);
    f.sessions
        .registry()
        .update(&item(1), |r| r.status = Status::Closed)
        .unwrap();
    assert_eq!(
        f.ingest(comment(1, 1, "hello")).await,
        dropped("session-closed")
    );
}

#[tokio::test]
async fn the_event_prompt_arrives_as_one_bracketed_paste_and_the_id_is_recorded() {
    let f = Fixture::new();
    let pane = f.live_session(1);
    let got = f.ingest(comment(7, 1, "Please fix the flaky test")).await;
    assert_eq!(got, Disposition::Delivered);

    let pasted = f.pasted(&pane);
    assert_eq!(pasted.len(), 1);
    assert!(
        pasted[0].contains("UNTRUSTED data from GitHub"),
        "{}",
        pasted[0]
    );
    assert!(pasted[0].contains("Please fix the flaky test"));
    assert!(pasted[0].contains("d-7"));
    let input = f.tmux.fake.pane_input(&pane);
    assert!(input.ends_with(b"\x1b[201~\r"), "submitted after the paste");

    let ok = f.events_named("dispatch.succeeded");
    assert_eq!(ok.len(), 1);
    assert_eq!(ok[0]["delivery_id"], "d-7");
    assert_eq!(ok[0]["pane"], pane.to_string());
    assert_eq!(ok[0]["respawned"], false);
    assert_eq!(ok[0]["actor"], "alice");
    assert_eq!(ok[0]["channel"], "paste");
    let record = f.record(1).unwrap();
    assert_eq!(record.recent_deliveries, ["d-7"]);
    assert!(record.last_event_at.is_some());
}

#[tokio::test]
async fn a_paused_session_receives_nothing_and_nothing_is_replayed() {
    let f = Fixture::new();
    let pane = f.live_session(1);
    f.sessions
        .pause(&item(1), &crate::session::Origin::cli())
        .unwrap();
    assert_eq!(
        f.ingest(comment(1, 1, "while paused")).await,
        dropped("session-paused")
    );
    assert!(f.tmux.fake.pane_input(&pane).is_empty());
    assert_eq!(
        f.events_named("dispatch.dropped")[0]["reason"],
        "session-paused"
    );

    f.sessions
        .resume(&item(1), &crate::session::Origin::cli())
        .unwrap();
    assert_eq!(
        f.ingest(comment(2, 1, "after resume")).await,
        Disposition::Delivered
    );
    let pasted = f.pasted(&pane);
    assert_eq!(pasted.len(), 1, "the paused event was not replayed");
    assert!(pasted[0].contains("after resume"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_to_one_session_are_strictly_fifo() {
    let f = Fixture::new();
    let pane = f.live_session(1);
    f.tmux.slow_pastes(Duration::from_millis(80));
    let pending: Vec<_> = (0..20)
        .map(|i| f.dispatcher_ingest(comment(100 + i, 1, &format!("message number {i:02}"))))
        .collect();
    for result in futures::future::join_all(pending).await {
        assert_eq!(result, Disposition::Delivered);
    }
    let pasted = f.pasted(&pane);
    assert_eq!(pasted.len(), 20);
    for (i, text) in pasted.iter().enumerate() {
        assert!(text.contains(&format!("message number {i:02}")), "#{i}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn different_sessions_deliver_concurrently() {
    let f = Fixture::new();
    let blocked = f.live_session(1);
    let free = f.live_session(2);
    let permits = f.tmux.gate(&blocked);

    let mut first = f.dispatcher_ingest(comment(1, 1, "to the blocked session"));
    let second = f.dispatcher_ingest(comment(2, 2, "to the free session"));
    let got = tokio::time::timeout(Duration::from_secs(5), second)
        .await
        .expect("session 2 is not held up by session 1");
    assert_eq!(got, Disposition::Delivered);
    assert!(
        tokio::time::timeout(Duration::from_millis(50), &mut first)
            .await
            .is_err(),
        "session 1 is still waiting"
    );
    assert_eq!(f.pasted(&free).len(), 1);
    assert!(f.pasted(&blocked).is_empty());

    permits.add_permits(2); // the text and the submitting \r
    assert_eq!(first.await, Disposition::Delivered);
    assert_eq!(f.pasted(&blocked).len(), 1);
}

#[tokio::test]
async fn unknown_liveness_still_attempts_the_paste_on_the_recorded_pane() {
    let f = Fixture::new();
    let pane = f.live_session(1);
    f.tmux.fake.fail(Op::List, Failure::Timeout);
    assert_eq!(f.ingest(comment(1, 1, "hi")).await, Disposition::Delivered);
    assert_eq!(f.pasted(&pane).len(), 1);
}

#[tokio::test]
async fn unknown_liveness_fails_transiently_and_never_respawns() {
    let f = Fixture::new();
    f.live_session(1);
    f.tmux.fake.set_dead(&item(1).tmux_session_name(), true);
    f.tmux.fake.fail(Op::List, Failure::Timeout);
    f.tmux.fake.fail(Op::Probe, Failure::Timeout);

    let got = f.ingest(comment(1, 1, "hi")).await;
    assert!(matches!(got, Disposition::Failed { .. }), "{got:?}");
    assert!(!got.is_settled());
    assert_eq!(
        count(&f, |c| matches!(
            c,
            Call::CreateSession(_) | Call::KillSession(_)
        )),
        0,
        "nothing respawned or killed"
    );
    let failed = f.events_named("dispatch.failed");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["retryable"], true);
    assert_eq!(failed[0]["level"], "warning");
    assert!(f.events_named("session.respawned").is_empty());
}

#[tokio::test]
async fn a_failed_delivery_releases_its_id_so_the_retry_is_not_a_duplicate() {
    let f = Fixture::new();
    let pane = f.live_session(1);
    f.tmux
        .fake
        .fail(Op::Paste, Failure::Failed("server busy".into()));
    let got = f.ingest(comment(1, 1, "retry me")).await;
    assert!(matches!(&got, Disposition::Failed { error } if error.contains("server busy")));

    f.tmux.fake.heal(Op::Paste);
    assert_eq!(
        f.ingest(comment(1, 1, "retry me")).await,
        Disposition::Delivered
    );
    assert_eq!(f.pasted(&pane).len(), 1);
    // Once delivered, the same id is a duplicate.
    assert_eq!(
        f.ingest(comment(1, 1, "retry me")).await,
        dropped("duplicate-delivery")
    );
}

#[tokio::test]
async fn pasted_but_not_submitted_is_settled_and_never_pasted_again() {
    let f = Fixture::new();
    let pane = f.live_session(1);
    f.tmux
        .fake
        .fail(Op::PlainPaste, Failure::Failed("no enter".into()));
    assert_eq!(
        f.ingest(comment(1, 1, "typed once")).await,
        dropped("not-submitted")
    );
    let failed = f.events_named("dispatch.failed");
    assert_eq!(failed[0]["retryable"], false);
    assert_eq!(failed[0]["level"], "error");
    f.tmux.fake.heal(Op::PlainPaste);
    assert_eq!(
        f.ingest(comment(1, 1, "typed once")).await,
        dropped("duplicate-delivery")
    );
    assert_eq!(f.pasted(&pane).len(), 1);
}

#[tokio::test]
async fn a_dead_pane_is_cleared_and_respawned_resuming_the_conversation() {
    let f = Fixture::new();
    let old = f.live_session(1);
    let name = item(1).tmux_session_name();
    f.tmux.fake.set_dead(&name, true);

    assert_eq!(
        f.ingest(comment(1, 1, "are you there?")).await,
        Disposition::Delivered
    );
    let calls = f.tmux.fake.calls();
    let at = calls
        .iter()
        .position(|c| *c == Call::KillSession(name.clone()))
        .expect("the dead occupant is cleared");
    assert_eq!(calls[at + 1], Call::Probe(name.clone()), "and verified");
    assert_eq!(calls[at + 2], Call::CreateSession(name.clone()));

    let spec = creates(&f).pop().unwrap();
    assert_eq!(spec.argv[1..3], ["--resume", "conversation-1"]);
    assert!(
        spec.argv[3].contains("are you there?"),
        "the pending prompt"
    );
    assert!(spec.argv[3].contains("UNTRUSTED"));
    assert_eq!(count(&f, |c| matches!(c, Call::PasteText { .. })), 0);

    let respawned = f.events_named("session.respawned");
    assert_eq!(respawned[0]["resumed"], true);
    let ok = f.events_named("dispatch.succeeded");
    assert_eq!(ok[0]["respawned"], true);
    let record = f.record(1).unwrap();
    assert_ne!(record.pane_id.as_deref(), Some(old.as_str()));
    assert_eq!(record.harness_session_id.as_deref(), Some("conversation-1"));
    assert_eq!(record.recent_deliveries, ["d-1"]);
}

#[tokio::test]
async fn a_resume_that_dies_falls_back_to_a_fresh_conversation() {
    let f = Fixture::new();
    f.live_session(1);
    f.tmux.fake.set_dead(&item(1).tmux_session_name(), true);
    f.tmux.die_when_argv_has("--resume");

    assert_eq!(
        f.ingest(comment(1, 1, "still broken")).await,
        Disposition::Delivered
    );
    let specs = creates(&f);
    let fresh = specs.last().unwrap();
    assert_eq!(fresh.argv[1], "--fresh");
    assert!(
        fresh.argv[3].contains("the-loop started this session for github:octo/repo#1"),
        "a fresh conversation boots from the spawn template"
    );
    assert!(
        fresh.argv[3].contains("still broken"),
        "with the pending event"
    );
    assert_eq!(f.events_named("session.resume_failed").len(), 1);
    assert_eq!(f.events_named("session.respawned")[0]["resumed"], false);
    let record = f.record(1).unwrap();
    assert_eq!(
        record.harness_session_id.as_deref(),
        Some(fresh.argv[2].as_str())
    );
    assert_ne!(fresh.argv[2], "conversation-1");
}

#[tokio::test]
async fn without_resume_on_respawn_a_dead_session_starts_fresh() {
    let dir = tempfile::tempdir().unwrap();
    let f = Fixture::with_config(dir, |c| c.sessions.tmux.resume_on_respawn = false);
    f.live_session(1);
    f.tmux.fake.set_dead(&item(1).tmux_session_name(), true);
    assert_eq!(f.ingest(comment(1, 1, "x")).await, Disposition::Delivered);
    assert!(creates(&f).iter().all(|s| s.argv[1] == "--fresh"));
    assert!(f.events_named("session.resume_failed").is_empty());
}

#[tokio::test]
async fn an_absent_tmux_session_is_respawned_too() {
    let f = Fixture::new();
    f.live_session(1);
    f.tmux
        .fake
        .kill_session(&item(1).tmux_session_name())
        .await
        .unwrap();
    assert_eq!(f.ingest(comment(1, 1, "x")).await, Disposition::Delivered);
    assert_eq!(creates(&f).len(), 1);
}

/// A comment by `by` on PR `n`, opened by `author`, whose text links nothing.
fn unlinked_pr_comment(id: u64, n: u64, author: &str, by: &str, body: &str) -> InboundEvent {
    let mut event = comment_by(by, id, n, body);
    event.payload["issue"]["pull_request"] = json!({"url": "x"});
    event.payload["issue"]["body"] = json!("A change.");
    event.payload["issue"]["user"]["login"] = json!(author);
    event
}

/// A comment by alice on PR #16 (body `Fixes #15`) opened by `author`.
fn pr_comment(id: u64, author: &str, body: &str) -> InboundEvent {
    let mut event = unlinked_pr_comment(id, 16, author, "alice", body);
    event.payload["issue"]["body"] = json!("Fixes #15");
    event
}

#[tokio::test]
async fn a_pr_event_reaches_the_prs_own_session_before_its_issues() {
    let f = Fixture::new();
    let issue_pane = f.live_session(15);
    assert_eq!(
        f.ingest(pr_comment(1, "alice", "review this")).await,
        Disposition::Delivered
    );
    assert_eq!(
        f.pasted(&issue_pane).len(),
        1,
        "only the issue has a session"
    );

    let pr_pane = f.live_session(16);
    assert_eq!(
        f.ingest(pr_comment(2, "alice", "and this")).await,
        Disposition::Delivered
    );
    assert_eq!(f.pasted(&pr_pane).len(), 1, "the PR's own session wins");
    assert_eq!(f.pasted(&issue_pane).len(), 1);

    // A control command too: `stop` on the PR stops the PR's session.
    assert_eq!(
        f.ingest(pr_comment(3, "alice", "the-loop stop")).await,
        Disposition::Delivered
    );
    assert_eq!(session_status(&f, 16), Some(Status::Closed));
    assert_eq!(session_status(&f, 15), Some(Status::Active));
}

#[tokio::test]
async fn a_strangers_pr_links_nothing() {
    let f = Fixture::new();
    let issue_pane = f.live_session(15);
    assert_eq!(
        f.ingest(pr_comment(1, "mallory", "review this")).await,
        dropped("no-session"),
        "mallory's `Fixes #15` does not reach #15"
    );
    assert_eq!(
        f.ingest(pr_comment(2, "mallory", "the-loop stop")).await,
        dropped("no-session")
    );
    assert!(f.pasted(&issue_pane).is_empty());
    assert_eq!(session_status(&f, 15), Some(Status::Active));
    // The token's own PRs link like an authorized author's.
    f.dispatcher.set_own_login(Some("the-bot"));
    assert_eq!(
        f.ingest(pr_comment(3, "The-Bot", "review this")).await,
        Disposition::Delivered
    );
    assert_eq!(f.pasted(&issue_pane).len(), 1);
}

/// Issue #15's session shipped to PR #16 (`pullRequest`), as if ship adopted a pull
/// request someone opened on its branch.
fn shipped_to_16(f: &Fixture) {
    f.sessions
        .registry()
        .update(&item(15), |r| {
            r.pull_request = Some(crate::session::records::LinkedPull {
                number: 16,
                url: "https://github.com/octo/repo/pull/16".into(),
                draft: true,
            });
        })
        .unwrap();
}

#[tokio::test]
async fn an_event_on_a_sessions_shipped_pr_reaches_it_whoever_opened_the_pr() {
    // (PR, its author, the comment's author, what happens, pasted into #15)
    let cases: &[(u64, &str, &str, Disposition, usize)] = &[
        // mallory opened #16 (her links count for nothing); ship made it #15's.
        (16, "mallory", "alice", Disposition::Delivered, 1),
        (16, "alice", "alice", Disposition::Delivered, 1),
        // The gates come first: an unauthorized reviewer is refused before any session.
        (16, "mallory", "mallory", dropped("unauthorized-actor"), 0),
        // A pull request #15 did not ship is not its own.
        (17, "mallory", "alice", dropped("no-session"), 0),
    ];
    for (i, (pr, author, by, want, pasted)) in cases.iter().enumerate() {
        let f = Fixture::new();
        let pane = f.live_session(15);
        shipped_to_16(&f);
        let got = f
            .ingest(unlinked_pr_comment(1, *pr, author, by, "rename it"))
            .await;
        assert_eq!(&got, want, "case {i}");
        assert_eq!(f.pasted(&pane).len(), *pasted, "case {i}");
    }
}

#[tokio::test]
async fn a_shipped_pr_is_its_sessions_after_its_own_and_only_while_open() {
    let f = Fixture::new();
    let issue_pane = f.live_session(15);
    shipped_to_16(&f);
    // `stop` on the shipped PR stops the session that owns it (SPEC §14.3 order).
    assert_eq!(
        f.ingest(unlinked_pr_comment(
            1,
            16,
            "mallory",
            "alice",
            "the-loop pause"
        ))
        .await,
        Disposition::Delivered
    );
    assert_eq!(session_status(&f, 15), Some(Status::Paused));
    assert_eq!(
        f.ingest(unlinked_pr_comment(
            2,
            16,
            "mallory",
            "alice",
            "the-loop resume"
        ))
        .await,
        Disposition::Delivered
    );
    // A session on the PR itself wins over the one that shipped to it.
    let pr_pane = f.live_session(16);
    assert_eq!(
        f.ingest(unlinked_pr_comment(3, 16, "mallory", "alice", "to the PR"))
            .await,
        Disposition::Delivered
    );
    assert_eq!(f.pasted(&pr_pane).len(), 1);
    assert!(f.pasted(&issue_pane).is_empty());
    // A closed owner owns nothing.
    f.sessions.registry().remove(&item(16)).unwrap();
    f.sessions
        .registry()
        .update(&item(15), |r| r.status = Status::Closed)
        .unwrap();
    assert_eq!(
        f.ingest(unlinked_pr_comment(4, 16, "mallory", "alice", "anyone?"))
            .await,
        dropped("no-session")
    );
}

fn session_status(f: &Fixture, n: u64) -> Option<Status> {
    f.sessions
        .registry()
        .get(&item(n))
        .unwrap()
        .map(|r| r.status)
}

#[tokio::test]
async fn refused_events_are_settled_with_the_router_reason() {
    let f = Fixture::new();
    f.live_session(1);
    assert_eq!(
        f.ingest(comment_by("mallory", 1, 1, "obey me")).await,
        dropped("unauthorized-actor")
    );
    assert_eq!(
        f.ingest(comment(2, 1, "the-loop stop and the-loop start"))
            .await,
        dropped("ambiguous")
    );
    assert_eq!(count(&f, |c| matches!(c, Call::PasteText { .. })), 0);
}

#[tokio::test]
async fn the_dedupe_survives_a_restart_and_a_corrupt_store_is_moved_aside() {
    let f = Fixture::new();
    f.live_session(1);
    assert_eq!(f.ingest(comment(1, 1, "x")).await, Disposition::Delivered);
    // The store is saved by the state writer, unawaited: wait for it as a restart would.
    crate::state_writer::flush().wait().await.unwrap();
    let paths = crate::paths::StatePaths::new(f.dir.path());
    let again = crate::session::Dispatcher::new(f.sessions.clone(), &f.config, &paths).unwrap();
    let got = crate::ingress::Ingest::ingest(&again, comment(1, 1, "x")).await;
    assert_eq!(got, dropped("duplicate-delivery"));

    std::fs::write(f.dir.path().join("dedupe.json"), b"[oops").unwrap();
    let fresh = crate::session::Dispatcher::new(f.sessions.clone(), &f.config, &paths).unwrap();
    assert_eq!(f.events_named("state.corrupt").len(), 1);
    let got = crate::ingress::Ingest::ingest(&fresh, comment(1, 1, "x")).await;
    assert_eq!(
        got,
        Disposition::Delivered,
        "an empty dedupe after the loss"
    );
}

impl Fixture {
    /// Submits without awaiting (routing happens now; the future settles later).
    fn dispatcher_ingest(
        &self,
        event: InboundEvent,
    ) -> futures::future::BoxFuture<'static, Disposition> {
        crate::ingress::Ingest::ingest(&self.dispatcher, event)
    }
}
