//! One log line ↔ one [`Event`]: the envelope keys first, in a fixed order, then the
//! fields in insertion order (serde_json's `preserve_order`), null fields omitted.

use super::{Event, EventType, Level, Source};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// The envelope keys, in the order they are written. A field may not use one.
pub const RESERVED_KEYS: [&str; 5] = ["ts", "source", "event", "level", "pid"];

/// Why a line is not an event. Readers skip such lines and count them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("not JSON: {0}")]
    Json(String),
    #[error("expected a JSON object per line")]
    NotAnObject,
    #[error("missing envelope key `{0}`")]
    Missing(&'static str),
    #[error("envelope key `{key}` is invalid: expected {expected}")]
    Invalid {
        key: &'static str,
        expected: &'static str,
    },
    /// Written by a newer (or other) binary; this one cannot tell what it means.
    #[error("unknown event type `{0}`")]
    UnknownEvent(String),
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("ts", &self.ts)?;
        map.serialize_entry("source", &self.source)?;
        map.serialize_entry("event", &self.event)?;
        map.serialize_entry("level", &self.level)?;
        map.serialize_entry("pid", &self.pid)?;
        for (k, v) in &self.fields {
            // `fields` is public, so a caller may have bypassed `with`.
            if v.is_null() || RESERVED_KEYS.contains(&k.as_str()) {
                continue;
            }
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        from_map(map).map_err(serde::de::Error::custom)
    }
}

impl Event {
    /// The compact JSON line for this event, without the trailing newline. Besides the
    /// C0 controls serde_json escapes, DEL and the C1 range are escaped too, so that
    /// `cat`-ing or `tail -f`-ing the log cannot drive the terminal.
    pub fn to_line(&self) -> String {
        match serde_json::to_string(self) {
            Ok(line) => escape_high_controls(line),
            // Unreachable: every key is a string and every value is JSON already.
            Err(e) => format!(
                r#"{{"ts":"{}","source":"{}","event":"{}","level":"error","pid":{},"error":{}}}"#,
                self.ts,
                self.source,
                self.event,
                self.pid,
                Value::String(e.to_string())
            ),
        }
    }
}

