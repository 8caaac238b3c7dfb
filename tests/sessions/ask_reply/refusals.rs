//! Fail closed (SPEC §8.2), through the CLI and the operator route alike: no session 404 /
//! exit 1, paused 400 / exit 1, dead pane 404 / exit 1 with nothing respawned, empty
//! text 400 / exit 2, bad ref 400 / exit 2 — and the route's own refusals, all JSON, as
//! is the socket's answer to a path it does not serve.

use crate::support::ask_world::*;
use crate::support::tmux_server::{read_log, wait_for};
use serde_json::{Value, json};
use std::time::Duration;
use the_loop::operator::{OperatorSocket, REPLY_PATH};
use the_loop::session::Origin;
use the_loop::tmux::{Liveness, Tmux};

/// Posts `body` (raw) with `content_type`; the status and the JSON answer.
async fn post(handle: &OperatorSocket, content_type: &str, body: String) -> (u16, Value) {
    let response = http(handle)
        .post(reply_url())
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let json = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"));
    (status, json)
}

/// Posts `body` over a bare socket and reads the status line. The server answers 413
/// once it has read the limit and closes while the rest is still being written, so the
/// write may fail (a broken pipe); the answer is already in our receive queue then.
async fn raw_status(handle: &OperatorSocket, body: &str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::UnixStream::connect(handle.path())
        .await
        .unwrap();
    let head = format!(
        "POST {REPLY_PATH} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
    let mut answer = Vec::new();
    // A guard against a hang, not a timing assertion.
    tokio::time::timeout(Duration::from_secs(30), async {
        let mut buf = [0u8; 1024];
        while !answer.windows(2).any(|w| w == b"\r\n") {
            let n = stream.read(&mut buf).await.unwrap();
            assert!(n > 0, "closed before a status line");
            answer.extend_from_slice(&buf[..n]);
        }
    })
    .await
    .expect("no answer within 30 s");
    let line = String::from_utf8_lossy(&answer);
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

async fn api(handle: &OperatorSocket, work_item: &str, text: &str) -> (u16, Value) {
    let body = json!({"ref": work_item, "text": text, "comment": false}).to_string();
    post(handle, "application/json", body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_fail_closed_by_cli_and_by_http() {
    let world = World::new().await;
    let live = world.start_session(15).await;
    world.start_session(16).await;
    world.sessions.pause(&item(16), &Origin::cli()).unwrap();
    let dead = world.start_session(17).await;
    // The harness exits (Ctrl-C); remain-on-exit keeps the dead pane.
    world.server.raw(&["send-keys", "-t", dead.as_str(), "C-c"]);
    let dead_name = item(17).tmux_session_name();
    wait_for("the pane to die", Duration::from_secs(20), || async {
        let all = world.tmux.list_sessions().await.ok()?;
        let session = all.iter().find(|s| s.name == dead_name)?;
        (session.liveness == Liveness::Dead).then_some(())
    })
    .await;
    let handle = world.serve_replies().await;
    let agent_lines = read_log(&world.agent_log()).len();

    // (ref, text, HTTP status, exit code, what the message says)
    let cases = [
        (
            "github:octo/repo#99",
            "hello",
            404,
            1,
            "never spawns a session",
        ),
        ("github:octo/repo#16", "hello", 400, 1, "is paused"),
        ("github:octo/repo#17", "hello", 404, 1, "no live pane"),
        ("github:octo/repo#15", "  \n ", 400, 2, "empty"),
        ("github:octo/repo#99", "", 400, 2, "empty"),
        (
            "octo/repo#15",
            "hello",
            400,
            2,
            "expected `github:owner/repo#N`",
        ),
    ];
    for (work_item, text, status, code, says) in cases {
        let out = world
            .run(&["reply", "--work-item", work_item, "--text", text], None)
            .await;
        assert_eq!(
            out.status.code(),
            Some(code),
            "{work_item}: {}",
            stderr(&out)
        );
        assert!(stderr(&out).contains(says), "{work_item}: {}", stderr(&out));
        assert!(stdout(&out).is_empty(), "{work_item}: {}", stdout(&out));

        let (got, body) = api(&handle, work_item, text).await;
        assert_eq!(got, status, "{work_item}: {body}");
        let error = body["error"].as_str().unwrap();
        assert!(error.contains(says), "{work_item}: {error}");
    }

    // Nothing was pasted, spawned or respawned; the dead pane is still dead.
    assert_eq!(read_log(&world.agent_log()).len(), agent_lines);
    assert!(world.events_named("session.respawned").is_empty());
    assert!(world.events_named("session.reply_sent").is_empty());
    assert_eq!(
        world.events_named("session.spawned").len(),
        3,
        "only the three started"
    );
    let all = world.tmux.list_sessions().await.unwrap();
    let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
    assert!(
        !names.contains(&item(99).tmux_session_name().as_str()),
        "{names:?}"
    );
    let dead_now = all.iter().find(|s| s.name == dead_name).unwrap();
    assert_eq!(dead_now.liveness, Liveness::Dead);
    assert!(world.sessions.registry().get(&item(99)).unwrap().is_none());
    let reasons: Vec<String> = world
        .events_named("session.reply_failed")
        .iter()
        .map(|e| {
            format!(
                "{} {}",
                e["via"].as_str().unwrap(),
                e["reason"].as_str().unwrap()
            )
        })
        .collect();
    for via in ["cli", "api"] {
        for reason in ["no-session", "session-paused", "no-live-pane"] {
            assert!(reasons.contains(&format!("{via} {reason}")), "{reasons:?}");
        }
    }

    // The route's own refusals, each with a JSON error.
    let (status, body) = post(&handle, "text/plain", r#"{"ref":"x","text":"y"}"#.into()).await;
    assert_eq!(status, 415, "{body}");
    let (status, body) = post(&handle, "application/json", "{not json".into()).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("expected"),
        "{body}"
    );
    let extra = json!({"ref": "github:octo/repo#15", "text": "x", "force": true}).to_string();
    let (status, body) = post(&handle, "application/json", extra).await;
    assert_eq!(status, 400, "unknown fields are refused: {body}");
    // A path it does not serve (a client of another version): refused as JSON too.
    let response = http(&handle)
        .post("http://localhost/api/v1/sessions/replay")
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["reason"], "not-served", "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("serves no `/api/v1/sessions/replay`"),
        "{body}"
    );
    let big =
        json!({"ref": "github:octo/repo#15", "text": "x".repeat(2 * 1024 * 1024)}).to_string();
    assert_eq!(raw_status(&handle, &big).await, 413);
    assert_eq!(read_log(&world.agent_log()).len(), agent_lines);

    // The live session still takes a reply (so the refusals above were not luck).
    let (status, body) = api(&handle, "github:octo/repo#15", "now it works").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["pane"], live.as_str());
    handle.shutdown().await;
}
