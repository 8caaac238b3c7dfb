//! The supervisor as the TUI will embed it: `Supervisor::start` in this process, with
//! an explicit state root and config file (no environment), against the simulator. The
//! handle's status, the operator socket, the lock, a server restart on reload, and
//! shutdown.

use crate::support::e2e::{LABEL, REPO};
use crate::support::tmux_server::TmuxServer;
use std::path::Path;
use std::time::Duration;
use the_loop::events::EventType;
use the_loop::github::sim::{IssueSpec, SimGithub};
use the_loop::ingress::webhook::WebhookStatus;
use the_loop::paths::StatePaths;
use the_loop::supervisor::lock::SupervisorLock;
use the_loop::supervisor::{
    CycleEnd, Mode, ServerState, StartError, StopReason, Supervisor, SupervisorOptions,
};

fn write_config(path: &Path, api: &str, socket: &str, webhook_path: &str) {
    let yaml = format!(
        "github:\n  apiUrl: {api}\nrepos:\n  - name: {REPO}\n    label: {LABEL}\n\
         sessions:\n  tmux:\n    socket: {socket}\n\
         server:\n  enabled: true\n  listen: 127.0.0.1:0\n  webhookPath: {webhook_path}\n  \
         webhookSecretEnv: THE_LOOP_TEST_SECRET_THAT_IS_NEVER_SET\n"
    );
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, yaml).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn listening(server: &ServerState) -> Option<std::net::SocketAddr> {
    match server {
        ServerState::Listening { addr, .. } => Some(*addr),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_handle_reports_status_serves_the_operator_socket_and_restarts_the_server_on_reload() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let sim = SimGithub::start().await.unwrap();
    sim.add_issue(REPO, IssueSpec::new("one").labels(&[LABEL]))
        .unwrap();
    let tmux = TmuxServer::new();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    write_config(&config, &sim.base_url(), &tmux.socket, "/gh-webhook");
    let paths = StatePaths::new(dir.path().join("state"));
    let options = || {
        SupervisorOptions::new(Mode::Tui)
            .config_flag(Some(config.clone()))
            .paths(paths.clone())
            .shutdown_grace(Duration::from_secs(5))
    };
    let handle = Supervisor::start(options()).await.unwrap();
    let mut feed = handle.subscribe();

    // The status a screen shows.
    let status = handle.status();
    assert_eq!(status.repos, [REPO]);
    assert!(status.allowlist_empty);
    let addr = listening(&status.server).expect("listening");
    assert!(matches!(
        status.server,
        ServerState::Listening {
            webhook: WebhookStatus::Off,
            ..
        }
    ));
    let warnings = status.warnings.join("\n");
    assert!(warnings.contains("routing.authorizedUsers"), "{warnings}");
    assert!(warnings.contains("the webhook route is off"), "{warnings}");

    let http = reqwest::Client::new();
    let health = http
        .get(format!("http://{addr}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);

    // The operator's reply route is not on the network listener (SPEC §14.1)…
    let reply = http
        .post(format!("http://{addr}/api/v1/sessions/reply"))
        .json(&serde_json::json!({"ref": "github:octo/repo#999", "text": "hello"}))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 404);
    assert_eq!(reply.text().await.unwrap(), "not found\n");
    // …but on the operator socket, where a reply never spawns a session.
    let socket = handle.operator_socket().expect("an operator socket");
    assert_eq!(socket, paths.operator_socket());
    let local = reqwest::Client::builder()
        .unix_socket(socket)
        .build()
        .unwrap();
    let reply = local
        .post("http://localhost/api/v1/sessions/reply")
        .json(&serde_json::json!({"ref": "github:octo/repo#999", "text": "hello"}))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 404);
    let body: serde_json::Value = reply.json().await.unwrap();
    assert_eq!(body["reason"], "no-session", "{body}");

    // One supervisor per state root.
    match Supervisor::start(options()).await {
        Err(StartError::Locked { pid }) => assert_eq!(pid, Some(std::process::id())),
        other => panic!("expected Locked, got {:?}", other.err()),
    }

    let report = handle.poll_once().await;
    assert_eq!(report.items, 1);
    let status = handle.status();
    assert_eq!(status.last_cycle.map(|c| c.report.items), Some(1));
    assert!(status.rate.is_some_and(|r| r.remaining.is_some()));
    let mut saw_cycle = false;
    while let Ok(event) = feed.try_recv() {
        saw_cycle |= event.event == EventType::PollCycle;
    }
    assert!(saw_cycle, "subscribers get the events");

    // A changed `server` section rebinds the listener.
    let mut watch = handle.watch_status();
    write_config(&config, &sim.base_url(), &tmux.socket, "/hooks/github");
    let new_addr = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            watch.changed().await.unwrap();
            let now = listening(&watch.borrow().server);
            if let Some(now) = now.filter(|a| *a != addr) {
                return now;
            }
        }
    })
    .await
    .expect("the server restarted");
    let moved = http
        .post(format!("http://{new_addr}/hooks/github"))
        .send()
        .await
        .unwrap();
    assert_eq!(moved.status(), 404, "the route answers (off: no secret)");
    assert!(
        http.get(format!("http://{addr}/healthz"))
            .send()
            .await
            .is_err(),
        "the old listener is closed"
    );
    assert_eq!(handle.config().config.server.webhook_path, "/hooks/github");

    let report = handle.shutdown(StopReason::Quit).await;
    assert_eq!(report.cycle, CycleEnd::Idle);
    assert_eq!(report.webhook_unsettled, 0);
    assert!(
        SupervisorLock::try_acquire(&paths).unwrap().is_some(),
        "the lock is released"
    );
    assert!(!paths.operator_socket().exists(), "the socket is removed");
    let stopped = the_loop::events::lines::all(&paths.events())
        .into_iter()
        .find(|e| e["event"] == "supervisor.stopped")
        .expect("supervisor.stopped");
    assert_eq!(stopped["reason"], "quit");
    assert_eq!(stopped["mode"], "tui");
    assert_eq!(stopped["source"], "tui");
}
