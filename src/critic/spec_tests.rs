use super::*;
use crate::config::HarnessConfig;

fn parse(yaml: &str) -> Vec<CriticEntry> {
    parse_with(yaml, &SessionsConfig::default())
}

fn parse_with(yaml: &str, sessions: &SessionsConfig) -> Vec<CriticEntry> {
    let raw: Vec<Value> = serde_norway::from_str(yaml).unwrap();
    parse_all(&raw, sessions)
}

fn only(yaml: &str) -> Result<CriticSpec, SpecError> {
    let mut entries = parse(yaml);
    assert_eq!(entries.len(), 1);
    entries.remove(0).spec
}

fn error(yaml: &str) -> String {
    only(yaml).unwrap_err().to_string()
}

/// Every rule of SPEC §9.1, with the message an operator reads: it names the entry and
/// says how to fix it.
#[test]
fn validation_messages() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "missing name",
            "- harness: claude",
            &[
                "critics[0]:",
                "`name` is missing",
                "give every critic a unique name",
            ],
        ),
        (
            "blank name",
            "- {name: '  ', harness: claude}",
            &["critics[0]:", "`name` is missing"],
        ),
        (
            "name not a string",
            "- {name: [a], harness: claude}",
            &["critics[0]:", "`name` must be a string, found a list"],
        ),
        (
            "args not a list",
            "- {name: lint, command: lint, args: '{prompt}'}",
            &[
                "critic `lint` (critics[0])",
                "`args` must be a list of strings",
                "found a string",
            ],
        ),
        (
            "args element not a string",
            "- {name: lint, command: lint, args: ['{prompt}', {a: 1}]}",
            &[
                "critic `lint`",
                "`args[1]` must be a string, found a mapping",
                "quote it",
            ],
        ),
        (
            "env not a map",
            "- {name: lint, command: lint, args: ['{prompt}'], env: [A=1]}",
            &["critic `lint`", "`env` must be a map", "found a list"],
        ),
        (
            "env value not a string",
            "- {name: lint, command: lint, args: ['{prompt}'], env: {A: [1]}}",
            &["`env` entry `A` is not usable", "must be a string"],
        ),
        (
            "env name with =",
            "- {name: lint, command: lint, args: ['{prompt}'], env: {'A=B': x}}",
            &["`env` entry `A=B`", "without `=`"],
        ),
        (
            "unknown outputFormat",
            "- {name: lint, command: lint, args: ['{prompt}'], outputFormat: xml}",
            &[
                "critic `lint`",
                "unknown outputFormat `xml`",
                "expected `text` or `json`",
            ],
        ),
        (
            "zero timeout",
            "- {name: lint, command: lint, args: ['{prompt}'], timeoutSeconds: 0}",
            &[
                "critic `lint`",
                "`timeoutSeconds` must be a positive number",
                "found 0",
            ],
        ),
        (
            "negative timeout",
            "- {name: lint, command: lint, args: ['{prompt}'], timeoutSeconds: -5}",
            &["must be a positive number", "found -5"],
        ),
        (
            "timeout as text",
            "- {name: lint, command: lint, args: ['{prompt}'], timeoutSeconds: soon}",
            &["must be a positive number", "found soon"],
        ),
        (
            "unknown key",
            "- {name: lint, command: lint, args: ['{prompt}'], timeout: 5}",
            &[
                "critic `lint`",
                "unknown key `timeout`",
                "expected one of name, harness, model, command, args, env, cwd, outputFormat, timeoutSeconds, enabled, identity",
            ],
        ),
        (
            "unknown placeholder",
            "- {name: lint, command: lint, args: ['{prompt}', '--id={sessionId}']}",
            &[
                "critic `lint`",
                "unknown placeholder `{sessionId}` in args[1]",
                "the known ones are {prompt}, {promptFile}, {model}, {workItem}, {specDir}, {cwd}",
            ],
        ),
        (
            "command without a prompt",
            "- {name: lint, command: lint, args: ['--strict', '{model}']}",
            &[
                "critic `lint`",
                "command `lint` is never given the prompt",
                "put `{prompt}` or `{promptFile}` in args",
            ],
        ),
        (
            "command with whitespace",
            "- {name: lint, command: 'lint --strict', args: ['{prompt}']}",
            &[
                "critic `lint`",
                "command `lint --strict` contains whitespace",
                "a command is one executable; put its arguments in args",
            ],
        ),
        (
            "empty command",
            "- {name: lint, command: '', args: ['{prompt}']}",
            &["`command` is empty"],
        ),
        (
            "nothing to run",
            "- {name: lint, model: opus}",
            &["critic `lint`", "nothing to run", "set `harness`"],
        ),
        (
            "unknown harness",
            "- {name: r, harness: gemini}",
            &["critic `r` (critics[0])", "unknown harness `gemini`"],
        ),
        (
            "enabled not a bool",
            "- {name: r, harness: claude, enabled: 'no'}",
            &["`enabled` must be true or false, found a string"],
        ),
        (
            "entry not a mapping",
            "- just-a-name",
            &[
                "critics[0]:",
                "expected a mapping of keys",
                "found a string",
            ],
        ),
    ];
    for (what, yaml, needles) in cases {
        let message = error(yaml);
        for needle in *needles {
            assert!(
                message.contains(needle),
                "{what}: `{message}` lacks `{needle}`"
            );
        }
    }
}

