use super::*;

/// An assistant line as Claude Code 2.1.197 writes it (copied in shape from a real
/// transcript; the fake model's ids).
pub(crate) fn assistant(id: &str, request: &str, model: &str, usage: &str, block: &str) -> String {
    format!(
        r#"{{"parentUuid":"903a51c7-b70b-49d7-803a-ef3ce4b85b3c","isSidechain":false,"message":{{"id":"{id}","type":"message","role":"assistant","model":"{model}","content":[{block}],"stop_reason":"end_turn","stop_sequence":null,"usage":{usage},"stop_details":null}},"requestId":"{request}","type":"assistant","uuid":"172e8a47-e48c-46fe-8f1a-80a1d892b726","timestamp":"2026-12-03T16:38:57.168Z","userType":"external","entrypoint":"cli","cwd":"/tmp/p","sessionId":"593b1a34","version":"2.1.197","gitBranch":"HEAD"}}"#
    )
}

pub(crate) fn usage(input: u64, output: u64, w5m: u64, w1h: u64, read: u64) -> String {
    format!(
        r#"{{"input_tokens":{input},"cache_creation_input_tokens":{},"cache_read_input_tokens":{read},"output_tokens":{output},"server_tool_use":{{"web_search_requests":0,"web_fetch_requests":0}},"service_tier":"standard","cache_creation":{{"ephemeral_1h_input_tokens":{w1h},"ephemeral_5m_input_tokens":{w5m}}},"inference_geo":"","iterations":[],"speed":"standard"}}"#,
        w5m + w1h
    )
}

pub(crate) const TEXT: &str = r#"{"type":"text","text":"It is read."}"#;

pub(crate) const TOOL_RESULT: &str = r#"{"parentUuid":"c019ad6c","isSidechain":false,"promptId":"ca4952bf","type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_fake0003","type":"tool_result","content":"1\thello\n2\t"}]},"uuid":"903a51c7","timestamp":"2026-12-03T16:38:57.061Z","toolUseResult":{"type":"text"},"sessionId":"593b1a34","version":"2.1.197"}"#;

#[test]
fn an_assistant_line_counts_its_usage_with_cache_writes_by_lifetime() {
    let line = assistant(
        "msg_1",
        "req_1",
        "claude-opus-4-8",
        &usage(10, 5, 300, 4000, 20),
        TEXT,
    );
    let entry = parse(line.as_bytes(), UtcOffset::UTC).unwrap();
    assert_eq!(entry.key.as_deref(), Some("msg_1:req_1"));
    assert_eq!(entry.model, "claude-opus-4-8");
    assert_eq!(
        entry.tokens,
        Tokens {
            input: 10,
            output: 5,
            cache_write5m: 300,
            cache_write1h: 4000,
            cache_read: 20
        }
    );
    assert_eq!(entry.day.as_deref(), Some("2026-12-03"));
    // The operator's day: 16:38 UTC is the next day at +08:00.
    let east = parse(line.as_bytes(), UtcOffset::from_hms(8, 0, 0).unwrap()).unwrap();
    assert_eq!(east.day.as_deref(), Some("2026-12-04"));
}

#[test]
fn without_the_breakdown_the_aggregate_is_a_5m_write() {
    let line = assistant(
        "msg_1",
        "req_1",
        "claude-sonnet-4-5",
        r#"{"input_tokens":3,"output_tokens":2,"cache_creation_input_tokens":70,"cache_read_input_tokens":9}"#,
        TEXT,
    );
    let entry = parse(line.as_bytes(), UtcOffset::UTC).unwrap();
    assert_eq!(entry.tokens.cache_write5m, 70);
    assert_eq!(entry.tokens.cache_write1h, 0);
    assert_eq!(entry.tokens.cache_read, 9);
}

#[test]
fn lines_that_count_nothing() {
    let synthetic = assistant(
        "msg_s",
        "",
        SYNTHETIC,
        &usage(0, 0, 0, 0, 0),
        r#"{"type":"text","text":"No response requested."}"#,
    );
    assert_eq!(parse(synthetic.as_bytes(), UtcOffset::UTC), None);
    assert_eq!(parse(TOOL_RESULT.as_bytes(), UtcOffset::UTC), None);
    for junk in [
        &b"not json"[..],
        b"{}",
        b"[1,2]",
        br#"{"type":"ai-title","aiTitle":"x"}"#,
        br#"{"message":"a string"}"#,
        br#"{"message":{"usage":{"input_tokens":-4}}}"#,
        b"",
    ] {
        assert_eq!(parse(junk, UtcOffset::UTC), None, "{junk:?}");
    }
    // No `message.id`: the line counts as itself; no `requestId`: the id alone.
    let no_id = br#"{"message":{"model":"m","usage":{"input_tokens":4}}}"#;
    let entry = parse(no_id, UtcOffset::UTC).unwrap();
    assert_eq!((entry.key, entry.tokens.input, entry.day), (None, 4, None));
    let no_request = br#"{"message":{"id":"msg_9","model":"m","usage":{"output_tokens":4}}}"#;
    assert_eq!(
        parse(no_request, UtcOffset::UTC).unwrap().key.as_deref(),
        Some("msg_9:")
    );
}
