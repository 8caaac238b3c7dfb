use super::*;
use serde_json::json;

#[test]
fn marker_detection_is_exact_and_case_sensitive() {
    let cases: &[(Option<&str>, bool)] = &[
        (None, false),
        (Some(""), false),
        (Some("plain comment"), false),
        (Some(MARKER), true),
        (Some("text\n<!-- the-loop:agent-comment -->\n"), true),
        (Some("<!-- the-loop:agent-comment -->at the start"), true),
        (Some("in the <!-- the-loop:agent-comment --> middle"), true),
        (Some("<!-- THE-LOOP:AGENT-COMMENT -->"), false),
        (Some("<!-- the-loop:agent-comment-->"), false),
        (Some("<!--the-loop:agent-comment -->"), false),
        (Some("the-loop:agent-comment"), false),
    ];
    for (body, expected) in cases {
        assert_eq!(is_self_authored(*body), *expected, "{body:?}");
    }
}

#[test]
fn stamping_adds_attribution_then_marker_last() {
    let stamped = mark_self_authored("Will do.  \n\n");
    assert_eq!(stamped, format!("Will do.\n\n{ATTRIBUTION}\n{MARKER}\n"));
    assert!(stamped.trim_end().ends_with(MARKER));
    assert!(is_self_authored(Some(&stamped)));
    let lines: Vec<&str> = stamped.lines().collect();
    assert_eq!(lines[lines.len() - 2], ATTRIBUTION);
    assert_eq!(lines[lines.len() - 1], MARKER);
}

#[test]
fn stamping_is_idempotent() {
    for body in [
        "",
        "hello",
        "multi\nline\n\n",
        "already <!-- the-loop:agent-comment -->",
    ] {
        let once = mark_self_authored(body);
        assert_eq!(mark_self_authored(&once), once, "{body:?}");
        assert_eq!(once.matches(MARKER).count(), 1, "{body:?}");
    }
}

/// The one, last marker is the stamp's: whatever marker a hostile body carries —
/// in the middle, at the start, doubled, nested so that removing one forms another,
/// or posing as a stamp above text of its own — is removed.
#[test]
fn a_body_cannot_smuggle_a_marker_past_the_stamp() {
    let stamp = format!("\n\n{ATTRIBUTION}\n{MARKER}\n");
    let nested = "<!-- the-loop:<!-- the-loop:agent-comment -->agent-comment -->";
    let cases: &[(String, String)] = &[
        (format!("text {MARKER} more"), "text  more".into()),
        (format!("{MARKER}at the start"), "at the start".into()),
        (format!("{MARKER}{MARKER}"), String::new()),
        (format!("a{nested}b"), "ab".into()),
        (
            format!("{ATTRIBUTION}\n{MARKER}\nthe agent's own text"),
            format!("{ATTRIBUTION}\n\nthe agent's own text"),
        ),
        (
            format!("real question\n\n{ATTRIBUTION}\n{MARKER}\n\n{ATTRIBUTION}\n{MARKER}\n"),
            format!("real question\n\n{ATTRIBUTION}"),
        ),
    ];
    for (body, kept) in cases {
        let stamped = mark_self_authored(body);
        assert_eq!(stamped, format!("{kept}{stamp}"), "{body:?}");
        assert_eq!(stamped.matches(MARKER).count(), 1, "{body:?}");
    }
}

#[test]
fn an_agents_stamp_names_its_harness_and_keeps_the_guarantees() {
    let line = attribution_for("claude", Some("claude-sonnet-4-5"));
    assert_eq!(
        line,
        "🤖 _posted by the-loop for claude (claude-sonnet-4-5)_"
    );
    let stamped = stamp_self_authored(&format!("Done {MARKER} here.\n"), &line);
    assert_eq!(stamped, format!("Done  here.\n\n{line}\n{MARKER}\n"));
    assert!(is_self_authored(Some(&stamped)));
    assert_eq!(stamp_self_authored(&stamped, &line), stamped, "idempotent");
    // Stamped by the tool's own line before: still one marker, the agent's last.
    let both = stamp_self_authored(&mark_self_authored("x"), &line);
    assert_eq!(both.matches(MARKER).count(), 1, "{both}");
    assert!(both.ends_with(&format!("\n{line}\n{MARKER}\n")), "{both}");
    // The default stamp is the agent stamp with the default line.
    assert_eq!(
        stamp_self_authored("hi", ATTRIBUTION),
        mark_self_authored("hi")
    );
}

