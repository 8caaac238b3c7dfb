//! Stopping sessions (SPEC §16.3): a clean worktree goes with its branch, so does one
//! whose commits are pushed; a dirty one and one with unpushed commits stay, and the
//! CLI and `workspace.kept` say why. `reset --discard-workspace` removes on request.

use crate::support::e2e::{Setup, item};
use crate::support::workspaces::{Repo, row, workspace_of};
use the_loop::workspace::test_repo::{git, has_branch};

fn commit(dir: &std::path::Path, file: &str) {
    std::fs::write(dir.join(file), file).unwrap();
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", file]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_removes_clean_worktrees_and_keeps_work_saying_why() {
    let repo = Repo::new();
    let before = repo.checkout_state();
    let w = repo.world(Setup::default()).await;
    for n in 1..=4 {
        w.watched_issue(n);
        w.start_session(n).await;
    }
    let dirs: Vec<_> = (1..=4).map(|n| workspace_of(&w, n)).collect();
    // #1 stays clean; #2 gets a changed and an untracked file; #3 a commit it never
    // pushes; #4 a commit it pushes, as an agent opening a PR would.
    std::fs::write(dirs[1].join("README.md"), "edited by the agent\n").unwrap();
    std::fs::write(dirs[1].join("notes.txt"), "untracked\n").unwrap();
    commit(&dirs[2], "local-only.txt");
    commit(&dirs[3], "pushed.txt");
    git(
        &dirs[3],
        &["push", "-q", "-u", "origin", "the-loop/issue-4"],
    );

    let stop = |n: u64| {
        let out = w.cli(&["sessions", "stop", &item(n)]).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let said = stop(1);
    assert!(said.contains("removed its worktree"), "{said}");
    assert!(said.contains("and branch the-loop/issue-1"), "{said}");
    assert!(!dirs[0].exists());
    assert!(!has_branch(&repo.clone, "the-loop/issue-1"));

    let said = stop(2);
    assert!(said.contains("kept its worktree"), "{said}");
    assert!(said.contains("(2 changed files)"), "{said}");
    assert!(
        said.contains("--discard-workspace"),
        "says how to remove it: {said}"
    );
    assert!(dirs[1].join("notes.txt").exists());

    let said = stop(3);
    assert!(said.contains("(1 unpushed commit)"), "{said}");
    assert!(dirs[2].join("local-only.txt").exists());
    assert!(has_branch(&repo.clone, "the-loop/issue-3"));

    let said = stop(4);
    assert!(
        said.contains("removed its worktree"),
        "pushed work is safe: {said}"
    );
    assert!(!dirs[3].exists());
    assert!(
        git(&repo.origin, &["branch", "--list", "the-loop/issue-4"]).contains("issue-4"),
        "the pushed branch stays on the remote"
    );

    let kept = w.events_named("workspace.kept");
    let reasons: Vec<(&str, &str)> = kept
        .iter()
        .map(|e| {
            (
                e["work_item"].as_str().unwrap(),
                e["reason"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        reasons,
        [
            ("github:octo/repo#2", "2 changed files"),
            ("github:octo/repo#3", "1 unpushed commit")
        ]
    );
    assert_eq!(kept[0]["changed_files"], 2);
    assert_eq!(kept[1]["unpushed_commits"], 1);
    assert_eq!(w.events_named("workspace.removed").len(), 2);
    // The kept ones are marked on the session (the TUI lists them as kept).
    assert_eq!(row(&w, 2)["workspaceKept"], "2 changed files");
    assert_eq!(row(&w, 2)["status"], "closed");

    // Starting #2 again picks its kept worktree up, work and all.
    w.start_session(2).await;
    assert_eq!(workspace_of(&w, 2), dirs[1]);
    assert!(dirs[1].join("notes.txt").exists());
    assert_eq!(row(&w, 2)["workspaceKept"], serde_json::Value::Null);

    // Discarding asks; without a terminal it wants --yes, and changes nothing.
    let out = w
        .cli(&["sessions", "reset", &item(2), "--discard-workspace"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--yes"));
    assert!(dirs[1].exists());
    let out = w
        .cli(&[
            "sessions",
            "reset",
            &item(2),
            "--discard-workspace",
            "--yes",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(!dirs[1].exists());
    assert!(!has_branch(&repo.clone, "the-loop/issue-2"));
    let discarded = w
        .events_named("workspace.removed")
        .into_iter()
        .find(|e| e["discarded"] == true)
        .unwrap();
    assert_eq!(discarded["discarded_changes"], "2 changed files");
    assert_eq!(w.session(2), None, "reset forgets the session");

    // A plain reset of #3 keeps its unpushed commit: only discard removes work.
    let out = w.cli(&["sessions", "reset", &item(3)]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(dirs[2].join("local-only.txt").exists());

    // Through all of it, the operator's checkout never changed.
    assert_eq!(repo.checkout_state(), before);
}
