//! Reader, filter, tail and follower tests (kept apart so `read.rs` stays readable).

use super::*;
use crate::events::{Event, EventLog, EventType, Follower, Source};
use std::fs::{self, OpenOptions};
use std::io::Write;

fn event(t: EventType, level: Level, ts: &str) -> Event {
    let mut e = Event::new(Source::Poll, t).level(level);
    e.ts = ts.to_string();
    e
}

fn append(path: &Path, bytes: &[u8]) {
    let mut f = OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .unwrap();
    f.write_all(bytes).unwrap();
}

fn line(e: &Event) -> String {
    format!("{}\n", e.to_line())
}

fn seqs(records: &[Record]) -> Vec<i64> {
    records
        .iter()
        .map(|r| r.event.fields["seq"].as_i64().unwrap())
        .collect()
}

/// (type, work item, since, level) → which of four sample events match.
type FilterCase<'a> = (
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
    [bool; 4],
);

#[test]
fn filters_match_as_documented() {
    let dropped = event(
        EventType::RoutingDropped,
        Level::Info,
        "2026-03-01T10:00:00.000Z",
    )
    .with(
        "work_items",
        vec!["github:Octo/Repo#15", "github:octo/repo#16"],
    );
    let failed = event(
        EventType::DispatchFailed,
        Level::Error,
        "2026-03-01T12:30:00.000Z",
    )
    .with("work_item", "github:octo/repo#16");
    let cycle = event(
        EventType::PollCycle,
        Level::Debug,
        "2026-02-28T23:59:59.999Z",
    );
    let enterprise = event(
        EventType::SessionSpawned,
        Level::Warning,
        "2026-03-02T00:00:00.000Z",
    )
    .with("work_item", "github:ghe.example.com/octo/repo#15");
    let all = [&dropped, &failed, &cycle, &enterprise];

    let table: &[FilterCase] = &[
        (None, None, None, None, [true, true, true, true]),
        (
            Some("routing.*"),
            None,
            None,
            None,
            [true, false, false, false],
        ),
        (
            Some("*.failed"),
            None,
            None,
            None,
            [false, true, false, false],
        ),
        (
            Some("*.spawn*"),
            None,
            None,
            None,
            [false, false, false, true],
        ),
        (
            Some("poll.cycle"),
            None,
            None,
            None,
            [false, false, true, false],
        ),
        (
            Some("dispatch.[fs]*"),
            None,
            None,
            None,
            [false, true, false, false],
        ),
        (
            None,
            Some("github:octo/repo#15"),
            None,
            None,
            [true, false, false, false],
        ),
        (
            None,
            Some("github:octo/repo#16"),
            None,
            None,
            [true, true, false, false],
        ),
        (
            None,
            Some("github:ghe.example.com/octo/repo#15"),
            None,
            None,
            [false, false, false, true],
        ),
        (
            None,
            Some("github:octo/other#15"),
            None,
            None,
            [false, false, false, false],
        ),
        (
            None,
            None,
            Some("2026-03-01T10:00:00Z"),
            None,
            [true, true, false, true],
        ),
        (
            None,
            None,
            Some("2026-03-01T11:00:00+01:00"),
            None,
            [true, true, false, true],
        ),
        (
            None,
            None,
            Some("2026-03-01T13:00:00+01:00"),
            None,
            [false, true, false, true],
        ),
        (None, None, None, Some("debug"), [true, true, true, true]),
        (None, None, None, Some("info"), [true, true, false, true]),
        (
            None,
            None,
            None,
            Some("warning"),
            [false, true, false, true],
        ),
        (None, None, None, Some("error"), [false, true, false, false]),
        (
            Some("*"),
            Some("github:octo/repo#16"),
            Some("2026-03-01T11:00:00Z"),
            Some("warn"),
            [false, true, false, false],
        ),
    ];
    for (glob, item, since, level, want) in table {
        let filter = Filter::parse(*glob, *item, *since, *level).unwrap();
        let got: Vec<bool> = all.iter().map(|e| filter.matches(e)).collect();
        assert_eq!(
            &got, want,
            "type={glob:?} item={item:?} since={since:?} level={level:?}"
        );
    }
    assert!(Filter::default().is_empty());
}