#[test]
fn a_harness_without_a_one_shot_invocation() {
    let mut sessions = SessionsConfig::default();
    sessions.harnesses.insert(
        "aider".into(),
        HarnessConfig {
            command: "aider".into(),
            args: vec!["{prompt}".into()],
            ..HarnessConfig::default()
        },
    );
    let entries = parse_with("- {name: a, harness: aider}", &sessions);
    let message = entries[0].spec.as_ref().unwrap_err().to_string();
    assert!(message.contains("critic `a` (critics[0])"), "{message}");
    assert!(
        message.contains("harness `aider` has no built-in one-shot invocation"),
        "{message}"
    );
    assert!(
        message.contains("give this critic a `command`"),
        "{message}"
    );
}

#[test]
fn duplicate_names_invalidate_both_and_name_both() {
    let entries = parse(
        "- {name: lint, command: lint, args: ['{prompt}']}\n\
         - {name: other, harness: claude}\n\
         - {name: lint, harness: codex}\n",
    );
    assert!(entries[1].spec.is_ok());
    for i in [0, 2] {
        let message = entries[i].spec.as_ref().unwrap_err().to_string();
        assert!(message.contains(&format!("(critics[{i}])")), "{message}");
        assert!(
            message.contains("critics[0] and critics[2] are both called `lint`"),
            "{message}"
        );
        assert!(message.contains("rename one"), "{message}");
    }
}

#[test]
fn invalid_entries_keep_their_name_and_do_not_hide_the_others() {
    let entries =
        parse("- {name: bad, harness: claude, colour: red}\n- {name: good, harness: claude}\n");
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0].name.as_deref(), Some("bad"));
    assert!(entries[0].spec.is_err());
    assert_eq!(entries[1].spec.as_ref().unwrap().name, "good");
}

#[test]
fn defaults() {
    let claude = only("- {name: c, harness: claude}").unwrap();
    assert_eq!(claude.output_format, OutputFormat::Json);
    assert_eq!(claude.timeout, Duration::from_secs(900));
    assert!(claude.enabled);
    assert_eq!(claude.program(), "claude");
    assert_eq!(claude.attribution(), "[claude/default]");

    let cursor = only("- {name: c, harness: cursor, model: gpt-5}").unwrap();
    assert_eq!(cursor.program(), "cursor-agent");
    assert_eq!(cursor.attribution(), "[cursor/gpt-5]");

    let command = only("- {name: lint, command: my-lint, args: ['{promptFile}']}").unwrap();
    assert_eq!(command.output_format, OutputFormat::Text);
    assert_eq!(command.runner, Runner::Command("my-lint".into()));
    assert_eq!(command.attribution(), "[lint/default]");

    let explicit = only(
        "- name: j\n  command: j\n  args: ['{prompt}', 3]\n  outputFormat: json\n  timeoutSeconds: 1.5\n  enabled: false\n  identity: review-bot\n  harness: claude\n  env: {N: 1, B: true}\n",
    )
    .unwrap();
    assert_eq!(explicit.output_format, OutputFormat::Json);
    assert_eq!(explicit.timeout, Duration::from_millis(1500));
    assert!(!explicit.enabled);
    assert_eq!(explicit.args, vec!["{prompt}", "3"]);
    assert_eq!(explicit.env.get("N").map(String::as_str), Some("1"));
    assert_eq!(explicit.env.get("B").map(String::as_str), Some("true"));
    // With a command, the harness is only a label.
    assert_eq!(explicit.runner, Runner::Command("j".into()));
    assert_eq!(explicit.attribution(), "[claude/default as review-bot]");
}

#[test]
fn a_custom_harness_defaults_to_text() {
    let mut sessions = SessionsConfig::default();
    sessions.harnesses.insert(
        "mine".into(),
        HarnessConfig {
            command: "mine".into(),
            oneshot_args: vec!["--once".into(), "{prompt}".into()],
            ..HarnessConfig::default()
        },
    );
    let entries = parse_with("- {name: m, harness: mine}", &sessions);
    let spec = entries[0].spec.as_ref().unwrap();
    assert_eq!(spec.output_format, OutputFormat::Text);
    assert_eq!(spec.program(), "mine");
}

#[test]
fn locate_uses_the_entry_path() {
    let dir = tempfile::tempdir().unwrap();
    let spec = only(&format!(
        "- {{name: c, command: nowhere-to-be-found-xyz, args: ['{{prompt}}'], env: {{PATH: '{}'}}}}",
        dir.path().display()
    ))
    .unwrap();
    assert_eq!(spec.locate(), None);
    let sh =
        only("- {name: c, command: sh, args: ['{prompt}'], env: {PATH: '/bin:/usr/bin'}}").unwrap();
    assert!(sh.locate().is_some());
}
