//! Codex rollout lines in the shape codex 0.171.0 writes them (recorded against the
//! tests' fake of the Responses API), read as the reader reads them, and the rollout
//! found and refused as the hook finds it.

use super::*;
use crate::usage::reader::{Cursor, Format};
use std::io::Write;
use time::macros::datetime;

const THREAD: &str = "01a23d29-529b-73f3-9002-bfbaf9aebad0";

pub fn meta(cwd: &str) -> String {
    serde_json::json!({"timestamp": "2026-12-03T18:27:28.053Z", "type": "session_meta",
        "payload": {"id": THREAD, "timestamp": "2026-12-03T18:27:28.053Z", "cwd": cwd,
            "originator": "codex-tui", "cli_version": "0.171.0", "source": "vscode",
            "model_provider": "fake", "base_instructions": {"text": "You are Codex…"}}})
    .to_string()
}

pub fn turn_context(model: &str) -> String {
    serde_json::json!({"timestamp": "2026-12-03T18:27:28.236Z", "ordinal": 5,
        "type": "turn_context", "payload": {"turn_id": "01a23d29-52f2", "cwd": "/w",
            "approval_policy": "never", "model": model,
            "collaboration_mode": {"mode": "default", "settings": {"model": model}}}})
    .to_string()
}

/// A `token_count` line: running total `(input, cached, output)`, and the last
/// request's.
pub fn token_count(total: (u64, u64, u64), last: (u64, u64, u64)) -> String {
    let usage = |(input, cached, output): (u64, u64, u64)| {
        serde_json::json!({"input_tokens": input, "cached_input_tokens": cached,
            "cache_write_input_tokens": 0, "output_tokens": output,
            "reasoning_output_tokens": 7, "total_tokens": input + output})
    };
    serde_json::json!({"timestamp": "2026-12-03T18:27:28.346Z", "ordinal": 12,
        "type": "event_msg", "payload": {"type": "token_count", "info": {
            "total_token_usage": usage(total), "last_token_usage": usage(last),
            "last_usage_includes_reasoning": false, "model_context_window": 258_400},
            "rate_limits": {"limit_id": "codex", "primary": null}}})
    .to_string()
}

fn no_info() -> String {
    serde_json::json!({"timestamp": "2026-12-03T18:27:28.200Z", "type": "event_msg",
        "payload": {"type": "token_count", "info": null, "rate_limits": null}})
    .to_string()
}

fn other_lines() -> Vec<String> {
    vec![
        serde_json::json!({"timestamp": "2026-12-03T18:27:28.159Z", "type": "event_msg",
            "payload": {"type": "task_started", "turn_id": "01a23d29-52f2",
                "model_context_window": 258_400}})
        .to_string(),
        serde_json::json!({"timestamp": "2026-12-03T18:27:28.341Z", "type": "response_item",
            "payload": {"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": "done 1"}]}})
        .to_string(),
    ]
}

fn tokens(input: u64, output: u64, cache_read: u64) -> Tokens {
    Tokens {
        input,
        output,
        cache_read,
        ..Tokens::default()
    }
}

#[test]
fn lines_say_a_model_or_a_running_total() {
    let utc = UtcOffset::UTC;
    assert_eq!(
        parse(turn_context("gpt-5-codex").as_bytes(), utc),
        Some(Line::Model("gpt-5-codex".into()))
    );
    // Input counts without its cached part; output as stated (reasoning is in it).
    assert_eq!(
        parse(
            token_count((1011, 100, 53), (1011, 100, 53)).as_bytes(),
            utc
        ),
        Some(Line::Counts {
            total: tokens(911, 53, 100),
            last: Some(tokens(911, 53, 100)),
            day: Some("2026-12-03".into()),
        })
    );
    assert_eq!(parse(no_info().as_bytes(), utc), None);
    assert_eq!(parse(meta("/w").as_bytes(), utc), None);
    for line in other_lines() {
        assert_eq!(parse(line.as_bytes(), utc), None);
    }
    assert_eq!(parse(b"{\"type\": \"event_msg\"", utc), None);
    // A write to the cache is part of the input, counted apart.
    let write = r#"{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":500,"cached_input_tokens":100,"cache_write_input_tokens":300,"output_tokens":9}}}}"#;
    let Some(Line::Counts { total, .. }) = parse(write.as_bytes(), utc) else {
        panic!("not counted")
    };
    assert_eq!(
        (total.input, total.cache_write5m, total.cache_read),
        (100, 300, 100)
    );
}

#[test]
fn a_total_counts_its_growth_and_a_restarted_total_its_last_request() {
    let before = tokens(900, 50, 100);
    assert_eq!(
        counted(&before, &tokens(1900, 80, 300), None),
        tokens(1000, 30, 200)
    );
    assert_eq!(counted(&before, &before, None), Tokens::default());
    let last = tokens(40, 4, 0);
    assert_eq!(counted(&before, &tokens(40, 4, 0), Some(&last)), last);
}

fn write_lines(path: &Path, lines: &[String]) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
}

