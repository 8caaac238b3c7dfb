//! Safe delivery (SPEC §18.6) against the real Claude Code (each pinned release) and the tests' fake of
//! the Messages API: a paste never answers a permission dialog, never sends the
//! operator's draft, and what it holds back goes out exactly once — across a restart of
//! the supervisor too.
//!
//! The tests wait with generous limits and assert what happened, never how fast. Without
//! Claude Code installed (scripts/check installs it) they say so and pass, except under CI.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::claude_world::{ClaudeWorld, PATIENCE, item};
use crate::support::fake_model::Turn;
use std::process::Stdio;
use std::time::{Duration, Instant};
use the_loop::session::delivery::screen::InputBox;
use the_loop::session::{DeliveryFailure, PromptInputs};

/// The dialog Claude Code draws for a Bash call that needs permission.
const DIALOG: &str = "Do you want to proceed?";

/// The agent-loop requests whose fresh messages (after the model's last answer) carry
/// `needle`: a user turn, or — submitted while a tool ran — Claude's "The user sent a
/// new message while you were working" system message. Each text reaches the model in
/// exactly one such request.
pub(crate) fn requests_with(world: &ClaudeWorld, needle: &str) -> Vec<String> {
    world
        .model
        .agent_requests()
        .iter()
        .filter_map(|r| r.fresh_text())
        .filter(|t| t.contains(needle))
        .collect()
}

/// Waits until an agent-loop request carries `needle`.
pub(crate) async fn wait_request_with(world: &ClaudeWorld, needle: &str) -> Vec<String> {
    world
        .wait(&format!("`{needle}` to reach the model"), || {
            let found = requests_with(world, needle);
            (!found.is_empty()).then_some(found)
        })
        .await
}

/// Puts Claude in front of a Bash permission dialog for a command that writes
/// `ran.txt`.
async fn into_a_dialog(world: &ClaudeWorld) {
    world.model.script([
        Turn::bash("echo approved-$((6*7)) | tee ran.txt"),
        Turn::text("It ran."),
    ]);
    world.deliver("d-0", "Run the check, please.").await;
    world.wait_screen(DIALOG).await;
    world.wait_listed("awaiting-permission", "hooks").await;
}

pub(crate) fn ran(world: &ClaudeWorld) -> bool {
    world.home.project.join("ran.txt").exists()
}

/// A comment that arrives while Claude waits on a permission dialog does not answer
/// it: the tool stays unrun and the comment waits, held, across a restart of the
/// supervisor. Once the operator approves, the tool runs and the comment reaches the
/// model exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comment_during_a_dialog_waits_for_the_operator_and_survives_a_restart() {
    let Some(mut world) = ClaudeWorld::supervised().await else {
        return;
    };
    world.start().await;
    world.start_supervisor();
    world.wait_cycles(1).await;
    into_a_dialog(&world).await;

    world.comment("alice", "KINGFISHER: please also bump the cap to 5.");
    let held = world.wait_events("session.delivery_held", 1).await;
    assert_eq!(held[0]["reason"], "permission-dialog", "{held:#?}");
    let row = world.listed();
    assert_eq!(row["held"]["count"], 1, "{row:#}");
    assert_eq!(row["held"]["reason"], "permission-dialog", "{row:#}");
    // Give a wrong Enter time to act before judging.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!ran(&world), "the dialog was answered by a paste");
    assert!(requests_with(&world, "KINGFISHER").is_empty());
    assert!(world.screen().contains(DIALOG), "{}", world.screen());

    // The supervisor restarts while the comment is held: nothing lost, nothing doubled.
    world.stop_supervisor().await;
    world.start_supervisor();
    world.wait_events("session.delivery_held", 2).await;
    assert!(!ran(&world));
    assert!(requests_with(&world, "KINGFISHER").is_empty());

    let out = world.cli(&["sessions", "approve", &item().to_string()]);
    assert!(out.status.success(), "{out:?}");
    wait_request_with(&world, "KINGFISHER").await;
    let released = world.wait_events("session.delivery_released", 1).await;
    assert_eq!(released.len(), 1, "{released:#?}");
    assert!(ran(&world), "the approved tool ran");
    // Two more cycles would show a second delivery.
    world.wait_cycles(2).await;
    world.wait_listed("idle", "hooks").await;
    assert_eq!(requests_with(&world, "KINGFISHER").len(), 1);
    let delivered = world.events_named("dispatch.succeeded");
    assert_eq!(delivered.len(), 1, "{delivered:#?}");
    assert!(world.listed()["held"].is_null());
    // Sessions, hooks, a supervisor's ledger and socket, a held delivery: all private
    // (SPEC §18.5).
    crate::support::private_state::assert_private_tree(&world.state);
}

/// `the-loop reply` while a dialog is up queues the reply and waits (`--wait`); it goes
/// out once the operator answers the dialog, exactly once, and the command says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_during_a_dialog_waits_for_the_answer() {
    let Some(world) = ClaudeWorld::new().await else {
        return;
    };
    world.start().await;
    into_a_dialog(&world).await;

    let item = item().to_string();
    let reply = world
        .command(&[
            "reply",
            "--work-item",
            &item,
            "--text",
            "HERON: five retries.",
        ])
        .args(["--no-comment", "--wait", "180"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let held = world.wait_events("session.delivery_held", 1).await;
    assert_eq!(held[0]["reason"], "permission-dialog");
    assert!(held[0]["reply_id"].is_string(), "{held:#?}");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!ran(&world), "the dialog was answered by the reply");
    assert!(requests_with(&world, "HERON").is_empty());

    let out = world.cli(&["sessions", "approve", &item]);
    assert!(out.status.success(), "{out:?}");
    let out = reply.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("held"),
        "{out:?}"
    );
    wait_request_with(&world, "HERON").await;
    world.wait_listed("idle", "hooks").await;
    assert!(ran(&world));
    assert_eq!(requests_with(&world, "HERON").len(), 1);
    assert_eq!(world.events_named("session.reply_sent").len(), 1);
}

