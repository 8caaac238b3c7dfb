//! The reply path over the fake tmux: the order of refusals, the framing, the events,
//! the report (against the simulated GitHub), and the paste lock shared with the
//! dispatcher.

use super::*;
use crate::github::sim::{Fault, IssueSpec, SimGithub, SimHandle};
use crate::guard::{ATTRIBUTION, MARKER, is_self_authored, mark_self_authored};
use crate::ingress::{Disposition, Ingest};
use crate::session::delivery::paste_lock;
use crate::session::registry::Status;
use crate::session::test_support::*;
use crate::tmux::Tmux;
use crate::tmux::fake::{Call, Failure, Op};

const TEXT: &str = "Per repo, please.\nKeep the global one as a ceiling.";

fn request(work_item: &str, text: &str) -> ReplyRequest {
    ReplyRequest {
        work_item: work_item.into(),
        text: text.into(),
        actor: Some("alice".into()),
        comment: false,
        via: Via::Cli,
        over_budget: false,
    }
}

fn replier(f: &Fixture) -> Replier {
    Replier::new(Arc::clone(&f.sessions)).with_lock_wait(Duration::from_secs(5))
}

async fn sim_client() -> (SimHandle, Arc<Client>) {
    let sim = SimGithub::start().await.unwrap();
    sim.add_issue("octo/repo", IssueSpec::new("Retries").number(1))
        .unwrap();
    let client = Client::builder(&sim.base_url())
        .token(Some("ghp_replytesttoken_0123456789"))
        .retry_policy(crate::github::RetryPolicy::none())
        .build()
        .unwrap();
    (sim, Arc::new(client))
}

fn creates_or_kills(f: &Fixture) -> usize {
    f.tmux
        .fake
        .calls()
        .iter()
        .filter(|c| matches!(c, Call::CreateSession(_) | Call::KillSession(_)))
        .count()
}

fn log_text(f: &Fixture) -> String {
    std::fs::read_to_string(f.dir.path().join("events.jsonl")).unwrap_or_default()
}

#[tokio::test]
async fn the_framed_text_is_pasted_once_and_submitted() {
    let f = Fixture::new();
    let pane = f.live_session(1);
    let replied = replier(&f)
        .reply(request("github:octo/repo#1", &format!("\n\n{TEXT}\n\n")))
        .await
        .unwrap();
    let expected = format!(
        "Reply from the operator via the-loop to your question on github:octo/repo#1:\n\n{TEXT}"
    );
    assert_eq!(f.pasted(&pane), std::slice::from_ref(&expected));
    let input = String::from_utf8(f.tmux.fake.pane_input(&pane)).unwrap();
    assert_eq!(input, format!("\x1b[200~{expected}\x1b[201~\r"));
    assert_eq!(replied.bytes, expected.len());
    assert_eq!(replied.pane, pane);
    assert_eq!(replied.report, Report::Skipped);

    let sent = f.events_named("session.reply_sent");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["work_item"], "github:octo/repo#1");
    assert_eq!(sent[0]["actor"], "alice");
    assert_eq!(sent[0]["via"], "cli");
    assert_eq!(sent[0]["source"], "cli");
    assert_eq!(sent[0]["comment_posted"], false);
    assert!(
        !log_text(&f).contains("Per repo"),
        "the text is never logged"
    );
    assert!(f.record(1).unwrap().last_event_at.is_some());
}

