use super::*;

fn look(dialog: bool, input: InputBox) -> Look {
    Look {
        dialog: dialog.then_some(Dialog::Permission),
        input,
    }
}

fn reported(state: ReportedState) -> Reported {
    Reported {
        harness: "claude".into(),
        state,
        at: "2026-12-03T10:00:00Z".into(),
        event: "Notification".into(),
        permission: None,
        last_tool: None,
        conversation: None,
        model: None,
        prompts: 0,
    }
}

#[test]
fn a_paste_waits_out_only_a_fresh_turn_end() {
    let at = crate::time::parse_ts("2026-12-03T10:00:00Z").unwrap();
    let settle = Duration::from_millis(500);
    let after = |ms: i64| at + time::Duration::milliseconds(ms);
    let idle = reported(ReportedState::Idle);
    assert_eq!(
        settling(&idle, settle, after(120)),
        Some(Duration::from_millis(380))
    );
    assert_eq!(settling(&idle, settle, after(500)), None);
    assert_eq!(settling(&idle, settle, after(9_000)), None);
    // A clock that went back waits the whole settle, no more.
    assert_eq!(settling(&idle, settle, after(-3_000)), Some(settle));
    for busy in [
        ReportedState::Working,
        ReportedState::AwaitingPermission,
        ReportedState::Exited,
    ] {
        assert_eq!(
            settling(&reported(busy), settle, after(10)),
            None,
            "{busy:?}"
        );
    }
    let garbled = Reported {
        at: "yesterday".into(),
        ..idle
    };
    assert_eq!(settling(&garbled, settle, after(10)), None);
}

#[test]
fn only_an_empty_drawn_box_without_a_dialog_takes_a_paste() {
    let idle = reported(ReportedState::Idle);
    let awaiting = reported(ReportedState::AwaitingPermission);
    let draft = || InputBox::Holds("half a thought".into());
    let cases: Vec<(Look, Option<&Reported>, Option<HoldReason>)> = vec![
        (look(false, InputBox::Empty), None, None),
        (look(false, InputBox::Empty), Some(&idle), None),
        (
            look(true, InputBox::Empty),
            Some(&idle),
            Some(HoldReason::PermissionDialog),
        ),
        (
            look(false, InputBox::Empty),
            Some(&awaiting),
            Some(HoldReason::PermissionDialog),
        ),
        (
            look(true, InputBox::NotDrawn),
            None,
            Some(HoldReason::PermissionDialog),
        ),
        (look(false, draft()), None, Some(HoldReason::OperatorDraft)),
        (
            look(true, draft()),
            None,
            Some(HoldReason::PermissionDialog),
        ),
        (
            look(false, InputBox::NotDrawn),
            Some(&idle),
            Some(HoldReason::NotReady),
        ),
        (
            Look {
                dialog: Some(Dialog::Other),
                input: InputBox::NotDrawn,
            },
            Some(&idle),
            Some(HoldReason::NotReady),
        ),
        (
            Look {
                dialog: Some(Dialog::Other),
                input: InputBox::Empty,
            },
            Some(&awaiting),
            Some(HoldReason::PermissionDialog),
        ),
    ];
    for (look, reported, want) in cases {
        assert_eq!(decide(&look, reported), want, "{look:?} {reported:?}");
    }
}

#[test]
fn the_summary_counts_events_and_replies_and_names_the_oldest_reason() {
    assert_eq!(Hold::default().summary(), None);
    let reply = |since: &str, reason| HeldReply {
        id: "r1".into(),
        text: "framed".into(),
        reply: "yes".into(),
        actor: "op".into(),
        via: "tui".into(),
        comment: true,
        reason,
        since: since.into(),
        over_budget: false,
        review: None,
    };
    let hold = Hold {
        events: Some(HeldEvents {
            reason: HoldReason::PermissionDialog,
            since: "2026-12-03T10:00:05Z".into(),
            waiting: 2,
        }),
        replies: vec![reply("2026-12-03T10:00:01Z", HoldReason::OperatorDraft)],
        unsubmitted: None,
        in_doubt: None,
        release_one: None,
        unread: None,
    };
    let summary = hold.summary().unwrap();
    assert_eq!(summary.count, 3);
    assert_eq!(summary.reason, HoldReason::OperatorDraft);
    assert_eq!(summary.since, "2026-12-03T10:00:01Z");
    assert_eq!(summary.label(), "⏸ 3 held: operator's draft");
    let json = serde_json::to_value(&summary).unwrap();
    assert_eq!(json["reason"], "operator-draft");
    assert_eq!(json["count"], 3);
}

#[test]
fn an_empty_hold_is_not_written() {
    let mut record = crate::session::registry::SessionRecord::new(
        &crate::work_item::WorkItemRef::new("o", "r", 1),
        "claude",
        "/tmp".into(),
    );
    let json = serde_json::to_value(&record).unwrap();
    assert!(json.get("hold").is_none(), "{json}");
    record.hold.unsubmitted = Some("d-1".into());
    let json = serde_json::to_value(&record).unwrap();
    assert_eq!(json["hold"]["unsubmitted"], "d-1");
    let back: crate::session::registry::SessionRecord = serde_json::from_value(json).unwrap();
    assert_eq!(back, record);
}
