//! Lifecycle over the fake tmux: control comments, spawn, stop, close, reset, and the
//! errors an operator must understand.

use crate::config::SpawnPolicy;
use crate::ingress::Disposition;
use crate::session::test_support::*;
use crate::session::{Origin, PromptInputs, SessionError, StartOutcome, Status, Toggle};
use crate::tmux::fake::{Call, Failure, Op};
use serde_json::json;
use std::sync::atomic::Ordering;

/// `sessions start` for issue `n`, as the CLI does it.
async fn start(f: &Fixture, n: u64) -> Result<StartOutcome, SessionError> {
    let inputs = PromptInputs::manual(&item(n), "test");
    f.sessions.start(&item(n), &inputs, &Origin::cli()).await
}

fn dropped(reason: &str) -> Disposition {
    Disposition::Dropped {
        reason: reason.into(),
    }
}

#[tokio::test]
async fn a_start_comment_spawns_with_the_spawn_template_and_is_never_forwarded() {
    let f = Fixture::new();
    let got = f
        .ingest(comment(1, 3, "the-loop start -- codeword XYZZY"))
        .await;
    assert_eq!(got, Disposition::Delivered);

    let name = item(3).tmux_session_name();
    let spec = f.tmux.fake.session(&name).unwrap().spec.unwrap();
    assert_eq!(spec.cwd, f.dir.path());
    assert!(
        !spec.private_files,
        "a shared directory keeps the operator's umask"
    );
    assert_eq!(spec.argv[1], "--fresh");
    let prompt = &spec.argv[3];
    assert!(prompt.contains("the-loop started this session for github:octo/repo#3"));
    assert!(prompt.contains("Issue 3"), "the excerpt names the issue");
    assert!(
        !prompt.contains("XYZZY"),
        "the control comment is not forwarded"
    );
    let env: Vec<&str> = spec.env.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        env,
        [
            "THE_LOOP_WORK_ITEM",
            "THE_LOOP_HOME",
            "THE_LOOP_BIN",
            "PATH"
        ]
    );
    assert_eq!(spec.env[0].1, "github:octo/repo#3");
    // SPEC §16.5: the running binary first on PATH, and named by THE_LOOP_BIN.
    let bin = std::env::current_exe().unwrap();
    assert_eq!(spec.env[2].1, bin.display().to_string());
    let dir = bin.parent().unwrap().display().to_string();
    assert!(spec.env[3].1.starts_with(&format!("{dir}:")) || spec.env[3].1 == dir);
    assert_eq!(
        spec.env[3].1.split(':').filter(|p| *p == dir).count(),
        1,
        "listed once"
    );
    assert!(spec.remain_on_exit);

    let record = f.record(3).unwrap();
    assert_eq!(record.status, Status::Active);
    assert_eq!(record.harness, "agent");
    assert_eq!(
        record.harness_session_id.as_deref(),
        Some(spec.argv[2].as_str())
    );
    let spawned = f.events_named("session.spawned");
    assert_eq!(spawned[0]["trigger"], "command");
    assert_eq!(spawned[0]["actor"], "alice");
    assert_eq!(spawned[0]["source"], "dispatch");
    assert_eq!(f.events_named("control.start").len(), 1);
    let pane = f.tmux.fake.session(&name).unwrap().pane;
    assert!(f.tmux.fake.pane_input(&pane).is_empty(), "nothing pasted");
}

/// A repo that names its own harness (`repos[].harness`) gets it; the global one is
/// for the others.
#[tokio::test]
async fn a_repo_runs_the_harness_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let f = Fixture::with_config(dir, |config| {
        let mut other = agent_harness();
        other.args.insert(0, "--other".into());
        config.sessions.harnesses.insert("other".into(), other);
        config.repos[0].harness = Some("other".into());
    });
    start(&f, 3).await.unwrap();
    let record = f.record(3).unwrap();
    assert_eq!(record.harness, "other");
    let spec = f
        .tmux
        .fake
        .session(&item(3).tmux_session_name())
        .unwrap()
        .spec
        .unwrap();
    assert_eq!(spec.argv[1], "--other", "{:?}", spec.argv);
}

