//! `repos[].setup` (SPEC §16.1): run in the new worktree before the agent starts; a
//! failing command is a clear `workspace.setup_failed`, the agent does not start, and
//! the GitHub token never reaches the command (it runs the repository's own code).

use crate::support::e2e::{Setup, TOKEN, item};
use crate::support::workspaces::Repo;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_setup_command_is_a_clear_setup_failed_and_no_agent_starts() {
    let repo = Repo::new();
    let setup = Setup {
        repo_yaml: concat!(
            "    setup:\n",
            "      - [sh, -c, \"env > setup-env.txt; echo prepared > {worktree}/prepared.txt\"]\n",
            "      - [git, no-such-subcommand, \"{branch}\"]\n",
        )
        .into(),
        ..Setup::default()
    };
    let w = repo.world(setup).await;
    w.watched_issue(5);
    let out = w.cli(&["sessions", "start", &item(5)]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("setup command `git no-such-subcommand the-loop/issue-5` exited with 1"),
        "{stderr}"
    );
    assert!(
        stderr.contains("not a git command"),
        "quotes its output: {stderr}"
    );

    let failed = w.events_named("workspace.setup_failed");
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(
        failed[0]["command"],
        "git no-such-subcommand the-loop/issue-5"
    );
    assert_eq!(failed[0]["exit_code"], 1);
    assert_eq!(failed[0]["index"], 1);
    let spawn_failed = w.events_named("session.spawn_failed");
    assert_eq!(spawn_failed.len(), 1);
    assert!(
        spawn_failed[0]["error"]
            .as_str()
            .unwrap()
            .contains("setup command")
    );
    assert_eq!(w.session(5), None, "no agent was started");
    assert!(w.agent_lines().is_empty());

    // The first command ran in the new worktree, with the work item and without the token.
    let created = &w.events_named("workspace.created")[0];
    let dir = std::path::PathBuf::from(created["workspace"].as_str().unwrap());
    assert!(dir.join("prepared.txt").exists());
    let env = std::fs::read_to_string(dir.join("setup-env.txt")).unwrap();
    assert!(
        env.contains("THE_LOOP_WORK_ITEM=github:octo/repo#5"),
        "{env}"
    );
    assert!(
        !env.contains(TOKEN),
        "the GitHub token reached setup:\n{env}"
    );
    assert!(!env.contains("GH_TOKEN="), "{env}");
}