#[test]
fn bad_filter_arguments_say_what_was_expected() {
    let cases = [
        (
            Filter::parse(Some("routing.[x"), None, None, None),
            "event-type pattern",
        ),
        (
            Filter::parse(None, Some("octo/repo#1"), None, None),
            "expected `github:owner/repo#N`",
        ),
        (
            Filter::parse(None, None, Some("yesterday"), None),
            "RFC 3339",
        ),
        (
            Filter::parse(None, None, Some("2026-03-01"), None),
            "RFC 3339",
        ),
        (
            Filter::parse(None, None, None, Some("loud")),
            "debug, info, warning, error",
        ),
    ];
    for (result, expected) in cases {
        let msg = result.unwrap_err().to_string();
        assert!(msg.contains(expected), "{msg}");
    }
}

#[test]
fn reader_skips_and_counts_bad_lines_and_stops_before_a_partial_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    let good = |n: i64| line(&Event::new(Source::Cli, EventType::SessionReset).with("seq", n));
    let first = good(1);
    append(&path, first.as_bytes());
    append(&path, b"{\"truncated\":\n");
    append(&path, b"\n   \n");
    append(
        &path,
        good(2)
            .replace("session.reset", "session.teleported")
            .as_bytes(),
    );
    append(&path, b"\xff\xfe not utf-8\n");
    append(&path, good(3).replace('\n', "\r\n").as_bytes());
    let complete = fs::metadata(&path).unwrap().len();
    append(&path, good(4).trim_end().as_bytes()); // still being written

    let mut reader = EventReader::open(&path, Filter::default()).unwrap();
    let records: Vec<Record> = reader.by_ref().map(Result::unwrap).collect();
    assert_eq!(seqs(&records), [1, 3]);
    let stats = reader.stats();
    assert_eq!(
        (stats.lines, stats.matched, stats.corrupt, stats.unknown),
        (5, 2, 2, 1)
    );
    assert_eq!(reader.position(), complete);
    assert_eq!(records[0].line, first.trim_end());
}

#[test]
fn reader_of_a_missing_file_is_empty() {
    let dir = tempfile::tempdir().unwrap();
    let mut reader = EventReader::open(&dir.path().join("nope.jsonl"), Filter::default()).unwrap();
    assert!(reader.next().is_none());
    assert_eq!(reader.position(), 0);
}

/// A log mixing small lines, lines larger than the tail chunk and corrupt lines.
fn mixed_log(path: &Path) -> Vec<i64> {
    let log = EventLog::open_path(path);
    let mut written = Vec::new();
    for n in 0..400i64 {
        let t = if n % 3 == 0 {
            EventType::RoutingDropped
        } else {
            EventType::PollCycle
        };
        let mut e = Event::new(Source::Poll, t).with("seq", n);
        if n % 97 == 5 {
            e = e.with("blob", "b".repeat(150 * 1024));
        }
        log.emit(e).unwrap();
        if n % 50 == 7 {
            append(path, b"garbage line\n");
        }
        if t == EventType::RoutingDropped {
            written.push(n);
        }
    }
    written
}

#[test]
fn tail_returns_the_last_matches_oldest_first_across_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    let dropped = mixed_log(&path);
    let routing = Filter::parse(Some("routing.*"), None, None, None).unwrap();
    for n in [0, 1, 2, 10, 60, 133, 134, 1000] {
        let tail = tail(&path, n, &routing).unwrap();
        let want = &dropped[dropped.len().saturating_sub(n)..];
        assert_eq!(seqs(&tail.records), want, "n={n}");
        assert_eq!(tail.end, fs::metadata(&path).unwrap().len());
    }
    let everything = tail(&path, usize::MAX, &Filter::default()).unwrap();
    assert_eq!(seqs(&everything.records), (0..400).collect::<Vec<_>>());
    assert_eq!(everything.stats.corrupt, 8);
    // A short tail reads only the end of the file.
    let few = tail(&path, 3, &Filter::default()).unwrap();
    assert!(few.stats.lines < 20, "{:?}", few.stats);
}

#[test]
fn tail_ignores_a_partial_last_line_and_missing_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    assert!(
        tail(&path, 5, &Filter::default())
            .unwrap()
            .records
            .is_empty()
    );
    let e = |n: i64| Event::new(Source::Cli, EventType::SessionReset).with("seq", n);
    append(&path, line(&e(1)).as_bytes());
    append(&path, line(&e(2)).as_bytes());
    let end = fs::metadata(&path).unwrap().len();
    append(&path, e(3).to_line().as_bytes());
    let t = tail(&path, 5, &Filter::default()).unwrap();
    assert_eq!(seqs(&t.records), [1, 2]);
    assert_eq!(t.end, end);
}

