//! Deliveries through codex's app server (`sessions.codexChannel: app-server`, issue 41)
//! against the real Codex 0.171.0: the comment goes to the session's thread as a user
//! message by `turn/start`, never typed into the pane. tmux's own hooks count every
//! `paste-buffer` and `send-keys` on the server, so "nothing typed" is a count, not a
//! guess (the draft's own keys prove the counter counts).

use crate::codex_delivery::{CodexWorld, item};
use crate::support::processes::children;
use crate::support::tmux_server::KeyCounter;
use std::time::{Duration, Instant};
use the_loop::session::hooks::ReportedState;
use the_loop::session::{Delivered, PromptInputs};

/// Codex 0.171.0's approval request.
const APPROVAL: &str = "Would you like to run the following command?";

/// A codex session with its app server, started (its first turn over), and the counter
/// of what is typed into its panes (its directory last).
async fn started() -> Option<(CodexWorld, KeyCounter, tempfile::TempDir)> {
    let world = CodexWorld::with_app_server().await?;
    let dir = tempfile::tempdir().unwrap();
    let counter = KeyCounter::install(&world.tmux, dir.path());
    world.start().await;
    Some((world, counter, dir))
}

/// Delivers a comment by `alice` with `body` as the dispatcher does, once; what came back.
async fn deliver(world: &CodexWorld, id: &str, body: &str) -> Delivered {
    let excerpt = serde_json::json!({
        "comment": {"user": {"login": "alice"}, "body": body},
    })
    .to_string();
    let inputs = PromptInputs {
        event: "issue_comment".into(),
        action: "created".into(),
        delivery_id: id.into(),
        repository: "octo/repo".into(),
        excerpt,
    };
    let delivered = world.sessions.deliver_event(&item(), &inputs).await;
    let delivered = delivered.unwrap_or_else(|e| panic!("{e}\n{}", world.screen()));
    assert_eq!(delivered.channel, Some("codex-app-server"), "{delivered:?}");
    delivered
}

/// A comment that has the agent run a command needing approval; back once codex asks
/// (on screen and by its hook).
async fn asking(world: &CodexWorld) {
    deliver(world, "d-1", "Run the check, please: RUN[touch ran.txt]").await;
    world.wait_screen(APPROVAL).await;
    world
        .wait("the hook's awaiting-permission", || {
            (world.reported() == Some(ReportedState::AwaitingPermission)).then_some(())
        })
        .await;
}

async fn turn_ended(world: &CodexWorld) {
    world
        .wait("codex's turn to end", || {
            (world.reported() == Some(ReportedState::Idle)).then_some(())
        })
        .await;
}

/// Idle: each comment reaches the model once, as a user message of its own, and
/// nothing is pasted or typed into the pane; the composer stays empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comment_goes_through_the_app_server_not_the_pane() {
    let Some((world, counter, _dir)) = started().await else {
        return;
    };
    let mut took = Vec::new();
    for (n, needle) in ["HERON", "EGRET", "IBIS"].iter().enumerate() {
        let sent = Instant::now();
        deliver(
            &world,
            &format!("d-{n}"),
            &format!("{needle}: five retries."),
        )
        .await;
        world
            .wait("the comment to reach the model", || {
                (!world.model.requests_with(needle).is_empty()).then_some(())
            })
            .await;
        took.push(sent.elapsed());
        turn_ended(&world).await;
    }
    eprintln!("figure: comment → model request through the app server: {took:?}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    for needle in ["HERON", "EGRET", "IBIS"] {
        let got = world.model.requests_with(needle);
        assert_eq!(got.len(), 1, "{got:#?}");
    }
    assert_eq!(counter.pastes(), 0, "pasted into the pane");
    assert_eq!(counter.keys(), 0, "keys sent to the pane");
    assert_eq!(world.shut_down(), Vec::<i32>::new(), "processes left");
}

