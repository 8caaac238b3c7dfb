//! The envelope (SPEC §9.4): the one JSON object a critic round produces, and how a
//! critic's stdout becomes its `output` and `usage`. Pure functions.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::findings::Finding;

/// One critic round. `ok` is true only when the critic ran and exited 0 (SPEC §9.5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope {
    pub critic: String,
    pub harness: Option<String>,
    pub model: Option<String>,
    pub attribution: String,
    pub ok: bool,
    /// The critic's exit code; `128 + signal` when a signal ended it; -1 if it never ran.
    pub exit_code: i32,
    pub duration_seconds: f64,
    pub output: String,
    pub error: Option<String>,
    pub usage: Usage,
    /// The places the critic named that hold in the worktree (SPEC §21.3).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
}

/// Token counts and cost as the critic reported them; `null` where it said nothing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cache_read_tokens: Option<u64>,
    pub cache_write_tokens: Option<u64>,
    pub cost_usd: Option<f64>,
    /// Whether the critic reported any of the above.
    pub present: bool,
}

/// What the envelope says before the run: the critic's identity.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub critic: String,
    pub harness: Option<String>,
    pub model: Option<String>,
    pub attribution: String,
}

impl Envelope {
    /// A round that never started (missing binary, a prompt too long for one argument,
    /// cancelled before the spawn): `ok: false`, `exitCode: -1`.
    pub fn not_run(header: Header, error: String, duration_seconds: f64) -> Self {
        Self {
            critic: header.critic,
            harness: header.harness,
            model: header.model,
            attribution: header.attribution,
            ok: false,
            exit_code: -1,
            duration_seconds,
            output: String::new(),
            error: Some(error),
            usage: Usage::default(),
            findings: Vec::new(),
        }
    }

    /// The envelope as printed: one line of JSON.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| {
            // Only non-finite floats can fail, and durations are finite; stay valid JSON.
            serde_json::json!({"critic": self.critic, "ok": false, "exitCode": self.exit_code,
                "error": format!("the envelope could not be serialized: {e}")})
            .to_string()
        })
    }
}

/// The keys whose first non-empty string is the critic's answer, in order.
const OUTPUT_KEYS: [&str; 6] = ["result", "response", "text", "output", "content", "message"];
const USAGE_KEYS: [&str; 3] = ["usage", "token_usage", "tokenUsage"];
const COST_KEYS: [&str; 4] = ["total_cost_usd", "totalCostUsd", "cost_usd", "costUsd"];
const INPUT_KEYS: [&str; 4] = [
    "input_tokens",
    "inputTokens",
    "prompt_tokens",
    "promptTokens",
];
const OUTPUT_TOKEN_KEYS: [&str; 4] = [
    "output_tokens",
    "outputTokens",
    "completion_tokens",
    "completionTokens",
];
const CACHE_READ_KEYS: [&str; 6] = [
    "cache_read_input_tokens",
    "cacheReadInputTokens",
    "cache_read_tokens",
    "cacheReadTokens",
    "cached_input_tokens",
    "cachedInputTokens",
];
const CACHE_WRITE_KEYS: [&str; 4] = [
    "cache_creation_input_tokens",
    "cacheCreationInputTokens",
    "cache_write_tokens",
    "cacheWriteTokens",
];

/// A `json` critic's stdout, read.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JsonReading {
    /// The answer: the first non-empty string under [`OUTPUT_KEYS`]; `None` when stdout
    /// is not JSON or has none (the caller then uses the raw stdout).
    pub output: Option<String>,
    pub usage: Usage,
    /// The critic said its own run failed (`is_error: true`, as claude reports).
    pub reported_error: bool,
}

