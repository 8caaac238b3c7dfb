use super::*;
use crate::session::hooks::state::Answer;

fn status(status: Status) -> Event {
    Event::Status {
        session: "ses_1".into(),
        status,
    }
}

fn asked(id: &str) -> Event {
    Event::PermissionAsked(Permission {
        id: id.into(),
        session: "ses_1".into(),
        permission: "bash".into(),
        patterns: vec!["touch ran.txt".into()],
        call: Some("call_1".into()),
    })
}

fn replied(id: &str, reply: Reply) -> Event {
    Event::PermissionReplied {
        session: "ses_1".into(),
        request: id.into(),
        reply: Some(reply),
    }
}

/// Runs `events` from nothing; the last report and every outcome.
fn run(events: &[Event]) -> (Option<Reported>, Vec<Outcome>) {
    let mut reported = None;
    let mut outcomes = Vec::new();
    for event in events {
        if let Some((next, out)) = step(reported.as_ref(), event, "2026-12-07T00:00:00Z") {
            reported = Some(next);
            outcomes.extend(out);
        }
    }
    (reported, outcomes)
}

#[test]
fn busy_then_idle_is_one_turn_that_ended() {
    let (reported, outcomes) = run(&[
        status(Status::Busy),
        status(Status::Busy),
        status(Status::Idle),
        status(Status::Idle),
    ]);
    let reported = reported.unwrap();
    assert_eq!(reported.state, ReportedState::Idle);
    assert_eq!(reported.harness, "opencode");
    assert_eq!(reported.prompts, 1);
    assert_eq!(outcomes, [Outcome::TurnEnded]);
}

#[test]
fn a_request_names_the_exact_pattern_and_stands_while_busy() {
    let (reported, outcomes) = run(&[status(Status::Busy), asked("per_1"), asked("per_1")]);
    let reported = reported.unwrap();
    assert_eq!(reported.state, ReportedState::AwaitingPermission);
    let request = reported.permission.unwrap();
    assert_eq!(
        (
            request.id.as_str(),
            request.tool.as_str(),
            request.summary.as_str()
        ),
        ("per_1", "bash", "touch ran.txt")
    );
    assert_eq!(outcomes.len(), 1, "{outcomes:?}");
    let (still, _) = run(&[status(Status::Busy), asked("per_1"), status(Status::Busy)]);
    assert_eq!(still.unwrap().state, ReportedState::AwaitingPermission);
}

#[test]
fn an_answer_in_the_tui_is_recorded_with_its_decision() {
    for (reply, decision) in [
        (Reply::Once, Decision::Approved),
        (Reply::Always, Decision::Approved),
        (Reply::Reject, Decision::Denied),
    ] {
        let (reported, outcomes) = run(&[
            status(Status::Busy),
            asked("per_1"),
            replied("per_1", reply),
        ]);
        assert_eq!(reported.unwrap().state, ReportedState::Working);
        assert!(
            matches!(&outcomes[1], Outcome::PermissionResolved { decision: d, actor: None, .. } if *d == decision),
            "{outcomes:?}"
        );
    }
}

#[test]
fn the_loops_own_answer_keeps_its_actor_and_another_reply_changes_nothing() {
    let (reported, _) = run(&[status(Status::Busy), asked("per_1")]);
    let mut reported = reported.unwrap();
    reported.permission.as_mut().unwrap().answering = Some(Answer {
        decision: Decision::Denied,
        actor: Some("alice".into()),
        source: None,
    });
    assert!(step(Some(&reported), &replied("per_9", Reply::Once), "t").is_none());
    let (_, out) = step(Some(&reported), &replied("per_1", Reply::Reject), "t").unwrap();
    assert!(
        matches!(&out[0], Outcome::PermissionResolved { decision: Decision::Denied, actor: Some(a), .. } if a == "alice"),
        "{out:?}"
    );
}

#[test]
fn a_request_still_open_when_the_session_goes_idle_went_away() {
    let (reported, outcomes) = run(&[status(Status::Busy), asked("per_1"), status(Status::Idle)]);
    assert_eq!(reported.unwrap().state, ReportedState::Idle);
    assert!(
        matches!(
            &outcomes[1],
            Outcome::PermissionResolved {
                decision: Decision::Elsewhere,
                ..
            }
        ),
        "{outcomes:?}"
    );
    assert_eq!(outcomes[2], Outcome::TurnEnded);
}