#[tokio::test]
async fn spawn_policy_never_refuses_a_start() {
    let dir = tempfile::tempdir().unwrap();
    let f = Fixture::with_config(dir, |c| c.routing.spawn = SpawnPolicy::Never);
    assert_eq!(
        f.ingest(comment(1, 3, "the-loop start")).await,
        dropped("spawn-policy")
    );
    let refused = f.events_named("control.refused");
    assert_eq!(refused[0]["reason"], "spawn-policy");
    assert_eq!(refused[0]["keyword"], "start");
    assert!(f.tmux.fake.calls().is_empty());
    assert!(f.record(3).is_none());
}

#[tokio::test]
async fn a_start_for_a_running_session_is_reported_not_duplicated() {
    let f = Fixture::new();
    f.live_session(3);
    assert_eq!(
        f.ingest(comment(1, 3, "the-loop start")).await,
        dropped("already-running")
    );
    assert_eq!(
        f.events_named("control.refused")[0]["reason"],
        "already-running"
    );
    assert!(
        !f.tmux
            .fake
            .calls()
            .iter()
            .any(|c| matches!(c, Call::CreateSession(_) | Call::KillSession(_)))
    );
}

#[tokio::test]
async fn a_comment_right_behind_a_start_reaches_the_new_session() {
    let f = Fixture::new();
    let start = crate::ingress::Ingest::ingest(&f.dispatcher, comment(1, 3, "the-loop start"));
    let next = crate::ingress::Ingest::ingest(&f.dispatcher, comment(2, 3, "first task"));
    assert_eq!(start.await, Disposition::Delivered);
    assert_eq!(next.await, Disposition::Delivered);
    let pane = f
        .tmux
        .fake
        .session(&item(3).tmux_session_name())
        .unwrap()
        .pane;
    let pasted = f.pasted(&pane);
    assert_eq!(pasted.len(), 1);
    assert!(pasted[0].contains("first task"));
}

#[tokio::test]
async fn pause_and_resume_comments_toggle_delivery_and_are_not_forwarded() {
    let f = Fixture::new();
    let pane = f.live_session(1);
    assert_eq!(
        f.ingest(comment(1, 1, "the-loop pause")).await,
        Disposition::Delivered
    );
    assert_eq!(f.record(1).unwrap().status, Status::Paused);
    assert_eq!(f.events_named("session.paused")[0]["via"], "comment");
    assert_eq!(
        f.ingest(comment(2, 1, "ignored")).await,
        dropped("session-paused")
    );
    assert_eq!(
        f.ingest(comment(3, 1, "the-loop resume")).await,
        Disposition::Delivered
    );
    assert_eq!(f.ingest(comment(4, 1, "go")).await, Disposition::Delivered);
    let pasted = f.pasted(&pane);
    assert_eq!(pasted.len(), 1);
    assert!(pasted[0].contains("go"));
    assert!(!pasted[0].contains("the-loop pause") && !pasted[0].contains("the-loop resume"));
}

#[tokio::test]
async fn a_pause_without_a_session_is_refused() {
    let f = Fixture::new();
    assert_eq!(
        f.ingest(comment(1, 1, "the-loop pause")).await,
        dropped("no-session")
    );
    assert_eq!(f.events_named("control.refused")[0]["reason"], "no-session");
}

