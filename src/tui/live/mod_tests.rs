//! The live backend over real files (registry, ledger, event log, config) and the fake
//! tmux, in the viewer role: what a snapshot shows, and that actions go through the
//! shared modules and show up in the next snapshot.

use super::*;
use crate::events::{EventType, Source};
use crate::session::{Registry, SessionRecord, Settings, Status};
use crate::tmux::FakeTmux;
use crate::tui::backend::{Role, SessionState};
use std::time::Duration;

struct Fixture {
    dir: tempfile::TempDir,
    config: PathBuf,
    tmux: Arc<FakeTmux>,
    events: EventLog,
    backend: Arc<LiveBackend>,
}

fn item(n: u64) -> WorkItemRef {
    WorkItemRef::new("octo", "repo", n)
}

const CONFIG: &str =
    "repos:\n  - {name: octo/repo, path: /tmp}\nrouting: {authorizedUsers: [alice]}\n";

/// Sessions on #1 (live) and #2 (paused), #3 watched without one, a question on #1.
fn fixture() -> Fixture {
    fixture_with(crate::tmux::Hosts::default())
}

/// The same, with these other hosts configured.
fn fixture_with(hosts: crate::tmux::Hosts) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, CONFIG).unwrap();
    let loaded = crate::config::load_file(&config).unwrap();
    let paths = StatePaths::new(dir.path().join("state"));
    let events = EventLog::open(&paths);
    let registry = Registry::new(&paths, events.clone(), Source::Cli);
    let tmux = Arc::new(FakeTmux::new());
    for (n, status) in [(1, Status::Active), (2, Status::Paused)] {
        let mut record = SessionRecord::new(&item(n), "fake", dir.path().to_path_buf());
        record.status = status;
        tmux.add_session(&record.tmux_session, false);
        registry.put(&record).unwrap();
    }
    let ledger = crate::ingress::ledger::ledger_path(&paths, "octo/repo");
    std::fs::create_dir_all(ledger.parent().unwrap()).unwrap();
    let watched =
        |n: u64| serde_json::json!({"item": {"title": format!("Issue {n}")}, "watched": true});
    std::fs::write(
        &ledger,
        serde_json::json!({"items": {"1": watched(1), "3": watched(3)}}).to_string(),
    )
    .unwrap();
    events
        .emit(
            crate::events::Event::new(Source::Cli, EventType::SessionAwaitingInput)
                .with("work_item", item(1).to_string())
                .with("question", "Per repo or global?"),
        )
        .unwrap();
    let settings = Settings::new(&loaded.config, Some(config.clone()), &paths).unwrap();
    let sessions = Arc::new(
        Sessions::new(
            Arc::clone(&tmux) as Arc<dyn crate::tmux::Tmux>,
            registry,
            events.clone(),
            settings,
        )
        .with_hosts(hosts),
    );
    let (config_tx, config_rx) = watch::channel(Arc::new(loaded));
    let why = "no GitHub here".to_string();
    let recorder = crate::critic::Recorder::new(&paths, events.clone());
    let backend = LiveBackend::start(LiveParts {
        replier: Replier::new(Arc::clone(&sessions)).without_github(why.clone()),
        critics: CriticRunner::new(recorder, Err(why.clone()), Source::Tui),
        shipper: Err(why),
        paths,
        config_flag: Some(config.clone()),
        config: config_rx,
        sessions,
        events: events.clone(),
        supervision: Supervision::Viewer { config: config_tx },
    });
    Fixture {
        dir,
        config,
        tmux,
        events,
        backend,
    }
}