#[test]
fn follower_sees_appends_and_waits_for_partial_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    let e = |n: i64| Event::new(Source::Cli, EventType::SessionReset).with("seq", n);
    let mut follower = Follower::from_end(&path, Filter::default()).unwrap();
    assert!(
        follower.poll().unwrap().is_empty(),
        "missing file: nothing yet"
    );

    append(&path, line(&e(1)).as_bytes());
    append(&path, line(&e(2)).as_bytes());
    assert_eq!(seqs(&follower.poll().unwrap()), [1, 2]);
    assert!(follower.poll().unwrap().is_empty());

    let third = line(&e(3));
    let (head, rest) = third.split_at(20);
    append(&path, head.as_bytes());
    assert!(follower.poll().unwrap().is_empty(), "a partial line waits");
    append(&path, rest.as_bytes());
    append(&path, b"not json\n");
    assert_eq!(seqs(&follower.poll().unwrap()), [3]);
    assert_eq!(follower.stats().corrupt, 1);

    // Starting from the end skips history.
    let mut late = Follower::from_end(&path, Filter::default()).unwrap();
    append(&path, line(&e(4)).as_bytes());
    assert_eq!(seqs(&late.poll().unwrap()), [4]);
}

#[test]
fn follower_survives_truncation_replacement_and_rewrites() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    let e = |n: i64| Event::new(Source::Cli, EventType::SessionReset).with("seq", n);
    append(&path, line(&e(1)).as_bytes());
    append(&path, line(&e(2)).as_bytes());
    let mut follower = Follower::from_offset(&path, 0, Filter::default());
    assert_eq!(seqs(&follower.poll().unwrap()), [1, 2]);

    // Truncated and restarted: shorter than our offset.
    fs::write(&path, line(&e(10))).unwrap();
    assert_eq!(seqs(&follower.poll().unwrap()), [10]);

    // Replaced by a new file (rotation): a different inode, even if longer.
    let fresh = dir.path().join("fresh.jsonl");
    let big = format!("{}{}{}", line(&e(20)), line(&e(21)), line(&e(22)));
    fs::write(&fresh, &big).unwrap();
    fs::rename(&fresh, &path).unwrap();
    assert_eq!(seqs(&follower.poll().unwrap()), [20, 21, 22]);

    // Truncated in place and refilled past our offset between two polls: the byte
    // before our offset is no longer a newline.
    let padded = e(30).with("pad", "p".repeat(big.len()));
    fs::write(&path, line(&padded)).unwrap();
    assert_eq!(seqs(&follower.poll().unwrap()), [30]);
    assert_eq!(follower.restarts(), 3);

    // Deleted: nothing, then picked up again when recreated.
    fs::remove_file(&path).unwrap();
    assert!(follower.poll().unwrap().is_empty());
    append(&path, line(&e(40)).as_bytes());
    assert_eq!(seqs(&follower.poll().unwrap()), [40]);
}

#[test]
fn follower_filters_and_continues_from_a_reader() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    let log = EventLog::open_path(&path);
    let emit = |t, n: i64| {
        log.emit(Event::new(Source::Dispatch, t).with("seq", n))
            .unwrap()
    };
    emit(EventType::DispatchFailed, 1);
    emit(EventType::DispatchSucceeded, 2);
    let filter = Filter::parse(Some("*.failed"), None, None, None).unwrap();
    let mut reader = EventReader::open(&path, filter.clone()).unwrap();
    assert_eq!(
        seqs(&reader.by_ref().map(Result::unwrap).collect::<Vec<_>>()),
        [1]
    );
    let mut follower = Follower::from_offset(&path, reader.position(), filter);
    emit(EventType::DispatchSucceeded, 3);
    emit(EventType::DispatchFailed, 4);
    assert_eq!(seqs(&follower.poll().unwrap()), [4]);
}

