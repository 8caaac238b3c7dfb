//! The event log end to end: the docs match the enum, concurrent writers (threads and
//! processes) never interleave lines, and `the-loop events` filters, prints and follows.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;
use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use the_loop::events::{Event, EventLog, EventReader, EventType, Filter, Level, Source};

// ---------------------------------------------------------------------------------------
// docs/events.md ↔ EventType::ALL

#[test]
fn docs_document_exactly_the_event_types() {
    let docs =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/events.md"))
            .unwrap();
    let mut documented = Vec::new();
    for line in docs.lines() {
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        let title = heading.trim_start_matches('#').trim();
        if let Some(name) = title.strip_prefix('`').and_then(|t| t.strip_suffix('`')) {
            documented.push(name.to_string());
        }
    }
    let unique: BTreeSet<String> = documented.iter().cloned().collect();
    assert_eq!(
        unique.len(),
        documented.len(),
        "an event type is documented twice"
    );
    let in_code: BTreeSet<String> = EventType::ALL
        .iter()
        .map(|t| t.as_str().to_string())
        .collect();
    let undocumented: Vec<_> = in_code.difference(&unique).collect();
    let unknown: Vec<_> = unique.difference(&in_code).collect();
    assert!(
        undocumented.is_empty() && unknown.is_empty(),
        "docs/events.md is out of date: add a `#### `name`` section for {undocumented:?}; \
         remove or add to EventType the documented {unknown:?}"
    );
}

// ---------------------------------------------------------------------------------------
// Concurrent appends

const WRITER_ENV: &str = "THE_LOOP_TEST_EVENT_WRITER";
const LINES_PER_WRITER: u64 = 200;
/// Every 4th line is over 64 KiB: writes that large are where a non-atomic append
/// (a buffered writer, a `write_all` loop) would tear.
const BIG_EVERY: u64 = 4;

/// Deterministic content, so a torn or interleaved line cannot go unnoticed.
fn payload(writer: u64, seq: u64) -> String {
    let len = if seq % BIG_EVERY == 3 {
        64 * 1024 + (writer * 7919 + seq * 104_729) as usize % (96 * 1024)
    } else {
        (seq as usize * 37) % 300
    };
    let letter = (b'a' + ((writer * 7 + seq) % 26) as u8) as char;
    std::iter::repeat_n(letter, len).collect()
}

/// All writers start on the same signal (a file appearing), to maximise overlap.
fn write_lines(path: &Path, writer: u64) {
    let go = path.with_extension("go");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !go.exists() {
        assert!(std::time::Instant::now() < deadline, "no start signal");
        std::thread::sleep(Duration::from_millis(1));
    }
    let log = EventLog::open_path(path);
    for seq in 0..LINES_PER_WRITER {
        log.emit(
            Event::new(Source::Cli, EventType::DispatchQueued)
                .with("writer", writer)
                .with("seq", seq)
                .with("payload", payload(writer, seq)),
        )
        .unwrap();
    }
}

/// Not a test on its own: when re-executed by `concurrent_writers_never_interleave`
/// with `THE_LOOP_TEST_EVENT_WRITER=<id>:<path>`, this process is one of the writers.
#[test]
fn concurrent_writer_child() {
    let Ok(spec) = std::env::var(WRITER_ENV) else {
        return;
    };
    let (id, path) = spec.split_once(':').unwrap();
    write_lines(Path::new(path), id.parse().unwrap());
}