/// Snapshots until `accept` holds (the follower picks events up within 200 ms).
async fn snapshot_until(backend: &LiveBackend, accept: impl Fn(&Snapshot) -> bool) -> Snapshot {
    for _ in 0..100 {
        let snapshot = backend.snapshot().await;
        if accept(&snapshot) {
            return snapshot;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "the snapshot never showed it: {:?}",
        backend.snapshot().await
    );
}

#[tokio::test]
async fn a_viewer_snapshot_shows_sessions_watched_items_questions_and_who_supervises() {
    let f = fixture();
    let s = f.backend.snapshot().await;
    let rows: Vec<(u64, SessionState)> = s
        .sessions
        .iter()
        .map(|r| (r.work_item.number, r.state))
        .collect();
    assert_eq!(
        rows,
        [
            (1, SessionState::AwaitingInput),
            (2, SessionState::Paused),
            (3, SessionState::NoSession)
        ]
    );
    assert_eq!(s.sessions[0].title.as_deref(), Some("Issue 1"));
    assert_eq!(s.questions.len(), 1);
    assert_eq!(s.questions[0].question, "Per repo or global?");
    assert_eq!(s.status.role, Role::Viewer { pid: None });
    assert_eq!(s.status.repos, ["octo/repo"]);
    assert!(
        s.status
            .config_warnings
            .iter()
            .any(|w| w.contains("no supervisor is running")),
        "{:?}",
        s.status.config_warnings
    );
    assert!(!s.status.allowlist_empty);
    // The pane capture goes to the session's pane.
    assert!(f.backend.capture_pane(&item(1)).await.is_ok());
    let err = f.backend.capture_pane(&item(3)).await.unwrap_err();
    assert!(matches!(err, ActionError::Refused(_)), "{err:?}");
}

#[tokio::test]
async fn actions_go_through_the_shared_modules_and_show_in_the_next_snapshot() {
    let f = fixture();
    f.backend.snapshot().await;

    let said = f.backend.pause(&item(1)).await.unwrap();
    assert_eq!(said, "Paused octo/repo#1");
    let again = f.backend.pause(&item(1)).await.unwrap_err();
    assert!(matches!(again, ActionError::Refused(ref m) if m.contains("already paused")));
    f.backend.resume(&item(2)).await.unwrap();
    let s = snapshot_until(&f.backend, |s| s.sessions[1].state != SessionState::Paused).await;
    assert_eq!(s.sessions[0].state, SessionState::Paused);

    // A reply to a paused session is refused by the one reply path, and says why.
    let refused = f.backend.reply(&item(1), "hello", false).await.unwrap_err();
    assert!(
        matches!(refused, ActionError::Refused(ref m) if m.contains("paused")),
        "{refused:?}"
    );
    let none = f.backend.reply(&item(3), "hello", false).await.unwrap_err();
    assert!(
        matches!(none, ActionError::Refused(ref m) if m.contains("no session")),
        "{none:?}"
    );

    f.backend.dismiss_question(&item(1)).await.unwrap();
    snapshot_until(&f.backend, |s| s.questions.is_empty()).await;

    let log = std::fs::read_to_string(f.events.path()).unwrap();
    for name in [
        "session.paused",
        "session.resumed",
        "session.question_dismissed",
    ] {
        let line = log.lines().find(|l| l.contains(name)).unwrap();
        assert!(line.contains(r#""source":"tui""#), "{line}");
    }
    let _ = (&f.tmux, &f.dir);
}

#[tokio::test]
async fn a_viewer_follows_the_supervisors_config_reloads() {
    let f = fixture();
    assert!(f.backend.snapshot().await.critics.is_empty());
    let with_critic = format!(
        "{CONFIG}critics:\n  - {{name: lint, command: sh, args: ['{{promptFile}}'], enabled: false}}\n"
    );
    std::fs::write(&f.config, with_critic).unwrap();
    f.events
        .emit(crate::events::Event::new(
            Source::Cli,
            EventType::ConfigReloaded,
        ))
        .unwrap();
    let s = snapshot_until(&f.backend, |s| !s.critics.is_empty()).await;
    assert_eq!(s.critics[0].name, "lint");
    assert!(
        s.critics[0]
            .problem
            .as_deref()
            .unwrap_or("")
            .contains("disabled")
    );
    let err = f.backend.run_critic("lint", &item(1)).await.unwrap_err();
    assert!(
        matches!(err, ActionError::Refused(ref m) if m.contains("disabled")),
        "{err:?}"
    );
}

/// The diff view's material (SPEC §21.2, §21.3): the latest round on the item whose
/// envelope has findings, and the pending review kept across calls; a review to a
/// paused session is refused and stays pending.
#[tokio::test]
async fn the_diff_view_gets_the_latest_findings_and_the_pending_review() {
    use crate::critic::envelope::Header;
    use crate::critic::findings::{Finding, Severity};
    let f = fixture();
    let round = |n: usize, findings: Vec<Finding>| {
        let mut envelope = crate::critic::Envelope::not_run(
            Header {
                critic: "lint".into(),
                harness: None,
                model: None,
                attribution: "[lint]".into(),
            },
            "x".into(),
            0.0,
        );
        envelope.findings = findings;
        let path = f.dir.path().join(format!("round-{n}.json"));
        std::fs::write(&path, serde_json::to_vec(&envelope).unwrap()).unwrap();
        for t in [EventType::CriticStarted, EventType::CriticFinished] {
            let e = crate::events::Event::new(Source::Critic, t)
                .with("critic", "lint")
                .with("work_item", item(2).to_string())
                .with("ok", false)
                .with("path", path.display().to_string());
            f.events.emit(e).unwrap();
        }
    };
    let finding = |m: &str| Finding::new("src/a.rs", 3, Severity::Warning, m);
    round(1, vec![finding("older")]);
    round(2, vec![finding("newer")]);
    round(3, Vec::new());
    let mut material = f.backend.review_material(&item(2)).await;
    for _ in 0..100 {
        if !material.findings.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        material = f.backend.review_material(&item(2)).await;
    }
    assert_eq!(material.findings, [finding("newer")]);
    assert_eq!(material.pending, Ok(Vec::new()));
    assert!(
        f.backend
            .review_material(&item(1))
            .await
            .findings
            .is_empty()
    );

    let model = crate::workspace::diff_model::DiffModel::parse(
        "diff --git a/src/a.rs b/src/a.rs\n@@ -1,0 +1,1 @@\n+x",
    );
    let anchor = crate::session::review::Anchor::at(&model, 2).unwrap();
    let comment = crate::session::review::ReviewComment::new(anchor, "why?");
    let kept = f.backend.save_comment(&item(2), &comment).await.unwrap();
    assert!(kept.contains("1 pending"), "{kept}");
    let again = f.backend.review_material(&item(2)).await;
    assert_eq!(again.pending, Ok(vec![comment.clone()]));
    let refused = f
        .backend
        .send_review(&item(2), std::slice::from_ref(&comment), false)
        .await
        .unwrap_err();
    assert!(matches!(refused, ActionError::Refused(_)), "{refused:?}");
    assert_eq!(
        f.backend.review_material(&item(2)).await.pending,
        Ok(vec![comment.clone()]),
        "refused: still pending"
    );
    f.backend
        .discard_review(&item(2), std::slice::from_ref(&comment.id))
        .await
        .unwrap();
    assert_eq!(
        f.backend.review_material(&item(2)).await.pending,
        Ok(Vec::new())
    );
}

/// SPEC §21.3 below the screen: a real critic script's round on the item's worktree,
/// recorded, gives the diff view exactly the findings its envelope kept.
#[tokio::test]
async fn a_critic_scripts_findings_reach_the_diff_view() {
    use crate::critic::{Prompt, Recorder, Request, run_round};
    let f = fixture();
    let wt = f.dir.path().join("wt");
    std::fs::create_dir_all(wt.join("src")).unwrap();
    std::fs::write(wt.join("src/lib.rs"), "a\nb\nc\nd\ne\n").unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/critics/findings.sh");
    let raw: serde_norway::Value = serde_norway::from_str(&format!(
        "{{name: lint, command: {script}, args: [text, '{{prompt}}']}}"
    ))
    .unwrap();
    let spec = crate::critic::parse_all(&[raw], &crate::config::SessionsConfig::default())
        .remove(0)
        .spec
        .unwrap();
    let recorder = Recorder::new(
        &StatePaths::new(f.dir.path().join("state")),
        f.events.clone(),
    );
    let mut request = Request::new(Prompt::Text("review".into()));
    request.cwd = Some(wt);
    request.work_item = Some(item(2));
    let round = run_round(&spec, &request, Some(&recorder)).await.unwrap();
    let places: Vec<String> = round.envelope.findings.iter().map(|f| f.place()).collect();
    assert_eq!(
        places,
        ["src/lib.rs:2", "src/lib.rs:4"],
        "README.md is not there"
    );
    let mut material = f.backend.review_material(&item(2)).await;
    for _ in 0..100 {
        if !material.findings.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        material = f.backend.review_material(&item(2)).await;
    }
    assert_eq!(material.findings, round.envelope.findings);
    assert!(!material.findings[1].message.contains('\u{1b}'));
}

/// Host `build` (`dev@build-1`); nothing is run on it.
fn build_host(dir: &std::path::Path) -> crate::tmux::Hosts {
    let dest = crate::ssh::Destination {
        name: "build".into(),
        ssh: "dev@build-1".into(),
        config_file: None,
        connect_timeout: Duration::from_secs(5),
        server_alive: Duration::from_secs(15),
    };
    let transport = crate::ssh::Transport::new(dest, dir);
    crate::tmux::Hosts::new([crate::tmux::RemoteHost::new(
        Arc::new(transport),
        "tmux",
        "~/.local/state/the-loop",
        Duration::from_secs(5),
    )])
}

#[tokio::test]
async fn a_session_on_another_host_is_attached_over_ssh_and_its_host_is_listed() {
    let control = tempfile::tempdir().unwrap();
    let f = fixture_with(build_host(control.path()));
    let registry = f.backend.sessions.registry();
    let mut remote = SessionRecord::new(&item(4), "fake", "/srv/repo".into());
    remote.host = Some("build".into());
    registry.put(&remote).unwrap();
    let mut gone = SessionRecord::new(&item(5), "fake", "/srv/repo".into());
    gone.host = Some("old-box".into());
    registry.put(&gone).unwrap();

    for read_only in [false, true] {
        let plan = f.backend.attach(&item(4), read_only).await.unwrap();
        let AttachPlan::Foreground(argv) = plan else {
            panic!("a remote attach takes the terminal: {plan:?}")
        };
        let ssh = argv.iter().position(|a| a == "ssh").expect("over ssh");
        assert_eq!(argv[0], "env");
        let mut line = format!("'tmux' 'attach-session' '-t' '={}'", remote.tmux_session);
        if read_only {
            line.push_str(" '-r'");
        }
        assert_eq!(
            argv[ssh..][argv.len() - ssh - 4..],
            ["-t", "dev@build-1", "--", line.as_str()]
        );
    }
    // A local session still attaches to this machine's tmux.
    let AttachPlan::Foreground(argv) = f.backend.attach(&item(1), false).await.unwrap() else {
        panic!("outside tmux, attaching takes the terminal")
    };
    assert!(argv.iter().all(|a| a != "ssh"), "{argv:?}");
    // A host the config no longer names is refused, with what to do.
    let err = f.backend.attach(&item(5), false).await.unwrap_err();
    assert!(
        matches!(&err, ActionError::Refused(m) if m.contains("`old-box`") && m.contains("add it back")),
        "{err:?}"
    );
    // The status bar's hosts: not tried yet.
    assert_eq!(
        f.backend.hosts(),
        [crate::tui::backend::HostView {
            name: "build".into(),
            state: crate::ssh::HostState::Unknown,
        }]
    );
    assert!(fixture().backend.hosts().is_empty());
}
