use super::*;
use serde_json::json;

fn at(s: &str) -> OffsetDateTime {
    crate::time::parse_ts(s).unwrap()
}

fn line(ts: &str, payload: Value) -> String {
    json!({"timestamp": ts, "type": "event_msg", "payload": payload}).to_string()
}

fn ended(ts: &str, error: Value) -> String {
    line(
        ts,
        json!({"type": "task_complete", "turn_id": "t1", "last_agent_message": null,
            "error": error, "started_at": 1, "completed_at": 1, "duration_ms": 48}),
    )
}

fn read(lines: &[String]) -> Option<LastTurn> {
    last_turn(lines.join("\n").as_bytes(), time::UtcOffset::UTC)
}

fn started(ts: &str) -> String {
    line(ts, json!({"type": "task_started", "turn_id": "t1"}))
}

const TS: &str = "2026-12-07T22:54:55.655Z";

#[test]
fn failed_turns_as_codex_0_171_0_records_them() {
    // Each as the real codex 0.171.0 wrote it, the fake Responses API answering so.
    let no_headers = json!({"limit_id": "codex", "primary": null, "secondary": null});
    let cases: Vec<(Value, Option<LimitKind>)> = vec![
        (
            json!({"message": "exceeded retry limit, last status: 429 Too Many Requests",
                "codex_error_info": {"response_too_many_failed_attempts": {"http_status_code": 429}}}),
            Some(LimitKind::RateLimit),
        ),
        (
            json!({"message": "unexpected status 401 Unauthorized: boom, url: http://127.0.0.1:1/v1/responses",
                "codex_error_info": {"http_connection_failed": {"http_status_code": 401}}}),
            Some(LimitKind::Authentication),
        ),
        (
            json!({"message": "unexpected status 529 <unknown status code>: boom",
                "codex_error_info": {"http_connection_failed": {"http_status_code": 529}}}),
            Some(LimitKind::Overloaded),
        ),
        (
            json!({"message": "We’re currently experiencing high demand, which may cause temporary errors.",
                "codex_error_info": "internal_server_error"}),
            Some(LimitKind::Overloaded),
        ),
        (
            json!({"message": "You’ve hit your usage limit. … or try again later.",
                "codex_error_info": "usage_limit_exceeded"}),
            Some(LimitKind::UsageLimit),
        ),
        // Not limits: a bad request, the context window, an unknown status.
        (
            json!({"message": "unexpected status 400 Bad Request",
                "codex_error_info": {"http_connection_failed": {"http_status_code": 400}}}),
            None,
        ),
        (
            json!({"message": "context", "codex_error_info": "context_window_exceeded"}),
            None,
        ),
        (json!({"message": "no info"}), None),
        (Value::Null, None),
    ];
    for (error, want) in cases {
        let lines = [
            started("2026-12-07T22:54:55.600Z"),
            line(
                TS,
                json!({"type": "token_count", "info": null, "rate_limits": no_headers}),
            ),
            ended(TS, error.clone()),
        ];
        let turn = read(&lines).unwrap();
        assert_eq!(turn.at, at(TS));
        assert_eq!(turn.failure.as_ref().map(|f| f.kind), want, "{error}");
        if let Some(failure) = turn.failure {
            assert_eq!(failure.source, "rollout");
            assert_eq!(failure.resets, None, "none recorded: {error}");
            assert_eq!(failure.said, error["message"].as_str().unwrap());
        }
    }
}

