//! SPEC §15.5 end to end: the real supervisor bounds the event log. An oversized log is
//! rotated at start and its events stay readable (`the-loop events` reads the kept
//! files); an open question in the old history survives rotation (even once its file
//! is gone); `events --follow` carries on across a rotation without losing or
//! repeating a line.

use crate::support::e2e::{Setup, World, item};
use std::io::Write;
use std::process::Stdio;
use std::time::Duration;
use the_loop::events::{Event, EventLog, EventType, Source};

fn bounded(max_bytes: u64) -> Setup {
    Setup {
        extra_yaml: format!("events:\n  maxBytes: {max_bytes}\n  keepFiles: 2\n"),
        ..Setup::default()
    }
}

/// Appends `bytes` worth of poll cycles (as a busy supervisor would have written).
fn filler(log: &std::path::Path, bytes: usize) {
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    let mut out = std::io::BufWriter::new(file);
    let mut written = 0;
    let mut n = 0u64;
    while written < bytes {
        let line = Event::new(Source::Poll, EventType::PollCycle)
            .with("repos", 1)
            .with("requests", 4)
            .with("not_modified", 4)
            .with("cycle", n)
            .to_line();
        writeln!(out, "{line}").unwrap();
        written += line.len() + 1;
        n += 1;
    }
    out.flush().unwrap();
}

fn marker(log: &EventLog, text: &str) {
    log.emit(Event::new(Source::Cli, EventType::SessionReset).with("marker", text))
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_log_is_rotated_at_start_and_its_history_stays_readable() {
    let mut w = World::new(bounded(1024 * 1024)).await;
    let path = w.home.join("events.jsonl");
    w.watched_issue(15);
    w.start_session(15).await;
    let log = EventLog::open_path(&path);
    log.emit(
        Event::new(Source::Cli, EventType::SessionAwaitingInput)
            .with("work_item", item(15))
            .with("question_id", "old-question")
            .with("question", "OLD-QUESTION: per repo or global?"),
    )
    .unwrap();
    filler(&path, 3 * 1024 * 1024);
    marker(&log, "OLD-MARKER");
    let before = std::fs::metadata(&path).unwrap().len();

    w.start_supervisor();
    let rotated = w.home.join("events.jsonl.1");
    w.wait("the rotation at start", || rotated.exists().then_some(()))
        .await;
    assert_eq!(std::fs::metadata(&rotated).unwrap().len(), before);
    w.wait_cycles(1).await;
    assert!(std::fs::metadata(&path).unwrap().len() < 1024 * 1024);
    assert!(
        w.home.join("questions.json").exists(),
        "the questions are checkpointed"
    );

    // Old events stay readable: `events` reads the kept files, oldest first.
    let out = w
        .cli(&["events", "--type", "session.*", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let old = text
        .find("OLD-QUESTION")
        .expect("the old question is listed");
    let mark = text.find("OLD-MARKER").expect("the old marker is listed");
    assert!(old < mark, "oldest first");

    // The question is still open for `sessions list`, even once its file is gone.
    let state = |w: &World| {
        w.session(15).unwrap()["state"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(state(&w), "awaiting-input");
    std::fs::remove_file(&rotated).unwrap();
    assert_eq!(state(&w), "awaiting-input");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_follow_carries_on_across_a_rotation() {
    let mut w = World::new(bounded(64 * 1024)).await;
    let path = w.home.join("events.jsonl");
    w.watched_issue(15);
    w.start_supervisor();
    w.wait_cycles(1).await;
    let out_path = w.work_dir().join("follow.out");
    let mut follow = std::process::Command::new(crate::support::tmux_server::BIN);
    follow
        .args(["events", "--follow", "--json", "--type", "session.reset"])
        .env("THE_LOOP_HOME", &w.home)
        .env("THE_LOOP_CONFIG", &w.config)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(Stdio::null());
    let mut follow = follow.spawn().unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;

    let log = EventLog::open_path(&path);
    marker(&log, "BEFORE-ROTATION");
    filler(&path, 70 * 1024);
    let rotated = w.home.join("events.jsonl.1");
    // The supervisor's next line (its poll cycle) takes the log over its bound.
    w.wait("the rotation", || rotated.exists().then_some(()))
        .await;
    marker(&log, "AFTER-ROTATION");
    let followed = w
        .wait("the follower's lines", || {
            let text = std::fs::read_to_string(&out_path).unwrap_or_default();
            text.contains("AFTER-ROTATION").then_some(text)
        })
        .await;
    let _ = follow.kill();
    let _ = follow.wait();
    assert_eq!(followed.matches("BEFORE-ROTATION").count(), 1, "{followed}");
    assert_eq!(followed.matches("AFTER-ROTATION").count(), 1, "{followed}");
    assert!(followed.find("BEFORE-ROTATION") < followed.find("AFTER-ROTATION"));
}