/// Reads one JSON document, or JSON Lines (codex `exec --json` prints events, one per
/// line: the last line with an answer or usage counts).
pub fn read_json(stdout: &str) -> JsonReading {
    let trimmed = stdout.trim();
    if let Ok(Value::Object(doc)) = serde_json::from_str::<Value>(trimmed) {
        return read_object(&doc);
    }
    let mut reading = JsonReading::default();
    for line in trimmed.lines() {
        let Ok(Value::Object(doc)) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let line_reading = read_object(&doc);
        if line_reading.output.is_some() {
            reading.output = line_reading.output;
        }
        if line_reading.usage.present {
            reading.usage = line_reading.usage;
        }
        reading.reported_error |= line_reading.reported_error;
    }
    reading
}

fn read_object(doc: &Map<String, Value>) -> JsonReading {
    let output = OUTPUT_KEYS.iter().find_map(|k| {
        doc.get(*k)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .map(str::to_string)
    });
    // Codex events nest the answer: `{"type":"item.completed","item":{"text":…}}`.
    let output = output.or_else(|| {
        doc.get("item")
            .and_then(Value::as_object)
            .and_then(|item| read_object(item).output)
    });
    JsonReading {
        output,
        usage: read_usage(doc),
        reported_error: doc.get("is_error").and_then(Value::as_bool) == Some(true)
            || doc.get("isError").and_then(Value::as_bool) == Some(true),
    }
}

/// Usage from `usage` / `token_usage` / `tokenUsage`, snake or camel keys; cost from the
/// top level or inside the usage object. Booleans and strings are not numbers.
pub fn read_usage(doc: &Map<String, Value>) -> Usage {
    let block = USAGE_KEYS
        .iter()
        .find_map(|k| doc.get(*k).and_then(Value::as_object));
    let count = |keys: &[&str]| block.and_then(|b| first_count(b, keys));
    let cost =
        first_cost(doc, &COST_KEYS).or_else(|| block.and_then(|b| first_cost(b, &COST_KEYS)));
    let mut usage = Usage {
        input_tokens: count(&INPUT_KEYS),
        output_tokens: count(&OUTPUT_TOKEN_KEYS),
        cache_read_tokens: count(&CACHE_READ_KEYS),
        cache_write_tokens: count(&CACHE_WRITE_KEYS),
        cost_usd: cost,
        present: false,
    };
    usage.present = usage.input_tokens.is_some()
        || usage.output_tokens.is_some()
        || usage.cache_read_tokens.is_some()
        || usage.cache_write_tokens.is_some()
        || usage.cost_usd.is_some();
    usage
}

/// A token count: a non-negative integer (`12` or `12.0`), never `true`.
fn first_count(map: &Map<String, Value>, keys: &[&str]) -> Option<u64> {
    keys.iter().find_map(|k| match map.get(*k)? {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| f.is_finite() && *f >= 0.0 && f.fract() == 0.0 && *f < 1e15)
                .map(|f| f as u64)
        }),
        _ => None,
    })
}