/// During codex's approval request a comment is not held: it goes to the thread as a
/// user message, answers nothing (the command has not run, the request stands), and
/// reaches the model once, in a message of its own, when the operator answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comment_during_an_approval_is_its_own_message_and_answers_nothing() {
    let Some((world, counter, _dir)) = started().await else {
        return;
    };
    asking(&world).await;

    deliver(&world, "d-2", "KINGFISHER: please also bump the cap to 5.").await;
    // Give a wrong answer time to act before judging.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!world.ran(), "the comment answered the approval");
    assert!(world.screen().contains(APPROVAL), "{}", world.screen());
    assert_eq!(counter.pastes(), 0, "pasted into the pane");
    assert_eq!(counter.keys(), 0, "keys sent to the pane");

    let out = world.cli(&["sessions", "approve", &item().to_string()]);
    assert!(out.status.success(), "{out:?}");
    world
        .wait("the approved command to run", || world.ran().then_some(()))
        .await;
    // Answered through the protocol: no key, and the TUI closed its overlay.
    world
        .wait("the pane's approval overlay to close", || {
            (!world.screen().contains(APPROVAL)).then_some(())
        })
        .await;
    assert_eq!(counter.keys(), 0, "keys sent to the pane");
    let resolved = world.events_named("session.permission_resolved");
    assert_eq!(resolved.len(), 1, "{resolved:#?}");
    assert_eq!(resolved[0]["decision"], "approved", "{resolved:#?}");
    world
        .wait("the comment to reach the model", || {
            (!world.model.requests_with("KINGFISHER").is_empty()).then_some(())
        })
        .await;
    turn_ended(&world).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let got = world.model.requests_with("KINGFISHER");
    assert_eq!(got.len(), 1, "{got:#?}");
    let own = got[0].iter().filter(|t| t.contains("KINGFISHER"));
    assert!(
        own.clone().count() == 1 && own.clone().all(|t| !t.contains("RUN[")),
        "{got:#?}"
    );
    assert_eq!(world.shut_down(), Vec::<i32>::new(), "processes left");
}

/// The operator's draft in the TUI's composer: a comment goes out anyway, alone, and
/// the draft stays in the composer, never sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comment_leaves_the_operators_draft_in_the_composer() {
    let Some(world) = CodexWorld::with_app_server().await else {
        return;
    };
    world.start().await;
    let draft = "DRAFT: my own words";
    let target = CodexWorld::target();
    let dir = tempfile::tempdir().unwrap();
    let counter = KeyCounter::install(&world.tmux, dir.path());
    world.tmux.raw(&["send-keys", "-t", &target, "-l", draft]);
    world.wait_screen(draft).await;
    assert_eq!(counter.keys(), 1, "the counter counts the draft's keys");

    deliver(&world, "d-1", "HERON: five retries.").await;
    world
        .wait("the comment to reach the model", || {
            (!world.model.requests_with("HERON").is_empty()).then_some(())
        })
        .await;
    turn_ended(&world).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let comments = world.model.requests_with("HERON");
    assert_eq!(comments.len(), 1, "{comments:#?}");
    assert!(
        !comments[0].iter().any(|t| t.contains(draft)),
        "{comments:#?}"
    );
    assert!(
        world.model.requests_with(draft).is_empty(),
        "the draft was sent"
    );
    assert!(world.screen().contains(draft), "{}", world.screen());
    assert_eq!(counter.pastes(), 0, "pasted into the pane");
    assert_eq!(counter.keys(), 1, "keys sent to the pane");
    assert_eq!(world.shut_down(), Vec::<i32>::new(), "processes left");
}

