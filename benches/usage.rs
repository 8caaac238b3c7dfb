//! Usage read from transcripts (SPEC §20.5):
//! - `the-loop usage --json` (the real binary) over 100 MB of transcripts, 20 sessions of
//!   5 MB: **cold** (no kept offsets: every byte read) and **warm** (offsets kept:
//!   nothing new, nothing read);
//! - keeping one session current while its transcript grows: a turn appended (an
//!   assistant line per content block, a tool result), then the refresh a turn end
//!   makes; the bytes it reads are printed from the session's own counter
//!   (`usage.lastReadBytes`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use the_loop::events::{EventLog, Source};
use the_loop::paths::StatePaths;
use the_loop::session::{Registry, SessionRecord};
use the_loop::work_item::WorkItemRef;

const BIN: &str = env!("CARGO_BIN_EXE_the-loop");
const SESSIONS: u64 = 20;
const PER_SESSION: usize = 5 << 20;

/// One turn as Claude Code writes it: three assistant lines of one response (thinking,
/// text, tool use) with the same usage, a tool result of ~1 KB.
fn turn(n: u64) -> String {
    let usage = format!(
        r#"{{"input_tokens":{},"cache_creation_input_tokens":300,"cache_read_input_tokens":9000,"output_tokens":{},"server_tool_use":{{"web_search_requests":0,"web_fetch_requests":0}},"service_tier":"standard","cache_creation":{{"ephemeral_1h_input_tokens":100,"ephemeral_5m_input_tokens":200}},"inference_geo":"","iterations":[],"speed":"standard"}}"#,
        10 + n % 7,
        200 + n % 13
    );
    let block = |b: &str| {
        format!(
            r#"{{"parentUuid":"903a51c7-b70b-49d7-803a-ef3ce4b85b3c","isSidechain":false,"message":{{"id":"msg_{n:08}","type":"message","role":"assistant","model":"claude-opus-4-8","content":[{b}],"stop_reason":"tool_use","stop_sequence":null,"usage":{usage},"stop_details":null}},"requestId":"req_{n:08}","type":"assistant","uuid":"172e8a47-e48c-46fe-8f1a-80a1d892b726","timestamp":"2026-12-03T16:38:57.168Z","userType":"external","entrypoint":"cli","cwd":"/w","sessionId":"593b1a34","version":"2.1.197","gitBranch":"HEAD"}}"#
        )
    };
    let result = format!(
        r#"{{"parentUuid":"c019ad6c","isSidechain":false,"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"toolu_{n}","type":"tool_result","content":"{}"}}]}},"uuid":"903a51c7","timestamp":"2026-12-03T16:38:57.061Z","sessionId":"593b1a34","version":"2.1.197"}}"#,
        "x".repeat(1000)
    );
    [
        block(r#"{"type":"thinking","thinking":"Let me look at the file first.","signature":"c2ln"}"#),
        block(r#"{"type":"text","text":"Reading it now."}"#),
        block(r#"{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"/w/src/lib.rs"}}"#),
        result,
        String::new(),
    ]
    .join("\n")
}

fn transcript(path: &Path, bytes: usize) {
    let mut out = String::with_capacity(bytes + 8192);
    let mut n = 0;
    while out.len() < bytes {
        out.push_str(&turn(n));
        n += 1;
    }
    std::fs::write(path, out).unwrap();
}

struct World {
    _dir: tempfile::TempDir,
    state: PathBuf,
    transcripts: Vec<(WorkItemRef, PathBuf)>,
}

impl World {
    fn new(sessions: u64, per_session: usize) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let mut transcripts = Vec::new();
        for n in 1..=sessions {
            let path = dir.path().join(format!("s{n}.jsonl"));
            transcript(&path, per_session);
            transcripts.push((WorkItemRef::new("octo", "repo", n), path));
        }
        let world = Self {
            _dir: dir,
            state,
            transcripts,
        };
        world.forget();
        world
    }

    fn registry(&self) -> Registry {
        let paths = StatePaths::new(&self.state);
        Registry::new(&paths, EventLog::open(&paths), Source::Cli)
    }

    /// Every session's record afresh: no kept offsets.
    fn forget(&self) {
        let registry = self.registry();
        for (item, path) in &self.transcripts {
            let mut record = SessionRecord::new(item, "claude", "/w".into());
            record
                .usage
                .follow(path.clone(), the_loop::usage::reader::Format::Claude);
            registry.put(&record).unwrap();
        }
    }

    fn usage(&self) -> serde_json::Value {
        let out = Command::new(BIN)
            .args(["usage", "--json"])
            .env("THE_LOOP_HOME", &self.state)
            .env("THE_LOOP_CONFIG", self.state.join("none.yaml"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

fn bench_usage(c: &mut Criterion) {
    let world = World::new(SESSIONS, PER_SESSION);
    let total: u64 = world
        .transcripts
        .iter()
        .map(|(_, p)| std::fs::metadata(p).unwrap().len())
        .sum();
    std::fs::write(world.state.join("none.yaml"), "{}\n").unwrap();
    let cold = world.usage();
    assert_eq!(cold["bytesRead"].as_u64().unwrap(), total);
    println!(
        "usage: {} sessions, {:.1} MB of transcripts; cold read {} bytes, warm read {} bytes",
        SESSIONS,
        total as f64 / 1e6,
        cold["bytesRead"],
        world.usage()["bytesRead"]
    );
    let mut group = c.benchmark_group("usage");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.bench_function("cold 100 MB", |b| {
        b.iter_batched(
            || world.forget(),
            |()| world.usage(),
            BatchSize::PerIteration,
        )
    });
    group.bench_function("warm 100 MB", |b| b.iter(|| world.usage()));
    group.finish();

    // One session kept current as its transcript grows.
    let one = World::new(1, PER_SESSION);
    let (item, path) = one.transcripts[0].clone();
    let registry = one.registry();
    the_loop::session::usage::refresh(&registry, &item, None).unwrap();
    let mut n = 1_000_000;
    let mut group = c.benchmark_group("usage refresh");
    group.sample_size(50);
    group.bench_function("one turn appended to a 5 MB transcript", |b| {
        b.iter(|| {
            n += 1;
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap();
            f.write_all(turn(n).as_bytes()).unwrap();
            the_loop::session::usage::refresh(&registry, &item, None).unwrap()
        })
    });
    group.finish();
    let record = registry.get(&item).unwrap().unwrap();
    println!(
        "usage refresh: {} bytes read in the last refresh (one turn: {} bytes appended); {} refreshes, {} bytes in all",
        record.usage.last_read_bytes,
        turn(n).len(),
        record.usage.refreshes,
        record.usage.bytes_read
    );
}

criterion_group!(benches, bench_usage);
criterion_main!(benches);
