//! `the-loop sessions list --json` (the real binary) over an event log of 150 MB — one
//! `session.spawned`, then ~900 000 `poll.cycle` lines, as a supervisor polling for weeks
//! writes — beside the same over an empty log (issue 42). What listing shows of the log
//! (critic spend, open questions) must not cost more as the log grows: the critics'
//! spend is a tally per work item, and the open questions' checkpoint is caught up by
//! a reader that rejects `poll.cycle` lines by their bytes. The lines each in-process
//! read parses are printed (`events::parsed_lines`).
//!
//! The log is written once into a temp dir (about a second); each case runs 10 samples.
//! The first listing over the big log (untimed) writes the open questions' checkpoint,
//! as the supervisor's refresh would have.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use the_loop::events::{Event, EventLog, EventType, Source, parsed_lines};
use the_loop::paths::StatePaths;
use the_loop::session::{Registry, SessionRecord};
use the_loop::usage::critics::{CriticSpend, CriticTally};
use the_loop::work_item::WorkItemRef;

const BIN: &str = env!("CARGO_BIN_EXE_the-loop");
const LOG_BYTES: u64 = 150_000_000;

struct World {
    dir: tempfile::TempDir,
    state: PathBuf,
}

impl World {
    /// A state root with one session (one critic round on it) and a log of about
    /// `log_bytes`.
    fn new(log_bytes: u64) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let paths = StatePaths::new(&state);
        let item = WorkItemRef::new("octo", "repo", 1);
        Registry::new(&paths, EventLog::open(&paths), Source::Cli)
            .put(&SessionRecord::new(&item, "claude", dir.path().into()))
            .unwrap();
        CriticTally::new(&paths)
            .add(
                &item,
                &the_loop::usage::today(),
                &CriticSpend::round(Some(100), Some(20), Some(0.0125)),
            )
            .unwrap();
        std::fs::write(dir.path().join("config.yaml"), "{}\n").unwrap();
        if log_bytes > 0 {
            write_log(&paths.events(), &item, log_bytes);
        }
        Self { dir, state }
    }

    fn list(&self) -> serde_json::Value {
        let out = Command::new(BIN)
            .args(["sessions", "list", "--json"])
            .env("THE_LOOP_HOME", &self.state)
            .env("THE_LOOP_CONFIG", self.dir.path().join("config.yaml"))
            .env("THE_LOOP_TMUX_SOCKET", self.dir.path().join("no-tmux"))
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

fn write_log(path: &Path, item: &WorkItemRef, bytes: u64) {
    let spawned = Event::new(Source::Dispatch, EventType::SessionSpawned)
        .with("work_item", item.to_string())
        .to_line();
    let cycle = Event::new(Source::Poll, EventType::PollCycle)
        .level(the_loop::events::Level::Debug)
        .with("repos", 3)
        .with("requests", 3)
        .with("not_modified", 3)
        .with("rate_remaining", 4993)
        .with("duration_ms", 412)
        .to_line();
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    writeln!(out, "{spawned}").unwrap();
    let mut written = spawned.len() as u64 + 1;
    while written < bytes {
        writeln!(out, "{cycle}").unwrap();
        written += cycle.len() as u64 + 1;
    }
    out.flush().unwrap();
}

fn bench_list(c: &mut Criterion) {
    let empty = World::new(0);
    let big = World::new(LOG_BYTES);
    let size = std::fs::metadata(big.state.join("events.jsonl"))
        .unwrap()
        .len();
    let first = big.list();
    assert_eq!(first[0]["critics"]["rounds"], 1, "{first}");

    let paths = StatePaths::new(&big.state);
    let before = parsed_lines();
    let open = the_loop::session::questions::OpenQuestions::load(&paths.events()).unwrap();
    let questions = parsed_lines() - before;
    let before = parsed_lines();
    let spend = CriticTally::new(&paths)
        .of(&WorkItemRef::new("octo", "repo", 1), None)
        .unwrap();
    println!(
        "sessions list: log of {:.1} MB; lines parsed in-process: open questions {questions} \
         ({} open), critic spend {} ({} round)",
        size as f64 / 1e6,
        open.len(),
        parsed_lines() - before,
        spend.map_or(0, |s| s.rounds)
    );

    let mut group = c.benchmark_group("sessions list --json");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("empty log", |b| b.iter(|| empty.list()));
    group.bench_function("150 MB log", |b| b.iter(|| big.list()));
    group.finish();
}

criterion_group!(benches, bench_list);
criterion_main!(benches);
