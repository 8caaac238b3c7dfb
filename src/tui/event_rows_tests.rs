use super::*;
use crate::events::Source;

fn ev(t: EventType) -> Event {
    let mut e = Event::new(Source::Poll, t);
    e.ts = "2026-01-31T12:01:07.000Z".into();
    e
}

#[test]
fn rows_say_what_happened_in_few_words() {
    let row = describe(
        &ev(EventType::DispatchSucceeded)
            .with("work_item", "github:octo/repo#15")
            .with("actor", "alice"),
        UtcOffset::UTC,
    );
    assert_eq!((row.time.as_str(), row.glyph), ("12:01:07", "✓"));
    assert_eq!(row.verb, "delivered");
    assert_eq!(row.item, Some(WorkItemRef::new("octo", "repo", 15)));
    assert_eq!(row.rest, "@alice");

    let row = describe(
        &ev(EventType::RoutingDropped)
            .with("reason", "unauthorized-actor")
            .with("actor", "mallory")
            .with("gh_event", "issue_comment")
            .with("work_items", vec!["github:octo/repo#15"]),
        UtcOffset::UTC,
    );
    assert_eq!(row.kind, RowKind::Dropped);
    assert_eq!(
        (row.verb.as_str(), row.rest.as_str()),
        ("unauthorized-actor", "@mallory issue_comment")
    );
    assert!(row.matches("mallory") && row.matches("#15") && row.matches("12:01"));
    assert!(!row.matches("alice"));
}

#[test]
fn a_routed_row_warns_of_hidden_text() {
    let routed = ev(EventType::RoutingRouted)
        .with("work_items", vec!["github:octo/repo#15"])
        .with("actor", "alice")
        .with("gh_event", "issue_comment")
        .with("outcome", "deliver");
    let row = describe(&routed.clone().with("hidden_removed", 43), UtcOffset::UTC);
    assert_eq!((row.glyph, row.verb.as_str()), ("→", "routed"));
    assert_eq!(
        row.rest,
        "⚠ hidden text removed (43) @alice issue_comment → deliver"
    );
    assert!(row.matches("hidden text"));
    let row = describe(&routed, UtcOffset::UTC);
    assert_eq!(row.rest, "@alice issue_comment → deliver");
}

#[test]
fn a_host_that_drops_says_why() {
    let gone = crate::supervisor::host_health::state_event(
        Source::Tui,
        "gpu",
        &crate::ssh::HostState::Unreachable {
            reason: "host `gpu`: cannot connect (Connection refused)".into(),
        },
    );
    let row = describe(&gone, UtcOffset::UTC);
    assert_eq!((row.glyph, row.kind), ("⌁", RowKind::Failed));
    assert_eq!(row.verb, "host gpu unreachable");
    assert_eq!(row.rest, "host `gpu`: cannot connect (Connection refused)");
    let back = crate::supervisor::host_health::state_event(
        Source::Tui,
        "gpu",
        &crate::ssh::HostState::Up {
            rtt: std::time::Duration::from_millis(12),
        },
    );
    let row = describe(&back, UtcOffset::UTC);
    assert_eq!(
        (row.verb.as_str(), row.rest.as_str()),
        ("host gpu up", "12 ms")
    );
}

#[test]
fn every_event_type_has_a_row() {
    for t in EventType::ALL {
        let row = describe(&ev(*t), UtcOffset::UTC);
        assert!(
            !row.verb.is_empty() || *t == EventType::RoutingDropped,
            "{t}"
        );
    }
}

#[test]
fn text_from_outside_cannot_reach_the_terminal() {
    let row = describe(
        &ev(EventType::SessionAwaitingInput)
            .with("work_item", "github:octo/repo#18")
            .with("question", "ok?\u{1b}]52;c;ZXZpbA==\u{7}\nnext"),
        UtcOffset::UTC,
    );
    assert!(!row.rest.chars().any(char::is_control), "{:?}", row.rest);
}

#[test]
fn the_feed_is_bounded_and_filters() {
    let mut feed = Feed::default();
    for i in 0..FEED_CAPACITY + 10 {
        feed.push(EventRow::new(
            "00:00:00".into(),
            "·",
            RowKind::Other,
            format!("row {i}"),
            None,
            "",
        ));
    }
    assert_eq!(feed.len(), FEED_CAPACITY);
    assert_eq!(feed.added(), (FEED_CAPACITY + 10) as u64);
    assert_eq!(
        feed.newest_first("").next().unwrap().verb,
        format!("row {}", FEED_CAPACITY + 9)
    );
    assert_eq!(feed.count_matching("row 10"), 111); // row 10, 100-109, 1000-1099 (0-9 fell off)
}

#[test]
fn poll_cycles_and_debug_events_stay_out() {
    assert!(!shown(&ev(EventType::PollCycle)));
    assert!(!shown(&ev(EventType::DispatchQueued).level(Level::Debug)));
    assert!(shown(&ev(EventType::DispatchSucceeded)));
}