/// `sessions deny` answers codex's approval through the protocol (`decline`): the
/// command does not run, the turn goes on, no key reaches the pane; the TUI's overlay
/// closes on the server's word. Then the request is gone, and a second answer is
/// refused, nothing sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_approval_goes_through_the_protocol_and_runs_nothing() {
    let Some((world, counter, _dir)) = started().await else {
        return;
    };
    asking(&world).await;
    let asked = Instant::now();
    let out = world.cli(&["sessions", "deny", &item().to_string()]);
    assert!(out.status.success(), "{out:?}");
    world
        .wait("the pane's approval overlay to close", || {
            (!world.screen().contains(APPROVAL)).then_some(())
        })
        .await;
    eprintln!(
        "figure: approval round trip (sessions deny → the TUI's overlay gone): {:?}",
        asked.elapsed()
    );
    turn_ended(&world).await;
    assert!(!world.ran(), "the denied command ran");
    assert_eq!(counter.keys(), 0, "keys sent to the pane");
    assert_eq!(counter.pastes(), 0, "pasted into the pane");
    let resolved = world.events_named("session.permission_resolved");
    assert_eq!(resolved.len(), 1, "{resolved:#?}");
    assert_eq!(resolved[0]["decision"], "denied", "{resolved:#?}");
    let again = world.cli(&["sessions", "approve", &item().to_string()]);
    assert!(!again.status.success(), "{again:?}");
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("nothing is waiting"),
        "{again:?}"
    );
    assert_eq!(world.shut_down(), Vec::<i32>::new(), "processes left");
}

/// The session's record's app-server pane, read from the registry.
fn server_pane(world: &CodexWorld) -> String {
    let record = world.sessions.registry().get(&item()).unwrap().unwrap();
    match record.channel {
        Some(the_loop::channel::ChannelRecord::CodexAppServer {
            server_pane: Some(pane),
            ..
        }) => pane,
        other => panic!("no app server recorded: {other:?}"),
    }
}

/// `kill -9` of codex's app server mid-burst: the next delivery finds nothing listening,
/// ends the orphaned TUI and starts the session again (server first, then the TUI with
/// that comment in its boot prompt); the rest of the burst goes through the new server.
/// Every comment is in the conversation exactly once, nothing is typed into a pane.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_app_server_is_started_again_and_nothing_is_lost() {
    let Some((world, counter, _dir)) = started().await else {
        return;
    };
    deliver(&world, "d-1", "HERON: five retries.").await;
    world
        .wait("the first comment to reach the model", || {
            (!world.model.requests_with("HERON").is_empty()).then_some(())
        })
        .await;
    turn_ended(&world).await;
    let pane = server_pane(&world);
    let out = world
        .tmux
        .raw(&["display-message", "-p", "-t", &pane, "#{pane_pid}"]);
    let wrapper: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let server = children(wrapper);
    assert!(!server.is_empty(), "no server process under {wrapper}");
    for pid in server {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
    }

    let burst = ["EGRET", "IBIS", "STORK", "CRANE"];
    for (n, needle) in burst.iter().enumerate() {
        world
            .deliver_once_released(&format!("d-{}", n + 2), &format!("{needle}: and one more."))
            .await;
    }
    for needle in burst {
        world
            .wait("the comment to reach the model", || {
                (!world.model.requests_with(needle).is_empty()).then_some(())
            })
            .await;
    }
    turn_ended(&world).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    // The session starts again with a fresh conversation (codex 0.171.0's TUI resuming
    // a thread on a server asks to review the hooks again: decision note): the comment
    // that found the server gone is in its boot prompt, the rest came after, each in
    // one user message of it; the first comment went to the old conversation, once.
    let conversation = world.model.conversation();
    for needle in burst {
        let carrying = conversation.iter().filter(|t| t.contains(needle)).count();
        assert_eq!(carrying, 1, "{needle}: {conversation:#?}");
    }
    assert!(
        !conversation.iter().any(|t| t.contains("HERON")),
        "{conversation:#?}"
    );
    assert_eq!(world.model.requests_with("HERON").len(), 1);
    let respawned = world.events_named("session.respawned");
    assert_eq!(respawned.len(), 1, "{respawned:#?}");
    assert_eq!(respawned[0]["resumed"], false, "{respawned:#?}");
    assert_ne!(server_pane(&world), pane, "the same server pane");
    assert_eq!(counter.pastes(), 0, "pasted into the pane");
    assert_eq!(counter.keys(), 0, "keys sent to the pane");
    assert_eq!(world.shut_down(), Vec::<i32>::new(), "processes left");
}