#[test]
fn concurrent_writers_never_interleave() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state/events.jsonl");
    let exe = std::env::current_exe().unwrap();
    let processes: Vec<Child> = (100..103u64)
        .map(|id| {
            std::process::Command::new(&exe)
                .args([
                    crate::support::test_name(module_path!(), "concurrent_writer_child").as_str(),
                    "--exact",
                    "--test-threads=1",
                ])
                .env(WRITER_ENV, format!("{id}:{}", path.display()))
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let threads: Vec<_> = (0..4u64)
        .map(|id| {
            let path = path.clone();
            std::thread::spawn(move || write_lines(&path, id))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(100)); // let the children start
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path.with_extension("go"), "").unwrap();
    for t in threads {
        t.join().unwrap();
    }
    for mut p in processes {
        assert!(p.wait().unwrap().success(), "a writer process failed");
    }

    let writers: Vec<u64> = vec![0, 1, 2, 3, 100, 101, 102];
    let mut reader = EventReader::open(&path, Filter::default()).unwrap();
    let mut next_seq: HashMap<u64, u64> = HashMap::new();
    let mut big = 0u64;
    for record in reader.by_ref() {
        let e = record.unwrap().event;
        let writer = e.fields["writer"].as_u64().unwrap();
        let seq = e.fields["seq"].as_u64().unwrap();
        let text = e.fields["payload"].as_str().unwrap();
        assert_eq!(
            text,
            payload(writer, seq),
            "writer {writer} line {seq} damaged"
        );
        big += u64::from(text.len() >= 64 * 1024);
        let expected = next_seq.entry(writer).or_default();
        assert_eq!(
            seq, *expected,
            "writer {writer}: lines out of order or missing"
        );
        *expected += 1;
    }
    let stats = reader.stats();
    assert_eq!(stats.skipped(), 0, "{stats:?}");
    assert_eq!(stats.lines, LINES_PER_WRITER * writers.len() as u64);
    for w in writers {
        assert_eq!(next_seq.get(&w), Some(&LINES_PER_WRITER), "writer {w}");
    }
    assert_eq!(big, LINES_PER_WRITER / BIG_EVERY * 7);
    let raw = std::fs::read(&path).unwrap();
    assert_eq!(raw.last(), Some(&b'\n'));
}

// ---------------------------------------------------------------------------------------
// `the-loop events`

struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("events.jsonl")
    }

    fn cmd(&self) -> Command {
        let mut cmd = Command::cargo_bin("the-loop").unwrap();
        cmd.env("THE_LOOP_HOME", self.dir.path())
            .env("THE_LOOP_CONFIG", self.dir.path().join("no-config.yaml"))
            .env_remove("GH_TOKEN")
            .env_remove("GITHUB_TOKEN")
            .env_remove("THE_LOOP_LOG")
            .env_remove("NO_COLOR");
        cmd
    }

    fn append(&self, text: &str) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log())
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }

    /// A small log with known timestamps, levels, types and work items; returns its lines.
    fn seed(&self) -> Vec<String> {
        let at = |ts: &str, t, level, seq: u64| {
            let mut e = Event::new(Source::Poll, t).level(level).with("seq", seq);
            e.ts = ts.into();
            e.pid = 77;
            e
        };
        let events = [
            at(
                "2026-03-01T09:59:59.000Z",
                EventType::PollCycle,
                Level::Debug,
                0,
            )
            .with("requests", 3)
            .with("not_modified", 3),
            at(
                "2026-03-01T10:00:00.000Z",
                EventType::RoutingDropped,
                Level::Info,
                1,
            )
            .with("reason", "unauthorized-actor")
            .with("actor", "mallory")
            .with("work_items", vec!["github:octo/repo#15"]),
            at(
                "2026-03-01T10:00:01.250Z",
                EventType::DispatchSucceeded,
                Level::Info,
                2,
            )
            .with("work_item", "github:octo/repo#15")
            .with("delivery_id", "poll-comment-9"),
            at(
                "2026-03-01T11:30:00.000Z",
                EventType::DispatchFailed,
                Level::Error,
                3,
            )
            .with("work_item", "github:octo/web#3")
            .with("error", "tmux did not answer"),
            at(
                "2026-03-02T08:00:00.000Z",
                EventType::SessionAwaitingInput,
                Level::Warning,
                4,
            )
            .with("work_item", "github:octo/repo#15")
            .with("question", "Per repo or global?"),
        ];
        let lines: Vec<String> = events.iter().map(Event::to_line).collect();
        self.append(&lines.iter().map(|l| format!("{l}\n")).collect::<String>());
        lines
    }

    fn json_seqs(&self, args: &[&str]) -> Vec<u64> {
        let out = self
            .cmd()
            .arg("events")
            .arg("--json")
            .args(args)
            .assert()
            .success();
        let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
        stdout
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["seq"]
                    .as_u64()
                    .unwrap()
            })
            .collect()
    }
}

#[test]
fn json_prints_the_matching_lines_as_written() {
    let home = Home::new();
    let lines = home.seed();
    home.append("this line is corrupt\n");
    let out = home.cmd().args(["events", "--json"]).assert().success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert_eq!(
        stdout,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>()
    );
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("skipped 1 corrupt line"), "{stderr}");
}

#[test]
fn human_output_is_one_readable_line_per_event() {
    let home = Home::new();
    home.seed();
    let out = home.cmd().arg("events").assert().success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 7, "{stdout}");
    assert_eq!(lines[0], "── 2026-03-01 (UTC) ──");
    assert_eq!(
        lines[2],
        "10:00:00.000 • routing.dropped            github:octo/repo#15      seq=1 reason=unauthorized-actor actor=mallory"
    );
    assert!(
        lines[4].starts_with("11:30:00.000 ✗ dispatch.failed"),
        "{}",
        lines[4]
    );
    assert!(
        lines[4].ends_with(r#"error="tmux did not answer""#),
        "{}",
        lines[4]
    );
    assert_eq!(lines[5], "── 2026-03-02 (UTC) ──");
    assert!(lines[6].starts_with("08:00:00.000 ▲ session.awaiting_input     github:octo/repo#15"));
}

