//! A session's usage kept current, its events, and budgets holding deliveries (SPEC
//! §20.4) over the fake tmux and a stand-in for Claude Code's screen.

use super::*;
use crate::ingress::Ingest;
use crate::session::delivery::DeliveryFailure;
use crate::session::delivery::HoldReason;
use crate::session::reply::{ReplyError, ReplyRequest, Via};
use crate::session::test_support::*;
use crate::session::{PromptInputs, Replier};
use crate::usage::Tokens;
use crate::usage::line::tests::{TEXT, assistant, usage};
use std::sync::Arc;
use std::time::Duration;

/// Claude Code's config dir and the transcript of `item(n)`'s session in it.
struct Transcript {
    claude_dir: PathBuf,
    path: PathBuf,
}

impl Transcript {
    fn new(f: &Fixture, n: u64) -> Self {
        let record = f.record(n).unwrap();
        let claude_dir = f.dir.path().join("claude");
        let dir = crate::usage::track::claude_project_dir(&claude_dir, &record.cwd);
        std::fs::create_dir_all(&dir).unwrap();
        Self {
            claude_dir,
            path: dir.join(format!("session-{n}.jsonl")),
        }
    }

    fn named(&self) -> Named<'_> {
        Named {
            transcript: &self.path,
            root: Root::Claude(&self.claude_dir),
        }
    }

    /// A response on Sonnet ($3 / $15 per million) of `input` and `output` tokens.
    fn respond(&self, id: &str, input: u64, output: u64) {
        use std::io::Write;
        let line = assistant(
            id,
            "req",
            "claude-sonnet-4-5",
            &usage(input, output, 0, 0, 0),
            TEXT,
        )
        // Answered now: a daily budget counts today's responses only.
        .replace("2026-12-03T16:38:57.168Z", &crate::time::now_ts());
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .unwrap();
        writeln!(file, "{line}").unwrap();
    }
}

fn budgets(session: Option<f64>, daily: Option<f64>) -> Budgets {
    Budgets {
        session_usd: session,
        daily_usd: daily,
        prices: crate::usage::Prices::embedded(),
    }
}

fn turn_end(f: &Fixture, t: &Transcript, b: &Budgets) -> Refreshed {
    let registry = f.sessions.registry();
    read_and_tell(registry, &f.sessions.events, &item(1), Some(t.named()), b)
        .unwrap()
        .unwrap()
}