/// A comment that arrives while the operator, attached to the pane, has half typed a
/// message is not submitted with the draft: the draft goes out alone when the operator
/// sends it, and the comment after it, on its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comment_never_goes_out_with_the_operators_draft() {
    let Some(mut world) = ClaudeWorld::supervised().await else {
        return;
    };
    world.start().await;
    world.start_supervisor();
    world.wait_cycles(1).await;
    let target = format!("={}:", item().tmux_session_name());
    world
        .tmux
        .raw(&["send-keys", "-t", &target, "-l", "my own draft LAPWING"]);
    world.wait_screen("LAPWING").await;

    world.comment("alice", "OSPREY: a comment from GitHub.");
    let held = world.wait_events("session.delivery_held", 1).await;
    assert_eq!(held[0]["reason"], "operator-draft", "{held:#?}");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(requests_with(&world, "OSPREY").is_empty());
    assert!(
        requests_with(&world, "LAPWING").is_empty(),
        "the draft was sent"
    );
    assert!(world.screen().contains("LAPWING"), "{}", world.screen());

    let sent = Instant::now();
    world.tmux.raw(&["send-keys", "-t", &target, "Enter"]);
    let draft = wait_request_with(&world, "LAPWING").await;
    assert!(!draft[0].contains("OSPREY"), "{draft:#?}");
    let comment = wait_request_with(&world, "OSPREY").await;
    assert!(!comment[0].contains("LAPWING"), "{comment:#?}");
    println!(
        "figure: operator's Enter → held comment at the model: {:.1} s",
        sent.elapsed().as_secs_f64()
    );
    world.wait_cycles(2).await;
    assert_eq!(requests_with(&world, "OSPREY").len(), 1);
    assert_eq!(requests_with(&world, "LAPWING").len(), 1);
}

/// Claude Code takes an Enter that lands while it ends a turn, yet keeps showing the
/// paste in its box; a second Enter sends it again. A delivery right behind the
/// operator's message waits for the turn's end to settle, and never presses Enter on
/// a paste Claude reported submitted: every message reaches the model once, alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_right_behind_the_operators_message_goes_out_once() {
    let Some(world) = ClaudeWorld::new().await else {
        return;
    };
    world.start().await;
    let target = format!("={}:", item().tmux_session_name());
    const ROUNDS: usize = 8;
    for round in 0..ROUNDS {
        // The operator writes once the last round's turns ended: an Enter of theirs that
        // lands while Claude ends a turn may be taken and still shown in the box, where
        // the-loop rightly holds it as their draft (a hold, not what this test races).
        world.wait_events("session.turn_ended", 1 + 2 * round).await;
        // Every message so far reached the model (each round waits for it), so text
        // still in the box is one Claude Code kept showing after taking it (an Enter
        // that landed while it ended a turn): the operator clears it before writing,
        // as anyone looking at the pane would.
        world
            .wait("an empty input box", || {
                let shown = world.tmux.raw(&["capture-pane", "-p", "-e", "-t", &target]);
                let shown = String::from_utf8_lossy(&shown.stdout).into_owned();
                match the_loop::session::delivery::screen::claude::look(&shown).input {
                    InputBox::Empty => Some(()),
                    InputBox::Holds(_) => {
                        world.tmux.raw(&["send-keys", "-t", &target, "C-u"]);
                        None
                    }
                    InputBox::NotDrawn => None,
                }
            })
            .await;
        let draft = format!("note WREN{round}X");
        world.tmux.raw(&["send-keys", "-t", &target, "-l", &draft]);
        world.wait_screen(&draft).await;
        world.tmux.raw(&["send-keys", "-t", &target, "Enter"]);
        // As the supervisor's lane does: try again while the draft is in the box.
        let inputs = PromptInputs {
            event: "issue_comment".into(),
            action: "created".into(),
            delivery_id: format!("d-{round}"),
            repository: "octo/repo".into(),
            excerpt: serde_json::json!({
                "comment": {"user": {"login": "alice"}, "body": format!("PLOVER{round}X")},
            })
            .to_string(),
        };
        let start = Instant::now();
        loop {
            match world.sessions.deliver_event(&item(), &inputs).await {
                Ok(_) => break,
                Err(DeliveryFailure::Held(..)) if start.elapsed() < PATIENCE => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("delivery {round} failed: {e}\n{}", world.screen()),
            }
        }
        wait_request_with(&world, &format!("PLOVER{round}X")).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let newest: Vec<String> = world
        .model
        .agent_requests()
        .iter()
        .filter_map(|r| r.fresh_text())
        .collect();
    for round in 0..ROUNDS {
        for tag in [format!("WREN{round}X"), format!("PLOVER{round}X")] {
            let carrying: Vec<&String> = newest.iter().filter(|t| t.contains(&tag)).collect();
            assert_eq!(
                carrying.len(),
                1,
                "{tag} reached the model as: {carrying:#?}"
            );
            assert!(
                !carrying[0].contains(if tag.starts_with('W') {
                    "PLOVER"
                } else {
                    "WREN"
                }),
                "{tag} went out with another message: {carrying:#?}"
            );
        }
    }
}