#[test]
fn each_filter_selects_the_right_events() {
    let home = Home::new();
    home.seed();
    let cases: &[(&[&str], &[u64])] = &[
        (&[], &[0, 1, 2, 3, 4]),
        (&["--type", "dispatch.*"], &[2, 3]),
        (&["--type", "*.failed"], &[3]),
        (&["--type", "session.awaiting_input"], &[4]),
        (&["--work-item", "github:octo/repo#15"], &[1, 2, 4]),
        (&["--work-item", "github:OCTO/web#3"], &[3]),
        (&["--work-item", "github:octo/repo#99"], &[]),
        (&["--since", "2026-03-01T10:00:00Z"], &[1, 2, 3, 4]),
        (&["--since", "2026-03-01T11:00:01.250+01:00"], &[2, 3, 4]),
        (&["--since", "2026-03-02T00:00:00Z"], &[4]),
        (&["--level", "debug"], &[0, 1, 2, 3, 4]),
        (&["--level", "info"], &[1, 2, 3, 4]),
        (&["--level", "warning"], &[3, 4]),
        (&["--level", "error"], &[3]),
        (
            &[
                "--type",
                "dispatch.*",
                "--work-item",
                "github:octo/repo#15",
                "--level",
                "info",
            ],
            &[2],
        ),
    ];
    for (args, want) in cases {
        assert_eq!(
            &home.json_seqs(args),
            want,
            "the-loop events --json {args:?}"
        );
    }
}

#[test]
fn bad_arguments_exit_2_and_say_what_was_expected() {
    let home = Home::new();
    home.seed();
    let cases: &[(&[&str], &str)] = &[
        (&["--since", "yesterday"], "RFC 3339"),
        (
            &["--level", "loud"],
            "expected one of debug, info, warning, error",
        ),
        (
            &["--work-item", "octo/repo#15"],
            "expected `github:owner/repo#N`",
        ),
        (&["--type", "routing.[x"], "event-type pattern"),
    ];
    for (args, expected) in cases {
        let out = home.cmd().arg("events").args(*args).assert().code(2);
        let output = out.get_output();
        assert!(output.stdout.is_empty(), "{args:?}");
        let stderr = String::from_utf8(output.stderr.clone()).unwrap();
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

#[test]
fn a_missing_log_prints_nothing() {
    let home = Home::new();
    home.cmd().arg("events").assert().success().stdout("");
    home.cmd()
        .args(["events", "--json", "--type", "poll.*"])
        .assert()
        .success()
        .stdout("");
}

/// Kills the `--follow` child even when an assertion fails.
struct Reap(Child);

impl Drop for Reap {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn follow_prints_appended_events_and_waits_for_complete_lines() {
    let home = Home::new();
    home.seed();
    let bin = assert_cmd::cargo::cargo_bin("the-loop");
    let mut child = std::process::Command::new(bin);
    child
        .args([
            "events",
            "--follow",
            "--json",
            "--work-item",
            "github:octo/repo#15",
        ])
        .env("THE_LOOP_HOME", home.dir.path())
        .env("THE_LOOP_CONFIG", home.dir.path().join("no-config.yaml"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = Reap(child.spawn().unwrap());
    let stdout = child.0.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    let next_seq = || {
        let line = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("no line from --follow");
        serde_json::from_str::<serde_json::Value>(&line).unwrap()["seq"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(
        [next_seq(), next_seq(), next_seq()],
        [1, 2, 4],
        "history first"
    );

    let log = EventLog::open_path(home.log());
    let emit = |item: &str, seq: u64| {
        log.emit(
            Event::new(Source::Cli, EventType::SessionReset)
                .with("work_item", item)
                .with("seq", seq),
        )
        .unwrap();
    };
    emit("github:octo/web#3", 5); // filtered out
    emit("github:octo/repo#15", 6);
    assert_eq!(next_seq(), 6);

    let line = Event::new(Source::Cli, EventType::SessionReset)
        .with("work_item", "github:octo/repo#15")
        .with("seq", 7u64)
        .to_line();
    let (head, tail) = line.split_at(line.len() / 2);
    home.append(head);
    std::thread::sleep(Duration::from_millis(700));
    assert!(rx.try_recv().is_err(), "a partial line must not be printed");
    home.append(&format!("{tail}\n"));
    assert_eq!(next_seq(), 7);

    assert!(
        child.0.try_wait().unwrap().is_none(),
        "--follow keeps running"
    );
}

#[test]
fn the_log_file_gets_diagnostics_with_secrets_redacted() {
    let home = Home::new();
    let token = "ghp_integrationsecret0123456789";
    home.cmd()
        .env("GH_TOKEN", token)
        .args(["events", "--type", &format!("[{token}")])
        .assert()
        .code(2);
    let logs = home.dir.path().join("logs");
    let mut text = String::new();
    for entry in std::fs::read_dir(&logs).unwrap() {
        text += &std::fs::read_to_string(entry.unwrap().path()).unwrap();
    }
    assert!(
        text.contains("invalid --type glob"),
        "the error is logged: {text}"
    );
    assert!(
        text.contains("[redacted]") && !text.contains(token),
        "{text}"
    );
}

#[test]
fn help_and_completions_write_no_files() {
    let home = Home::new();
    home.cmd().arg("--help").assert().success();
    home.cmd().args(["completions", "bash"]).assert().success();
    assert_eq!(std::fs::read_dir(home.dir.path()).unwrap().count(), 0);
}