fn first_cost(map: &Map<String, Value>, keys: &[&str]) -> Option<f64> {
    keys.iter().find_map(|k| match map.get(*k)? {
        Value::Number(n) => n.as_f64().filter(|f| f.is_finite() && *f >= 0.0),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_the_first_non_empty_string_in_key_order() {
        let cases: &[(&str, Option<&str>)] = &[
            (r#"{"result":"r","response":"x"}"#, Some("r")),
            (r#"{"result":"","response":"resp"}"#, Some("resp")),
            (r#"{"result":"  ","text":"t"}"#, Some("t")),
            (r#"{"result":42,"output":"o"}"#, Some("o")),
            (r#"{"content":"c","message":"m"}"#, Some("c")),
            (r#"{"message":"m"}"#, Some("m")),
            (r#"{"other":"x"}"#, None),
            ("not json at all", None),
            (r#"["result"]"#, None),
        ];
        for (stdout, expected) in cases {
            assert_eq!(read_json(stdout).output.as_deref(), *expected, "{stdout}");
        }
    }

    #[test]
    fn usage_snake_and_camel() {
        let snake = read_json(
            r#"{"result":"x","total_cost_usd":0.0123,"usage":{"input_tokens":10,"output_tokens":20,"cache_read_input_tokens":30,"cache_creation_input_tokens":40}}"#,
        )
        .usage;
        assert_eq!(
            snake,
            Usage {
                input_tokens: Some(10),
                output_tokens: Some(20),
                cache_read_tokens: Some(30),
                cache_write_tokens: Some(40),
                cost_usd: Some(0.0123),
                present: true,
            }
        );
        let camel = read_json(
            r#"{"text":"x","costUsd":1.5,"tokenUsage":{"inputTokens":1,"outputTokens":2.0,"cacheReadTokens":3,"cacheWriteTokens":4}}"#,
        )
        .usage;
        assert_eq!(
            (
                camel.input_tokens,
                camel.output_tokens,
                camel.cache_read_tokens
            ),
            (Some(1), Some(2), Some(3))
        );
        assert_eq!(
            (camel.cache_write_tokens, camel.cost_usd),
            (Some(4), Some(1.5))
        );
        let token_usage = read_json(r#"{"token_usage":{"input_tokens":7,"cost_usd":0.5}}"#).usage;
        assert_eq!(
            (token_usage.input_tokens, token_usage.cost_usd),
            (Some(7), Some(0.5))
        );
    }

    #[test]
    fn booleans_and_strings_are_not_numbers() {
        let usage = read_json(
            r#"{"result":"x","cost_usd":true,"usage":{"input_tokens":true,"output_tokens":"12","cache_read_input_tokens":-1,"cache_creation_input_tokens":1.5}}"#,
        )
        .usage;
        assert_eq!(usage, Usage::default());
        assert!(!usage.present);
        // A boolean under one spelling does not hide a number under the next.
        let usage = read_json(r#"{"usage":{"input_tokens":false,"inputTokens":9}}"#).usage;
        assert_eq!(usage.input_tokens, Some(9));
    }

    #[test]
    fn json_lines_take_the_last_answer_and_usage() {
        let stdout = concat!(
            r#"{"type":"thread.started","thread_id":"t"}"#,
            "\n",
            r#"{"type":"item.completed","item":{"type":"agent_message","text":"first"}}"#,
            "\n",
            "garbage line\n",
            r#"{"type":"item.completed","item":{"type":"agent_message","text":"final"}}"#,
            "\n",
            r#"{"type":"turn.completed","usage":{"input_tokens":5,"cached_input_tokens":2,"output_tokens":3}}"#,
        );
        let reading = read_json(stdout);
        assert_eq!(reading.output.as_deref(), Some("final"));
        assert_eq!(reading.usage.input_tokens, Some(5));
        assert_eq!(reading.usage.cache_read_tokens, Some(2));
        assert_eq!(reading.usage.output_tokens, Some(3));
    }

    #[test]
    fn a_reported_error_is_seen() {
        assert!(read_json(r#"{"is_error":true,"result":"boom"}"#).reported_error);
        assert!(!read_json(r#"{"is_error":false,"result":"fine"}"#).reported_error);
    }

    #[test]
    fn serializes_with_the_spec_keys() {
        let header = Header {
            critic: "c".into(),
            harness: None,
            model: None,
            attribution: "[c/default]".into(),
        };
        let env = Envelope::not_run(header, "gone".into(), 0.0);
        let value: Value = serde_json::from_str(&env.to_line()).unwrap();
        let keys: Vec<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "critic",
                "harness",
                "model",
                "attribution",
                "ok",
                "exitCode",
                "durationSeconds",
                "output",
                "error",
                "usage"
            ]
        );
        let usage: Vec<&str> = value["usage"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            usage,
            [
                "inputTokens",
                "outputTokens",
                "cacheReadTokens",
                "cacheWriteTokens",
                "costUsd",
                "present"
            ]
        );
        assert_eq!(value["exitCode"], -1);
        assert_eq!(value["ok"], false);
    }
}
