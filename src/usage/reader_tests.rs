use super::*;
use crate::usage::line::tests::{TEXT, TOOL_RESULT, assistant, usage};
use std::io::Write;

const MODEL: &str = "claude-opus-4-8";

fn append(path: &Path, text: &str) {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

fn read(cursor: &mut Cursor) -> ReadStats {
    cursor.read_new("2026-12-01", UtcOffset::UTC).unwrap()
}

fn total(cursor: &Cursor) -> Tokens {
    cursor.tally.tokens()
}

/// One response written as Claude Code writes it: a line per content block, each with
/// the same id, request id and usage, a tool result in between.
fn response(id: &str, u: &str) -> String {
    let thinking = r#"{"type":"thinking","thinking":"Let me look.","signature":"sig"}"#;
    let tool =
        r#"{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"/tmp/p/x"}}"#;
    [
        assistant(id, &format!("req_{id}"), MODEL, u, thinking),
        assistant(id, &format!("req_{id}"), MODEL, u, TEXT),
        assistant(id, &format!("req_{id}"), MODEL, u, tool),
        TOOL_RESULT.to_string(),
        String::new(),
    ]
    .join("\n")
}

fn t(input: u64, output: u64, w5m: u64, w1h: u64, read: u64) -> Tokens {
    Tokens {
        input,
        output,
        cache_write5m: w5m,
        cache_write1h: w1h,
        cache_read: read,
    }
}

#[test]
fn each_response_counts_once_and_synthetic_lines_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    append(&path, r#"{"type":"ai-title","aiTitle":"Test session"}"#);
    append(&path, "\n");
    append(&path, &response("msg_1", &usage(10, 5, 300, 0, 0)));
    append(&path, &response("msg_2", &usage(3, 7, 0, 4000, 310)));
    let synthetic = assistant(
        "msg_s",
        "",
        crate::usage::line::SYNTHETIC,
        &usage(99, 99, 0, 0, 0),
        TEXT,
    );
    append(&path, &format!("{synthetic}\n"));
    let mut cursor = Cursor::new(path.clone(), Format::Claude);
    let stats = read(&mut cursor);
    assert_eq!(stats.lines, 10);
    assert_eq!(stats.bytes, std::fs::metadata(&path).unwrap().len());
    assert_eq!(total(&cursor), t(13, 12, 300, 4000, 310));
    assert_eq!(cursor.tally.by_model().keys().collect::<Vec<_>>(), [MODEL]);
    assert_eq!(cursor.tally.0.keys().collect::<Vec<_>>(), ["2026-12-03"]);
    // Nothing new, nothing read.
    assert_eq!(read(&mut cursor), ReadStats::default());
}

#[test]
fn a_half_written_last_line_waits_and_only_new_bytes_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    append(&path, &response("msg_1", &usage(10, 5, 0, 0, 0)));
    let line = assistant("msg_2", "req_2", MODEL, &usage(1, 2, 0, 0, 0), TEXT);
    let (head, tail) = line.split_at(line.len() / 2);
    append(&path, head);
    let mut cursor = Cursor::new(path.clone(), Format::Claude);
    read(&mut cursor);
    assert_eq!(total(&cursor), t(10, 5, 0, 0, 0));
    let offset = cursor.offset;
    append(&path, tail);
    append(&path, "\n");
    let stats = read(&mut cursor);
    assert_eq!(total(&cursor), t(11, 7, 0, 0, 0));
    // The second read started at the half line, not at 0.
    assert_eq!(stats.bytes, line.len() as u64 + 1);
    assert_eq!(cursor.offset, offset + line.len() as u64 + 1);
}

#[test]
fn a_later_line_of_a_response_adds_only_what_it_reports_beyond_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    append(
        &path,
        &format!(
            "{}\n{}\n{}\n",
            assistant("msg_1", "req_1", MODEL, &usage(10, 1, 0, 0, 0), TEXT),
            assistant("msg_1", "req_1", MODEL, &usage(10, 40, 0, 0, 0), TEXT),
            // The same message id from another request is another response.
            assistant("msg_1", "req_2", MODEL, &usage(10, 40, 0, 0, 0), TEXT),
        ),
    );
    let mut cursor = Cursor::new(path, Format::Claude);
    read(&mut cursor);
    assert_eq!(total(&cursor), t(20, 80, 0, 0, 0));
}

#[test]
fn an_over_long_line_is_skipped_and_counted_even_across_reads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    append(&path, &response("msg_1", &usage(10, 5, 0, 0, 0)));
    let huge = format!(
        r#"{{"type":"user","message":{{"content":"{}"}}}}"#,
        "A".repeat(MAX_LINE + 10)
    );
    // Half of it now: bigger than the cap, no newline yet.
    let (head, tail) = huge.split_at(MAX_LINE + 5);
    append(&path, head);
    let mut cursor = Cursor::new(path.clone(), Format::Claude);
    let first = read(&mut cursor);
    assert_eq!(first.skipped, 1);
    assert!(cursor.skipping);
    append(&path, tail);
    append(&path, "\n");
    append(&path, &response("msg_2", &usage(1, 1, 0, 0, 0)));
    let second = read(&mut cursor);
    assert_eq!(second.skipped, 0, "the same long line is not counted twice");
    assert!(!cursor.skipping);
    assert_eq!(cursor.skipped, 1);
    assert_eq!(total(&cursor), t(11, 6, 0, 0, 0));
    assert_eq!(cursor.offset, std::fs::metadata(&path).unwrap().len());
}

#[test]
fn a_truncated_or_replaced_file_is_recounted_from_zero_never_twice() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    append(&path, &response("msg_1", &usage(10, 5, 0, 0, 0)));
    append(&path, &response("msg_2", &usage(20, 5, 0, 0, 0)));
    let mut cursor = Cursor::new(path.clone(), Format::Claude);
    read(&mut cursor);
    assert_eq!(total(&cursor), t(30, 10, 0, 0, 0));

    // Truncated in place (same inode, shorter than the offset).
    std::fs::write(&path, response("msg_1", &usage(10, 5, 0, 0, 0))).unwrap();
    let stats = read(&mut cursor);
    assert!(stats.restarted);
    assert_eq!(total(&cursor), t(10, 5, 0, 0, 0));

    // Replaced by another file (a new inode), longer than the offset.
    let other = dir.path().join("other.jsonl");
    append(&other, &response("msg_7", &usage(1, 1, 0, 0, 0)));
    append(&other, &response("msg_8", &usage(2, 2, 0, 0, 0)));
    append(&other, &response("msg_9", &usage(3, 3, 0, 0, 0)));
    std::fs::rename(&other, &path).unwrap();
    let stats = read(&mut cursor);
    assert!(stats.restarted);
    assert_eq!(total(&cursor), t(6, 6, 0, 0, 0));
}

#[test]
fn only_a_regular_file_is_read_never_through_a_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret.jsonl");
    append(&secret, &response("msg_1", &usage(10, 5, 0, 0, 0)));
    let link = dir.path().join("s.jsonl");
    std::os::unix::fs::symlink(&secret, &link).unwrap();
    let mut cursor = Cursor::new(link, Format::Claude);
    assert!(cursor.read_new("2026-12-01", UtcOffset::UTC).is_err());
    assert!(cursor.tally.is_empty());
    let fifo = dir.path().join("f.jsonl");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let mut cursor = Cursor::new(fifo, Format::Claude);
    let err = cursor.read_new("2026-12-01", UtcOffset::UTC).unwrap_err();
    assert!(err.to_string().contains("not a regular file"), "{err}");
}