#[tokio::test]
async fn each_turn_end_reads_only_what_was_added_and_tells_it_once() {
    let f = Fixture::new();
    f.live_session(1);
    let t = Transcript::new(&f, 1);
    assert!(!f.record(1).unwrap().usage.is_known(), "unknown before");
    let size = || std::fs::metadata(&t.path).unwrap().len();
    t.respond("msg_1", 1_000, 100);
    let first = turn_end(&f, &t, &budgets(None, None));
    assert_eq!(first.stats.bytes, size());
    t.respond("msg_2", 2_000, 200);
    t.respond("msg_3", 3_000, 300);
    let second = turn_end(&f, &t, &budgets(None, None));
    assert_eq!(
        second.stats.bytes,
        size() - first.stats.bytes,
        "only the new lines"
    );
    let record = f.record(1).unwrap();
    assert_eq!(
        record.usage.tally().tokens(),
        Tokens {
            input: 6_000,
            output: 600,
            ..Tokens::default()
        }
    );
    assert_eq!(record.usage.last_read_bytes, second.stats.bytes);
    // A turn end with nothing new tells nothing.
    turn_end(&f, &t, &budgets(None, None));
    let told = f.events_named("session.usage");
    assert_eq!(told.len(), 2, "{told:#?}");
    assert_eq!(told[1]["tokens"], 6_600);
    assert_eq!(told[1]["input"], 6_000);
    // 6000 × $3 + 600 × $15 per million.
    let cost = told[1]["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.027).abs() < 1e-12, "{cost}");
}

#[tokio::test]
async fn a_transcript_outside_the_project_dir_is_never_read() {
    let f = Fixture::new();
    f.live_session(1);
    let t = Transcript::new(&f, 1);
    let elsewhere = f.dir.path().join("elsewhere.jsonl");
    std::fs::write(&elsewhere, "").unwrap();
    let named = Named {
        transcript: &elsewhere,
        root: Root::Claude(&t.claude_dir),
    };
    let registry = f.sessions.registry();
    read_and_tell(
        registry,
        &f.sessions.events,
        &item(1),
        Some(named),
        &budgets(None, None),
    )
    .unwrap();
    let record = f.record(1).unwrap();
    assert!(!record.usage.is_known());
    assert!(record.usage.files.is_empty());
    assert!(f.events_named("session.usage").is_empty());
}

#[tokio::test]
async fn crossing_a_budget_warns_then_tells_over_budget_once_each() {
    let f = Fixture::new();
    f.live_session(1);
    let t = Transcript::new(&f, 1);
    let b = budgets(Some(1.0), None);
    t.respond("msg_1", 100_000, 0); // $0.30
    turn_end(&f, &t, &b);
    t.respond("msg_2", 200_000, 0); // $0.90: 90 %
    turn_end(&f, &t, &b);
    t.respond("msg_3", 1_000, 0); // still 90 %
    turn_end(&f, &t, &b);
    let warned = f.events_named("session.budget_warning");
    assert_eq!(warned.len(), 1, "{warned:#?}");
    assert_eq!(warned[0]["scope"], "session");
    assert_eq!(warned[0]["budget_usd"], 1.0);
    assert!(f.events_named("session.over_budget").is_empty());
    t.respond("msg_4", 40_000, 0); // $1.023
    turn_end(&f, &t, &b);
    let over = f.events_named("session.over_budget");
    assert_eq!(over.len(), 1);
    assert_eq!(over[0]["level"], "warning");
    let record = f.record(1).unwrap();
    assert_eq!(over_budget(&record, &[], &b), Some(Scope::Session));
    assert_eq!(over_budget(&record, &[], &budgets(Some(2.0), None)), None);
    // The day's budget counts every session's cost today.
    let records = vec![record.clone()];
    assert_eq!(
        over_budget(&record, &records, &budgets(None, Some(1.0))),
        Some(Scope::Daily)
    );
}

/// A reload lowering a budget under what is spent tells the crossing once, as growth
/// would; a session closed tells nothing, and the day's budget is told once, named after
/// the session that spent most today.
#[tokio::test]
async fn a_budget_lowered_under_the_cost_tells_the_crossing_once() {
    let f = Fixture::new();
    for n in [1, 2, 3] {
        f.live_session(n);
        let t = Transcript::new(&f, n);
        t.respond("msg_1", 100_000 * n, 0); // $0.30, $0.60, $0.90
        read_and_tell(
            f.sessions.registry(),
            &f.sessions.events,
            &item(n),
            Some(t.named()),
            &budgets(None, None),
        )
        .unwrap();
    }
    f.sessions
        .registry()
        .update(&item(3), |r| r.status = crate::session::Status::Closed)
        .unwrap();
    let registry = f.sessions.registry();
    let events = &f.sessions.events;
    let change = |old: &Budgets, new: &Budgets| {
        tell_budgets_changed(registry, events, Source::Cli, old, new).unwrap();
    };
    // $0.30 and $0.60 against $0.50: #2 over; #1 (60 %) nothing; #3 is closed.
    change(&budgets(None, None), &budgets(Some(0.5), None));
    let over = f.events_named("session.over_budget");
    assert_eq!(over.len(), 1, "{over:#?}");
    assert_eq!(over[0]["work_item"], item(2).to_string());
    assert_eq!(over[0]["scope"], "session");
    assert_eq!(over[0]["source"], "cli");
    assert_eq!(over[0]["budget_usd"], 0.5);
    assert!(f.events_named("session.budget_warning").is_empty());
    // Lowered further: #2 was over already; #1 now at 86 % warns.
    change(&budgets(Some(0.5), None), &budgets(Some(0.35), None));
    assert_eq!(f.events_named("session.over_budget").len(), 1);
    let warned = f.events_named("session.budget_warning");
    assert_eq!(warned.len(), 1, "{warned:#?}");
    assert_eq!(warned[0]["work_item"], item(1).to_string());
    // The same budgets again (an unrelated reload): nothing.
    change(&budgets(Some(0.35), None), &budgets(Some(0.35), None));
    assert_eq!(f.events_named("session.budget_warning").len(), 1);
    // The day: $1.80 spent today (the closed session's too) against $1.50: told once.
    change(&budgets(Some(0.35), None), &budgets(Some(0.35), Some(1.5)));
    let over = f.events_named("session.over_budget");
    let daily: Vec<_> = over.iter().filter(|e| e["scope"] == "daily").collect();
    assert_eq!(daily.len(), 1, "{over:#?}");
    assert_eq!(daily[0]["work_item"], item(2).to_string());
    close(&daily[0]["cost_usd"], 1.8);
}

fn close(a: &serde_json::Value, b: f64) {
    let a = a.as_f64().unwrap();
    assert!((a - b).abs() < 1e-9, "{a} != {b}");
}

/// A session on another host: its figures are what the-loop there sent, whole each time
/// (a report lost on the way is made good by the next); what changed is told, budgets
/// crossed as for a session here; nothing here reads the host's paths.
#[tokio::test]
async fn a_host_sessions_usage_is_taken_whole_and_never_read_here() {
    let f = Fixture::new();
    f.live_session(1);
    f.sessions
        .registry()
        .update(&item(1), |r| r.host = Some("build".into()))
        .unwrap();
    // Kept "there": a transcript this test reads the way the-loop on the host does.
    let t = Transcript::new(&f, 1);
    let cwd = f.record(1).unwrap().cwd;
    let mut there = crate::usage::SessionUsage::default();
    t.respond("msg_1", 100_000, 0); // $0.30
    read_more(&mut there, &cwd, Some(t.named()), &item(1));
    t.respond("msg_2", 250_000, 0); // $1.05 in all
    read_more(&mut there, &cwd, Some(t.named()), &item(1));
    let b = budgets(Some(1.0), None);
    let registry = f.sessions.registry();
    let taken = take_from_host(registry, &f.sessions.events, &item(1), there.clone(), &b)
        .unwrap()
        .unwrap();
    assert_eq!(taken.after.tokens().input, 350_000);
    // The same figures again tell nothing new.
    take_from_host(registry, &f.sessions.events, &item(1), there, &b).unwrap();
    let told = f.events_named("session.usage");
    assert_eq!(told.len(), 1, "{told:#?}");
    assert_eq!(told[0]["input"], 350_000);
    assert_eq!(f.events_named("session.over_budget").len(), 1);
    // A turn end here, even naming a transcript, reads nothing for it.
    t.respond("msg_3", 1_000, 0);
    let here = turn_end(&f, &t, &budgets(None, None));
    assert_eq!(here.after, here.before);
    assert_eq!(f.record(1).unwrap().usage.tally().tokens().input, 350_000);
    assert_eq!(f.events_named("session.usage").len(), 1);
}

fn event(id: &str) -> PromptInputs {
    PromptInputs {
        delivery_id: id.into(),
        ..PromptInputs::manual(&item(1), "test")
    }
}

fn with_budget(f: &Fixture, session: Option<f64>) {
    let mut settings = (*f.sessions.settings()).clone();
    settings.budgets.session_usd = session;
    f.sessions.set_settings(settings);
}

#[tokio::test]
async fn over_budget_holds_the_next_delivery_until_the_budget_is_raised() {
    let f = Fixture::new();
    let (pane, _claude) = f.claude_session(1);
    let t = Transcript::new(&f, 1);
    with_budget(&f, Some(0.5));
    t.respond("msg_1", 200_000, 0); // $0.60
    turn_end(&f, &t, &f.sessions.settings().budgets);
    assert_eq!(f.events_named("session.over_budget").len(), 1);

    let failure = f
        .sessions
        .deliver_event(&item(1), &event("d-1"))
        .await
        .unwrap_err();
    assert!(
        matches!(failure, DeliveryFailure::Held(h) if h.reason == HoldReason::OverBudget),
        "{failure:?}"
    );
    assert!(f.tmux.fake.pane_input(&pane).is_empty(), "nothing pasted");

    // Through the dispatcher's lane: held once, released once the budget is raised.
    let settled = tokio::spawn(
        f.dispatcher
            .ingest(comment_by("alice", 7, 1, "more, please")),
    );
    for _ in 0..500 {
        if !f.events_named("session.delivery_held").is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let held = f.events_named("session.delivery_held");
    assert_eq!(held.len(), 1, "{held:#?}");
    assert_eq!(held[0]["reason"], "over-budget");
    assert_eq!(
        f.record(1).unwrap().hold.summary().unwrap().label(),
        "⏸ 1 held: over budget"
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        f.tmux.fake.pane_input(&pane).is_empty(),
        "still nothing pasted"
    );
    with_budget(&f, Some(5.0)); // what a hot reload does
    assert_eq!(
        settled.await.unwrap(),
        crate::ingress::Disposition::Delivered
    );
    let pasted = f.pasted(&pane);
    assert_eq!(pasted.len(), 1, "once: {pasted:#?}");
    assert!(pasted[0].contains("more, please"));
    assert_eq!(f.events_named("session.delivery_released").len(), 1);
}

#[tokio::test]
async fn over_budget_a_dead_session_is_not_respawned_with_the_event() {
    let f = Fixture::new();
    let (pane, _claude) = f.claude_session(1);
    let t = Transcript::new(&f, 1);
    with_budget(&f, Some(0.5));
    t.respond("msg_1", 200_000, 0); // $0.60
    turn_end(&f, &t, &f.sessions.settings().budgets);
    f.tmux.fake.set_dead(&item(1).tmux_session_name(), true);
    let failure = f
        .sessions
        .deliver_event(&item(1), &event("d-1"))
        .await
        .unwrap_err();
    assert!(
        matches!(failure, DeliveryFailure::Held(h) if h.reason == HoldReason::OverBudget),
        "{failure:?}"
    );
    assert!(f.events_named("session.respawned").is_empty());
    assert!(f.tmux.fake.pane_input(&pane).is_empty(), "nothing pasted");
}

#[tokio::test]
async fn an_operator_reply_over_budget_is_refused_unless_confirmed() {
    let f = Fixture::new();
    let (pane, _claude) = f.claude_session(1);
    let t = Transcript::new(&f, 1);
    with_budget(&f, Some(0.5));
    t.respond("msg_1", 200_000, 0);
    turn_end(&f, &t, &f.sessions.settings().budgets);
    let replier = Replier::new(Arc::clone(&f.sessions));
    let request = |over_budget| ReplyRequest {
        work_item: item(1).to_string(),
        text: "go on".into(),
        actor: Some("op".into()),
        comment: false,
        via: Via::Cli,
        over_budget,
    };
    let refused = replier.reply(request(false)).await.unwrap_err();
    assert!(
        matches!(refused, ReplyError::OverBudget { .. }),
        "{refused}"
    );
    assert!(refused.to_string().contains("--over-budget"), "{refused}");
    assert!(
        f.record(1).unwrap().hold.replies.is_empty(),
        "nothing queued"
    );
    assert!(f.tmux.fake.pane_input(&pane).is_empty());
    replier.reply(request(true)).await.unwrap();
    assert_eq!(f.pasted(&pane).len(), 1);
}

#[tokio::test]
async fn a_review_to_a_session_over_budget_is_refused_not_queued_unless_confirmed() {
    let f = Fixture::new();
    let (pane, _claude) = f.claude_session(1);
    let t = Transcript::new(&f, 1);
    with_budget(&f, Some(0.5));
    t.respond("msg_1", 200_000, 0);
    turn_end(&f, &t, &f.sessions.settings().budgets);
    let replier = Replier::new(Arc::clone(&f.sessions));
    let review = || crate::session::delivery::HeldReview {
        comments: 1,
        sha: "abc1234".into(),
    };
    let note = "Review from the operator on b at abc1234: 1 comment on your diff.";
    let refused = replier
        .send_review(&item(1), note, review(), false)
        .await
        .unwrap_err();
    assert!(
        matches!(refused, ReplyError::OverBudget { .. }),
        "{refused}"
    );
    assert!(
        f.record(1).unwrap().hold.replies.is_empty(),
        "nothing queued"
    );
    assert!(f.tmux.fake.pane_input(&pane).is_empty());
    replier
        .send_review(&item(1), note, review(), true)
        .await
        .unwrap();
    assert_eq!(f.pasted(&pane).len(), 1);
}