#[tokio::test]
async fn a_stop_comment_ends_the_harness_and_keeps_the_tmux_session() {
    let f = Fixture::new();
    f.live_session(1);
    assert_eq!(
        f.ingest(comment(1, 1, "the-loop stop")).await,
        Disposition::Delivered
    );
    assert_eq!(
        *f.signals.sent.lock().unwrap(),
        [(4242, false)],
        "SIGTERM only"
    );
    let name = item(1).tmux_session_name();
    assert!(f.tmux.fake.session(&name).unwrap().dead, "kept, dead");
    assert_eq!(f.record(1).unwrap().status, Status::Closed);
    let stopped = f.events_named("session.stopped");
    assert_eq!(stopped[0]["via"], "comment");
    assert_eq!(stopped[0]["tmux_killed"], false);
    assert_eq!(
        f.ingest(comment(2, 1, "hello?")).await,
        dropped("session-closed")
    );
}

#[tokio::test]
async fn a_harness_ignoring_sigterm_gets_sigkill_after_the_grace() {
    let f = Fixture::new();
    f.live_session(1);
    f.signals.obey_term.store(false, Ordering::SeqCst);
    let ended = f.sessions.stop(&item(1), &Origin::cli()).await.unwrap();
    assert!(ended.was_running);
    assert_eq!(
        *f.signals.sent.lock().unwrap(),
        [(4242, false), (4242, true)]
    );
}

#[tokio::test]
async fn a_close_ends_the_session() {
    let f = Fixture::new();
    f.live_session(1);
    assert_eq!(f.ingest(closed(1, 1)).await, Disposition::Delivered);
    assert_eq!(f.record(1).unwrap().status, Status::Closed);
    let event = &f.events_named("session.closed")[0];
    assert_eq!(event["state"], "closed");
    assert_eq!(f.ingest(closed(2, 2)).await, dropped("no-session"));
}

#[tokio::test]
async fn a_labeled_issue_spawns_only_under_the_labeled_policy_and_when_watched() {
    let dir = tempfile::tempdir().unwrap();
    let f = Fixture::with_config(dir, |c| c.routing.spawn = SpawnPolicy::Labeled);
    assert_eq!(
        f.ingest(labeled(1, 9, "other")).await,
        dropped("not-watched")
    );
    assert_eq!(
        f.ingest(labeled(2, 9, "the-loop")).await,
        Disposition::Delivered
    );
    assert_eq!(f.events_named("session.spawned")[0]["trigger"], "labeled");
    assert_eq!(
        f.ingest(labeled(3, 9, "the-loop")).await,
        dropped("already-running")
    );

    let f = Fixture::new(); // spawn: command
    assert_eq!(
        f.ingest(labeled(1, 9, "the-loop")).await,
        dropped("not-actionable")
    );
}

/// `spawn: labeled` spawns only for an item the repo watches by the poller's rule
/// ([`crate::config::RepoConfig::watches`]): the label alone is not enough — a closed
/// issue, or an issue in a repo with `issues: false`, never spawns (the dispatcher used
/// to check the label only).
#[tokio::test]
async fn a_labeled_issue_that_is_closed_or_of_an_unwatched_kind_does_not_spawn() {
    let dir = tempfile::tempdir().unwrap();
    let f = Fixture::with_config(dir, |c| c.routing.spawn = SpawnPolicy::Labeled);
    let mut closed = labeled(1, 9, "the-loop");
    closed.payload["issue"]["state"] = json!("closed");
    assert_eq!(f.ingest(closed).await, dropped("not-watched"));
    // The label just applied is not the item's: its `labels` decide.
    let mut other = labeled(2, 9, "the-loop");
    other.payload["issue"]["labels"] = json!([{"name": "bug"}]);
    assert_eq!(f.ingest(other).await, dropped("not-watched"));
    assert!(f.events_named("session.spawned").is_empty());

    let dir = tempfile::tempdir().unwrap();
    let f = Fixture::with_config(dir, |c| {
        c.routing.spawn = SpawnPolicy::Labeled;
        for repo in &mut c.repos {
            repo.issues = false;
        }
    });
    assert_eq!(
        f.ingest(labeled(1, 9, "the-loop")).await,
        dropped("not-watched")
    );
    assert!(f.events_named("session.spawned").is_empty());
}

