//! A repo on another host with worktrees: each issue's session works in its own git
//! worktree there, on its own branch, after the repo's setup ran in it; the operator's
//! checkout there is not touched, and shipping from the host is refused with why.

use super::remote_sessions::started_with;
use crate::support::sshd::Sshd;
use the_loop::work_item::WorkItemRef;

/// `git ARGS` in `dir` as the host's user.
fn git(sshd: &Sshd, dir: &str, args: &[&str]) -> String {
    let mut argv = vec!["git", "-C", dir];
    argv.extend(args);
    let out = sshd.run_as_user(&argv);
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issue_on_the_host_gets_its_own_worktree_there_with_setup_run_in_it() {
    if !Sshd::available() {
        return;
    }
    let sshd = Sshd::start();
    let repo = format!("{}/repo", sshd.home().display());
    assert!(
        sshd.run_as_user(&["git", "init", "-q", "-b", "main", &repo])
            .status
            .success()
    );
    git(
        &sshd,
        &repo,
        &["config", "user.email", "dev@example.invalid"],
    );
    git(&sshd, &repo, &["config", "user.name", "dev"]);
    assert!(
        sshd.run_as_user(&["touch", &format!("{repo}/README")])
            .status
            .success()
    );
    git(&sshd, &repo, &["add", "README"]);
    git(&sshd, &repo, &["commit", "-q", "-m", "first"]);

    let world = started_with(&sshd, None, |yaml| {
        yaml.replace(
            r#"path: "~", workspace: shared"#,
            r#"path: "~/repo", workspace: worktree, setup: [[touch, "{worktree}/.set-up"]]"#,
        )
    })
    .await;
    let item = WorkItemRef::new("octo", "repo", 15);
    let record = world.sessions.registry().get(&item).unwrap().unwrap();
    let dir = format!("{}/.tl/worktrees/octo-repo/15", sshd.home().display());
    assert_eq!(record.cwd.to_str(), Some(dir.as_str()));
    assert_eq!(record.branch.as_deref(), Some("the-loop/issue-15"));
    assert_eq!(
        git(&sshd, &dir, &["symbolic-ref", "--short", "HEAD"]),
        "the-loop/issue-15"
    );
    assert!(
        sshd.home()
            .join(".tl/worktrees/octo-repo/15/.set-up")
            .exists(),
        "setup did not run there"
    );
    // The operator's checkout on the host stays on its branch.
    assert_eq!(
        git(&sshd, &repo, &["symbolic-ref", "--short", "HEAD"]),
        "main"
    );
    let created =
        the_loop::events::lines::named(world.sessions.events().path(), "workspace.created");
    assert_eq!(created.len(), 1, "{created:?}");
    assert_eq!(created[0]["host"], "build");
    assert_eq!(created[0]["base"], "main");

    // Shipping from the host is refused, saying why; nothing is pushed.
    // (A client nothing is sent to: the refusal comes first.)
    let github = the_loop::github::Client::builder("http://127.0.0.1:9")
        .build()
        .unwrap();
    let shipper = the_loop::session::ship::Shipper::new(
        std::sync::Arc::clone(&world.sessions),
        std::sync::Arc::new(github),
    );
    let refused = shipper.preview(&item).await.unwrap_err();
    assert_eq!(refused.code(), "on-host", "{refused}");
    assert!(
        refused
            .to_string()
            .contains("push its branch from the host yourself")
    );
    world.host.transport.disconnect().await;
}
