use super::*;
use std::path::PathBuf;

fn config(entries: &[(&str, HarnessConfig)]) -> SessionsConfig {
    let mut c = SessionsConfig::default();
    for (name, entry) in entries {
        c.harnesses.insert(name.to_string(), entry.clone());
    }
    c
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn built_in(name: &str) -> Harness {
    Harness::resolve(name, &SessionsConfig::default()).unwrap()
}

const FILE: &str = "/tmp/last.txt";

#[test]
fn claude_argv() {
    let h = built_in("claude");
    assert_eq!(h.program(), "claude");
    assert!(h.mints_session_id());
    assert!(uuid::Uuid::parse_str(&h.mint_session_id().unwrap()).is_ok());
    assert_eq!(
        h.fresh_argv("do it", Some("u-1")),
        strings(&["claude", "--session-id", "u-1", "do it"])
    );
    assert_eq!(
        h.resume_argv("go on", "u-1"),
        Some(strings(&["claude", "--resume", "u-1", "go on"]))
    );
    assert_eq!(h.resume_argv("go on", ""), None);
    assert_eq!(
        h.oneshot_argv("review", None, Path::new(FILE)),
        Some(strings(&[
            "claude",
            "-p",
            "review",
            "--output-format",
            "json"
        ]))
    );
    assert_eq!(
        h.oneshot_argv("review", Some("opus"), Path::new(FILE)),
        Some(strings(&[
            "claude",
            "-p",
            "review",
            "--output-format",
            "json",
            "--model",
            "opus"
        ]))
    );
    assert_eq!(h.oneshot_output(), OneShotOutput::Stdout);
}

#[test]
fn codex_argv() {
    let h = built_in("codex");
    assert!(!h.mints_session_id());
    assert_eq!(h.mint_session_id(), None);
    // Its "Approaching rate limits" model nudge hidden: a menu that would hold every
    // delivery (issue 43).
    let nudge = "notice.hide_rate_limit_model_nudge=true";
    assert_eq!(
        h.fresh_argv("do it", None),
        strings(&["codex", "-c", nudge, "do it"])
    );
    assert_eq!(
        h.resume_argv("go on", "abc"),
        Some(strings(&["codex", "resume", "-c", nudge, "abc", "go on"]))
    );
    assert_eq!(h.resume_argv("go on", ""), None, "never --last");
    assert_eq!(
        h.oneshot_argv("review", Some("gpt-5"), Path::new(FILE)),
        Some(strings(&[
            "codex",
            "exec",
            "--json",
            "--output-last-message",
            FILE,
            "review",
            "--model",
            "gpt-5"
        ]))
    );
    assert_eq!(h.oneshot_output(), OneShotOutput::LastMessageFile);
}

#[test]
fn cursor_argv() {
    let h = built_in("cursor");
    assert_eq!(h.program(), "cursor-agent");
    assert_eq!(
        h.fresh_argv("do it", Some("ignored")),
        strings(&["cursor-agent", "do it"])
    );
    assert_eq!(h.resume_argv("go on", "abc"), None);
    assert_eq!(
        h.oneshot_argv("review", Some("gpt"), Path::new(FILE)),
        Some(strings(&[
            "cursor-agent",
            "-p",
            "review",
            "--output-format",
            "json",
            "-m",
            "gpt"
        ]))
    );
}

#[test]
fn custom_harness_substitutes_inside_single_elements() {
    let entry = HarnessConfig {
        command: "agent".into(),
        args: strings(&["--id={sessionId}", "--", "{prompt}"]),
        resume_args: strings(&["resume", "{sessionId}", "{prompt}"]),
        oneshot_args: strings(&[
            "run",
            "--model={model}",
            "--out",
            "{outputFile}",
            "{prompt}",
        ]),
    };
    let h = Harness::resolve("mine", &config(&[("mine", entry)])).unwrap();
    assert!(h.mints_session_id());
    let prompt = "a prompt; with $(shell) `chars` and {model}";
    assert_eq!(
        h.fresh_argv(prompt, Some("s1")),
        strings(&["agent", "--id=s1", "--", prompt])
    );
    assert_eq!(
        h.fresh_argv("p", None),
        strings(&["agent", "--", "p"]),
        "an element without its value is left out"
    );
    assert_eq!(
        h.resume_argv("p", "s1"),
        Some(strings(&["agent", "resume", "s1", "p"]))
    );
    assert_eq!(
        h.oneshot_argv("p", Some("m1"), Path::new(FILE)),
        Some(strings(&["agent", "run", "--model=m1", "--out", FILE, "p"]))
    );
    assert_eq!(
        h.oneshot_argv("p", None, Path::new(FILE)),
        Some(strings(&["agent", "run", "--out", FILE, "p"]))
    );
    assert_eq!(h.oneshot_output(), OneShotOutput::LastMessageFile);
}

#[test]
fn custom_harness_without_resume_or_oneshot() {
    let entry = HarnessConfig {
        command: "agent".into(),
        args: strings(&["{prompt}"]),
        ..Default::default()
    };
    let h = Harness::resolve("mine", &config(&[("mine", entry)])).unwrap();
    assert!(!h.mints_session_id());
    assert_eq!(h.resume_argv("p", "s1"), None);
    assert_eq!(h.oneshot_argv("p", None, Path::new(FILE)), None);
    assert_eq!(h.oneshot_output(), OneShotOutput::Stdout);
}

#[test]
fn config_overrides_built_ins_by_name() {
    let only_command = HarnessConfig {
        command: "/opt/claude/bin/claude".into(),
        ..Default::default()
    };
    let h = Harness::resolve("claude", &config(&[("claude", only_command)])).unwrap();
    assert_eq!(
        h.fresh_argv("x", Some("u")),
        strings(&["/opt/claude/bin/claude", "--session-id", "u", "x"])
    );

    let replaced = HarnessConfig {
        command: "my-claude".into(),
        args: strings(&["--fast", "{prompt}"]),
        ..Default::default()
    };
    let h = Harness::resolve("claude", &config(&[("claude", replaced)])).unwrap();
    assert_eq!(
        h.fresh_argv("x", None),
        strings(&["my-claude", "--fast", "x"])
    );
    assert!(!h.mints_session_id());
    assert_eq!(h.resume_argv("x", "u"), None);
}

#[test]
fn unknown_and_empty_harnesses_are_clear_errors() {
    let err = Harness::resolve("nope", &SessionsConfig::default()).unwrap_err();
    assert!(matches!(err, HarnessError::Unknown { .. }));
    assert!(err.to_string().contains("sessions.harnesses.nope"), "{err}");
    let err = Harness::resolve("x", &config(&[("x", HarnessConfig::default())])).unwrap_err();
    assert_eq!(err, HarnessError::NoCommand { name: "x".into() });
}

#[test]
fn prompts_never_become_options() {
    for name in crate::config::BUILT_IN_HARNESSES {
        let h = built_in(name);
        let argv = h.fresh_argv("--dangerously-skip-permissions", Some("u"));
        assert_eq!(argv.last().unwrap(), " --dangerously-skip-permissions");
        // opencode has no one-shot the-loop runs (its `run` prints a conversation).
        match h.oneshot_argv("-rf", None, Path::new(FILE)) {
            Some(argv) => assert!(argv.iter().all(|a| a != "-rf"), "{argv:?}"),
            None => assert_eq!(*name, "opencode"),
        }
    }
}

#[test]
fn missing_binary_is_found_missing_on_path() {
    let dir = tempfile::tempdir().unwrap();
    let h = built_in("codex");
    let err = h.locate(Some(dir.path().as_os_str())).unwrap_err();
    assert_eq!(
        err,
        HarnessError::NotFound {
            harness: "codex".into(),
            program: "codex".into()
        }
    );
    assert!(err.to_string().contains("not on PATH"), "{err}");

    use std::os::unix::fs::PermissionsExt;
    let bin = dir.path().join("codex");
    std::fs::write(&bin, "#!/bin/sh\n").unwrap();
    assert!(
        h.locate(Some(dir.path().as_os_str())).is_err(),
        "not executable"
    );
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(h.locate(Some(dir.path().as_os_str())).unwrap(), bin);
    assert_eq!(
        crate::paths::find_program(bin.to_str().unwrap(), Some(OsStr::new(""))),
        Some(bin)
    );
}

#[test]
fn hooks_are_wired_into_the_interactive_argv_only() {
    let wiring = HookWiring {
        bin: PathBuf::from("/opt/my bin/the-loop"),
        settings_file: Some(PathBuf::from("/state/harness/s/claude-settings.json")),
    };
    let claude = built_in("claude").with_hooks(wiring.clone());
    assert_eq!(claude.hook_support(), HookSupport::SettingsFile);
    assert_eq!(
        claude.fresh_argv("do it", Some("u-1")),
        strings(&[
            "claude",
            "--settings",
            "/state/harness/s/claude-settings.json",
            "--session-id",
            "u-1",
            "do it"
        ])
    );
    assert_eq!(
        claude.resume_argv("go on", "u-1"),
        Some(strings(&[
            "claude",
            "--settings",
            "/state/harness/s/claude-settings.json",
            "--resume",
            "u-1",
            "go on"
        ]))
    );
    assert_eq!(
        claude.oneshot_argv("review", None, Path::new(FILE)),
        built_in("claude").oneshot_argv("review", None, Path::new(FILE)),
        "critics are not sessions"
    );
    let codex = built_in("codex").with_hooks(wiring);
    assert_eq!(codex.hook_support(), HookSupport::TurnNotify);
    let notify = r#"notify=["/opt/my bin/the-loop","hook","codex"]"#;
    let asked = r#"hooks.PermissionRequest=[{matcher="",hooks=[{type="command",command="'/opt/my bin/the-loop' hook codex",timeout=5}]}]"#;
    let prompt = r#"hooks.UserPromptSubmit=[{hooks=[{type="command",command="'/opt/my bin/the-loop' hook codex",timeout=5}]}]"#;
    let fresh = codex.fresh_argv("do it", None);
    assert_eq!(fresh[..3], strings(&["codex", "-c", notify])[..]);
    assert_eq!(fresh.last().map(String::as_str), Some("do it"));
    for flag in [
        "--dangerously-bypass-hook-trust",
        "features.hooks=true",
        "notice.hide_rate_limit_model_nudge=true",
        asked,
        prompt,
    ] {
        assert!(fresh.iter().any(|f| f == flag), "{flag} in {fresh:?}");
    }
    assert!(
        !fresh.iter().any(|f| f.starts_with("hooks.Stop")),
        "notify ends the turn"
    );
    let resumed = codex.resume_argv("go on", "abc").unwrap();
    assert_eq!(
        resumed[..4],
        strings(&["codex", "resume", "-c", notify])[..]
    );
    assert_eq!(resumed[resumed.len() - 2..], strings(&["abc", "go on"])[..]);
    assert_eq!(resumed[2..resumed.len() - 2], fresh[1..fresh.len() - 1]);
    assert_eq!(built_in("cursor").hook_support(), HookSupport::None);
}

#[test]
fn the_permission_mode_is_passed_to_every_interactive_claude_session() {
    for mode in PermissionMode::ALL {
        let claude = built_in("claude").with_permission_mode(mode);
        assert_eq!(claude.permission_mode(), Some(mode));
        let flag = strings(&["--permission-mode", mode.as_str()]);
        let fresh = claude.fresh_argv("do it", Some("u-1"));
        assert_eq!(fresh[1..3], flag[..], "{fresh:?}");
        assert_eq!(fresh.last().map(String::as_str), Some("do it"));
        let resumed = claude.resume_argv("go on", "u-1").unwrap();
        assert_eq!(resumed[1..3], flag[..], "{resumed:?}");
        assert_eq!(
            claude.oneshot_argv("review", None, Path::new(FILE)),
            built_in("claude").oneshot_argv("review", None, Path::new(FILE)),
            "critics run once, answer nothing and take no mode"
        );
    }
    // Other harnesses take no Claude flag.
    for name in ["codex", "cursor"] {
        let other = built_in(name).with_permission_mode(PermissionMode::Default);
        assert_eq!(other.permission_mode(), None);
        assert!(
            !other
                .fresh_argv("do it", None)
                .contains(&"--permission-mode".to_string())
        );
    }
    // Set, a prompt that looks like the flag stays the prompt.
    let claude = built_in("claude").with_permission_mode(PermissionMode::Plan);
    let argv = claude.fresh_argv("--permission-mode bypassPermissions", None);
    assert_eq!(argv[1..3], strings(&["--permission-mode", "plan"])[..]);
    assert_ne!(argv.last().map(String::as_str), Some("bypassPermissions"));
}

#[test]
fn only_claude_code_and_codex_have_a_known_screen() {
    assert_eq!(built_in("claude").screen(), ScreenKind::Claude);
    assert_eq!(built_in("codex").screen(), ScreenKind::Codex);
    let moved = HarnessConfig {
        command: "/opt/claude/bin/claude".into(),
        ..HarnessConfig::default()
    };
    let moved = Harness::resolve("claude", &config(&[("claude", moved)])).unwrap();
    assert_eq!(moved.screen(), ScreenKind::Claude, "only the binary moved");
    let custom = HarnessConfig {
        command: "claude".into(),
        args: strings(&["--verbose", "{prompt}"]),
        ..HarnessConfig::default()
    };
    for harness in [
        Harness::resolve("claude", &config(&[("claude", custom.clone())])).unwrap(),
        Harness::resolve("mine", &config(&[("mine", custom)])).unwrap(),
        built_in("cursor"),
    ] {
        assert_eq!(harness.screen(), ScreenKind::Unknown, "{}", harness.name());
    }
    assert_eq!(ScreenKind::Claude.as_str(), "claude");
    assert_eq!(ScreenKind::Codex.as_str(), "codex");
    assert_eq!(ScreenKind::Unknown.as_str(), "unknown");
}