#[tokio::test]
async fn reset_stops_kills_the_tmux_session_and_forgets_record_and_ledger() {
    let f = Fixture::new();
    f.live_session(1);
    let ended = f.sessions.reset(&item(1), &Origin::cli()).await.unwrap();
    assert!(ended.was_running);
    assert!(ended.tmux_killed);
    assert!(f.tmux.fake.session(&item(1).tmux_session_name()).is_none());
    assert!(f.record(1).is_none());
    assert_eq!(*f.ledger.forgotten.lock().unwrap(), [item(1)]);
    let reset = &f.events_named("session.reset")[0];
    assert_eq!(reset["ledger_forgotten"], true);
    assert_eq!(reset["tmux_killed"], true);
    assert!(matches!(
        f.sessions.reset(&item(1), &Origin::cli()).await,
        Err(SessionError::NoSession(_))
    ));
}

#[tokio::test]
async fn a_live_occupant_of_the_name_is_never_killed() {
    let f = Fixture::new();
    let name = item(5).tmux_session_name();
    let occupant = f.tmux.fake.add_session(&name, false);
    let err = start(&f, 5).await.unwrap_err();
    assert!(err.to_string().contains("never replaced"), "{err}");
    assert_eq!(err.exit_code(), 1);
    let session = f.tmux.fake.session(&name).unwrap();
    assert_eq!(session.pane, occupant);
    assert!(!session.dead);
    assert!(
        !f.tmux
            .fake
            .calls()
            .iter()
            .any(|c| matches!(c, Call::KillSession(_)))
    );
    assert_eq!(f.events_named("session.spawn_failed").len(), 1);
    assert!(f.record(5).is_none());
}

#[tokio::test]
async fn a_dead_record_is_replaced_by_a_fresh_start() {
    let f = Fixture::new();
    f.live_session(5);
    f.tmux.fake.set_dead(&item(5).tmux_session_name(), true);
    let outcome = start(&f, 5).await.unwrap();
    assert!(matches!(outcome, StartOutcome::Spawned(_)));
    assert!(
        !f.tmux
            .fake
            .session(&item(5).tmux_session_name())
            .unwrap()
            .dead
    );
}

#[tokio::test]
async fn a_missing_harness_binary_is_a_spawn_failed_event_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let f = Fixture::with_config(dir, |c| {
        c.sessions.harnesses.get_mut("agent").unwrap().command = "/nonexistent/agent-cli".into();
    });
    let err = start(&f, 5).await.unwrap_err();
    assert_eq!(err.exit_code(), 1);
    assert!(err.to_string().contains("not on PATH"), "{err}");
    let failed = &f.events_named("session.spawn_failed")[0];
    assert_eq!(failed["level"], "error");
    assert!(
        failed["error"]
            .as_str()
            .unwrap()
            .contains("/nonexistent/agent-cli")
    );
    assert!(f.tmux.fake.calls().is_empty(), "tmux never asked");
    // Through a comment: a failure the poller retries, not a crash.
    let got = f.ingest(comment(1, 5, "the-loop start")).await;
    assert!(matches!(got, Disposition::Failed { .. }), "{got:?}");
}

#[tokio::test]
async fn an_unknown_harness_is_a_configuration_error() {
    let dir = tempfile::tempdir().unwrap();
    let f = Fixture::with_config(dir, |c| c.sessions.harness = "nope".into());
    let err = start(&f, 5).await.unwrap_err();
    assert_eq!(err.exit_code(), 2, "{err}");
}

#[tokio::test]
async fn missing_tmux_says_so() {
    let f = Fixture::new();
    f.tmux.fake.fail(Op::Probe, Failure::NotInstalled);
    let err = start(&f, 5).await.unwrap_err();
    assert!(err.to_string().contains("tmux was not found"), "{err}");
    assert_eq!(err.exit_code(), 1);
}

