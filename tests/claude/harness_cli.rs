//! Every built-in adapter's argv (fresh, resume, one-shot; hooks wired) against the real
//! CLI's own help (SPEC §17.5): a flag the adapter passes that the CLI no longer lists
//! fails here, before it fails an operator's session. Claude Code, Codex and opencode
//! install from npm (`scripts/check`, pinned versions); Cursor's agent is not on a registry this
//! suite can reach, so its argv is checked only by the unit tests (docs/guide.md says so).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::claude;
use std::path::{Path, PathBuf};
use std::process::Command;
use the_loop::config::SessionsConfig;
use the_loop::harness::{Harness, HookWiring};

/// `<bin> [sub] --help`, run with a private HOME so nothing of the developer's is read.
fn help(bin: &Path, sub: Option<&str>) -> String {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(bin)
        .args(sub)
        .arg("--help")
        .env("HOME", home.path())
        .env("CODEX_HOME", home.path().join(".codex"))
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("TMPDIR", home.path())
        .env("XDG_DATA_HOME", home.path().join(".local/share"))
        .env("XDG_CONFIG_HOME", home.path().join(".config"))
        .env("XDG_CACHE_HOME", home.path().join(".cache"))
        .env("XDG_STATE_HOME", home.path().join(".local/state"))
        .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{bin:?} {sub:?} --help: {out:?}");
    // opencode prints its help on stderr.
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    text
}

/// The built-in adapter `name` with its hooks wired, as sessions run it (with Claude's
/// permission mode and codex's policy, which each passes on every start and resume).
fn adapter(name: &str) -> Harness {
    let sessions = SessionsConfig::default();
    Harness::resolve(name, &sessions)
        .unwrap()
        .with_permission_mode(sessions.permission_mode)
        .with_codex_policy(sessions.codex)
        .with_hooks(HookWiring {
            bin: PathBuf::from("/opt/the-loop/bin/the-loop"),
            settings_file: Some(PathBuf::from("/state/harness/x/claude-settings.json")),
        })
}

/// Every argv the adapter builds, with the subcommand each runs (if any).
fn argvs(h: &Harness) -> Vec<Vec<String>> {
    let file = Path::new("/tmp/last-message.txt");
    let mut all = vec![
        h.fresh_argv("do the work", Some("0b3c6d2e-0000-4000-8000-000000000001")),
        h.oneshot_argv("review this", Some("some-model"), file)
            .unwrap(),
    ];
    all.extend(h.resume_argv("go on", "0b3c6d2e-0000-4000-8000-000000000001"));
    all
}

/// Whether `help` lists `flag` as an option (`--json`, `-c`, `-c, --config`).
fn lists(help: &str, flag: &str) -> bool {
    help.split(|c: char| c.is_whitespace() || c == ',' || c == '[' || c == '=')
        .any(|word| word == flag)
}

fn check(bin: &Path, name: &str, subcommands: &[&str]) {
    let top = help(bin, None);
    for argv in argvs(&adapter(name)) {
        let sub = argv
            .get(1)
            .map(String::as_str)
            .filter(|a| subcommands.contains(a));
        if let Some(sub) = sub {
            assert!(
                lists(&top, sub),
                "`{name} --help` no longer lists the `{sub}` the adapter runs:\n{top}"
            );
        }
        let text = sub.map_or_else(|| top.clone(), |s| help(bin, Some(s)));
        for arg in argv.iter().skip(1) {
            if !arg.starts_with('-') {
                continue;
            }
            let flag = arg.split('=').next().unwrap();
            assert!(
                lists(&text, flag),
                "`{name}{}` no longer lists `{flag}`, which the adapter passes in {argv:?}:\n{text}",
                sub.map(|s| format!(" {s}")).unwrap_or_default()
            );
        }
    }
}

#[test]
fn claude_code_still_takes_every_flag_the_adapter_passes() {
    let Some(bin) = claude::claude_bin() else {
        return;
    };
    let flags: Vec<String> = argvs(&adapter("claude")).concat();
    for expected in [
        "--settings",
        "--session-id",
        "--resume",
        "-p",
        "--output-format",
        "--model",
    ] {
        assert!(
            flags.iter().any(|f| f == expected),
            "{expected} in {flags:?}"
        );
    }
    check(&bin, "claude", &[]);
}

#[test]
fn codex_still_takes_every_flag_and_subcommand_the_adapter_passes() {
    let Some(bin) = claude::npm_bin("codex", "THE_LOOP_CODEX_BIN", "Codex") else {
        return;
    };
    let all = argvs(&adapter("codex"));
    let flat = all.concat();
    for expected in [
        "-c",
        "exec",
        "--json",
        "--output-last-message",
        "resume",
        "--model",
        "--dangerously-bypass-hook-trust",
    ] {
        assert!(flat.iter().any(|f| f == expected), "{expected} in {flat:?}");
    }
    assert!(
        flat.iter()
            .any(|f| f == r#"notify=["/opt/the-loop/bin/the-loop","hook","codex"]"#),
        "the notify hook is wired: {flat:?}"
    );
    assert!(
        flat.iter()
            .any(|f| f == "notice.hide_rate_limit_model_nudge=true"),
        "codex's model nudge hidden: {flat:?}"
    );
    check(&bin, "codex", &["exec", "resume"]);
}

/// opencode (issue 44): the server's argv (`serve`), the TUI attached to it (`attach`),
/// and the TUI alone (fresh, resume), each flag against its subcommand's help.
#[test]
fn opencode_still_takes_every_flag_and_subcommand_the_adapter_passes() {
    let Some(bin) = claude::npm_bin("opencode", "THE_LOOP_OPENCODE_BIN", "opencode") else {
        return;
    };
    let attached =
        adapter("opencode").with_opencode_server(4242, "http://127.0.0.1:4242", Path::new("/w/p"));
    let alone = adapter("opencode");
    let argvs = [
        attached.opencode_server_argv().unwrap(),
        attached.opencode_tui_argv("ses_1").unwrap(),
        attached.fresh_argv("do the work", None),
        alone.fresh_argv("do the work", None),
        alone.resume_argv("go on", "ses_1").unwrap(),
    ];
    let top = help(&bin, None);
    for argv in argvs {
        let sub = argv
            .get(1)
            .map(String::as_str)
            .filter(|a| ["serve", "attach"].contains(a));
        let text = sub.map_or_else(|| top.clone(), |s| help(&bin, Some(s)));
        for flag in argv.iter().skip(1).filter(|a| a.starts_with('-')) {
            assert!(
                lists(&text, flag),
                "opencode no longer lists `{flag}` ({argv:?}):\n{text}"
            );
        }
    }
}

#[test]
fn a_flag_the_cli_does_not_list_is_caught() {
    // The checker itself: a made-up flag is not found in a real-looking help.
    let help =
        "Options:\n  -c, --config <key=value>\n      --json\n  -o, --output-last-message <FILE>\n";
    assert!(lists(help, "-c") && lists(help, "--config") && lists(help, "--json"));
    assert!(!lists(help, "--jsonl") && !lists(help, "--notify"));
}
