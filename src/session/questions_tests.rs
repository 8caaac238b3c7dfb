use super::*;

fn at(ts: &str, event: Event) -> Event {
    Event {
        ts: ts.into(),
        ..event
    }
}

fn asked(ts: &str, item: &str, id: &str, text: &str) -> Event {
    at(
        ts,
        Event::new(Source::Cli, EventType::SessionAwaitingInput)
            .with("work_item", item)
            .with("question_id", id)
            .with("question", text)
            .with("comment_posted", true)
            .with("actor", "agent"),
    )
}

fn asked_from(ts: &str, item: &str, session: &str, id: &str) -> Event {
    let mut event = asked(ts, item, id, "from another item");
    event
        .fields
        .insert("session".into(), serde_json::Value::from(session));
    event
}

fn replied(ts: &str, item: &str) -> Event {
    at(
        ts,
        Event::new(Source::Cli, EventType::SessionReplySent)
            .with("work_item", item)
            .with("actor", "op"),
    )
}

fn dismissed(ts: &str, item: &str, id: Option<&str>) -> Event {
    at(
        ts,
        Event::new(Source::Tui, EventType::SessionQuestionDismissed)
            .with("work_item", item)
            .with_opt("question_id", id),
    )
}

fn ids(open: &OpenQuestions) -> Vec<&str> {
    open.list().iter().map(|q| q.id.as_str()).collect()
}

const A: &str = "github:octo/repo#15";
const B: &str = "github:octo/repo#18";
const PR: &str = "github:octo/repo#16";

#[test]
fn questions_stay_open_until_a_later_reply_for_their_item() {
    let cases: Vec<(&str, Vec<Event>, Vec<&str>)> = vec![
        ("nothing asked", vec![], vec![]),
        ("one asked", vec![asked("T1", A, "q1", "?")], vec!["q1"]),
        (
            "answered",
            vec![asked("T1", A, "q1", "?"), replied("T2", A)],
            vec![],
        ),
        (
            "a reply to another item leaves it open",
            vec![asked("T1", A, "q1", "?"), replied("T2", B)],
            vec!["q1"],
        ),
        (
            "an earlier reply does not answer a later question",
            vec![replied("T1", A), asked("T2", A, "q1", "?")],
            vec!["q1"],
        ),
        (
            "one reply closes every open question of the item",
            vec![
                asked("T1", A, "q1", "?"),
                asked("T2", A, "q2", "?"),
                asked("T3", B, "q3", "?"),
                replied("T4", A),
            ],
            vec!["q3"],
        ),
        (
            "refs compare like GitHub names: case-insensitively",
            vec![
                asked("T1", "github:Octo/Repo#15", "q1", "?"),
                replied("T2", A),
            ],
            vec![],
        ),
        (
            "a question the session owns closes with a reply to the session",
            vec![asked_from("T1", PR, A, "q1"), replied("T2", A)],
            vec![],
        ),
        (
            "and with a reply to its own item",
            vec![asked_from("T1", PR, A, "q1"), replied("T2", PR)],
            vec![],
        ),
        (
            "a reply to the session's item does not close another session's question",
            vec![asked_from("T1", PR, B, "q1"), replied("T2", A)],
            vec!["q1"],
        ),
        (
            "dismissed by id closes that one only",
            vec![
                asked("T1", A, "q1", "?"),
                asked("T2", A, "q2", "?"),
                dismissed("T3", A, Some("q1")),
            ],
            vec!["q2"],
        ),
        (
            "dismissed without an id closes the item's questions",
            vec![
                asked("T1", A, "q1", "?"),
                asked("T2", B, "q2", "?"),
                dismissed("T3", A, None),
            ],
            vec!["q2"],
        ),
        (
            "a bad ref neither opens nor closes",
            vec![
                asked("T1", "octo/repo#15", "q0", "?"),
                asked("T2", A, "q1", "?"),
                replied("T3", "nonsense"),
            ],
            vec!["q1"],
        ),
    ];
    for (name, events, open) in cases {
        let questions = OpenQuestions::from_events(&events);
        assert_eq!(ids(&questions), open, "{name}");
    }
}

#[test]
fn oldest_first_even_when_lines_arrive_out_of_order() {
    let events = [
        asked("2026-01-01T10:00:02.000Z", A, "second", "?"),
        asked("2026-01-01T10:00:01.000Z", B, "first", "?"),
        asked("2026-01-01T10:00:03.000Z", B, "third", "?"),
    ];
    assert_eq!(
        ids(&OpenQuestions::from_events(&events)),
        ["first", "second", "third"]
    );
}