/// An attribution line cannot add a marker, a line or an empty line of its own.
#[test]
fn a_hostile_attribution_line_stays_one_line_without_a_marker() {
    for line in [
        format!("evil {MARKER}"),
        format!("two\nlines {MARKER}\r\n"),
        "   ".to_string(),
        MARKER.to_string(),
    ] {
        let stamped = stamp_self_authored("body", &line);
        assert_eq!(stamped.matches(MARKER).count(), 1, "{line:?}: {stamped}");
        assert!(stamped.ends_with(&format!("\n{MARKER}\n")), "{stamped}");
        let lines: Vec<&str> = stamped.lines().collect();
        assert_eq!(lines.len(), 4, "{line:?}: {stamped:?}");
        assert!(!lines[2].trim().is_empty(), "{stamped:?}");
    }
}

#[test]
fn attribution_names_keep_only_name_characters() {
    let cases: &[(&str, Option<&str>, &str)] = &[
        ("claude", None, "🤖 _posted by the-loop for claude_"),
        ("claude", Some(""), "🤖 _posted by the-loop for claude_"),
        (
            "codex",
            Some("gpt-5.1"),
            "🤖 _posted by the-loop for codex (gpt-5.1)_",
        ),
        (
            "claude",
            Some("x_) <!-- the-loop:agent-comment -->\n**y**"),
            "🤖 _posted by the-loop for claude (x--the-loop:agent-comment--y)_",
        ),
        ("my_agent", None, "🤖 _posted by the-loop for myagent_"),
        ("", None, ATTRIBUTION),
        (
            "___",
            Some("claude-opus-4"),
            "🤖 _posted by the-loop for claude-opus-4_",
        ),
    ];
    for (harness, model, expected) in cases {
        assert_eq!(
            attribution_for(harness, *model),
            *expected,
            "{harness} {model:?}"
        );
    }
    let long = "m".repeat(500);
    let line = attribution_for("claude", Some(&long));
    assert!(line.len() < 120, "{line}");
}

#[test]
fn markdown_sanitizing_removes_what_readers_never_see() {
    let cases: &[(&str, &str)] = &[
        ("plain\n\ttext", "plain\n\ttext"),
        ("a\r\nb\x1b[31mred\x1b[0m", "a\nb[31mred[0m"),
        (
            "bidi \u{202E}txet\u{202C} tag\u{E0041}\u{E0042}",
            "bidi txet tag",
        ),
        ("zero\u{200B}width&#8203;ref", "zerowidthref"),
        ("seen <!-- hidden instructions --> seen", "seen  seen"),
        ("unclosed <!-- to the end", "unclosed "),
        ("\u{9b}31mc1", "31mc1"),
    ];
    for (input, expected) in cases {
        assert_eq!(sanitize_markdown(input), *expected, "{input:?}");
    }
}

mod stamp {
    use super::super::{ATTRIBUTION, MARKER, mark_self_authored, stamp_self_authored};
    use proptest::prelude::*;

