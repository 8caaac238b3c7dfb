//! `the-loop hook claude`, stdin to exit, over the real binary (SPEC §17.2: it must exit
//! within 50 ms): a process started, one Claude payload written to its stdin, the
//! record moved under its lock, an event logged where one is due, the process gone.
//! Three payloads: `PreToolUse` (a state change, no event), `PermissionRequest` (a
//! state change and `session.permission_requested`), and an event the hook ignores.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;
use the_loop::events::{EventLog, Source};
use the_loop::paths::StatePaths;
use the_loop::session::{Registry, SessionRecord};
use the_loop::work_item::WorkItemRef;

const BIN: &str = env!("CARGO_BIN_EXE_the-loop");

fn run_hook(state: &std::path::Path, item: &str, payload: &[u8]) {
    let mut child = Command::new(BIN)
        .args(["hook", "claude"])
        .env("THE_LOOP_HOME", state)
        .env("THE_LOOP_WORK_ITEM", item)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(payload).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
}

fn bench_hook(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let paths = StatePaths::new(dir.path());
    let item = WorkItemRef::new("octo", "repo", 15);
    Registry::new(&paths, EventLog::open(&paths), Source::Cli)
        .put(&SessionRecord::new(
            &item,
            "claude",
            dir.path().to_path_buf(),
        ))
        .unwrap();
    let item = item.to_string();
    let base = r#""session_id":"0b3c","transcript_path":"/t.jsonl","cwd":"/w""#;
    let pre = format!(
        r#"{{{base},"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{{"command":"cargo test","description":"d"}},"tool_use_id":"toolu_1"}}"#
    );
    let ask = format!(
        r#"{{{base},"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{{"command":"cargo test","description":"d"}}}}"#
    );
    let stop = format!(r#"{{{base},"hook_event_name":"Stop","last_assistant_message":"ok"}}"#);
    let ignored = format!(r#"{{{base},"hook_event_name":"PreCompact"}}"#);

    let mut group = c.benchmark_group("hook");
    group.sample_size(30);
    group.measurement_time(Duration::from_secs(8));
    group.bench_function("PreToolUse", |b| {
        b.iter(|| run_hook(dir.path(), &item, pre.as_bytes()))
    });
    group.bench_function("PermissionRequest+Stop", |b| {
        b.iter(|| {
            run_hook(dir.path(), &item, ask.as_bytes());
            run_hook(dir.path(), &item, stop.as_bytes());
        })
    });
    group.bench_function("ignored event", |b| {
        b.iter(|| run_hook(dir.path(), &item, ignored.as_bytes()))
    });
    group.finish();
}

criterion_group!(benches, bench_hook);
criterion_main!(benches);