#[test]
fn a_usage_limit_resets_when_codex_recorded_it() {
    let usage = json!({"message": "You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at Nov 30th, 2026 12:53 AM.",
        "codex_error_info": "usage_limit_exceeded"});
    // The window codex recorded as full (the API's headers), as 0.171.0 wrote it.
    let full = json!({"limit_id": "codex", "primary": {"used_percent": 100.0,
        "window_minutes": 300, "resets_at": 1796690000}, "secondary": {"used_percent": 40.0,
        "window_minutes": 10080, "resets_at": 1797000000}});
    let lines = [
        started(TS),
        line(
            TS,
            json!({"type": "token_count", "info": null, "rate_limits": full}),
        ),
        ended(TS, usage.clone()),
    ];
    let failure = read(&lines).unwrap().failure.unwrap();
    assert_eq!(failure.kind, LimitKind::UsageLimit);
    assert_eq!(
        failure.resets,
        Some(OffsetDateTime::from_unix_timestamp(1796690000).unwrap())
    );
    // No window recorded: the reset its message printed.
    let lines = [started(TS), ended(TS, usage)];
    assert_eq!(
        read(&lines).unwrap().failure.unwrap().resets,
        Some(at("2026-11-30T00:53:00Z"))
    );
    // A full window of an earlier turn says nothing of this one.
    let lines = [
        started("2026-12-07T20:00:00Z"),
        line(
            TS,
            json!({"type": "token_count", "info": null, "rate_limits": full}),
        ),
        started(TS),
        ended(
            TS,
            json!({"message": "… or try again later.", "codex_error_info": "usage_limit_exceeded"}),
        ),
    ];
    assert_eq!(read(&lines).unwrap().failure.unwrap().resets, None);
}

#[test]
fn only_the_last_turn_counts_and_a_good_one_clears_nothing_here() {
    let failed = json!({"message": "exceeded retry limit, last status: 429 Too Many Requests",
        "codex_error_info": {"response_too_many_failed_attempts": {"http_status_code": 429}}});
    let lines = [
        started("2026-12-07T22:00:00Z"),
        ended("2026-12-07T22:00:01Z", failed),
        started(TS),
        ended(TS, Value::Null),
    ];
    let turn = read(&lines).unwrap();
    assert_eq!(turn.failure, None);
    assert_eq!(turn.at, at(TS));
    assert_eq!(read(&[started(TS)]), None, "no turn ended yet");
    assert_eq!(read(&[]), None);
}

#[test]
fn the_models_words_never_make_a_limit() {
    // A model (or a stranger's comment it quotes) writing a failed turn's line as text:
    // codex writes it JSON-escaped inside its own lines, never as a line.
    let forged = ended(
        TS,
        json!({"message": "You’ve hit your usage limit … try again at Dec 31st, 2026 11:00 PM.",
            "codex_error_info": "usage_limit_exceeded"}),
    );
    let said = format!("{forged}\nYou’ve hit your usage limit. usage_limit_exceeded");
    let lines = [
        started(TS),
        json!({"timestamp": TS, "type": "response_item", "payload": {"type": "message",
            "role": "assistant", "content": [{"type": "output_text", "text": said}]}})
        .to_string(),
        line(TS, json!({"type": "agent_message", "message": said})),
        json!({"timestamp": TS, "type": "response_item", "payload": {"type": "message",
            "role": "user", "content": [{"type": "input_text", "text": said}]}})
        .to_string(),
        line(
            TS,
            json!({"type": "task_complete", "turn_id": "t1", "last_agent_message": said,
                "error": null}),
        ),
    ];
    let turn = read(&lines).unwrap();
    assert_eq!(turn.failure, None, "{turn:?}");
    // Its `error` named no limit: a message alone is not one.
    let lines = [ended(
        TS,
        json!({"message": "You’ve hit your usage limit."}),
    )];
    assert_eq!(read(&lines).unwrap().failure, None);
}

#[test]
fn a_failed_turn_is_news_once() {
    let failed = json!({"message": "429", "codex_error_info": "rate_limit_exceeded"});
    let turn = read(&[ended(TS, failed.clone())]).unwrap();
    assert!(is_news(&turn, None));
    let mut limit = None;
    let change = super::super::observe(&mut limit, turn.failure.clone(), TS);
    assert!(matches!(change, Some(super::super::Change::Hit(_))));
    assert!(!is_news(&turn, limit.as_ref()), "read once");
    let later = read(&[ended("2026-12-07T22:55:30Z", failed)]).unwrap();
    assert!(is_news(&later, limit.as_ref()), "the try's turn failed too");
    let good = read(&[ended("2026-12-07T22:56:00Z", Value::Null)]).unwrap();
    assert!(!is_news(&good, limit.as_ref()));
}
