//! The whole loop: an authorized comment reaches the agent, the agent asks through
//! `the-loop ask`, the question is on GitHub (marked) and in the event log, the
//! operator answers through the CLI and then the HTTP route, each answer arrives as one
//! bracketed paste with the framing line and closes the question, and nothing the tool
//! posted is ever fed back.

use crate::support::ask_world::*;
use crate::support::tmux_server::{read_log, wait_log};
use serde_json::{Value, json};
use the_loop::guard::{ATTRIBUTION, MARKER, is_self_authored};
use the_loop::ingress::Disposition;
use the_loop::session::OpenQuestions;
use the_loop::session::activity::{self, ActivityState, ActivityTracker};
use the_loop::session::reply::framed;

/// Distinctive words: they must never show up in the event log or the log files.
const REPLY_CLI: &str = "Per repo, ZEBRACLI.\n\n  Keep a global ceiling of 10.";
const REPLY_API: &str = "Call it retry_cap_per_repo, OKAPIAPI.";

/// Asserts the comment is marked: the attribution line, then the marker as last line.
fn assert_marked(body: &str) {
    assert!(is_self_authored(Some(body)), "{body}");
    let lines: Vec<&str> = body.trim_end().lines().collect();
    assert_eq!(lines[lines.len() - 1], MARKER, "{body}");
    assert_eq!(lines[lines.len() - 2], ATTRIBUTION, "{body}");
}

fn open_questions(world: &World) -> OpenQuestions {
    OpenQuestions::load(world.events.path()).unwrap()
}

async fn state_of(world: &World, n: u64) -> ActivityState {
    let questions = open_questions(world);
    let records = world.sessions.registry().list().unwrap();
    let record = records.iter().find(|r| r.work_item == item(n)).unwrap();
    let seen = activity::observe(
        |r| world.sessions.tmux_of(r),
        std::slice::from_ref(record),
        &mut ActivityTracker::new(),
        |i| questions.awaiting(i),
        activity::unix_now(),
    )
    .await;
    seen[0].state
}

/// What `the-loop sessions list --json` says of issue `n`.
async fn listed_state(world: &World, n: u64) -> String {
    let out = world.run(&["sessions", "list", "--json"], None).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    let wanted = item(n).to_string();
    let row = rows.iter().find(|r| r["ref"] == wanted.as_str()).unwrap();
    row["state"].as_str().unwrap().to_string()
}

/// The agent's submissions that are not its boot prompt.
fn submissions(world: &World) -> Vec<Value> {
    read_log(&world.agent_log())
        .into_iter()
        .filter(|l| l["boot"] != true)
        .collect()
}

/// Feeds the newest comment on #15 (one the tool posted) back as the poller would, and
/// asserts it is dropped as self-authored with nothing pasted.
async fn feed_back_is_dropped(world: &World) {
    let before = submissions(world).len();
    let comment = world.last_comment(15).await;
    assert_marked(comment["body"].as_str().unwrap());
    let got = world.ingest(15, &comment).await;
    assert_eq!(
        got,
        Disposition::Dropped {
            reason: "self-authored".into()
        }
    );
    let id = format!("poll-comment-{}", comment["id"]);
    let dropped = world.events_named("routing.dropped");
    assert!(
        dropped
            .iter()
            .any(|e| e["delivery_id"] == id.as_str() && e["reason"] == "self-authored"),
        "{dropped:?}"
    );
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(submissions(world).len(), before, "nothing was pasted");
}

