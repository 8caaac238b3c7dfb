use super::*;
use crate::events::{Event, EventLog, EventType, Source, parsed_lines};

fn finished(item: &str, cost: Option<f64>, input: u64) -> Event {
    Event::new(Source::Critic, EventType::CriticFinished)
        .with("critic", "rev")
        .with("work_item", item)
        .with("ok", true)
        .with_opt("cost_usd", cost)
        .with("input_tokens", input)
        .with("output_tokens", 7)
}

#[test]
fn a_tally_missing_is_built_once_from_the_log_then_read_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let paths = StatePaths::new(dir.path());
    let log = EventLog::open(&paths);
    log.emit(finished("github:octo/repo#1", Some(0.25), 900))
        .unwrap();
    log.emit(finished("github:Octo/Repo#1", None, 100)).unwrap();
    log.emit(finished("github:octo/repo#2", Some(0.5), 10))
        .unwrap();
    for _ in 0..2_000 {
        log.emit(Event::new(Source::Poll, EventType::PollCycle))
            .unwrap();
    }
    let tally = CriticTally::new(&paths);
    let one = WorkItemRef::new("octo", "repo", 1);
    let before = parsed_lines();
    let spend = tally.of(&one, None).unwrap().unwrap();
    assert_eq!(
        parsed_lines() - before,
        3,
        "built from the log: its critic rounds parsed, nothing else"
    );
    assert_eq!(
        (
            spend.rounds,
            spend.input_tokens,
            spend.output_tokens,
            spend.rounds_without_cost
        ),
        (2, 1000, 14, 1),
        "both spellings of #1 are one item"
    );
    assert!((spend.cost_usd - 0.25).abs() < 1e-9);

    // A round added; the log is no longer read, however long it grows.
    let today = crate::usage::today();
    tally
        .add(
            &one,
            &today,
            &CriticSpend::round(Some(5), Some(6), Some(1.0)),
        )
        .unwrap();
    for _ in 0..2_000 {
        log.emit(Event::new(Source::Poll, EventType::PollCycle))
            .unwrap();
    }
    let before = parsed_lines();
    let spend = tally.of(&one, None).unwrap().unwrap();
    let all = tally.by_item(None).unwrap();
    assert_eq!(parsed_lines() - before, 0, "the tally is read, not the log");
    assert_eq!((spend.rounds, spend.input_tokens), (3, 1005));
    assert!((spend.cost_usd - 1.25).abs() < 1e-9);
    assert_eq!(all.len(), 2, "{all:?}");
    assert_eq!(all["github:octo/repo#2"].rounds, 1);
    assert_eq!(
        tally
            .of(&WorkItemRef::new("octo", "repo", 3), None)
            .unwrap(),
        None
    );

    // By day: only today's round is since today.
    let since_today = tally.of(&one, Some(&today)).unwrap().unwrap();
    assert!(since_today.rounds >= 1);
    assert_eq!(tally.of(&one, Some("9999-01-01")).unwrap(), None);
}

#[test]
fn a_round_added_to_a_state_without_a_tally_counts_once() {
    let dir = tempfile::tempdir().unwrap();
    let paths = StatePaths::new(dir.path());
    let tally = CriticTally::new(&paths);
    let item = WorkItemRef::new("octo", "repo", 9);
    // The round is added first, its event logged after (as `critic::run_round` does):
    // the tally built on the way holds the round once.
    tally
        .add(&item, "2026-12-04", &CriticSpend::round(None, None, None))
        .unwrap();
    EventLog::open(&paths)
        .emit(finished("github:octo/repo#9", None, 0))
        .unwrap();
    let spend = tally.of(&item, None).unwrap().unwrap();
    assert_eq!((spend.rounds, spend.rounds_without_cost), (1, 1));
    let mode = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    };
    let dir = paths.usage_dir().join("critics");
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&dir.join("github-octo-repo-9.json")), 0o600);
}
