//! The TCP listener serves no operator route; the operator socket does, and the CLI
//! uses it while a supervisor runs.

use crate::support::e2e::{PATIENCE, REPO, Setup, World, item};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// A client of the operator socket.
pub fn socket_client(path: &Path) -> reqwest::Client {
    reqwest::Client::builder()
        .unix_socket(path)
        .timeout(PATIENCE)
        .build()
        .unwrap()
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o777
}

/// A loopback URL nobody answers on: a GitHub the CLI must never need.
fn nowhere() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

/// `the-loop ARGS` as an agent's pane would run it once its secrets are gone (SPEC
/// §14.4): the state root and config, no token, no `gh` on `PATH`, a GitHub API that
/// does not answer, and not even the tmux socket.
pub(super) fn bare(w: &World, args: &[&str], work_item: Option<&str>) -> Command {
    let empty_path = w.work_dir().join("empty-bin");
    std::fs::create_dir_all(&empty_path).unwrap();
    let mut cmd = Command::new(crate::support::tmux_server::BIN);
    cmd.args(args)
        .env_clear()
        .env("THE_LOOP_HOME", w.state())
        .env("THE_LOOP_CONFIG", &w.config)
        .env("THE_LOOP_GITHUB_API_URL", nowhere())
        .env("PATH", &empty_path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(item) = work_item {
        cmd.env("THE_LOOP_WORK_ITEM", item);
    }
    cmd
}

/// Runs a command off the runtime's threads (the simulator must keep serving).
pub(super) async fn run(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

/// `the-loop reply` to #15 from a [`bare`] environment; it must succeed. Its stdout.
async fn bare_reply(w: &World, reply: &str) -> String {
    let out = run(bare(
        w,
        &["reply", "--work-item", &item(15), "--text", reply],
        None,
    ))
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

pub(super) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub(super) fn comments_with(w: &World, number: u64, needle: &str) -> usize {
    w.sim
        .comments_on(REPO, number)
        .iter()
        .filter(|c| c.body.contains(needle))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_network_listener_serves_no_operator_route_and_the_socket_does() {
    let w = World::supervising(
        Setup {
            server: true,
            exposed: true,
            ..Setup::default()
        },
        15,
    )
    .await;
    let started = w.wait_event("server.started", |_| true).await;
    assert_eq!(started["exposed"], true);
    let addr = started["listen"].as_str().unwrap().to_string();
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    assert!(
        started["warning"]
            .as_str()
            .unwrap_or_default()
            .contains("the webhook route is off")
            || started["webhook"] == "signed",
        "{started}"
    );

    // Every way of asking the TCP listener for an operator route is a plain 404.
    let http = reqwest::Client::builder()
        .timeout(PATIENCE)
        .build()
        .unwrap();
    let reply = json!({"ref": item(15), "text": "TCP-REPLY-SENTINEL", "comment": true});
    let ask = json!({"ref": item(15), "question": "TCP-ASK-SENTINEL?"});
    let attempts = [
        ("/api/v1/sessions/reply", &reply),
        ("/api/v1/sessions/reply/", &reply),
        ("//api/v1/sessions/reply", &reply),
        ("/API/V1/SESSIONS/REPLY", &reply),
        ("/api/v1/sessions/reply?x=1", &reply),
        ("/api/v1/sessions/ask", &ask),
    ];
    for (path, body) in attempts {
        let response = http
            .post(format!("http://{addr}{path}"))
            .header("x-the-loop-client", "cli")
            .header("x-forwarded-for", "127.0.0.1")
            .json(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 404, "{path}");
    }
    let got = http
        .get(format!("http://{addr}/api/v1/sessions/reply"))
        .send()
        .await
        .unwrap();
    assert_eq!(got.status(), 404);
    let health = http
        .get(format!("http://{addr}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);

    // The socket: private, and it answers.
    let socket = w.operator_socket();
    assert_eq!(mode(&socket), 0o600);
    assert_eq!(mode(w.state()), 0o700);
    let local = socket_client(&socket);
    let response = local
        .post("http://localhost/api/v1/sessions/reply")
        .json(&json!({"ref": item(15), "text": "SOCKET-REPLY-SENTINEL"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["comment_posted"], true, "{body}");
    w.wait_pasted("SOCKET-REPLY-SENTINEL").await;
    let sent = w
        .wait_event("session.reply_sent", |e| e["via"] == "api")
        .await;
    assert_eq!(sent["pid"], w.pid());

    // A cycle later: nothing the TCP requests carried reached the pane or GitHub.
    w.wait_cycles(1).await;
    assert_eq!(w.pasted_count("TCP-REPLY-SENTINEL"), 0);
    assert_eq!(comments_with(&w, 15, "TCP-REPLY-SENTINEL"), 0);
    assert_eq!(comments_with(&w, 15, "TCP-ASK-SENTINEL"), 0);
    assert_eq!(comments_with(&w, 15, "SOCKET-REPLY-SENTINEL"), 1);
    assert_eq!(w.events_named("session.reply_sent").len(), 1);
    assert!(w.events_named("session.awaiting_input").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reply_and_ask_go_through_the_running_supervisor_and_need_no_token() {
    // No webhook server: the operator socket does not depend on it.
    let mut w = World::supervising(Setup::default(), 15).await;
    let started = w.wait_event("supervisor.started", |_| true).await;
    let socket = w.operator_socket();
    assert_eq!(started["operator_socket"], socket.display().to_string());
    assert!(started.get("server").is_none(), "{started}");
    let supervisor = w.pid();

    // `the-loop reply` with no token, no GitHub and no tmux socket of its own.
    let stdout = bare_reply(&w, "CLI-REPLY-SENTINEL").await;
    assert!(
        stdout.starts_with("replied to github:octo/repo#15 (pane %"),
        "{stdout}"
    );
    assert!(stdout.contains("delivery report: http"), "{stdout}");
    w.wait_pasted("CLI-REPLY-SENTINEL").await;
    let sent = w
        .wait_event("session.reply_sent", |e| e["via"] == "cli")
        .await;
    assert_eq!(sent["pid"], supervisor, "the supervisor pasted it");
    assert_eq!(sent["comment_posted"], true);
    assert_eq!(comments_with(&w, 15, "CLI-REPLY-SENTINEL"), 1);

    // `the-loop ask` inside the session's environment, with no token and no `gh`.
    let out = run(bare(
        &w,
        &["ask", "--question", "ASK-SENTINEL: per repo or global?"],
        Some(&item(15)),
    ))
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let url = text(&out.stdout).trim().to_string();
    assert!(url.starts_with("http"), "{url}");
    let asked = w
        .wait_event("session.awaiting_input", |e| e["work_item"] == item(15))
        .await;
    assert_eq!(asked["pid"], supervisor, "the supervisor posted it");
    assert_eq!(asked["comment_posted"], true);
    assert_eq!(asked["comment_url"], url.as_str());
    assert_eq!(comments_with(&w, 15, "ASK-SENTINEL"), 1);

    // The supervisor's token posts only where the operator watches.
    let out = run(bare(
        &w,
        &[
            "ask",
            "--work-item",
            "github:evil/other#7",
            "--question",
            "SPAM-SENTINEL",
        ],
        Some(&item(15)),
    ))
    .await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("configured repositories"));
    let refused = w
        .wait_event("session.awaiting_input", |e| {
            e["work_item"] == "github:evil/other#7"
        })
        .await;
    assert_eq!(
        (&refused["pid"], &refused["comment_posted"]),
        (&json!(supervisor), &json!(false))
    );
    assert!(w.sim.comments_on("evil/other", 7).is_empty());

    // The supervisor stops: the socket goes, and both commands work in-process.
    w.signal("-TERM");
    assert!(w.wait_exit().await.success());
    assert!(!socket.exists(), "removed on shutdown");
    let out = w
        .cli(&[
            "reply",
            "--work-item",
            &item(15),
            "--text",
            "INPROC-REPLY-SENTINEL",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    w.wait_pasted("INPROC-REPLY-SENTINEL").await;
    let sent = w
        .wait_event("session.reply_sent", |e| e["pid"] != supervisor)
        .await;
    assert_eq!(sent["via"], "cli");
    let mut ask = w.cli(&["ask", "--question", "INPROC-ASK-SENTINEL?"]);
    let out = ask.env("THE_LOOP_WORK_ITEM", item(15)).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(comments_with(&w, 15, "INPROC-ASK-SENTINEL"), 1);

    // A supervisor killed outright leaves its socket; the CLI sees nobody answers
    // there and works in-process, and the next supervisor replaces the file.
    w.start_supervisor();
    w.wait("the new supervisor's socket", || {
        socket.exists().then_some(())
    })
    .await;
    w.kill9().await;
    assert!(socket.exists(), "a dead supervisor's socket stays");
    let out = w
        .cli(&[
            "reply",
            "--work-item",
            &item(15),
            "--text",
            "STALE-REPLY-SENTINEL",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    w.wait_pasted("STALE-REPLY-SENTINEL").await;
    w.start_supervisor();
    let restarted = w.pid();
    w.wait_event("supervisor.started", |e| e["pid"] == restarted)
        .await;
    bare_reply(&w, "AGAIN-REPLY-SENTINEL").await;
    let sent = w
        .wait_event("session.reply_sent", |e| e["pid"] == restarted)
        .await;
    assert_eq!(sent["via"], "cli");
    w.wait_pasted("AGAIN-REPLY-SENTINEL").await;
}
