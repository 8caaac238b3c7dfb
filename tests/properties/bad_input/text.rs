//! Control keywords, the excerpt and the sanitizer over hostile text.

use super::mutate::{mutated_fixture, nasty};
use proptest::prelude::*;
use serde_json::Value;
use the_loop::config::Keywords;
use the_loop::guard::sanitize;
use the_loop::hidden_text::{strip_hidden, strip_markdown};
use the_loop::routing::excerpt::excerpt;
use the_loop::routing::{ControlKeywords, ControlMatch};

fn keywords() -> ControlKeywords {
    ControlKeywords::new(&Keywords::default())
}

/// Prose with no Markdown of its own (no backtick, tilde or quote marker, and no raw
/// HTML: `<!--` or `<?` hides what follows from people, and so from the keyword scan).
fn plain() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(vec![
            "",
            "please",
            "the-loop start",
            "the-loop stop",
            "the-loop pause now",
            "the-loop resume and the-loop stop",
            "xthe-loop start",
            "ok.",
        ])
        .prop_map(String::from),
        "[^`~><]{0,40}",
    ]
}

/// Up to 200 characters, rich in what the excerpt escapes.
fn body_text() -> impl Strategy<Value = String> {
    let c = prop_oneof![
        any::<char>(),
        proptest::sample::select(vec![
            '\u{80}', '\u{85}', '\u{9f}', '\u{2028}', '\u{2029}', '`', '"', '\\', '\u{1b}'
        ]),
    ];
    prop::collection::vec(c, 0..200).prop_map(|cs| cs.into_iter().collect())
}

/// Where a keyword can hide without being said.
fn hidden(keyword: &str, how: usize) -> String {
    match how % 5 {
        0 => format!("\n> {keyword}\n"),
        1 => format!(" `{keyword}` "),
        2 => format!("\n```\n{keyword}\n```\n"),
        3 => format!("\n~~~text\n{keyword}\n~~~\n"),
        _ => format!(" ``a ` {keyword}`` "),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3_000))]

    #[test]
    fn keyword_scan_is_total(text in nasty(), more in nasty()) {
        let _ = keywords().find(&format!("{text}{more}"));
    }

    /// A quoted or code keyword never changes what a comment is.
    #[test]
    fn quoted_and_code_keywords_are_not_said(
        before in plain(),
        after in plain(),
        keyword in proptest::sample::select(vec!["the-loop start", "the-loop stop", "the-loop pause", "the-loop resume"]),
        how in 0usize..5,
    ) {
        let said = keywords().find(&format!("{before}\n\n{after}"));
        let with_hidden = keywords().find(&format!("{before}\n{}\n{after}", hidden(keyword, how)));
        prop_assert_eq!(with_hidden, said);
    }

    /// Said outside any quote or code, a lone keyword is a command.
    #[test]
    fn a_keyword_in_prose_is_a_command(quoted in plain(), how in 0usize..5) {
        let text = format!("{}\n\nthe-loop pause", hidden(&quoted, how));
        prop_assert_eq!(
            keywords().find(&text),
            ControlMatch::Command(the_loop::routing::ControlCommand::Pause)
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// The excerpt of any mutated real payload: valid JSON within 4,000 characters, no
    /// backtick, C1 control or line separator written raw.
    #[test]
    fn excerpts_of_spoiled_payloads_are_bounded_escaped_json((event, payload) in mutated_fixture()) {
        let text = excerpt(event, &payload);
        prop_assert!(text.chars().count() <= 4_000);
        prop_assert!(serde_json::from_str::<Value>(&text).is_ok(), "{}", text);
        prop_assert!(
            !text.chars().any(|c| c == '`' || ('\u{80}'..='\u{9f}').contains(&c) || c == '\u{2028}' || c == '\u{2029}'),
            "{}", text
        );
    }

    /// Nothing is lost through the escapes: a short comment body reads back exactly as
    /// people see it (less what no one sees, SPEC §18.4).
    #[test]
    fn short_bodies_survive_the_escapes(body in body_text()) {
        let payload = serde_json::json!({"comment": {"body": body, "user": {"login": "alice"}}});
        let parsed: Value = serde_json::from_str(&excerpt("issue_comment", &payload)).unwrap();
        let seen = strip_markdown(&body).text;
        prop_assert_eq!(parsed["comment"]["body"].as_str(), Some(seen.as_ref()));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5_000))]

    /// The sanitizer removes exactly the controls, maps the separators to `\n`, then
    /// removes what no one sees (SPEC §18.4), keeps everything else in order, and is
    /// idempotent.
    #[test]
    fn the_sanitizer_removes_exactly_what_it_must(text in prop_oneof![nasty(), any::<String>()]) {
        let clean = sanitize(&text);
        let expected: String = text
            .chars()
            .filter_map(|c| match c {
                '\u{2028}' | '\u{2029}' => Some('\n'),
                '\n' | '\t' => Some(c),
                c if c.is_control() => None,
                c => Some(c),
            })
            .collect();
        let expected = strip_hidden(&expected).text;
        prop_assert_eq!(clean.as_ref(), expected.as_ref());
        let again = sanitize(&clean).into_owned();
        prop_assert_eq!(again.as_str(), clean.as_ref());
    }
}