#[tokio::test]
async fn refusals_come_in_the_specified_order_with_their_codes() {
    let f = Fixture::new();
    f.live_session(1); // active, live
    let paused = f.live_session(2);
    f.sessions
        .pause(&item(2), &crate::session::Origin::cli())
        .unwrap();
    f.live_session(3);
    f.tmux.fake.set_dead(&item(3).tmux_session_name(), true);
    f.live_session(4);
    f.tmux
        .fake
        .kill_session(&item(4).tmux_session_name())
        .await
        .unwrap();
    f.live_session(5);
    f.sessions
        .registry()
        .update(&item(5), |r| r.status = Status::Closed)
        .unwrap();
    let calls_before = creates_or_kills(&f);

    // (ref, text, status, exit code, logged reason)
    let cases: [(&str, &str, u16, u8, Option<&str>); 9] = [
        ("octo/repo#1", TEXT, 400, 2, None),
        ("github:octo/repo#99", "", 400, 2, None),
        ("github:octo/repo#1", " \n\t\x1b\x07 ", 400, 2, None),
        ("github:octo/repo#99", TEXT, 404, 1, Some("no-session")),
        ("github:octo/repo#5", TEXT, 404, 1, Some("session-closed")),
        ("github:octo/repo#2", TEXT, 400, 1, Some("session-paused")),
        ("github:octo/repo#3", TEXT, 404, 1, Some("no-live-pane")),
        ("github:octo/repo#4", TEXT, 404, 1, Some("no-live-pane")),
        ("bad ref", "", 400, 2, None),
    ];
    let replier = replier(&f);
    for (work_item, text, status, code, reason) in cases {
        let before = f.events_named("session.reply_failed").len();
        let error = replier
            .reply(request(work_item, text))
            .await
            .expect_err(work_item);
        assert_eq!(error.status(), status, "{work_item}: {error}");
        assert_eq!(error.exit_code(), code, "{work_item}: {error}");
        assert_eq!(error.reason(), reason, "{work_item}");
        let failed = f.events_named("session.reply_failed");
        match reason {
            Some(reason) => {
                assert_eq!(failed.len(), before + 1, "{work_item}");
                let event = failed.last().unwrap();
                assert_eq!(event["reason"], reason);
                assert_eq!(event["level"], "warning");
                assert_eq!(event["actor"], "alice");
            }
            None => assert_eq!(
                failed.len(),
                before,
                "{work_item}: usage errors are not logged"
            ),
        }
    }
    assert!(matches!(
        replier.reply(request("bad ref", "")).await,
        Err(ReplyError::BadRef(_))
    ));
    assert!(matches!(
        replier.reply(request("github:octo/repo#2", "")).await,
        Err(ReplyError::EmptyText)
    ));
    assert!(f.pasted(&paused).is_empty());
    assert_eq!(
        creates_or_kills(&f),
        calls_before,
        "nothing spawned, respawned or killed"
    );
    assert!(f.events_named("session.reply_sent").is_empty());
    assert!(f.events_named("session.respawned").is_empty());
    assert!(f.events_named("session.spawned").is_empty());
    assert!(!log_text(&f).contains("Per repo"));
}

#[tokio::test]
async fn unknown_liveness_refuses_without_pasting() {
    let f = Fixture::new();
    let pane = f.live_session(1);
    f.tmux.fake.fail(Op::List, Failure::Timeout);
    let error = replier(&f)
        .reply(request("github:octo/repo#1", TEXT))
        .await
        .unwrap_err();
    assert!(
        matches!(error, ReplyError::TmuxUnavailable { .. }),
        "{error}"
    );
    assert_eq!(error.status(), 503);
    assert!(f.pasted(&pane).is_empty());
}

