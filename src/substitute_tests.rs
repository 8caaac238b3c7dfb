use super::*;
use proptest::prelude::*;

const TABLE: &Table<'static> = &[
    ("{prompt}", Some("review this")),
    ("{model}", Some("opus")),
    ("{workItem}", Some("github:octo/repo#15")),
    ("{specDir}", None),
];

#[test]
fn substitutes_inside_one_element() {
    let cases: &[(&str, Option<&str>, &str)] = &[
        ("{prompt}", Some("review this"), "review this"),
        ("--prompt={prompt}", Some("--prompt=review this"), ""),
        ("{model}:{workItem}", Some("opus:github:octo/repo#15"), ""),
        ("plain", Some("plain"), "plain"),
        ("", Some(""), ""),
        // Unset: empty under `Empty`, the element gone under `OmitElement`.
        ("--spec={specDir}", Some("--spec="), "omit"),
        ("{model}{specDir}", Some("opus"), "omit"),
        // Braces that are not placeholders stay.
        (r#"{"a": 1}"#, Some(r#"{"a": 1}"#), r#"{"a": 1}"#),
        ("{ prompt }", Some("{ prompt }"), "{ prompt }"),
        ("{{prompt}}", Some("{review this}"), "{review this}"),
        ("{prompt", Some("{prompt"), "{prompt"),
        ("prompt}", Some("prompt}"), "prompt}"),
        ("{}", Some("{}"), "{}"),
        ("{2x}", Some("{2x}"), "{2x}"),
        // A token the table does not name is kept, whatever the rule.
        ("{unknown}", Some("{unknown}"), "{unknown}"),
        ("{Prompt}", Some("{Prompt}"), "{Prompt}"),
        ("{promptFile}", Some("{promptFile}"), "{promptFile}"),
        ("é{prompt}✓", Some("éreview this✓"), "éreview this✓"),
    ];
    for (template, empty, omit) in cases {
        let expected = empty.map(str::to_string);
        assert_eq!(
            element(template, TABLE, Missing::Empty),
            expected,
            "{template}"
        );
        let omitted = match *omit {
            "omit" => None,
            "" => expected.clone(),
            kept => Some(kept.to_string()),
        };
        assert_eq!(
            element(template, TABLE, Missing::OmitElement),
            omitted,
            "{template}"
        );
    }
}

/// A stranger's text (an issue title in a prompt, a branch name) is one argument,
/// byte for byte: never split, never parsed by a shell, never substituted again.
#[test]
fn hostile_values_stay_inside_one_argument_and_are_not_substituted_again() {
    let hostile = [
        "; rm -rf ~",
        "$(touch /tmp/pwned)",
        "`touch /tmp/pwned`",
        "two words\tand a tab",
        "line one\nline two\r\n",
        "'quoted' \"double\" \\ back",
        "a {model} inside the prompt",
        "{prompt}",
        "{specDir}",
        "{{model}}",
        "| cat /etc/passwd > x &",
        "-rf",
        "",
    ];
    let args: Vec<String> = ["--p", "{prompt}", "x", "<{prompt}|{model}>"]
        .map(String::from)
        .into();
    for value in hostile {
        let table: &Table<'_> = &[
            ("{prompt}", Some(value)),
            ("{model}", Some("opus")),
            ("{specDir}", None),
        ];
        for missing in [Missing::Empty, Missing::OmitElement] {
            assert_eq!(
                argv(&args, table, missing),
                vec![
                    "--p".to_string(),
                    value.to_string(),
                    "x".to_string(),
                    format!("<{value}|opus>"),
                ],
                "{value:?}"
            );
        }
    }
}

#[test]
fn finds_tokens_unknown_ones_and_mentions() {
    assert_eq!(
        tokens("a {prompt} {x_1} {2x} {} {\"k\"} {cwd}").collect::<Vec<_>>(),
        vec!["{prompt}", "{x_1}", "{cwd}"]
    );
    let known = ["{prompt}", "{promptFile}"];
    assert_eq!(
        unknown("{prompt}{sessionId}{Prompt}", &known),
        vec!["{sessionId}", "{Prompt}"]
    );
    assert!(unknown("{promptFile} {\"json\": true}", &known).is_empty());
    let args = vec!["--in".to_string(), "x{promptFile}".to_string()];
    assert!(mentions(&args, "{promptFile}"));
    assert!(!mentions(&args, "{prompt}"));
}

/// A piece of a template: literal text without braces, or a placeholder.
#[derive(Debug, Clone)]
enum Piece {
    Text(String),
    Known(usize),
    Unset,
    Unnamed,
}

fn piece() -> impl Strategy<Value = Piece> {
    prop_oneof![
        "[^{}]{0,8}".prop_map(Piece::Text),
        (0..2usize).prop_map(Piece::Known),
        Just(Piece::Unset),
        Just(Piece::Unnamed),
    ]
}

/// Values that look like templates themselves: placeholders, braces, shell text.
fn value() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            ".{0,6}",
            Just("{a}".to_string()),
            Just("{b}".to_string()),
            Just("{unset}".to_string()),
            Just("{".to_string()),
            Just("}".to_string()),
        ],
        0..5,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// The output is the template with each placeholder replaced by its value, as
    /// bytes: whatever the values hold, nothing in them is substituted.
    #[test]
    fn values_are_copied_never_rescanned(
        pieces in prop::collection::vec(piece(), 0..10),
        a in value(),
        b in value(),
    ) {
        let table: &Table<'_> = &[("{a}", Some(&a)), ("{b}", Some(&b)), ("{unset}", None)];
        let template: String = pieces.iter().map(|p| match p {
            Piece::Text(t) => t.as_str(),
            Piece::Known(0) => "{a}",
            Piece::Known(_) => "{b}",
            Piece::Unset => "{unset}",
            Piece::Unnamed => "{other}",
        }).collect();
        let expected: String = pieces.iter().map(|p| match p {
            Piece::Text(t) => t.as_str(),
            Piece::Known(0) => a.as_str(),
            Piece::Known(_) => b.as_str(),
            Piece::Unset => "",
            Piece::Unnamed => "{other}",
        }).collect();
        let empty = element(&template, table, Missing::Empty);
        prop_assert_eq!(empty.as_deref(), Some(expected.as_str()));
        let has_unset = pieces.iter().any(|p| matches!(p, Piece::Unset));
        let omitted = element(&template, table, Missing::OmitElement);
        prop_assert_eq!(omitted.is_none(), has_unset);
        if let Some(kept) = omitted {
            prop_assert_eq!(kept, expected);
        }
    }

    /// Elements are substituted one by one: no value adds, splits or joins elements.
    #[test]
    fn argv_keeps_its_elements(args in prop::collection::vec("[ -~]{0,12}", 0..8), a in value()) {
        let table: &Table<'_> = &[("{a}", Some(&a)), ("{unset}", None)];
        let empty = argv(&args, table, Missing::Empty);
        prop_assert_eq!(empty.len(), args.len());
        for (out, arg) in empty.iter().zip(&args) {
            prop_assert_eq!(Some(out.clone()), element(arg, table, Missing::Empty));
        }
        let omitted = argv(&args, table, Missing::OmitElement);
        let kept: Vec<String> = args
            .iter()
            .filter(|arg| !tokens(arg).any(|t| t == "{unset}"))
            .map(|arg| element(arg, table, Missing::Empty).unwrap_or_default())
            .collect();
        prop_assert_eq!(omitted, kept);
    }
}
