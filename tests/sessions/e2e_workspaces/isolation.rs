//! Two sessions of one repository in two worktrees: each on a branch that routes back to
//! its item, the operator's checkout untouched, a file written in one absent in the
//! other; a restart reuses the worktree with its work.

use crate::support::e2e::{LABEL, REPO, Setup, item};
use crate::support::tmux_server::wait_ready;
use crate::support::workspaces::{Repo, agent_cwds, row, workspace_of};
use the_loop::github::sim::{PullSpec, ReviewState};
use the_loop::workspace::test_repo::git;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sessions_work_in_two_worktrees_on_branches_that_route_back() {
    let repo = Repo::new();
    let before = repo.checkout_state();
    let mut w = repo.world(Setup::default()).await;
    w.watched_issue(1);
    w.watched_issue(2);
    w.start_session(1).await;
    w.start_session(2).await;

    // Two worktrees, two branches, listed by `sessions list --json`.
    let (one, two) = (workspace_of(&w, 1), workspace_of(&w, 2));
    assert_ne!(one, two);
    assert_eq!(row(&w, 1)["branch"], "the-loop/issue-1");
    assert_eq!(row(&w, 2)["branch"], "the-loop/issue-2");
    assert_eq!(row(&w, 1)["cwd"], one.display().to_string());
    assert!(one.ends_with("octo-repo/1") && two.ends_with("octo-repo/2"));
    for (dir, branch) in [(&one, "the-loop/issue-1"), (&two, "the-loop/issue-2")] {
        assert_eq!(
            git(dir, &["symbolic-ref", "--short", "HEAD"]).trim(),
            branch
        );
    }
    // Each agent runs in its own worktree.
    let cwds = agent_cwds(&w);
    assert!(cwds.contains(&one.display().to_string()), "{cwds:?}");
    assert!(cwds.contains(&two.display().to_string()), "{cwds:?}");
    assert_eq!(w.events_named("workspace.created").len(), 2);

    // The operator's checkout: same branch, same commit, same status.
    assert_eq!(repo.checkout_state(), before);

    // A file one agent writes is the other's business not at all.
    std::fs::write(one.join("agent-one.txt"), "mine").unwrap();
    assert!(!two.join("agent-one.txt").exists());
    assert!(!repo.clone.join("agent-one.txt").exists());
    assert_eq!(repo.checkout_state(), before);

    // The agent of #1 opens a PR from its branch; a review on it reaches #1's session.
    let pr = PullSpec::new("Fix #1", "the-loop/issue-1")
        .number(3)
        .author("alice")
        .labels(&[LABEL]);
    w.sim.add_pull(REPO, pr).unwrap();
    w.start_supervisor();
    w.wait_cycles(1).await;
    let review = w
        .sim
        .add_review(
            REPO,
            3,
            "alice",
            ReviewState::ChangesRequested,
            "REVIEW-ON-THE-AGENTS-PR",
        )
        .unwrap();
    w.wait_pasted("REVIEW-ON-THE-AGENTS-PR").await;
    let delivered = w
        .wait_event("dispatch.succeeded", |e| {
            e["delivery_id"] == format!("poll-review-{review}").as_str()
        })
        .await;
    assert_eq!(
        delivered["work_item"],
        item(1),
        "routed by its branch to #1"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_reuses_the_worktree_with_its_work() {
    let repo = Repo::new();
    let mut w = repo.world(Setup::default()).await;
    w.watched_issue(4);
    w.start_session(4).await;
    let dir = workspace_of(&w, 4);
    std::fs::write(dir.join("half-done.txt"), "work in progress").unwrap();

    // The agent dies (its tmux server with it) while nothing supervises; on the next
    // comment the restarted supervisor respawns it — in the same worktree.
    w.tmux.raw(&["kill-server"]);
    w.start_supervisor();
    w.wait_cycles(1).await;
    w.comment(4, "alice", "AFTER-THE-RESTART please go on");
    w.wait("the respawned agent's boot prompt", || {
        w.agent_lines().into_iter().find(|l| {
            l["boot"] == true
                && l["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("AFTER-THE-RESTART"))
        })
    })
    .await;
    let boots = agent_cwds(&w);
    assert_eq!(boots.len(), 2, "a first boot and the respawn: {boots:?}");
    assert!(
        boots.iter().all(|c| *c == dir.display().to_string()),
        "{boots:?}"
    );
    assert!(dir.join("half-done.txt").exists(), "the work is there");
    assert_eq!(
        w.events_named("workspace.created").len(),
        1,
        "never re-created"
    );

    // `sessions start` over a dead session reuses it too.
    w.signal("-TERM");
    w.wait_exit().await;
    w.tmux.raw(&["kill-server"]);
    w.cli(&["sessions", "start", &item(4)]).assert().success();
    let pane = w.pane(4).expect("a pane");
    wait_ready(&w.tmux.tmux(), &pane).await;
    assert_eq!(workspace_of(&w, 4), dir);
    assert!(!w.events_named("workspace.reused").is_empty());
    assert_eq!(w.events_named("workspace.created").len(), 1);
}