#[test]
fn a_rollout_read_in_pieces_counts_each_request_once_under_its_model() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir
        .path()
        .join(format!("rollout-2026-12-03T18-27-28-{THREAD}.jsonl"));
    let mut first = vec![meta("/w"), turn_context("gpt-5-codex"), no_info()];
    first.extend(other_lines());
    first.push(token_count((1011, 100, 53), (1011, 100, 53)));
    // Codex may write the same total twice.
    first.push(token_count((1011, 100, 53), (1011, 100, 53)));
    write_lines(&path, &first);
    let mut cursor = Cursor::new(path.clone(), Format::Codex);
    let utc = UtcOffset::UTC;
    cursor.read_new("2026-12-03", utc).unwrap();
    let by_model = cursor.tally.by_model();
    assert_eq!(by_model["gpt-5-codex"], tokens(911, 53, 100));
    // A second turn on another model, its total line half written.
    let second = token_count((2033, 300, 110), (1022, 200, 57));
    let (head, tail) = second.split_at(40);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    writeln!(f, "{}", turn_context("gpt-5.1-codex-mini")).unwrap();
    write!(f, "{head}").unwrap();
    cursor.read_new("2026-12-03", utc).unwrap();
    assert!(!cursor.tally.by_model().contains_key("gpt-5.1-codex-mini"));
    writeln!(f, "{tail}").unwrap();
    cursor.read_new("2026-12-03", utc).unwrap();
    let by_model = cursor.tally.by_model();
    assert_eq!(by_model["gpt-5-codex"], tokens(911, 53, 100));
    assert_eq!(by_model["gpt-5.1-codex-mini"], tokens(822, 57, 200));
    assert_eq!(cursor.tally.tokens(), tokens(1733, 110, 300));
    // Replaced under the reader: counted again from the start, never twice.
    let replacement = dir.path().join("new.jsonl");
    write_lines(&replacement, &first);
    std::fs::rename(&replacement, &path).unwrap();
    let stats = cursor.read_new("2026-12-03", utc).unwrap();
    assert!(stats.restarted);
    assert_eq!(cursor.format, Format::Codex);
    assert_eq!(cursor.tally.tokens(), tokens(911, 53, 100));
}

/// `home/sessions/<day>/rollout-<time>-<id>.jsonl` with `lines`.
fn rollout_in(home: &Path, day: &str, id: &str, lines: &[String]) -> PathBuf {
    let dir = home.join("sessions").join(day);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("rollout-2026-12-03T18-27-28-{id}.jsonl"));
    write_lines(&path, lines);
    path
}

#[test]
fn a_threads_rollout_is_found_in_the_day_its_id_was_minted() {
    let home = tempfile::tempdir().unwrap();
    // The id was minted on 2026-12-03 (UTC); looked for a week later.
    let later = datetime!(2026-12-10 12:00 UTC);
    let path = rollout_in(home.path(), "2026/12/03", THREAD, &[meta("/w")]);
    assert_eq!(find_rollout(home.path(), THREAD, later), Some(path));
    // Another thread's rollout in the same directory is not it.
    let other = "01a23d29-c17f-7b93-932b-ec506398fbe5";
    assert_eq!(find_rollout(home.path(), other, later), None);
    // An id that is not a UUIDv7 is looked for today and yesterday only.
    let plain = "0b3c6d2e-0000-4000-8000-000000000001";
    let today = rollout_in(home.path(), "2026/12/10", plain, &[meta("/w")]);
    assert_eq!(find_rollout(home.path(), plain, later), Some(today));
    // Never a path: ids with anything but hex digits and dashes are not looked up.
    for bad in ["../../../etc/passwd", "*", "a b", &"f".repeat(65)] {
        assert_eq!(find_rollout(home.path(), bad, later), None, "{bad}");
    }
    // A symlink named like a rollout is not one.
    let target = home.path().join("elsewhere.jsonl");
    write_lines(&target, &[meta("/w")]);
    let linked = "01a23d29-0000-7000-8000-000000000000";
    let dir = home.path().join("sessions/2026/12/03");
    let link = dir.join(format!("rollout-2026-12-03T00-00-00-{linked}.jsonl"));
    std::os::unix::fs::symlink(&target, &link).unwrap();
    assert_eq!(find_rollout(home.path(), linked, later), None);
}

#[test]
fn only_a_rollout_under_the_home_of_a_session_in_its_directory_is_accepted() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("codex");
    let cwd = root.path().join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    let cwds = [cwd.clone()];
    let ours = rollout_in(
        &home,
        "2026/12/03",
        THREAD,
        &[meta(&cwd.display().to_string())],
    );
    assert_eq!(
        accept_rollout(&ours, &home, &cwds),
        Ok(ours.canonicalize().unwrap())
    );
    // Another directory's session.
    let other = "01a23d29-c17f-7b93-932b-ec506398fbe5";
    let theirs = rollout_in(&home, "2026/12/03", other, &[meta("/somewhere/else")]);
    assert!(matches!(
        accept_rollout(&theirs, &home, &cwds),
        Err(RolloutError::OtherCwd { .. })
    ));
    // No session_meta first.
    let bare = "01a23d29-0000-7000-8000-0000000000aa";
    let headless = rollout_in(&home, "2026/12/03", bare, &[turn_context("m")]);
    assert!(matches!(
        accept_rollout(&headless, &home, &cwds),
        Err(RolloutError::NoMeta(_))
    ));
    // Outside the home's sessions, even named like a rollout.
    let outside = root.path().join(format!("rollout-x-{THREAD}.jsonl"));
    write_lines(&outside, &[meta(&cwd.display().to_string())]);
    assert!(matches!(
        accept_rollout(&outside, &home, &cwds),
        Err(RolloutError::Outside { .. })
    ));
    // Through a symlinked directory that leads out.
    std::os::unix::fs::symlink(root.path(), home.join("sessions/out")).unwrap();
    let via = home.join("sessions/out").join(outside.file_name().unwrap());
    assert!(matches!(
        accept_rollout(&via, &home, &cwds),
        Err(RolloutError::Outside { .. })
    ));
    // Not a rollout at all.
    assert!(matches!(
        accept_rollout(&home.join("sessions/2026/12/03/x.jsonl"), &home, &cwds),
        Err(RolloutError::NotRollout(_))
    ));
}
