//! Figures for `the-loop tui` as a process (run with the release binary; see
//! `e2e_tui::figures`): time to the first frame and to the first snapshot, peak memory
//! with many sessions and a long event log, CPU used while idle. They are printed, never
//! asserted: speed claims come from measurements, not from timed tests.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use super::tui_world::{Screen, TuiWorld};
use std::io::Write;
use std::time::{Duration, Instant};
use the_loop::events::{Event, EventType, Level, Source};

/// Appends `n` events shaped like a busy log (routings, deliveries, drops, poll cycles, a
/// question and its answer now and then) on `items` work items.
pub fn fill_log(world: &TuiWorld, n: usize, items: u64) {
    std::fs::create_dir_all(&world.home).unwrap();
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(world.home.join("events.jsonl"))
        .unwrap();
    let mut out = std::io::BufWriter::new(file);
    for i in 0..n {
        let item = format!("github:octo/repo#{}", 1 + (i as u64 % items));
        let event = match i % 10 {
            0 => Event::new(Source::Poll, EventType::PollCycle)
                .with("repos", 1)
                .with("requests", 3)
                .with("not_modified", 3)
                .with("rate_remaining", 4990),
            1 | 2 => Event::new(Source::Poll, EventType::RoutingRouted)
                .with("work_item", item)
                .with("gh_event", "issue_comment")
                .with("actor", "alice")
                .with("outcome", "deliver")
                .with("delivery_id", format!("poll-comment-{i}")),
            3 | 4 => Event::new(Source::Dispatch, EventType::DispatchSucceeded)
                .with("work_item", item)
                .with("actor", "alice")
                .with("delivery_id", format!("poll-comment-{i}")),
            5 => Event::new(Source::Poll, EventType::RoutingDropped)
                .level(Level::Info)
                .with("work_items", vec![item])
                .with("reason", "unauthorized-actor")
                .with("actor", "mallory"),
            6 if i % 1000 == 6 => Event::new(Source::Cli, EventType::SessionAwaitingInput)
                .with("work_item", item)
                .with(
                    "question",
                    format!("Question number {i}: per repo or global?"),
                ),
            7 if i % 1000 == 7 => Event::new(Source::Tui, EventType::SessionReplySent)
                .with(
                    "work_item",
                    format!("github:octo/repo#{}", 1 + ((i - 1) as u64 % items)),
                )
                .with("via", "tui"),
            _ => Event::new(Source::Dispatch, EventType::DispatchQueued)
                .level(Level::Debug)
                .with("work_item", item),
        };
        writeln!(out, "{}", event.to_line()).unwrap();
    }
    out.flush().unwrap();
}

/// How long until the screen first shows anything, and until it shows the first
/// snapshot (the status bar names the role).
pub async fn startup(screen: &Screen, started: Instant) -> (Duration, Duration) {
    let mut first = None;
    loop {
        let text = screen.text();
        if first.is_none() && text.contains(" the-loop") {
            first = Some(started.elapsed());
        }
        if text.contains("supervising") {
            return (
                first.unwrap_or_else(|| started.elapsed()),
                started.elapsed(),
            );
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the screen never loaded:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// `VmHWM` and `VmRSS` of a process, in KiB.
pub fn memory_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// User + system CPU time of a process so far, in clock ticks.
pub fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the `(comm)`, which may itself hold spaces.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 after comm.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

pub fn clock_ticks_per_second() -> u64 {
    let out = std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(100)
}
