//! Sessions driven from GitHub: a `the-loop start` comment spawns (only from an
//! authorized user), a close ends the session, and a newly watched item's old comments
//! are baselined rather than delivered.

use crate::support::e2e::{LABEL, REPO, Setup, World, issue_body, item};
use the_loop::github::sim::IssueSpec;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_comment_spawns_a_session_only_for_an_authorized_user() {
    let mut w = World::new(Setup::default()).await;
    w.watched_issue(20);
    w.watched_issue(21);
    w.start_supervisor();
    w.wait_cycles(1).await;

    let refused = w.comment(21, "mallory", "the-loop start");
    w.comment(20, "alice", "the-loop start SPAWN-COMMENT-TEXT");
    let spawned = w
        .wait_event("session.spawned", |e| e["work_item"] == item(20))
        .await;
    assert_eq!(spawned["trigger"], "command");
    let boot = w
        .wait("the boot prompt of #20", || {
            w.agent_lines()
                .into_iter()
                .find(|l| l["boot"] == true && l["text"].as_str().unwrap().contains(&item(20)))
        })
        .await;
    let boot = boot["text"].as_str().unwrap();
    assert!(boot.contains("UNTRUSTED"), "{boot}");
    assert!(
        !boot.contains(&issue_body(20)),
        "never the issue body: {boot}"
    );
    assert!(
        !boot.contains("SPAWN-COMMENT-TEXT"),
        "control text is not forwarded: {boot}"
    );
    assert!(boot.contains("\"number\": 20"), "the issue excerpt: {boot}");

    let delivery = format!("poll-comment-{refused}");
    w.wait_event("routing.dropped", |e| {
        e["delivery_id"] == delivery.as_str() && e["reason"] == "unauthorized-actor"
    })
    .await;
    w.wait_cycles(1).await;
    assert!(w.session(21).is_none(), "mallory's start spawned nothing");
    assert!(
        w.events_named("session.spawned")
            .iter()
            .all(|e| e["work_item"] != item(21))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_close_ends_the_session_and_a_newly_watched_items_history_is_baselined() {
    let mut w = World::new(Setup::default()).await;
    w.watched_issue(15);
    // #30 is not watched yet; alice talked on it before.
    let spec = IssueSpec::new("Later").number(30).author("carol");
    w.sim.add_issue(REPO, spec).unwrap();
    w.comment(30, "alice", "OLD-TEXT written before the label");
    w.start_session(15).await;
    w.start_session(30).await;
    w.start_supervisor();
    w.wait_cycles(1).await;

    w.comment(30, "alice", "UNWATCHED-TEXT while not labeled");
    w.wait_cycles(1).await;
    w.sim.add_label(REPO, 30, LABEL).unwrap();
    w.wait_cycles(1).await;
    w.comment(30, "alice", "NEW-TEXT after the label");
    w.wait_pasted("NEW-TEXT").await;
    assert_eq!(w.pasted_count("OLD-TEXT"), 0, "history is baselined");
    assert_eq!(
        w.pasted_count("UNWATCHED-TEXT"),
        0,
        "unwatched comments are ignored"
    );

    w.sim.close_issue(REPO, 15).unwrap();
    let closed = w
        .wait_event("session.closed", |e| e["work_item"] == item(15))
        .await;
    assert_eq!(closed["state"], "closed");
    let row = w.session(15).expect("the record stays");
    assert_eq!(row["status"], "closed");
    // The harness ended; the tmux session stays for the operator to read.
    let out = w.tmux.raw(&[
        "list-panes",
        "-t",
        "=loop-github-octo-repo-15:",
        "-F",
        "#{pane_dead}",
    ]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1", "{out:?}");
}