    fn piece() -> impl Strategy<Value = String> {
        prop_oneof![
            ".{0,12}",
            Just(MARKER.to_string()),
            Just("<!-- the-loop:".to_string()),
            Just("agent-comment -->".to_string()),
            Just(format!("{ATTRIBUTION}\n{MARKER}\n")),
            Just("\n \t".to_string()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// Whatever the input — text spliced with markers, marker halves and whole
        /// stamps — the output carries the marker exactly once, at the very end,
        /// with the attribution line right above it, and stamping again changes
        /// nothing.
        #[test]
        fn the_stamp_is_the_one_last_marker(parts in prop::collection::vec(piece(), 0..12)) {
            let stamped = mark_self_authored(&parts.concat());
            prop_assert_eq!(stamped.matches(MARKER).count(), 1);
            let tail = format!("\n{ATTRIBUTION}\n{MARKER}\n");
            prop_assert!(stamped.ends_with(&tail), "{:?}", stamped);
            prop_assert_eq!(mark_self_authored(&stamped), stamped.clone());
        }

        /// The same for any attribution line, hostile ones included.
        #[test]
        fn any_attribution_keeps_one_last_marker(
            parts in prop::collection::vec(piece(), 0..12),
            line in prop::collection::vec(piece(), 0..4),
        ) {
            let line = line.concat();
            let stamped = stamp_self_authored(&parts.concat(), &line);
            prop_assert_eq!(stamped.matches(MARKER).count(), 1);
            prop_assert!(stamped.ends_with(&format!("\n{MARKER}\n")), "{:?}", stamped);
            prop_assert_eq!(stamp_self_authored(&stamped, &line), stamped.clone());
        }
    }
}

fn list(users: &[&str]) -> Allowlist {
    Allowlist::new(&users.iter().map(|s| s.to_string()).collect::<Vec<_>>())
}

#[test]
fn allowlist_matches_case_insensitively_and_exactly() {
    let allow = list(&["alice", "@Bob", " carol ", "@", "", "ALICE"]);
    let cases = [
        ("alice", true),
        ("ALICE", true),
        ("Alice", true),
        ("bob", true),
        ("BOB", true),
        ("carol", true),
        ("@bob", false),
        ("alice2", false),
        ("alic", false),
        ("mallory", false),
        ("", false),
        (" alice", false),
        ("*", false),
    ];
    for (login, expected) in cases {
        assert_eq!(allow.allows(login), expected, "{login:?}");
    }
    assert!(!allow.is_empty());
}

#[test]
fn empty_allowlist_is_closed() {
    for allow in [list(&[]), list(&["", "  ", "@"])] {
        assert!(allow.is_empty());
        assert!(!allow.allows("alice"));
        assert!(!allow.allows(""));
        assert_eq!(
            allow.check(Actor::Human("alice")),
            ActorCheck::Unauthorized("alice")
        );
        assert_eq!(allow.check(Actor::Ci), ActorCheck::Ci);
    }
}

#[test]
fn wildcards_are_literal() {
    let allow = list(&["*", "ali*"]);
    assert!(!allow.allows("alice"));
    assert!(allow.allows("*"));
}

#[test]
fn actor_per_event_kind() {
    let payload = json!({
        "comment": {"user": {"login": "carol"}},
        "review": {"user": {"login": "dave"}},
        "sender": {"login": "erin"},
    });
    let cases = [
        ("issue_comment", Actor::Human("carol")),
        ("pull_request_review_comment", Actor::Human("carol")),
        ("pull_request_review", Actor::Human("dave")),
        ("issues", Actor::Human("erin")),
        ("pull_request", Actor::Human("erin")),
        ("workflow_run", Actor::Ci),
        ("check_run", Actor::Ci),
        ("check_suite", Actor::Ci),
        ("status", Actor::Ci),
    ];
    for (event, expected) in cases {
        assert_eq!(actor_of(event, &payload), expected, "{event}");
    }
}

#[test]
fn unidentifiable_humans_are_unknown() {
    let cases = [
        // A comment without an author: the sender does not stand in for it.
        (
            "issue_comment",
            json!({"comment": {"body": "x"}, "sender": {"login": "alice"}}),
        ),
        ("issue_comment", json!({"comment": {"user": {"login": ""}}})),
        ("issue_comment", json!({"comment": {"user": {"login": 42}}})),
        ("issue_comment", json!({"comment": {"user": null}})),
        (
            "pull_request_review",
            json!({"review": {"user": {"login": "   "}}}),
        ),
        ("issues", json!({"issue": {"user": {"login": "alice"}}})),
        ("pull_request", json!({"sender": "alice"})),
        ("issues", json!([1, 2, 3])),
        ("issues", json!(null)),
    ];
    for (event, payload) in cases {
        assert_eq!(
            actor_of(event, &payload),
            Actor::Unknown,
            "{event} {payload}"
        );
        assert_eq!(
            list(&["alice"]).check(actor_of(event, &payload)),
            ActorCheck::Unknown
        );
    }
}

#[test]
fn check_verdicts() {
    let allow = list(&["alice"]);
    assert_eq!(
        allow.check(Actor::Human("Alice")),
        ActorCheck::Authorized("Alice")
    );
    assert_eq!(
        allow.check(Actor::Human("mallory")),
        ActorCheck::Unauthorized("mallory")
    );
    assert_eq!(allow.check(Actor::Unknown), ActorCheck::Unknown);
    assert_eq!(allow.check(Actor::Ci), ActorCheck::Ci);
    assert_eq!(Actor::Human("x").login(), Some("x"));
    assert_eq!(Actor::Ci.login(), None);
}

mod sanitize {
    use super::super::sanitize;
    use crate::hidden_text::{Class, class, strip_hidden};
    use proptest::prelude::*;
    use std::borrow::Cow;

    #[test]
    fn sanitize_table() {
        let cases: &[(&str, &str)] = &[
            ("plain text", "plain text"),
            ("a\nb\tc", "a\nb\tc"),
            ("a\r\nb", "a\nb"),
            ("x\x1b[201~y", "x[201~y"),
            ("\x1b]0;title\x07z", "]0;titlez"),
            ("nul\0bell\x07bs\x08del\x7f", "nulbellbsdel"),
            ("c1\u{80}\u{9b}31m\u{9f}end", "c131mend"),
            ("unicode é ✓ 日本 🦀 \u{a0}", "unicode é ✓ 日本 🦀 \u{a0}"),
            ("```\ncode\n```", "```\ncode\n```"),
            ("line\u{2028}sep\u{2029}para", "line\nsep\npara"),
            // SPEC §18.4: what no one sees goes from every paste too.
            ("ok\u{E0069}\u{E0067}\u{200B}\u{202E}\u{FEFF}.", "ok."),
            (
                "❤\u{FE0F}\u{FE01} 👨\u{200D}👩 a\u{200D}b",
                "❤\u{FE0F} 👨\u{200D}👩 ab",
            ),
            // Controls go first: the selector then follows its base.
            ("❤\u{1b}\u{FE0F}", "❤\u{FE0F}"),
            (
                "<!-- kept: a reply is not a Markdown body -->",
                "<!-- kept: a reply is not a Markdown body -->",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(sanitize(input), *expected, "input {input:?}");
        }
        assert!(matches!(sanitize("clean\ttext\n"), Cow::Borrowed(_)));
        assert!(matches!(sanitize("日本 ❤\u{FE0F}"), Cow::Borrowed(_)));
    }

    proptest! {
        #[test]
        fn sanitized_text_has_no_controls_but_newline_and_tab(s in any::<String>()) {
            let out = sanitize(&s);
            prop_assert!(out.chars().all(|c| !c.is_control() || c == '\n' || c == '\t'));
            let again = sanitize(&out).into_owned();
            prop_assert_eq!(again.as_str(), out.as_ref());
            let separated = out.contains(['\u{2028}', '\u{2029}']);
            prop_assert!(!separated);
            let kept: String = s
                .chars()
                .map(|c| if matches!(c, '\u{2028}' | '\u{2029}') { '\n' } else { c })
                .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
                .collect();
            let visible = strip_hidden(&kept).text;
            prop_assert_eq!(out.as_ref(), visible.as_ref());
            prop_assert!(out.chars().all(|c| class(c) != Class::Hidden));
        }
    }
}

#[test]
fn a_fence_outgrows_every_run_of_backticks() {
    assert_eq!(fence_for(["plain"]), "```");
    assert_eq!(fence_for(Vec::<&str>::new()), "```");
    assert_eq!(fence_for(["a ```` b", "``"]), "`````");
    assert_eq!(fence_for(["```", "x", "`````` y"]), "```````");
}