#[test]
fn the_supervisors_log_rotates_at_its_bound_and_a_follower_finishes_the_old_file() {
    use crate::events::rotate::{Rotation, rotated};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    let log = EventLog::open_path(&path);
    let refreshed = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = refreshed.clone();
    log.set_rotation(
        Some(Rotation {
            max_bytes: 2_000,
            keep_files: 2,
        }),
        Some(std::sync::Arc::new(move |_: &Path| {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        })),
    );
    let e = |n: i64| Event::new(Source::Cli, EventType::SessionReset).with("seq", n);
    let mut follower = Follower::from_offset(&path, 0, Filter::default());
    let mut seen = Vec::new();
    for n in 0..100 {
        log.emit(e(n)).unwrap();
        if n % 7 == 0 {
            seen.extend(seqs(&follower.poll().unwrap()));
        }
    }
    seen.extend(seqs(&follower.poll().unwrap()));
    assert_eq!(
        seen,
        (0..100).collect::<Vec<_>>(),
        "every line once, in order"
    );
    assert!(follower.rotations() >= 2, "{}", follower.rotations());
    assert!(fs::metadata(&path).unwrap().len() < 2_000);
    assert!(rotated(&path, 2).exists() && !rotated(&path, 3).exists());
    // Kept files, oldest first, then the current one: the newest history in order.
    let kept: Vec<i64> = crate::events::rotate::retained(&path)
        .iter()
        .flat_map(|p| {
            EventReader::open(p, Filter::default())
                .unwrap()
                .map(|r| r.unwrap().event.fields["seq"].as_i64().unwrap())
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(kept.windows(2).all(|w| w[1] == w[0] + 1), "{kept:?}");
    assert_eq!(kept.last(), Some(&99));
    // The last lines, across the rotation.
    let tail = tail_retained(&path, 40, &Filter::default()).unwrap();
    assert_eq!(seqs(&tail.records), (60..100).collect::<Vec<_>>());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while refreshed.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the checkpoint refresh never ran"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn a_log_without_a_bound_never_rotates_and_an_oversized_one_rotates_at_start() {
    use crate::events::rotate::{Rotation, rotated};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    let log = EventLog::open_path(&path);
    for n in 0..50 {
        log.emit(Event::new(Source::Cli, EventType::SessionReset).with("n", n))
            .unwrap();
    }
    assert!(!log.rotate_if_oversized().unwrap(), "no bound set");
    assert!(!rotated(&path, 1).exists());
    log.set_rotation(
        Some(Rotation {
            max_bytes: 1_000,
            keep_files: 4,
        }),
        None,
    );
    assert!(log.rotate_if_oversized().unwrap());
    assert!(rotated(&path, 1).exists() && !path.exists());
}

#[test]
fn a_type_filter_rejects_other_lines_before_parsing_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    let mut text = String::new();
    let finished = event(
        EventType::CriticFinished,
        Level::Info,
        "2026-03-01T10:00:00.000Z",
    );
    text.push_str(&line(&finished.clone().with("seq", 0)));
    for n in 1..=500 {
        text.push_str(&line(
            &event(
                EventType::PollCycle,
                Level::Debug,
                "2026-03-01T10:00:01.000Z",
            )
            .with("seq", n),
        ));
    }
    // A value that merely mentions the name still parses (and does not match); so does
    // a line whose name could be written with escapes.
    text.push_str(&line(
        &event(
            EventType::SessionReset,
            Level::Info,
            "2026-03-01T10:00:02.000Z",
        )
        .with("seq", 501)
        .with("note", "critic.finished"),
    ));
    text.push_str(
        &line(&finished.clone().with("seq", 502))
            .replace("critic.finished", r"critic\u002efinished"),
    );
    text.push_str(&line(&finished.with("seq", 503)));
    fs::write(&path, text).unwrap();

    let cases = [
        ("critic.finished", vec![0, 502, 503]),
        ("critic.*", vec![0, 502, 503]),
        ("*.finished", vec![0, 502, 503]),
        ("crit?c.finished", vec![0, 502, 503]),
        ("session.rese[st]", vec![501]),
    ];
    for (glob, expected) in cases {
        let filter = Filter::parse(Some(glob), None, None, None).unwrap();
        let before = parsed_lines();
        let all = tail(&path, 1_000, &filter).unwrap();
        assert_eq!(seqs(&all.records), expected, "{glob}");
        assert!(
            parsed_lines() - before <= 4,
            "{glob}: parsed {} lines of 504, 500 of them poll.cycle",
            parsed_lines() - before
        );
        let read: Vec<Record> = EventReader::open(&path, filter)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(seqs(&read), expected, "{glob}");
    }
    // Without a type, every line is parsed.
    let before = parsed_lines();
    let all = tail(&path, 1_000, &Filter::default()).unwrap();
    assert_eq!(all.records.len(), 504);
    assert_eq!(parsed_lines() - before, 504);
}