#[tokio::test]
async fn pause_and_resume_are_idempotent_and_refuse_closed_sessions() {
    let f = Fixture::new();
    f.live_session(1);
    let cli = Origin::cli();
    assert_eq!(f.sessions.pause(&item(1), &cli).unwrap(), Toggle::Changed);
    assert_eq!(f.sessions.pause(&item(1), &cli).unwrap(), Toggle::Unchanged);
    assert_eq!(f.sessions.resume(&item(1), &cli).unwrap(), Toggle::Changed);
    assert_eq!(
        f.sessions.resume(&item(1), &cli).unwrap(),
        Toggle::Unchanged
    );
    assert_eq!(f.events_named("session.paused").len(), 1);
    assert_eq!(f.events_named("session.resumed").len(), 1);
    f.sessions.stop(&item(1), &cli).await.unwrap();
    assert!(matches!(
        f.sessions.pause(&item(1), &cli),
        Err(SessionError::Closed(_))
    ));
    assert!(matches!(
        f.sessions.pause(&item(2), &cli),
        Err(SessionError::NoSession(_))
    ));
}

#[tokio::test]
async fn sessions_of_a_git_repo_run_in_worktrees_that_follow_the_ending_rule() {
    use crate::events::Source;
    use crate::workspace::Finished;
    use crate::workspace::test_repo::git;
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("a.txt"), "a").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "a"]);
    let path = repo.display().to_string();
    let f = Fixture::with_config(dir, |c| c.repos[0].path = Some(path));
    start(&f, 1).await.unwrap();
    start(&f, 2).await.unwrap();
    let (one, two) = (f.record(1).unwrap(), f.record(2).unwrap());
    let ws = one.workspace.clone().unwrap();
    assert_eq!(one.cwd, ws, "the session runs in its worktree");
    assert_eq!(one.branch.as_deref(), Some("the-loop/issue-1"));
    let spec = f
        .tmux
        .fake
        .session(&item(1).tmux_session_name())
        .unwrap()
        .spec
        .unwrap();
    assert_eq!(spec.cwd, ws);
    assert!(
        spec.private_files,
        "its agent writes private files (SPEC §18.5)"
    );
    assert_eq!(
        f.events_named("session.spawned")[0]["branch"],
        "the-loop/issue-1"
    );

    // The item closes on GitHub: its clean worktree goes.
    *f.signals.victim.lock().unwrap() = Some(item(1).tmux_session_name());
    let origin = Origin::comment(Source::Poll, None);
    let ended = f.sessions.close(&item(1), true, &origin).await.unwrap();
    assert!(
        matches!(ended.workspace, Finished::Removed { .. }),
        "{ended:?}"
    );
    assert!(!ws.exists());
    assert_eq!(f.record(1).unwrap().workspace, None);
    assert_eq!(f.events_named("workspace.removed")[0]["source"], "poll");

    // A stopped session with work keeps it, and its record says why.
    let dirty = two.workspace.clone().unwrap();
    std::fs::write(dirty.join("wip.txt"), "x").unwrap();
    *f.signals.victim.lock().unwrap() = Some(item(2).tmux_session_name());
    let ended = f.sessions.stop(&item(2), &Origin::cli()).await.unwrap();
    assert!(
        matches!(&ended.workspace, Finished::Kept { reason, .. } if reason == "1 changed file"),
        "{ended:?}"
    );
    assert_eq!(
        f.record(2).unwrap().workspace_kept.as_deref(),
        Some("1 changed file")
    );
    // Stopping it again looks again: once the work is gone, so is the worktree.
    std::fs::remove_file(dirty.join("wip.txt")).unwrap();
    let ended = f.sessions.stop(&item(2), &Origin::cli()).await.unwrap();
    assert!(ended.already_closed);
    assert!(
        matches!(ended.workspace, Finished::Removed { .. }),
        "{ended:?}"
    );
}
