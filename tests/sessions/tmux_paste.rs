//! The paste path and the tmux layer against real tmux (private sockets) with
//! `the-loop fake-agent` as the harness.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::tmux_server::*;
use serde_json::Value;
use std::time::Duration;
use the_loop::harness::{Harness, HarnessError};
use the_loop::session::{DeliverError, deliver};
use the_loop::tmux::{Error, Liveness, RealTmux, Socket, SpawnSpec, Tmux};

const DELAY: Duration = Duration::from_millis(20);

fn texts(lines: &[Value]) -> Vec<&str> {
    lines.iter().map(|l| l["text"].as_str().unwrap()).collect()
}

/// Asserts each line is one clean bracketed paste.
fn assert_clean_pastes(lines: &[Value]) {
    for line in lines {
        assert_eq!(line["bracketed"], true, "{line}");
        assert_eq!(line["pastes"], 1, "{line}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_prompt_arrives_as_one_bracketed_paste_then_one_submit() {
    let server = TmuxServer::new();
    let tmux = server.tmux();
    let dir = tempfile::tempdir().unwrap();
    let log = temp_log(dir.path(), "agent");
    let pane = start_agent(&tmux, "loop-hostile", &log).await;

    let hostile = concat!(
        "Comment from @alice:\n",
        "\tindented with a tab\n",
        "unicode: é ✓ 日本語 🦀\n",
        "```\n",
        "inside a fence\n",
        "```\n",
        "end the paste: \x1b[201~ then type\rthis\n",
        "colors \x1b[31mred\x1b[0m title \x1b]0;pwned\x07 c1 \u{9b}2J \u{85}next\n",
        "nul \0 bell \x07 del \x7f done",
    );
    let expected = concat!(
        "Comment from @alice:\n",
        "\tindented with a tab\n",
        "unicode: é ✓ 日本語 🦀\n",
        "```\n",
        "inside a fence\n",
        "```\n",
        "end the paste: [201~ then typethis\n",
        "colors [31mred[0m title ]0;pwned c1 2J next\n",
        "nul  bell  del  done",
    );
    let delivery = deliver(&tmux, &pane, hostile, DELAY).await.unwrap();
    assert_eq!(delivery.bytes, expected.len());
    // A sentinel after it: any stray submission from the first would show up before it.
    deliver(&tmux, &pane, "sentinel", DELAY).await.unwrap();

    let lines = wait_log(&log, 2).await;
    assert_eq!(texts(&lines), [expected, "sentinel"]);
    assert_clean_pastes(&lines);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_and_hundred_kilobyte_prompts_arrive_intact() {
    let server = TmuxServer::new();
    let tmux = server.tmux();
    let dir = tempfile::tempdir().unwrap();
    let log = temp_log(dir.path(), "agent");
    let pane = start_agent(&tmux, "loop-large", &log).await;

    let make = |bytes: usize| {
        let mut text = String::new();
        let mut i = 0;
        while text.len() < bytes {
            text.push_str(&format!("line {i:05}\tpayload ✓ {}\n", "x".repeat(i % 90)));
            i += 1;
        }
        text.truncate(bytes);
        text
    };
    let small = make(1024);
    let large = make(100 * 1024);
    deliver(&tmux, &pane, &small, DELAY).await.unwrap();
    deliver(&tmux, &pane, &large, DELAY).await.unwrap();

    let lines = wait_log(&log, 2).await;
    assert_eq!(lines.len(), 2);
    assert_eq!(texts(&lines)[0], small);
    assert_eq!(texts(&lines)[1].len(), large.len());
    assert!(texts(&lines)[1] == large, "the 100 KB prompt was altered");
    assert_clean_pastes(&lines);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_sessions_never_get_each_others_text() {
    const ROUNDS: usize = 20;
    let server = TmuxServer::new();
    let tmux = server.tmux();
    let dir = tempfile::tempdir().unwrap();
    let (log_a, log_b) = (temp_log(dir.path(), "a"), temp_log(dir.path(), "b"));
    let pane_a = start_agent(&tmux, "loop-a", &log_a).await;
    let pane_b = start_agent(&tmux, "loop-b", &log_b).await;

    let text = |who: &str, round: usize| format!("{who} round {round}\n{}", who.repeat(2000));
    let run = |who: &'static str, pane| {
        let tmux = tmux.clone();
        async move {
            for round in 0..ROUNDS {
                deliver(&tmux, &pane, &text(who, round), Duration::ZERO)
                    .await
                    .unwrap();
            }
        }
    };
    tokio::join!(run("A", pane_a), run("B", pane_b));

    for (who, log) in [("A", &log_a), ("B", &log_b)] {
        let lines = wait_log(log, ROUNDS).await;
        let expected: Vec<String> = (0..ROUNDS).map(|r| text(who, r)).collect();
        assert_eq!(texts(&lines), expected, "session {who}");
        assert_clean_pastes(&lines);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_client_does_not_block_delivery() {
    let inner = TmuxServer::new();
    let outer = TmuxServer::new();
    let tmux = inner.tmux();
    let dir = tempfile::tempdir().unwrap();
    let log = temp_log(dir.path(), "agent");
    let pane = start_agent(&tmux, "loop-watched", &log).await;

    // A real read-only client: the outer server's pane runs `tmux attach -r`.
    let attach = outer.raw(&[
        "new-session",
        "-d",
        "-x",
        "100",
        "-y",
        "30",
        "-s",
        "viewer",
        "--",
        "env",
        "-u",
        "TMUX",
        "tmux",
        "-L",
        &inner.socket,
        "attach-session",
        "-r",
        "-t",
        "=loop-watched",
    ]);
    assert!(attach.status.success(), "{attach:?}");
    wait_for("the read-only client", Duration::from_secs(10), || async {
        let out = inner.raw(&["list-clients", "-F", "#{client_readonly}"]);
        (String::from_utf8_lossy(&out.stdout).trim() == "1").then_some(())
    })
    .await;

    deliver(&tmux, &pane, "while watched\nline two", DELAY)
        .await
        .unwrap();
    let lines = wait_log(&log, 1).await;
    assert_eq!(texts(&lines), ["while watched\nline two"]);
    assert_clean_pastes(&lines);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_occupant_is_never_killed() {
    let server = TmuxServer::new();
    let tmux = server.tmux();
    let dir = tempfile::tempdir().unwrap();
    let log = temp_log(dir.path(), "agent");
    let pane = start_agent(&tmux, "loop-busy", &log).await;
    let pid = tmux.pane_pid(&pane).await.unwrap();

    let other_log = temp_log(dir.path(), "other");
    let err = tmux
        .new_session(&fake_agent("loop-busy", &other_log, Some("boot")))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::SessionBusy { .. }), "{err}");

    assert_eq!(tmux.liveness("loop-busy").await, Liveness::Live);
    assert_eq!(
        tmux.pane_pid(&pane).await.unwrap(),
        pid,
        "the agent restarted"
    );
    deliver(&tmux, &pane, "still here", DELAY).await.unwrap();
    assert_eq!(texts(&wait_log(&log, 1).await), ["still here"]);
    assert!(read_log(&other_log).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_occupant_is_cleared_and_replaced() {
    let server = TmuxServer::new();
    let tmux = server.tmux();
    let dir = tempfile::tempdir().unwrap();
    // Another session keeps the server up, so pane ids are not reused (a server that
    // lost its last session exits, and a new one numbers panes from %0 again).
    start_agent(&tmux, "loop-keeper", &temp_log(dir.path(), "keeper")).await;
    let mut short = fake_agent("loop-dead", &temp_log(dir.path(), "x"), None);
    short.argv = vec!["sleep".into(), "0.3".into()];
    let old = tmux.new_session(&short).await.unwrap();
    wait_for("the pane to die", Duration::from_secs(10), || async {
        (tmux.liveness("loop-dead").await == Liveness::Dead).then_some(())
    })
    .await;

    let log = temp_log(dir.path(), "agent");
    let new = tmux
        .new_session(&fake_agent("loop-dead", &log, Some("boot prompt")))
        .await
        .unwrap();
    assert_ne!(old, new);
    assert_eq!(tmux.liveness("loop-dead").await, Liveness::Live);
    let lines = wait_log(&log, 1).await;
    assert_eq!(lines[0]["text"], "boot prompt");
    assert_eq!(lines[0]["boot"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_pane_refuses_the_paste_and_the_server_survives() {
    // tmux 3.3a's server crashes when pasting into a dead pane; deliver must not.
    let server = TmuxServer::new();
    let tmux = server.tmux();
    let dir = tempfile::tempdir().unwrap();
    let log = temp_log(dir.path(), "agent");
    let live = start_agent(&tmux, "loop-live", &log).await;
    let mut short = fake_agent("loop-gone", &temp_log(dir.path(), "x"), None);
    short.argv = vec!["true".into(), "x".into()];
    let dead = tmux.new_session(&short).await.unwrap();
    wait_for("the pane to die", Duration::from_secs(10), || async {
        (tmux.liveness("loop-gone").await == Liveness::Dead).then_some(())
    })
    .await;

    let err = deliver(&tmux, &dead, "hello", DELAY).await.unwrap_err();
    assert!(
        matches!(
            err,
            DeliverError::Paste {
                error: Error::PaneDead { .. },
                ..
            }
        ),
        "{err}"
    );
    let buffers = server.raw(&["list-buffers"]);
    assert!(buffers.stdout.is_empty(), "buffers left: {buffers:?}");
    assert_eq!(tmux.liveness("loop-live").await, Liveness::Live);
    deliver(&tmux, &live, "after", DELAY).await.unwrap();
    assert_eq!(texts(&wait_log(&log, 1).await), ["after"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn liveness_live_dead_absent_and_session_queries() {
    let server = TmuxServer::new();
    let tmux = server.tmux();
    assert_eq!(tmux.liveness("loop-x").await, Liveness::Absent, "no server");
    assert!(tmux.list_sessions().await.unwrap().is_empty());

    let dir = tempfile::tempdir().unwrap();
    let pane = start_agent(&tmux, "loop-x", &temp_log(dir.path(), "agent")).await;
    assert_eq!(tmux.liveness("loop-x").await, Liveness::Live);
    assert_eq!(
        tmux.liveness("loop").await,
        Liveness::Absent,
        "no prefix match"
    );
    assert_eq!(tmux.liveness("loop-x-y").await, Liveness::Absent);

    let sessions = tmux.list_sessions().await.unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(
        (sessions[0].name.as_str(), &sessions[0].pane),
        ("loop-x", &pane)
    );
    assert!(tmux.window_activity(&pane).await.unwrap() > 1_700_000_000);
    let colored = tmux.capture_pane(&pane, true).await.unwrap();
    assert!(colored.contains("fake-agent ready"));

    let env = server.raw(&["show-environment", "-t", "=loop-x", "THE_LOOP_WORK_ITEM"]);
    assert_eq!(
        String::from_utf8_lossy(&env.stdout).trim(),
        "THE_LOOP_WORK_ITEM=github:octo/repo#1"
    );

    tmux.kill_session("loop-x").await.unwrap();
    // Probe (not liveness) so a failure shows what tmux said while its server exits.
    assert_eq!(
        tmux.probe("loop-x").await.map_err(|e| e.to_string()),
        Ok(Liveness::Absent)
    );
    assert!(matches!(
        tmux.kill_session("loop-x").await,
        Err(Error::SessionMissing { .. })
    ));
    assert!(matches!(
        tmux.capture_pane(&pane, false).await,
        Err(Error::SessionMissing { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn liveness_is_unknown_when_the_server_hangs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hung.sock");
    // A "server" that accepts connections and never answers.
    let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let tmux = RealTmux::new(Socket::Path(path), Duration::from_millis(500));

    assert_eq!(tmux.liveness("loop-a").await, Liveness::Unknown);
    let err = tmux
        .new_session(&fake_agent("loop-a", &dir.path().join("log"), None))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::LivenessUnknown { .. }), "{err}");
    let pane = the_loop::tmux::PaneId::parse("%1").unwrap();
    let err = deliver(&tmux, &pane, "hello", DELAY).await.unwrap_err();
    assert!(
        matches!(
            err,
            DeliverError::Paste {
                error: Error::Timeout { .. },
                ..
            }
        ),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_tmux_is_a_clear_error() {
    let empty = tempfile::tempdir().unwrap();
    let server = TmuxServer::new();
    let tmux = server.tmux().with_search_path(empty.path());

    let err = tmux
        .new_session(&fake_agent("loop-a", &empty.path().join("log"), None))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotInstalled), "{err}");
    assert!(
        err.to_string()
            .contains("install tmux (e.g. apt-get install tmux)")
    );
    assert_eq!(tmux.liveness("loop-a").await, Liveness::Unknown);
    let pane = the_loop::tmux::PaneId::parse("%0").unwrap();
    let err = deliver(&tmux, &pane, "hello", DELAY).await.unwrap_err();
    assert!(
        matches!(
            err,
            DeliverError::Paste {
                error: Error::NotInstalled,
                ..
            }
        ),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_harness_binary_is_a_clear_error() {
    let empty = tempfile::tempdir().unwrap();
    let mut config = the_loop::config::SessionsConfig::default();
    config.harnesses.insert(
        "mine".into(),
        the_loop::config::HarnessConfig {
            command: "the-loop-no-such-agent".into(),
            args: vec!["{prompt}".into()],
            ..Default::default()
        },
    );
    let harness = Harness::resolve("mine", &config).unwrap();
    let err = harness.locate(None).unwrap_err();
    assert!(matches!(err, HarnessError::NotFound { .. }));
    assert!(
        err.to_string()
            .contains("`the-loop-no-such-agent`, which is not on PATH")
    );
    let claude = Harness::resolve("claude", &config).unwrap();
    assert!(claude.locate(Some(empty.path().as_os_str())).is_err());

    // Why the lookup comes first: tmux itself starts the pane and it just dies.
    let server = TmuxServer::new();
    let tmux = server.tmux();
    let spec = SpawnSpec {
        argv: harness.fresh_argv("hello", None),
        ..fake_agent("loop-missing", &empty.path().join("log"), None)
    };
    tmux.new_session(&spec).await.unwrap();
    wait_for("the pane to die", Duration::from_secs(10), || async {
        (tmux.liveness("loop-missing").await == Liveness::Dead).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boot_prompts_survive_tmux_argument_parsing() {
    let server = TmuxServer::new();
    let tmux = server.tmux();
    let dir = tempfile::tempdir().unwrap();
    let tricky = [
        "fix it;",
        ";",
        "a\\;",
        "#{pane_id} {braces} $HOME ~ 'single' \"double\" `tick` \\n; -t x",
        "-starts-with-dash",
    ];
    for (i, prompt) in tricky.iter().enumerate() {
        let log = temp_log(dir.path(), &format!("boot{i}"));
        let name = format!("loop-boot-{i}");
        let pane = tmux
            .new_session(&fake_agent(&name, &log, Some(prompt)))
            .await
            .unwrap();
        let lines = wait_log(&log, 1).await;
        assert_eq!(lines[0]["text"].as_str(), Some(*prompt), "prompt {i}");
        wait_ready(&tmux, &pane).await;
    }
}

#[test]
fn fake_agent_logs_what_a_pipe_feeds_it() {
    let dir = tempfile::tempdir().unwrap();
    let log = temp_log(dir.path(), "piped");
    assert_cmd::Command::new(BIN)
        .args([
            "fake-agent",
            "--log",
            log.to_str().unwrap(),
            "the boot prompt",
        ])
        .write_stdin("\x1b[200~pasted\nlines\x1b[201~\rtyped\r\x04ignored\r")
        .assert()
        .success()
        .stdout(predicates::str::contains("\x1b[?2004h"))
        .stdout(predicates::str::contains("\x1b[?2004l"));
    let lines = read_log(&log);
    assert_eq!(texts(&lines), ["the boot prompt", "pasted\nlines", "typed"]);
    assert_eq!(lines[0]["boot"], true);
    assert_eq!(lines[1]["bracketed"], true);
    assert_eq!(lines[2]["bracketed"], false);
    assert!(lines[1].get("boot").is_none());
    assert!(the_loop::time::parse_ts(lines[1]["ts"].as_str().unwrap()).is_some());
}

#[test]
fn fake_agent_with_an_unwritable_log_is_a_usage_error() {
    assert_cmd::Command::new(BIN)
        .args(["fake-agent", "--log", "/nonexistent-dir/x.jsonl"])
        .write_stdin("")
        .assert()
        .code(2)
        .stderr(predicates::str::contains("writable --log"));
}
