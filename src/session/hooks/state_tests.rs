use super::*;
use serde_json::json;

const T: &str = "2026-12-01T10:00:00.000Z";

fn bash(id: &str, command: &str) -> Signal {
    Signal::ToolStarting(ToolCall {
        id: Some(id.into()),
        tool: "Bash".into(),
        summary: command.into(),
    })
}

fn asked(command: &str) -> Signal {
    Signal::PermissionAsked {
        tool: "Bash".into(),
        summary: command.into(),
    }
}

/// Feeds `signals` from nothing; returns the last report and every outcome.
fn run(signals: Vec<Signal>) -> (Reported, Vec<Outcome>) {
    let mut reported: Option<Reported> = None;
    let mut outcomes = Vec::new();
    for signal in signals {
        let (next, out) = apply(reported.as_ref(), "claude", "e", signal, T);
        reported = Some(next);
        outcomes.extend(out);
    }
    (reported.unwrap(), outcomes)
}

fn decisions(outcomes: &[Outcome]) -> Vec<Decision> {
    outcomes
        .iter()
        .filter_map(|o| match o {
            Outcome::PermissionResolved { decision, .. } => Some(*decision),
            _ => None,
        })
        .collect()
}

#[test]
fn a_tool_needing_permission_as_claude_reports_it() {
    // PreToolUse, PermissionRequest at once, the reminder later; approved in the pane:
    // PostToolUse, Stop.
    let (r, out) = run(vec![Signal::PromptSubmitted, bash("toolu_1", "ls")]);
    assert_eq!(r.state, ReportedState::Working);
    assert_eq!(r.prompts, 1);
    assert!(out.is_empty());

    let (r, out) = run(vec![
        Signal::PromptSubmitted,
        bash("toolu_1", "ls"),
        asked("ls"),
    ]);
    assert_eq!(r.state, ReportedState::AwaitingPermission);
    let [Outcome::PermissionRequested(request)] = out.as_slice() else {
        panic!("{out:?}")
    };
    assert_eq!(request.id, "toolu_1", "named by the tool call it is for");
    assert_eq!(
        (request.tool.as_str(), request.summary.as_str()),
        ("Bash", "ls")
    );

    let (r, out) = run(vec![
        bash("toolu_1", "ls"),
        asked("ls"),
        Signal::PermissionReminder {
            message: "Claude needs your permission".into(),
        },
        asked("ls"),
    ]);
    assert_eq!(r.state, ReportedState::AwaitingPermission);
    assert_eq!(out.len(), 1, "one request, however often it is reported");

    let (r, out) = run(vec![
        bash("toolu_1", "ls"),
        asked("ls"),
        Signal::ToolFinished {
            id: Some("toolu_1".into()),
        },
    ]);
    assert_eq!(r.state, ReportedState::Working);
    assert_eq!(r.permission, None);
    assert_eq!(decisions(&out), [Decision::Elsewhere]);

    let (r, out) = run(vec![
        bash("toolu_1", "ls"),
        asked("ls"),
        Signal::ToolFinished {
            id: Some("toolu_1".into()),
        },
        Signal::TurnEnded,
    ]);
    assert_eq!(r.state, ReportedState::Idle);
    assert_eq!(out.last(), Some(&Outcome::TurnEnded));
}

#[test]
fn an_answer_being_sent_resolves_the_request_with_its_decision() {
    let (mut r, _) = run(vec![bash("toolu_1", "ls"), asked("ls")]);
    r.permission.as_mut().unwrap().answering = Some(Answer {
        decision: Decision::Approved,
        actor: Some("alice".into()),
        source: Some(crate::events::Source::Tui),
    });
    // The approved tool reports back before the sender records its answer.
    let (r, out) = apply(
        Some(&r),
        "claude",
        "PostToolUse",
        Signal::ToolFinished {
            id: Some("toolu_1".into()),
        },
        T,
    );
    let [
        Outcome::PermissionResolved {
            decision, actor, ..
        },
    ] = out.as_slice()
    else {
        panic!("{out:?}")
    };
    assert_eq!(
        (*decision, actor.as_deref()),
        (Decision::Approved, Some("alice"))
    );
    let mut r = r;
    assert_eq!(
        answered(&mut r, "toolu_1", Decision::Approved, None, T),
        None,
        "already resolved: not twice"
    );
}

#[test]
fn the_operator_s_answer_resolves_only_the_request_it_names() {
    let (mut r, _) = run(vec![bash("toolu_2", "rm x"), asked("rm x")]);
    assert_eq!(
        answered(&mut r, "toolu_1", Decision::Denied, None, T),
        None,
        "an older request's answer never lands on this one"
    );
    assert!(r.permission.is_some());
    let out = answered(&mut r, "toolu_2", Decision::Denied, Some("bob".into()), T);
    assert!(
        matches!(
            out,
            Some(Outcome::PermissionResolved {
                decision: Decision::Denied,
                ..
            })
        ),
        "{out:?}"
    );
    assert_eq!(r.state, ReportedState::Idle);
    assert_eq!(r.permission, None);
}

