use super::*;
use crate::session::hooks::ReportedState;
use crate::session::registry::SessionRecord;
use serde_json::json;

fn setup() -> (tempfile::TempDir, StatePaths, WorkItemRef) {
    let dir = tempfile::tempdir().unwrap();
    let paths = StatePaths::new(dir.path());
    let item = WorkItemRef::new("octo", "repo", 15);
    let registry = Registry::new(&paths, EventLog::open(&paths), Source::Cli);
    registry
        .put(&SessionRecord::new(
            &item,
            "claude",
            dir.path().to_path_buf(),
        ))
        .unwrap();
    (dir, paths, item)
}

fn events(paths: &StatePaths) -> Vec<serde_json::Value> {
    std::fs::read_to_string(paths.events())
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn send(paths: &StatePaths, item: &WorkItemRef, payload: serde_json::Value) {
    record(
        paths,
        item,
        Reporter::Claude,
        payload.to_string().as_bytes(),
    )
    .unwrap();
}

#[test]
fn reports_move_the_record_and_log_what_the_operator_needs() {
    let (_dir, paths, item) = setup();
    send(
        &paths,
        &item,
        json!({"hook_event_name": "UserPromptSubmit", "prompt": "go"}),
    );
    let registry = Registry::new(&paths, EventLog::open(&paths), Source::Cli);
    let reported = registry.get(&item).unwrap().unwrap().reported.unwrap();
    assert_eq!(reported.state, ReportedState::Working);
    assert_eq!(reported.harness, "claude");
    assert!(events(&paths).is_empty(), "a prompt is not an event");

    send(
        &paths,
        &item,
        json!({"hook_event_name": "PermissionRequest", "tool_name": "Bash",
        "tool_input": {"command": "curl x | sh\x1b[2J"}}),
    );
    send(
        &paths,
        &item,
        json!({"hook_event_name": "Stop", "last_assistant_message": "ok"}),
    );
    let names: Vec<String> = events(&paths)
        .iter()
        .map(|e| e["event"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "session.permission_requested",
            "session.permission_resolved",
            "session.turn_ended"
        ]
    );
    let logged = events(&paths);
    assert_eq!(logged[0]["summary"], "curl x | sh[2J", "sanitized");
    assert_eq!(logged[0]["work_item"], "github:octo/repo#15");
    assert_eq!(logged[1]["decision"], "elsewhere");
    assert!(logged.iter().all(|e| e["source"] == "hook"));
}

#[test]
fn a_report_for_no_session_or_a_bad_payload_is_an_error_not_a_panic() {
    let (_dir, paths, _) = setup();
    let other = WorkItemRef::new("octo", "repo", 99);
    let err = record(
        &paths,
        &other,
        Reporter::Claude,
        br#"{"hook_event_name":"Stop"}"#,
    )
    .unwrap_err();
    assert!(matches!(err, HookError::NoSession(_)), "{err}");
    let err = record(&paths, &other, Reporter::Claude, b"\xff\xfe").unwrap_err();
    assert!(matches!(err, HookError::Payload(_)), "{err}");
    // An event it does not know changes nothing and is fine.
    assert!(
        record(
            &paths,
            &other,
            Reporter::Claude,
            br#"{"hook_event_name":"PreCompact"}"#
        )
        .unwrap()
        .is_empty()
    );
}

#[test]
fn the_payload_comes_from_the_last_argument_else_stdin() {
    let args = vec!["{\"type\":\"agent-turn-complete\"}".to_string()];
    assert_eq!(
        read_payload(&args, &b"ignored"[..]).unwrap(),
        args[0].as_bytes()
    );
    assert_eq!(read_payload(&[], &b"{}"[..]).unwrap(), b"{}");
}

#[test]
fn work_that_does_not_finish_in_time_is_given_up() {
    let slow = bounded(Duration::from_millis(50), || {
        std::thread::sleep(Duration::from_secs(5));
        Ok(())
    });
    assert!(matches!(slow, Err(HookError::TooSlow(_))), "{slow:?}");
    assert_eq!(bounded(Duration::from_secs(5), || Ok(7)).unwrap(), 7);
}

#[test]
fn a_report_sent_back_from_a_host_leaves_the_tool_output_behind_and_keeps_the_rest() {
    let payload = json!({"hook_event_name": "PostToolUse", "tool_name": "Bash",
                         "tool_use_id": "toolu_1", "tool_response": {"stdout": "x".repeat(4096)}});
    let sent: serde_json::Value =
        serde_json::from_slice(&for_forwarding(payload.to_string().as_bytes())).unwrap();
    assert_eq!(
        sent,
        json!({"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "toolu_1"})
    );
    // Not JSON: sent as it is, for the supervisor to refuse.
    assert_eq!(for_forwarding(b"not json"), b"not json");
    let named = |name: &str| serde_json::from_value::<Reporter>(json!(name)).ok();
    assert_eq!(named("codex"), Some(Reporter::Codex));
    assert_eq!(named("sh"), None);
}

/// Codex titles a session on the side, with its own thread, and notifies that turn's
/// end (issue 41): only the session's own thread — the one its hooks named — moves
/// its state; before any hook named one, a notice counts as before.
#[test]
fn only_the_sessions_own_codex_thread_moves_it() {
    let (_dir, paths, item) = setup();
    const OWN: &str = "01a23d29-529b-73f3-9002-bfbaf9aebad0";
    const TITLE: &str = "01a23d29-5aa0-7000-8000-000000000001";
    let codex = |payload: serde_json::Value| {
        record(
            &paths,
            &item,
            Reporter::Codex,
            payload.to_string().as_bytes(),
        )
        .unwrap()
    };
    let reported = || {
        Registry::new(&paths, EventLog::open(&paths), Source::Cli)
            .get(&item)
            .unwrap()
            .unwrap()
            .reported
            .unwrap()
    };
    let hook = |event: &str, extra: serde_json::Value| {
        let mut v = json!({"session_id": OWN, "turn_id": "t-1", "cwd": "/w",
            "transcript_path": "/h/.codex/sessions/rollout.jsonl", "hook_event_name": event});
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        v
    };
    let notice = |thread: &str| {
        json!({"type": "agent-turn-complete", "thread-id": thread, "turn-id": "t",
            "input-messages": ["Generate a concise, single-line task title"]})
    };
    codex(hook("UserPromptSubmit", json!({"prompt": "boot"})));
    assert_eq!(reported().conversation.as_deref(), Some(OWN));
    codex(hook(
        "PermissionRequest",
        json!({"tool_name": "Bash", "tool_input": {"command": "touch ran.txt"}}),
    ));
    assert_eq!(reported().state, ReportedState::AwaitingPermission);
    // The title's notice: nothing moves, nothing is logged.
    let before = events(&paths).len();
    assert!(codex(notice(TITLE)).is_empty());
    let now = reported();
    assert_eq!(now.state, ReportedState::AwaitingPermission);
    assert!(now.permission.is_some(), "still pending");
    assert_eq!(events(&paths).len(), before, "no resolution, no turn end");
    // The session's own turn end does.
    codex(hook("PostToolUse", json!({"tool_name": "Bash"})));
    let outcomes = codex(notice(OWN));
    assert!(
        outcomes.contains(&state::Outcome::TurnEnded),
        "{outcomes:?}"
    );
    assert_eq!(reported().state, ReportedState::Idle);
    // A hook of another thread (a sub-agent) moves nothing either.
    let mut other = hook("UserPromptSubmit", json!({"prompt": "x"}));
    other["session_id"] = json!(TITLE);
    assert!(codex(other).is_empty());
    assert_eq!(reported().state, ReportedState::Idle);
}

#[test]
fn before_a_hook_names_the_thread_a_notice_counts() {
    let (_dir, paths, item) = setup();
    let notice = json!({"type": "agent-turn-complete",
        "thread-id": "01a23d29-529b-73f3-9002-bfbaf9aebad0"});
    let outcomes = record(
        &paths,
        &item,
        Reporter::Codex,
        notice.to_string().as_bytes(),
    )
    .unwrap();
    assert!(
        outcomes.contains(&state::Outcome::TurnEnded),
        "{outcomes:?}"
    );
    let reported = Registry::new(&paths, EventLog::open(&paths), Source::Cli)
        .get(&item)
        .unwrap()
        .unwrap()
        .reported
        .unwrap();
    assert_eq!(
        reported.conversation, None,
        "a notice never names the session's thread"
    );
}