/// alice asks the agent something that makes it ask; returns the question event.
async fn make_the_agent_ask(world: &World, body: &str, nth: usize) -> Value {
    let comment = world.comment(15, OPERATOR, body).await;
    assert_eq!(world.ingest(15, &comment).await, Disposition::Delivered);
    let asked = world.wait_events("session.awaiting_input", nth).await;
    asked[nth - 1].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_asks_and_the_operator_answers_by_cli_and_by_http() {
    let world = World::new().await;
    let pane = world.start_session(15).await;

    // 1. The agent asks, from inside its session.
    let asked = make_the_agent_ask(
        &world,
        &format!("Please {TRIGGER} about the retry cap before you start."),
        1,
    )
    .await;
    assert_eq!(asked["work_item"], "github:octo/repo#15");
    assert_eq!(asked["source"], "cli");
    assert_eq!(asked["level"], "info");
    assert_eq!(asked["comment_posted"], true);
    assert!(asked["actor"].as_str().is_some_and(|a| !a.is_empty()));
    let question = asked["question"].as_str().unwrap();
    assert!(question.contains("retry cap"), "{question}");
    assert_ne!(
        asked["pid"],
        std::process::id(),
        "asked by the agent's own process"
    );
    world.wait_screen(&pane, "waiting for the operator").await;

    // 2. The question is on the issue, marked, by the operator's account.
    let posted = world.sim.comments_on(REPO, 15);
    let on_github = posted.last().unwrap();
    assert_eq!(on_github.login, OPERATOR);
    assert!(on_github.body.starts_with(question), "{}", on_github.body);
    assert_marked(&on_github.body);
    let url = asked["comment_url"].as_str().unwrap();
    assert!(
        url.ends_with(&format!("#issuecomment-{}", on_github.id)),
        "{url}"
    );

    // 3. Fed back through the router, it is dropped as self-authored.
    feed_back_is_dropped(&world).await;

    // 4. The question is open and the session awaits input.
    let open = open_questions(&world);
    assert_eq!(open.len(), 1);
    assert_eq!(open.list()[0].text, question);
    assert_eq!(state_of(&world, 15).await, ActivityState::AwaitingInput);
    assert_eq!(listed_state(&world, 15).await, "awaiting-input");

    // 5. The operator answers with the CLI, the text on stdin.
    let out = world
        .run(
            &[
                "reply",
                "--work-item",
                "github:octo/repo#15",
                "--text-file",
                "-",
            ],
            Some(REPLY_CLI),
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("delivery report: http"),
        "{}",
        stdout(&out)
    );
    let lines = wait_log(&world.agent_log(), 3).await;
    let answer = lines.last().unwrap();
    assert_eq!(answer["text"], framed(&item(15), REPLY_CLI).as_str());
    assert_eq!(answer["bracketed"], true);
    assert_eq!(answer["pastes"], 1);
    world.wait_screen(&pane, "answered by the operator").await;

    // 6. The question is closed; the report is on the issue, marked, quoting the reply.
    assert!(open_questions(&world).is_empty());
    assert_ne!(state_of(&world, 15).await, ActivityState::AwaitingInput);
    let sent = world.events_named("session.reply_sent");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["via"], "cli");
    assert_eq!(sent[0]["comment_posted"], true);
    let report = world.sim.comments_on(REPO, 15).last().unwrap().body.clone();
    assert!(
        report.contains("> Per repo, ZEBRACLI.\n>\n>   Keep a global ceiling of 10."),
        "{report}"
    );
    assert_eq!(
        sent[0]["comment_url"],
        world.last_comment(15).await["html_url"]
    );
    feed_back_is_dropped(&world).await;

    // 7. A second question, answered through the HTTP route.
    let asked = make_the_agent_ask(
        &world,
        &format!("{TRIGGER}: what should the setting be called?"),
        2,
    )
    .await;
    assert_eq!(asked["comment_posted"], true);
    assert_eq!(listed_state(&world, 15).await, "awaiting-input");
    let handle = world.serve_replies().await;
    let response = http(&handle)
        .post(reply_url())
        .json(&json!({"ref": "github:octo/repo#15", "text": REPLY_API, "actor": "bob"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["ok"], true);
    assert_eq!(body["comment_posted"], true);
    assert_eq!(body["actor"], "bob");
    let lines = wait_log(&world.agent_log(), 5).await;
    let answer = lines.last().unwrap();
    assert_eq!(answer["text"], framed(&item(15), REPLY_API).as_str());
    assert_eq!(answer["bracketed"], true);
    assert_eq!(answer["pastes"], 1);
    assert!(open_questions(&world).is_empty());
    let sent = world.events_named("session.reply_sent");
    assert_eq!(sent.len(), 2);
    assert_eq!(
        (&sent[1]["via"], &sent[1]["actor"]),
        (&json!("api"), &json!("bob"))
    );
    feed_back_is_dropped(&world).await;
    handle.shutdown().await;

    // 8. Neither reply nor the token is in the event log or the log files.
    let log = std::fs::read_to_string(world.events.path()).unwrap();
    let files = world.log_files_text();
    assert!(!files.is_empty(), "the CLI runs wrote log files");
    for text in [&log, &files] {
        for secret in [
            "ZEBRACLI",
            "OKAPIAPI",
            "global ceiling",
            "retry_cap_per_repo",
            TOKEN,
        ] {
            assert!(!text.contains(secret), "`{secret}` leaked");
        }
    }
    // Exactly: boot, event, reply, event, reply — no question went back to the agent.
    assert_eq!(read_log(&world.agent_log()).len(), 5);
}