#[test]
fn denied_in_the_pane_shows_when_the_next_prompt_or_turn_comes() {
    for next in [
        Signal::PromptSubmitted,
        Signal::TurnEnded,
        Signal::IdleReminder,
        Signal::SessionEnded,
    ] {
        let (_, out) = run(vec![bash("toolu_1", "ls"), asked("ls"), next.clone()]);
        assert_eq!(decisions(&out), [Decision::Elsewhere], "{next:?}");
    }
}

#[test]
fn another_tool_finishing_does_not_answer_the_dialog() {
    let (r, out) = run(vec![
        bash("toolu_1", "ls"),
        asked("ls"),
        Signal::ToolFinished {
            id: Some("toolu_9".into()),
        },
    ]);
    assert_eq!(r.state, ReportedState::AwaitingPermission);
    assert!(decisions(&out).is_empty());
}

#[test]
fn a_reminder_without_a_recorded_request_opens_one() {
    // The PermissionRequest hook failed; the reminder still tells the operator.
    let (r, out) = run(vec![
        bash("toolu_1", "make deploy"),
        Signal::PermissionReminder {
            message: "Claude needs your permission".into(),
        },
    ]);
    assert_eq!(r.state, ReportedState::AwaitingPermission);
    let [Outcome::PermissionRequested(request)] = out.as_slice() else {
        panic!("{out:?}")
    };
    assert_eq!(request.summary, "make deploy");
    let (_, out) = run(vec![Signal::PermissionReminder {
        message: "needs\x1b[31m you".into(),
    }]);
    let [Outcome::PermissionRequested(request)] = out.as_slice() else {
        panic!("{out:?}")
    };
    assert_eq!(
        (request.tool.as_str(), request.summary.as_str()),
        ("unknown", "needs[31m you")
    );
}

#[test]
fn session_start_and_end() {
    let (r, _) = run(vec![
        Signal::SessionStarted {
            conversation: Some("c-1".into()),
            model: Some("claude-opus-4".into()),
        },
        // A resume that names no model keeps the one known.
        Signal::SessionStarted {
            conversation: Some("c-2".into()),
            model: None,
        },
    ]);
    assert_eq!(r.state, ReportedState::Idle);
    assert_eq!(r.conversation.as_deref(), Some("c-2"));
    assert_eq!(r.model.as_deref(), Some("claude-opus-4"));
    let (r, _) = run(vec![Signal::PromptSubmitted, Signal::SessionEnded]);
    assert_eq!(r.state, ReportedState::Exited);
    let (r, _) = run(vec![Signal::PromptSubmitted, Signal::Notified]);
    assert_eq!(
        r.state,
        ReportedState::Working,
        "other notifications change nothing"
    );
}

#[test]
fn summaries_are_one_sanitized_line_of_at_most_200_chars() {
    assert_eq!(
        summarize(
            "Bash",
            &json!({"command": "echo \x1b]0;pwned\x07hi\nnext", "description": "d"})
        ),
        "echo ]0;pwnedhi next"
    );
    assert_eq!(
        summarize("Write", &json!({"file_path": "/w/a.rs", "content": "x"})),
        "/w/a.rs"
    );
    assert_eq!(
        summarize("WebFetch", &json!({"url": "https://x.test/"})),
        "https://x.test/"
    );
    assert_eq!(summarize("Mystery", &json!({"n": 1})), r#"{"n":1}"#);
    let long = summarize("Bash", &json!({"command": "x".repeat(500)}));
    assert_eq!(long.chars().count(), SUMMARY_CHARS);
    assert!(long.ends_with('…'));
    let wide = summarize("Bash", &json!({"command": "é".repeat(300)}));
    assert_eq!(
        wide.chars().count(),
        SUMMARY_CHARS,
        "cut by characters, not bytes"
    );
}

#[test]
fn every_submitted_prompt_is_counted_and_nothing_else_is() {
    let (r, _) = run(vec![
        Signal::PromptSubmitted,
        bash("toolu_1", "ls"),
        Signal::ToolFinished {
            id: Some("toolu_1".into()),
        },
        Signal::TurnEnded,
        Signal::PromptSubmitted,
        Signal::TurnEnded,
        Signal::IdleReminder,
    ]);
    assert_eq!(r.prompts, 2);
    let stored = serde_json::to_value(&r).unwrap();
    assert_eq!(stored["prompts"], 2);
    let (fresh, _) = run(vec![Signal::TurnEnded]);
    assert!(
        serde_json::to_value(&fresh)
            .unwrap()
            .get("prompts")
            .is_none(),
        "an old record reads the same"
    );
}