#[tokio::test]
async fn a_failed_paste_is_reported_and_nothing_respawns() {
    let f = Fixture::new();
    f.live_session(1);
    f.tmux
        .fake
        .fail(Op::Paste, Failure::Failed("no space left".into()));
    let error = replier(&f)
        .reply(request("github:octo/repo#1", TEXT))
        .await
        .unwrap_err();
    assert!(matches!(error, ReplyError::PasteFailed { .. }), "{error}");
    assert_eq!((error.status(), error.exit_code()), (500, 1));
    assert_eq!(
        f.events_named("session.reply_failed")[0]["reason"],
        "paste-failed"
    );
    assert_eq!(creates_or_kills(&f), 0);
    assert!(f.events_named("session.reply_sent").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_report_is_marked_and_quotes_the_reply() {
    let f = Fixture::new();
    f.live_session(1);
    let (sim, client) = sim_client().await;
    let mut req = request("github:octo/repo#1", TEXT);
    req.comment = true;
    req.via = Via::Api;
    let replied = replier(&f).with_github(client).reply(req).await.unwrap();
    let Report::Posted { url } = &replied.report else {
        panic!("{:?}", replied.report);
    };
    let posted = sim.comments_on("octo/repo", 1);
    assert_eq!(posted.len(), 1);
    let body = &posted[0].body;
    assert!(is_self_authored(Some(body)));
    assert!(
        body.contains("> Per repo, please.\n> Keep the global one as a ceiling."),
        "{body}"
    );
    assert!(
        body.contains("`alice`") && body.contains("via the-loop api"),
        "{body}"
    );
    let lines: Vec<&str> = body.trim_end().lines().collect();
    assert_eq!(&lines[lines.len() - 2..], [ATTRIBUTION, MARKER]);

    let sent = f.events_named("session.reply_sent");
    assert_eq!(sent[0]["comment_posted"], true);
    assert_eq!(sent[0]["comment_url"], url.as_str());
    assert_eq!(sent[0]["source"], "cli");
    assert_eq!(sent[0]["via"], "api");
    assert_eq!(sent[0]["level"], "info");
    assert!(!log_text(&f).contains("Per repo"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_report_keeps_the_delivery_and_warns() {
    let f = Fixture::new();
    let pane = f.live_session(1);
    let (sim, client) = sim_client().await;
    sim.fail_next(5, Fault::Status(502));
    let mut req = request("github:octo/repo#1", TEXT);
    req.comment = true;
    let replied = replier(&f).with_github(client).reply(req).await.unwrap();
    assert!(
        matches!(replied.report, Report::Failed { .. }),
        "{:?}",
        replied.report
    );
    assert_eq!(f.pasted(&pane).len(), 1, "delivered all the same");
    let sent = f.events_named("session.reply_sent");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["level"], "warning");
    assert_eq!(sent[0]["comment_posted"], false);
    assert!(
        sent[0]["error"].as_str().unwrap().contains("502"),
        "{}",
        sent[0]
    );

    // No client at all: the same, with the reason.
    let mut req = request("github:octo/repo#1", TEXT);
    req.comment = true;
    let replied = replier(&f).reply(req).await.unwrap();
    let Report::Failed { error } = replied.report else {
        panic!("expected a failed report");
    };
    assert!(error.contains("no GitHub client"), "{error}");
}

#[test]
fn actors_are_cleaned_and_default_to_the_local_user() {
    assert_eq!(claimed_actor(Some(" bob ")), "bob");
    assert_eq!(claimed_actor(Some("`evil`\n\x1b[31m")), "evil[31m");
    assert_eq!(claimed_actor(Some(&"x".repeat(100))).len(), 64);
    assert_eq!(claimed_actor(Some("  ")), crate::session::ask::local_user());
    assert_eq!(claimed_actor(None), crate::session::ask::local_user());
}

#[test]
fn reply_text_keeps_indentation_and_drops_blank_edges() {
    assert_eq!(
        reply_text("\n\n  code\nmore  \n\n").as_deref(),
        Some("  code\nmore")
    );
    assert_eq!(reply_text("a\r\nb").as_deref(), Some("a\nb"));
    assert_eq!(reply_text("\x1b\x7f \n\t"), None);
}

#[test]
fn the_report_quotes_every_line_and_the_stamp_strips_markers() {
    let body = report_body("alice", Via::Tui, &format!("one\n\nthree {MARKER}"));
    assert_eq!(
        mark_self_authored(&body),
        format!(
            "Operator reply from `alice` (via the-loop tui), delivered to the agent's session:\n\n> one\n>\n> three\n\n{ATTRIBUTION}\n{MARKER}\n"
        )
    );
    let long = "y".repeat(MAX_QUOTED_CHARS + 10);
    let body = report_body("a", Via::Cli, &long);
    assert!(
        body.ends_with("… (cut for GitHub's comment size limit)"),
        "{}",
        &body[body.len() - 80..]
    );
}

#[tokio::test]
async fn a_paste_in_progress_makes_a_reply_wait_then_give_up() {
    let f = Fixture::new();
    let pane = f.live_session(1);
    let dir = f.sessions.registry().dir().to_path_buf();
    let held = paste_lock::acquire(&dir, &item(1), Duration::ZERO)
        .await
        .unwrap();
    let error = replier(&f)
        .with_lock_wait(Duration::from_millis(40))
        .reply(request("github:octo/repo#1", TEXT))
        .await
        .unwrap_err();
    assert!(matches!(error, ReplyError::Busy { .. }), "{error}");
    assert_eq!(error.reason(), Some("session-busy"));
    assert!(f.pasted(&pane).is_empty());
    drop(held);
    replier(&f)
        .reply(request("github:octo/repo#1", TEXT))
        .await
        .unwrap();
    assert_eq!(f.pasted(&pane).len(), 1);
}

/// A reply sent while the dispatcher is between an event's paste and its submit waits
/// for the submit: the pane sees event, `\r`, reply, `\r` — never the two texts
/// submitted as one message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_never_lands_inside_a_dispatcher_delivery() {
    let f = Fixture::new();
    let pane = f.live_session(1);
    let permits = f.tmux.gate(&pane);
    let event = f.dispatcher.ingest(comment(1, 1, "an event in flight"));
    let event = tokio::spawn(event);
    // The event's text paste is waiting at the gate.
    let waiting = || {
        f.tmux
            .fake
            .calls()
            .iter()
            .any(|c| matches!(c, Call::ListSessions))
    };
    for _ in 0..200 {
        if waiting() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(30)).await;

    let sessions = Arc::clone(&f.sessions);
    let reply = tokio::spawn(async move {
        Replier::new(sessions)
            .reply(request("github:octo/repo#1", "the reply"))
            .await
            .map(|r| r.bytes)
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    // One permit at a time: a reply not held back would take the second permit and
    // paste between the event's text and its submit.
    for _ in 0..4 {
        permits.add_permits(1);
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    assert_eq!(event.await.unwrap(), Disposition::Delivered);
    reply.await.unwrap().unwrap();

    let input = String::from_utf8(f.tmux.fake.pane_input(&pane)).unwrap();
    let chunks: Vec<&str> = input.split_inclusive('\r').collect();
    assert_eq!(chunks.len(), 2, "{input:?}");
    assert!(chunks[0].contains("an event in flight") && !chunks[0].contains("the reply"));
    assert!(chunks[1].contains("the reply"));
    assert!(
        chunks.iter().all(|c| c.ends_with("\x1b[201~\r")),
        "{input:?}"
    );
}
