use super::*;
use crate::config::SessionsConfig;
use crate::critic::spec::parse_all;
use std::os::unix::fs::PermissionsExt;

fn spec(yaml: &str) -> CriticSpec {
    let raw: Vec<serde_norway::Value> = serde_norway::from_str(yaml).unwrap();
    parse_all(&raw, &SessionsConfig::default())
        .remove(0)
        .spec
        .unwrap()
}

fn values(prompt: &str) -> Values {
    Values {
        prompt: Some(prompt.into()),
        prompt_file: Some("/tmp/p".into()),
        model: None,
        work_item: Some("github:octo/repo#15".into()),
        spec_dir: None,
        cwd: Some("/src".into()),
    }
}

const LAST: &str = "/tmp/scratch/last-message.txt";

/// The built-in harnesses' one-shot argv come from the harness adapter (one source of
/// truth); a critic appends its own args, placeholders substituted.
#[test]
fn argv_for_each_built_in_harness() {
    let cases: &[(&str, &[&str])] = &[
        (
            "- {name: c, harness: claude}",
            &["claude", "-p", "review", "--output-format", "json"],
        ),
        (
            "- {name: c, harness: claude, model: opus}",
            &[
                "claude",
                "-p",
                "review",
                "--output-format",
                "json",
                "--model",
                "opus",
            ],
        ),
        (
            "- {name: c, harness: codex}",
            &[
                "codex",
                "exec",
                "--json",
                "--output-last-message",
                LAST,
                "review",
            ],
        ),
        (
            "- {name: c, harness: codex, model: gpt-5}",
            &[
                "codex",
                "exec",
                "--json",
                "--output-last-message",
                LAST,
                "review",
                "--model",
                "gpt-5",
            ],
        ),
        (
            "- {name: c, harness: cursor}",
            &["cursor-agent", "-p", "review", "--output-format", "json"],
        ),
        (
            "- {name: c, harness: cursor, model: gpt-5}",
            &[
                "cursor-agent",
                "-p",
                "review",
                "--output-format",
                "json",
                "-m",
                "gpt-5",
            ],
        ),
        (
            "- {name: c, harness: claude, model: opus, args: ['--max-turns', '3', '--item={workItem}']}",
            &[
                "claude",
                "-p",
                "review",
                "--output-format",
                "json",
                "--model",
                "opus",
                "--max-turns",
                "3",
                "--item=github:octo/repo#15",
            ],
        ),
        (
            "- {name: c, command: lint, args: ['--in', '{promptFile}', '--cwd={cwd}', '{specDir}']}",
            &["lint", "--in", "/tmp/p", "--cwd=/src", ""],
        ),
    ];
    for (yaml, expected) in cases {
        let spec = spec(yaml);
        let mut v = values("review");
        v.model = spec.model.clone();
        assert_eq!(build_argv(&spec, &v, Path::new(LAST)), *expected, "{yaml}");
    }
}

#[test]
fn hostile_prompts_stay_one_argument_in_every_argv() {
    let prompt = "; rm -rf ~ $(touch x) `id` \"a b\"\n'c'";
    for yaml in [
        "- {name: c, harness: claude}",
        "- {name: c, harness: codex}",
        "- {name: c, command: lint, args: ['{prompt}']}",
    ] {
        let spec = spec(yaml);
        let argv = build_argv(&spec, &values(prompt), Path::new(LAST));
        assert_eq!(argv.iter().filter(|a| *a == prompt).count(), 1, "{argv:?}");
        assert!(!argv.iter().any(|a| a != prompt && a.contains("rm -rf")));
    }
}

#[test]
fn an_inline_prompt_file_is_private_and_removed() {
    let spec = spec("- {name: c, command: sh, args: ['{promptFile}']}");
    let prepared = prepare(&spec, &Request::new(Prompt::Text("secret material".into()))).unwrap();
    let file = PathBuf::from(&prepared.argv().unwrap()[1]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "secret material");
    assert_eq!(file.metadata().unwrap().permissions().mode() & 0o777, 0o600);
    let dir = file.parent().unwrap().to_path_buf();
    assert_eq!(dir.metadata().unwrap().permissions().mode() & 0o777, 0o700);
    drop(prepared);
    assert!(!file.exists() && !dir.exists());
}

#[test]
fn a_given_prompt_file_is_passed_as_an_absolute_path_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.txt");
    std::fs::write(&file, "material").unwrap();
    let spec = spec("- {name: c, command: sh, args: ['{promptFile}']}");
    let prepared = prepare(&spec, &Request::new(Prompt::File(file.clone()))).unwrap();
    assert_eq!(prepared.argv().unwrap()[1], file.to_string_lossy());
    drop(prepared);
    assert!(file.exists());
}

#[test]
fn misconfigured_requests_are_errors() {
    let spec_text = spec("- {name: c, command: sh, args: ['{prompt}']}");
    let empty = prepare(&spec_text, &Request::new(Prompt::Text("  \n".into())));
    assert!(matches!(empty, Err(RunError::EmptyPrompt)));
    let missing = prepare(
        &spec_text,
        &Request::new(Prompt::File("/no/such/file".into())),
    );
    assert!(matches!(missing, Err(RunError::PromptFile { .. })));
    let mut request = Request::new(Prompt::Text("x".into()));
    request.cwd = Some("/no/such/dir".into());
    let err = prepare(&spec_text, &request).unwrap_err().to_string();
    assert!(
        err.contains("/no/such/dir") && err.contains("--cwd"),
        "{err}"
    );
    let mut request = Request::new(Prompt::Text("x".into()));
    request.spec_dir = Some("/no/such/specs".into());
    assert!(matches!(
        prepare(&spec_text, &request),
        Err(RunError::SpecDir { .. })
    ));
    let disabled = spec("- {name: off, command: sh, args: ['{prompt}'], enabled: false}");
    let err = prepare(&disabled, &Request::new(Prompt::Text("x".into())))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("critic `off` is disabled") && err.contains("enabled: true"),
        "{err}"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn a_too_long_argument_is_refused_before_the_spawn() {
    let big = "x".repeat(MAX_ARG_BYTES + 1);
    let command = spec("- {name: c, command: sh, args: ['-c', 'true', '{prompt}']}");
    let prepared = prepare(&command, &Request::new(Prompt::Text(big.clone()))).unwrap();
    assert!(prepared.argv().is_none());
    let env = tokio_block_on(prepared.execute());
    assert!(!env.ok);
    assert_eq!(env.exit_code, -1);
    let error = env.error.unwrap();
    assert!(
        error.contains("MAX_ARG_STRLEN") && error.contains("{promptFile}"),
        "{error}"
    );

    let at_limit = "x".repeat(MAX_ARG_BYTES);
    let prepared = prepare(&command, &Request::new(Prompt::Text(at_limit))).unwrap();
    assert!(prepared.argv().is_some());
}

#[test]
fn a_missing_binary_is_a_clear_not_run_envelope() {
    let spec = spec("- {name: c, command: the-loop-no-such-critic, args: ['{prompt}']}");
    let prepared = prepare(&spec, &Request::new(Prompt::Text("x".into()))).unwrap();
    let env = tokio_block_on(prepared.execute());
    assert!(!env.ok);
    assert_eq!(env.exit_code, -1);
    let error = env.error.unwrap();
    assert!(
        error.contains("`the-loop-no-such-critic` was not found on PATH"),
        "{error}"
    );
}

fn tokio_block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}