#[test]
fn incremental_changes_report_what_opened_and_closed() {
    let mut open = OpenQuestions::new();
    let question = match open.observe(&asked("2026-01-01T10:00:00.000Z", A, "q1", "Per repo?")) {
        Change::Opened(q) => *q,
        other => panic!("{other:?}"),
    };
    assert_eq!(question.text, "Per repo?");
    assert!(question.comment_posted);
    assert_eq!(question.actor.as_deref(), Some("agent"));
    let unrelated = Event::new(Source::Dispatch, EventType::DispatchSucceeded).with("work_item", A);
    assert_eq!(open.observe(&unrelated), Change::Unchanged);
    assert_eq!(open.observe(&replied("T", B)), Change::Unchanged);
    assert!(open.awaiting(&A.parse().unwrap()));
    assert!(!open.awaiting(&B.parse().unwrap()));
    assert_eq!(
        open.observe(&replied("T", A)),
        Change::Closed(vec![question])
    );
    assert!(open.is_empty());
}

#[test]
fn the_owning_session_is_awaiting_too() {
    let open = OpenQuestions::from_events(&[asked_from("T1", PR, A, "q1")]);
    assert!(open.awaiting(&A.parse().unwrap()));
    assert!(open.awaiting(&PR.parse().unwrap()));
    assert!(!open.awaiting(&B.parse().unwrap()));
}

#[test]
fn age_counts_from_the_event_time() {
    let question = Question::from_event(&asked("2026-01-01T10:00:00.000Z", A, "q", "?")).unwrap();
    let now = crate::time::parse_ts("2026-01-01T10:03:05Z").unwrap();
    assert_eq!(question.age_seconds(now), 185);
    let before = crate::time::parse_ts("2026-01-01T09:00:00Z").unwrap();
    assert_eq!(question.age_seconds(before), 0);
}

#[test]
fn an_event_without_an_id_is_known_by_its_time() {
    let mut event = asked("2026-01-01T10:00:00.000Z", A, "x", "?");
    event.fields.remove("question_id");
    let question = Question::from_event(&event).unwrap();
    assert_eq!(question.id, "2026-01-01T10:00:00.000Z");
}

#[test]
fn load_reads_the_log_and_dismiss_closes() {
    let dir = tempfile::tempdir().unwrap();
    let log = EventLog::open_path(dir.path().join("events.jsonl"));
    assert!(
        OpenQuestions::load(log.path()).unwrap().is_empty(),
        "no file yet"
    );
    log.emit(asked(&crate::time::now_ts(), A, "q1", "Which cap?"))
        .unwrap();
    log.emit(asked(&crate::time::now_ts(), B, "q2", "Which name?"))
        .unwrap();
    std::fs::OpenOptions::new()
        .append(true)
        .open(log.path())
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"not json\n"))
        .unwrap();
    let open = OpenQuestions::load(log.path()).unwrap();
    assert_eq!(ids(&open), ["q1", "q2"]);

    dismiss(
        &log,
        Source::Tui,
        &A.parse().unwrap(),
        Some("q1"),
        Some("op"),
    )
    .unwrap();
    let open = OpenQuestions::load(log.path()).unwrap();
    assert_eq!(ids(&open), ["q2"]);
    let text = std::fs::read_to_string(log.path()).unwrap();
    let last = text.lines().last().unwrap();
    let event = crate::events::parse_line(last).unwrap();
    assert_eq!(event.event, EventType::SessionQuestionDismissed);
    assert_eq!(event.str_field("question_id"), Some("q1"));
    assert_eq!(event.str_field("actor"), Some("op"));
}

/// SPEC §15.5: the questions survive rotation, and loading them reads only what was
/// appended since the checkpoint.
#[test]
fn open_questions_survive_rotation_through_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    let log = EventLog::open_path(&path);
    log.emit(asked(
        "2026-12-01T10:00:00.000Z",
        "github:o/r#1",
        "q1",
        "Which way?",
    ))
    .unwrap();
    log.emit(asked(
        "2026-12-01T10:00:01.000Z",
        "github:o/r#2",
        "q2",
        "And here?",
    ))
    .unwrap();
    for n in 0..200 {
        log.emit(Event::new(Source::Poll, EventType::PollCycle).with("n", n))
            .unwrap();
    }
    OpenQuestions::refresh(&path);
    assert!(checkpoint_path(&path).exists());
    // Rotated out twice: the asks are in no kept file any more.
    crate::events::rotate::rotate(&path, 1).unwrap();
    log.emit(replied("2026-12-01T10:00:02.000Z", "github:o/r#2"))
        .unwrap();
    OpenQuestions::refresh(&path);
    crate::events::rotate::rotate(&path, 1).unwrap();
    log.emit(Event::new(Source::Poll, EventType::PollCycle))
        .unwrap();
    let open = OpenQuestions::load(&path).unwrap();
    assert_eq!(ids(&open), ["q1"]);
    let (_, end) = OpenQuestions::catch_up(&path, false).unwrap();
    assert_eq!(end, std::fs::metadata(&path).unwrap().len());
}

#[test]
fn observing_an_ask_twice_opens_one_question() {
    let mut open = OpenQuestions::new();
    let ask = asked(
        "2026-12-01T10:00:00.000Z",
        "github:o/r#1",
        "q1",
        "Which way?",
    );
    assert!(matches!(open.observe(&ask), Change::Opened(_)));
    assert_eq!(open.observe(&ask), Change::Unchanged);
    assert_eq!(open.len(), 1);
}