fn escape_high_controls(line: String) -> String {
    let is_high_control = |c: char| c == '\u{7f}' || ('\u{80}'..='\u{9f}').contains(&c);
    if !line.contains(is_high_control) {
        return line;
    }
    let mut out = String::with_capacity(line.len() + 16);
    for c in line.chars() {
        if is_high_control(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// Parses one log line (without its newline).
pub fn parse_line(line: &str) -> Result<Event, ParseError> {
    let value: Value = serde_json::from_str(line).map_err(|e| ParseError::Json(e.to_string()))?;
    match value {
        Value::Object(map) => from_map(map),
        _ => Err(ParseError::NotAnObject),
    }
}

fn from_map(mut map: Map<String, Value>) -> Result<Event, ParseError> {
    let mut take = |key: &'static str| map.shift_remove(key).ok_or(ParseError::Missing(key));
    let ts = take("ts")?;
    let source = take("source")?;
    let event = take("event")?;
    let level = take("level")?;
    let pid = take("pid")?;

    let invalid = |key, expected| ParseError::Invalid { key, expected };
    let ts = match ts {
        Value::String(ts) if crate::time::parse_ts(&ts).is_some() => ts,
        _ => return Err(invalid("ts", "an RFC 3339 timestamp string")),
    };
    let event = match event {
        Value::String(name) => EventType::from_name(&name).ok_or(ParseError::UnknownEvent(name))?,
        _ => return Err(invalid("event", "a string")),
    };
    let source: Source = serde_json::from_value(source)
        .map_err(|_| invalid("source", "poll, webhook, tui, cli, dispatch or critic"))?;
    let level: Level = serde_json::from_value(level)
        .map_err(|_| invalid("level", "debug, info, warning or error"))?;
    let pid = pid
        .as_u64()
        .and_then(|p| u32::try_from(p).ok())
        .ok_or_else(|| invalid("pid", "a process id"))?;
    map.retain(|_, v| !v.is_null());
    Ok(Event {
        ts,
        source,
        event,
        level,
        pid,
        fields: map,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Event {
        let mut e = Event::new(Source::Poll, EventType::RoutingDropped)
            .level(Level::Warning)
            .with("reason", "unauthorized-actor")
            .with("zeta", 1)
            .with("actor", "mallory")
            .with("nothing", Value::Null)
            .with("alpha", json!({"z": 1, "a": [1, null]}));
        e.ts = "2026-01-02T03:04:05.678Z".into();
        e.pid = 4242;
        e
    }

    #[test]
    fn envelope_first_then_fields_in_insertion_order() {
        assert_eq!(
            sample().to_line(),
            r#"{"ts":"2026-01-02T03:04:05.678Z","source":"poll","event":"routing.dropped","level":"warning","pid":4242,"reason":"unauthorized-actor","zeta":1,"actor":"mallory","alpha":{"z":1,"a":[1,null]}}"#
        );
    }

    #[test]
    fn null_fields_are_omitted_even_when_inserted_directly() {
        let mut e = sample();
        e.fields.insert("late".into(), Value::Null);
        e.fields.insert("pid".into(), json!(1));
        let line = e.to_line();
        assert!(
            !line.contains("late") && !line.contains("nothing"),
            "{line}"
        );
        assert_eq!(line.matches("\"pid\"").count(), 1, "{line}");
    }

    #[test]
    fn lines_round_trip() {
        let e = sample();
        let back = parse_line(&e.to_line()).unwrap();
        assert_eq!(back, e);
        let via_serde: Event = serde_json::from_str(&e.to_line()).unwrap();
        assert_eq!(via_serde, e);
    }

    #[test]
    fn newlines_in_values_stay_on_one_line() {
        let e = sample().with("question", "line one\nline two\r\n\u{1b}[201~");
        let line = e.to_line();
        assert!(!line.contains('\n') && !line.contains('\r') && !line.contains('\u{1b}'));
        assert_eq!(
            parse_line(&line).unwrap().str_field("question"),
            Some("line one\nline two\r\n\u{1b}[201~")
        );
    }

    #[test]
    fn del_and_c1_controls_are_escaped_but_round_trip() {
        let text = "a\u{7f}b\u{9b}31mc\u{85}";
        let line = sample().with("text", text).to_line();
        assert!(!line.contains(['\u{7f}', '\u{9b}', '\u{85}']), "{line}");
        assert!(line.contains(r"\u009b"), "{line}");
        assert_eq!(parse_line(&line).unwrap().str_field("text"), Some(text));
    }

    #[test]
    fn bad_lines_say_why() {
        let ok = sample().to_line();
        let cases: Vec<(String, ParseError)> = vec![
            ("{not json".into(), ParseError::Json(String::new())),
            ("[1,2]".into(), ParseError::NotAnObject),
            (ok.replace(r#""pid":4242,"#, ""), ParseError::Missing("pid")),
            (
                ok.replace("routing.dropped", "routing.teleported"),
                ParseError::UnknownEvent("routing.teleported".into()),
            ),
            (
                ok.replace(r#""source":"poll""#, r#""source":"mars""#),
                ParseError::Invalid {
                    key: "source",
                    expected: "",
                },
            ),
            (
                ok.replace("2026-01-02T03:04:05.678Z", "yesterday"),
                ParseError::Invalid {
                    key: "ts",
                    expected: "",
                },
            ),
            (
                ok.replace(r#""level":"warning""#, r#""level":"loud""#),
                ParseError::Invalid {
                    key: "level",
                    expected: "",
                },
            ),
            (
                ok.replace("4242", "-1"),
                ParseError::Invalid {
                    key: "pid",
                    expected: "",
                },
            ),
        ];
        for (line, want) in cases {
            let got = parse_line(&line).unwrap_err();
            assert_eq!(
                std::mem::discriminant(&got),
                std::mem::discriminant(&want),
                "{line}: {got}"
            );
            if let (ParseError::Invalid { key: a, .. }, ParseError::Invalid { key: b, .. }) =
                (&got, &want)
            {
                assert_eq!(a, b);
            }
        }
    }
}
