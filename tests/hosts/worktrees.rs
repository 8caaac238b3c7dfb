//! A repo on another host with worktrees: each issue's session works in its own git
//! worktree there, on its own branch, after the repo's setup ran in it; the operator's
//! checkout there is not touched. The worktree is recorded here and judged there when
//! the session ends (kept with why, or removed; discarded on the operator's word), and
//! its work ships from there: proposed from the pane over the forwarded socket, pushed
//! by git on the host with the token on that one push's stdin, never written there.
//! A pull request's session there works on its head, fetched by the host's git.

use super::agents::{on_host, serve, text};
use super::remote_sessions::{Opened, opened_with, spawned, started_with};
use crate::support::git_remote::GitRemote;
use crate::support::leaks::{files_holding, sample_cmdlines};
use crate::support::sshd::Sshd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use the_loop::events::{EventLog, Source};
use the_loop::github::Client;
use the_loop::github::sim::{IssueSpec, SimGithub};
use the_loop::session::Origin;
use the_loop::session::ship::{Order, Shipper};
use the_loop::work_item::WorkItemRef;
use the_loop::workspace::{Finished, Kind};

const TOKEN: &str = "ghp_shipsfromthehost_0123456789abcdef";

/// `git ARGS` in `dir` as the host's user.
fn git(sshd: &Sshd, dir: &str, args: &[&str]) -> String {
    let mut argv = vec!["git", "-C", dir];
    argv.extend(args);
    let out = sshd.run_as_user(&argv);
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `file` in `dir` on the host, holding `text`, committed by the host's user.
fn commit(sshd: &Sshd, dir: &str, file: &str, text: &str) -> String {
    let of = format!("of={dir}/{file}");
    let out = sshd.run_as_user_with(&["dd", &of, "status=none"], Some(text.as_bytes()));
    assert!(out.status.success(), "{out:?}");
    git(sshd, dir, &["add", file]);
    git(
        sshd,
        dir,
        &[
            "-c",
            "user.name=dev",
            "-c",
            "user.email=dev@example.invalid",
            "commit",
            "-q",
            "-m",
            "Cap retries",
        ],
    );
    git(sshd, dir, &["rev-parse", "HEAD"])
}

/// The worktree directory of issue 15 on the host.
fn worktree(sshd: &Sshd) -> String {
    format!("{}/.tl/worktrees/octo-repo/15", sshd.home().display())
}

fn exists_on_host(sshd: &Sshd, path: &str) -> bool {
    sshd.run_as_user(&["test", "-e", path]).status.success()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issue_on_the_host_gets_its_own_worktree_there_kept_with_its_work_until_discarded() {
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
    commit(&sshd, &repo, "README", "first\n");

    let world = started_with(&sshd, None, |yaml| {
        yaml.replace(
            r#"path: "~", workspace: shared"#,
            r#"path: "~/repo", workspace: worktree, setup: [[touch, "{worktree}/.set-up"]]"#,
        )
    })
    .await;
    let item = WorkItemRef::new("octo", "repo", 15);
    let record = world.sessions.registry().get(&item).unwrap().unwrap();
    let dir = worktree(&sshd);
    assert_eq!(record.cwd.to_str(), Some(dir.as_str()));
    assert_eq!(record.branch.as_deref(), Some("the-loop/issue-15"));
    assert_eq!(
        git(&sshd, &dir, &["symbolic-ref", "--short", "HEAD"]),
        "the-loop/issue-15"
    );
    assert!(
        exists_on_host(&sshd, &format!("{dir}/.set-up")),
        "setup did not run there"
    );
    // The operator's checkout on the host stays on its branch.
    assert_eq!(
        git(&sshd, &repo, &["symbolic-ref", "--short", "HEAD"]),
        "main"
    );
    let events = world.sessions.events().path().to_path_buf();
    let created = the_loop::events::lines::named(&events, "workspace.created");
    assert_eq!(created.len(), 1, "{created:?}");
    assert_eq!(created[0]["host"], "build");
    assert_eq!(created[0]["base"], "main");
    // Recorded here, naming its host, with setup done.
    let ws = world.sessions.workspaces().record(&item).unwrap().unwrap();
    assert_eq!(ws.host.as_deref(), Some("build"));
    assert_eq!(ws.dir.to_str(), Some(dir.as_str()));
    assert_eq!(ws.base, "refs/heads/main");
    assert!(ws.setup_done && ws.branch_created);

    // Work left in it keeps it when the session ends, judged there, saying why.
    let out = sshd.run_as_user_with(
        &["dd", &format!("of={dir}/notes.txt"), "status=none"],
        Some(b"half done\n"),
    );
    assert!(out.status.success());
    let ended = world.sessions.reset(&item, &Origin::cli()).await.unwrap();
    let Finished::Kept { reason, .. } = &ended.workspace else {
        panic!("{:?}", ended.workspace);
    };
    // The file the setup made, and the agent's.
    assert!(reason.contains("2 changed files"), "{reason}");
    assert!(exists_on_host(&sshd, &format!("{dir}/notes.txt")));
    let kept = the_loop::events::lines::named(&events, "workspace.kept");
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0]["host"], "build");

    // The operator's word discards it there: the worktree and the branch the-loop made.
    let discarded = world
        .sessions
        .workspaces()
        .discard(&item, Source::Cli)
        .await
        .unwrap();
    assert!(
        matches!(
            discarded,
            Finished::Removed {
                branch_deleted: true,
                ..
            }
        ),
        "{discarded:?}"
    );
    assert!(!exists_on_host(&sshd, &dir), "{dir} is still there");
    assert_eq!(
        git(&sshd, &repo, &["branch", "--list", "the-loop/issue-15"]),
        ""
    );
    assert!(world.sessions.workspaces().record(&item).unwrap().is_none());
    let removed = the_loop::events::lines::named(&events, "workspace.removed");
    assert_eq!(removed.len(), 1, "{removed:?}");
    assert_eq!(removed[0]["host"], "build");
    assert_eq!(removed[0]["discarded"], true);
    assert_eq!(removed[0]["discarded_changes"], "2 changed files");
    world.host.transport.disconnect().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_on_the_host_ships_from_there_with_the_token_on_the_push_alone() {
    if !Sshd::available() {
        return;
    }
    let sshd = Sshd::start();
    let remote = GitRemote::start(TOKEN);
    remote.create_repo("octo/repo");
    let repo = format!("{}/repo", sshd.home().display());
    // The host's checkout, cloned over HTTP with the credentials in this clone's
    // environment only (nothing of them stays in the clone).
    let url = remote.url("octo/repo");
    let mut clone: Vec<String> = vec!["env".into()];
    clone.extend(remote.auth_env().iter().map(|(k, v)| format!("{k}={v}")));
    clone.extend(["git", "clone", "-q", &url, &repo].map(String::from));
    let clone: Vec<&str> = clone.iter().map(String::as_str).collect();
    let out = sshd.run_as_user(&clone);
    assert!(out.status.success(), "{out:?}");

    let sim = SimGithub::start().await.unwrap();
    for n in [15, 16] {
        let spec = IssueSpec::new("Cap retries")
            .number(n)
            .author("carol")
            .labels(&["the-loop"]);
        sim.add_issue("octo/repo", spec).unwrap();
    }
    sim.require_token(Some(TOKEN));
    let world = started_with(&sshd, Some(&sim.base_url()), |yaml| {
        yaml.replace(
            r#"path: "~", workspace: shared"#,
            r#"path: "~/repo", workspace: worktree"#,
        )
    })
    .await;
    let item = WorkItemRef::new("octo", "repo", 15);
    let dir = worktree(&sshd);
    let ws = world.sessions.workspaces().record(&item).unwrap().unwrap();
    assert_eq!(ws.base, "refs/remotes/origin/main");
    assert_eq!(ws.remote_url.as_deref(), Some(url.as_str()));
    let head = commit(&sshd, &dir, "cap.rs", "const CAP: u32 = 5;\n");

    // Without the supervisor, a proposal is refused, not recorded in the host's state.
    let lonely = on_host(
        &sshd,
        "github:octo/repo#15",
        &["propose", "--title", "Cap retries at 5"],
    );
    assert_eq!(lonely.status.code(), Some(1), "{}", text(&lonely));
    assert!(text(&lonely).contains("was not sent"), "{}", text(&lonely));

    let events = EventLog::open(&world.paths);
    let client = Arc::new(
        Client::builder(&sim.base_url())
            .token(Some(TOKEN))
            .build()
            .unwrap(),
    );
    let _socket = serve(&world, Arc::clone(&client), &events).await;
    // The agent proposes from its pane there: the worktree is read there.
    let proposed = on_host(
        &sshd,
        "github:octo/repo#15",
        &[
            "propose",
            "--title",
            "Cap retries at 5",
            "--body",
            "The cap.",
            "--draft",
        ],
    );
    assert!(proposed.status.success(), "{}", text(&proposed));
    assert!(
        text(&proposed).contains("1 commit · 1 file +1 −0"),
        "{}",
        text(&proposed)
    );
    let requested = the_loop::events::lines::named(events.path(), "ship.requested");
    assert_eq!(requested.len(), 1, "{requested:?}");
    assert_eq!(requested[0]["head"], head.as_str());
    // Another item's proposal from the host is refused: it has no session there.
    let other = on_host(
        &sshd,
        "github:octo/repo#16",
        &["propose", "--title", "Not mine"],
    );
    assert_eq!(other.status.code(), Some(1), "{}", text(&other));
    assert!(text(&other).contains("no open session on host"));

    // The operator ships: git on the host pushes the commit shown, asking the-loop
    // installed there for the token it got on that push's stdin.
    let shipper = Shipper::new(Arc::clone(&world.sessions), Arc::clone(&client));
    let shown = shipper.preview(&item).await.unwrap();
    assert_eq!((shown.head.as_str(), shown.ahead), (head.as_str(), 1));
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = sample_cmdlines(TOKEN, Arc::clone(&stop));
    let shipped = shipper
        .ship(&Order {
            work_item: item.clone(),
            seen_head: head.clone(),
            title: None,
            body: None,
            draft: None,
            source: Source::Tui,
            actor: "operator".into(),
        })
        .await;
    stop.store(true, Ordering::SeqCst);
    let (samples, leaked) = sampler.join().unwrap();
    let shipped = shipped.unwrap();
    assert!(samples >= 1 && leaked.is_empty(), "{leaked:#?}");
    assert!(shipped.pushed_now);
    assert_eq!(
        remote.branch_sha("octo/repo", "the-loop/issue-15"),
        Some(head.clone())
    );
    assert!(remote.pushed_with_the_token(), "{:#?}", remote.requests());
    let pulls = sim.control().pulls("octo/repo");
    assert_eq!(pulls.len(), 1, "{pulls:#?}");
    assert_eq!(pulls[0].head, "the-loop/issue-15");
    assert!(pulls[0].draft);
    assert!(pulls[0].body.contains("The cap."), "{}", pulls[0].body);
    // The token is in no file on the host, nor in this machine's state.
    assert_eq!(
        files_holding(&sshd.home(), TOKEN),
        Vec::<std::path::PathBuf>::new()
    );
    assert_eq!(
        files_holding(world.dir.path(), TOKEN),
        Vec::<std::path::PathBuf>::new()
    );

    // Everything pushed: the session's end removes the worktree there, and the branch.
    let ended = world.sessions.reset(&item, &Origin::cli()).await.unwrap();
    assert!(
        matches!(ended.workspace, Finished::Removed { .. }),
        "{:?}",
        ended.workspace
    );
    assert!(!exists_on_host(&sshd, &dir), "{dir} is still there");
    world.host.transport.disconnect().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_request_on_the_host_works_on_its_head_there() {
    if !Sshd::available() {
        return;
    }
    let sshd = Sshd::start();
    let home = sshd.home().display().to_string();
    let (seed, origin, repo) = (
        format!("{home}/seed"),
        format!("{home}/origin.git"),
        format!("{home}/repo"),
    );
    // The host's remote: `main`, a pull request from its own branch `fix-cap` (#17),
    // one from a fork, its head on no branch (#18).
    for argv in [
        vec!["git", "init", "-q", "-b", "main", &seed],
        vec!["git", "init", "-q", "--bare", "-b", "main", &origin],
    ] {
        assert!(sshd.run_as_user(&argv).status.success(), "{argv:?}");
    }
    commit(&sshd, &seed, "README", "first\n");
    git(&sshd, &seed, &["checkout", "-q", "-b", "fix-cap"]);
    let same = commit(&sshd, &seed, "cap.rs", "const CAP: u32 = 5;\n");
    git(&sshd, &seed, &["checkout", "-q", "--detach", "main"]);
    let fork = commit(&sshd, &seed, "fork.rs", "// from a fork\n");
    git(
        &sshd,
        &seed,
        &[
            "push",
            "-q",
            &origin,
            "main",
            "fix-cap",
            "fix-cap:refs/pull/17/head",
            &format!("{fork}:refs/pull/18/head"),
        ],
    );
    let clone = sshd.run_as_user(&["git", "clone", "-q", &origin, &repo]);
    assert!(clone.status.success(), "{clone:?}");

    let opened: Opened = opened_with(&sshd, None, |yaml| {
        yaml.replace(
            r#"path: "~", workspace: shared"#,
            r#"path: "~/repo", workspace: worktree"#,
        )
    });
    let sessions = &opened.sessions;
    for n in [17, 18] {
        let item = WorkItemRef::new("octo", "repo", n);
        spawned(sessions, &item).await;
    }
    let dir = |n: u64| format!("{home}/.tl/worktrees/octo-repo/{n}");
    let record = |n: u64| {
        sessions
            .workspaces()
            .record(&WorkItemRef::new("octo", "repo", n))
            .unwrap()
            .unwrap()
    };

    // #17: the repository's own branch, checked out there tracking the remote's.
    let pull = record(17);
    assert_eq!(pull.kind, Kind::Pull);
    assert_eq!(pull.host.as_deref(), Some("build"));
    assert_eq!(pull.dir.to_str(), Some(dir(17).as_str()));
    assert_eq!(
        pull.upstream.as_deref(),
        Some("refs/remotes/origin/fix-cap")
    );
    assert_eq!(
        git(&sshd, &dir(17), &["symbolic-ref", "--short", "HEAD"]),
        "fix-cap"
    );
    assert_eq!(git(&sshd, &dir(17), &["rev-parse", "HEAD"]), same);
    assert_eq!(
        git(&sshd, &dir(17), &["rev-parse", "--abbrev-ref", "@{u}"]),
        "origin/fix-cap"
    );
    // #18: the fork's head, fetched there under the-loop's own ref.
    let fork_pull = record(18);
    assert_eq!(fork_pull.kind, Kind::ForkPull);
    assert_eq!(fork_pull.branch, "the-loop/pr-18");
    assert_eq!(git(&sshd, &dir(18), &["rev-parse", "HEAD"]), fork);
    assert_eq!(
        git(&sshd, &repo, &["rev-parse", "refs/the-loop/pull/18"]),
        fork
    );
    // The operator's checkout there stays where it was.
    assert_eq!(
        git(&sshd, &repo, &["symbolic-ref", "--short", "HEAD"]),
        "main"
    );
    let events = sessions.events().path().to_path_buf();
    let created = the_loop::events::lines::named(&events, "workspace.created");
    let kinds: Vec<(&str, &str)> = created
        .iter()
        .map(|e| (e["kind"].as_str().unwrap(), e["host"].as_str().unwrap()))
        .collect();
    assert_eq!(kinds, [("pull", "build"), ("fork-pull", "build")]);

    // Nothing of the agents' own: each is removed there at the end, with the branch
    // the-loop made and the fork's ref.
    for n in [17, 18] {
        let item = WorkItemRef::new("octo", "repo", n);
        let ended = sessions.reset(&item, &Origin::cli()).await.unwrap();
        assert!(
            matches!(ended.workspace, Finished::Removed { .. }),
            "#{n}: {:?}",
            ended.workspace
        );
        assert!(!exists_on_host(&sshd, &dir(n)), "{} is still there", dir(n));
    }
    assert_eq!(
        git(
            &sshd,
            &repo,
            &["branch", "--list", "fix-cap", "the-loop/pr-18"]
        ),
        ""
    );
    let fork_ref = sshd.run_as_user(&[
        "git",
        "-C",
        &repo,
        "rev-parse",
        "--verify",
        "--quiet",
        "refs/the-loop/pull/18",
    ]);
    assert!(!fork_ref.status.success(), "{fork_ref:?}");
    opened.host.transport.disconnect().await;
}
