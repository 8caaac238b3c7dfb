//! Config YAML: the starter file mutated line by line and byte by byte. Parsing never
//! panics; a refusal names the file and what is wrong.

use proptest::prelude::*;
use std::path::Path;
use the_loop::config::parse_str;

const STARTER: &str = include_str!("../../../src/config/starter.yaml");

/// A valid file to start from: the starter.
fn base() -> String {
    STARTER.to_string()
}

fn yaml_noise() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(vec![
            "",
            ":",
            "- ",
            "  ",
            "\t",
            "{",
            "}",
            "[",
            "]",
            "&a",
            "*a",
            "!!binary",
            "? ",
            "|",
            ">",
            "'",
            "\"",
            "#",
            "~",
            "null",
            "true",
            "0x10",
            "1e400",
            "-1",
            "\u{85}",
            "\u{2028}",
            "\u{feff}",
            "<<: *a",
            "%YAML 1.2",
            "---",
            "...",
            "repos: [{name: evil/other}]",
            "routing: {authorizedUsers: [\"@alice\", \"\"]}",
            "sessions: {passEnv: [GH_TOKEN]}",
        ])
        .prop_map(String::from),
        "\\PC{0,30}",
        any::<String>(),
    ]
}

#[derive(Debug, Clone)]
enum Edit {
    ReplaceLine(prop::sample::Index, String),
    InsertLine(prop::sample::Index, String),
    Truncate(prop::sample::Index),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<prop::sample::Index>(), yaml_noise()).prop_map(|(i, s)| Edit::ReplaceLine(i, s)),
        (any::<prop::sample::Index>(), yaml_noise()).prop_map(|(i, s)| Edit::InsertLine(i, s)),
        any::<prop::sample::Index>().prop_map(Edit::Truncate),
    ]
}

fn spoil(text: &str, edits: &[Edit]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for e in edits {
        match e {
            Edit::ReplaceLine(i, s) if !lines.is_empty() => {
                let at = i.index(lines.len());
                lines[at] = s.clone();
            }
            Edit::InsertLine(i, s) => {
                let at = i.index(lines.len() + 1);
                lines.insert(at, s.clone());
            }
            Edit::Truncate(i) => {
                let keep = i.index(lines.len() + 1);
                lines.truncate(keep);
            }
            Edit::ReplaceLine(..) => {}
        }
    }
    lines.join("\n")
}

#[test]
fn the_base_file_is_valid() {
    parse_str(&base(), Path::new("config.yaml")).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn spoiled_config_parses_or_says_what_is_wrong(edits in prop::collection::vec(edit(), 1..5)) {
        let text = spoil(&base(), &edits);
        match parse_str(&text, Path::new("config.yaml")) {
            Ok(config) => {
                // Accepted names stay valid `owner/name`s.
                for repo in &config.repos {
                    prop_assert_eq!(repo.name.split('/').count(), 2, "{}", repo.name);
                }
            }
            Err(error) => {
                let message = error.to_string();
                prop_assert!(message.contains("config.yaml"), "{}", message);
                prop_assert!(message.len() > "config.yaml".len() + 4, "{}", message);
            }
        }
    }
}
