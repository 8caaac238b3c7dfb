//! Wiring a session's harness to `the-loop hook` (SPEC §17.2, §17.5).
//!
//! - `claude`: a settings file per session, `<state>/harness/<slug>/claude-settings.json`
//!   (0600 in a 0700 directory), passed with `--settings` — which adds to the operator's
//!   own Claude settings and changes none of them. It declares one command hook,
//!   `<bin> hook claude`, for each event of [`CLAUDE_EVENTS`] (matcher `""` where the
//!   event takes one), and allows `the-loop ask` and `the-loop comment` without a
//!   permission dialog.
//! - `codex`: `-c notify=["<bin>","hook","codex"]` and a command hook `<bin> hook codex`
//!   per `harness::CODEX_HOOK_EVENTS`, declared with `-c` (`harness::Harness::fresh_argv`),
//!   no file.
//!
//! `<bin>` is the running binary's absolute path. Claude runs a hook's `command`
//! through a shell, so the path is quoted for it (`shlex`); nothing of ours runs a
//! shell.

use super::super::settings::Settings;
use crate::harness::{Harness, HookSupport, HookWiring};
use crate::paths::StatePaths;
use crate::work_item::WorkItemRef;
use serde_json::{Value, json};
use std::io;
use std::path::{Path, PathBuf};

/// The Claude Code events the settings file hooks, and whether each takes a matcher.
pub const CLAUDE_EVENTS: [(&str, bool); 9] = [
    ("SessionStart", true),
    ("UserPromptSubmit", false),
    ("PreToolUse", true),
    ("PermissionRequest", true),
    ("PostToolUse", true),
    ("Notification", true),
    ("Stop", false),
    // A turn that ended on an API error (matched on its `error`): limits (issue 43).
    ("StopFailure", true),
    ("SessionEnd", true),
];

/// Claude cancels a hook that runs longer than this (its default is 10 minutes); the
/// hook gives up on its own well before (see `report`).
pub const HOOK_TIMEOUT_SECS: u64 = 5;

/// The file name of claude's per-session settings.
pub const CLAUDE_SETTINGS: &str = "claude-settings.json";

/// `harness` with its hooks wired for `item`'s session. When the settings file cannot
/// be written the session still starts, on the screen heuristic, with a warning.
pub fn wire(harness: Harness, settings: &Settings, item: &WorkItemRef) -> Harness {
    let bin = settings.bin.clone();
    match harness.hook_support() {
        HookSupport::None => harness,
        HookSupport::TurnNotify => harness.with_hooks(HookWiring {
            bin,
            settings_file: None,
        }),
        HookSupport::SettingsFile => {
            let paths = StatePaths::new(&settings.home);
            match write_claude_settings(&paths, item, &bin) {
                Ok(file) => harness.with_hooks(HookWiring {
                    bin,
                    settings_file: Some(file),
                }),
                Err(error) => {
                    tracing::warn!(work_item = %item, "hooks not wired (the session's state will be guessed from its screen): {error}");
                    harness
                }
            }
        }
    }
}

/// The directory of `item`'s harness files.
pub fn session_dir(paths: &StatePaths, item: &WorkItemRef) -> PathBuf {
    paths.root.join("harness").join(item.slug())
}

/// Writes `item`'s claude settings file (atomically, 0600 in a 0700 directory) and
/// returns its path.
pub fn write_claude_settings(
    paths: &StatePaths,
    item: &WorkItemRef,
    bin: &Path,
) -> io::Result<PathBuf> {
    let file = session_dir(paths, item).join(CLAUDE_SETTINGS);
    crate::fsutil::atomic_write_json(&file, &claude_settings(bin)?)?;
    Ok(file)
}

/// The settings: a `<bin> hook claude` command hook for every event of
/// [`CLAUDE_EVENTS`], `permissions.allow` for `the-loop ask` and `the-loop comment`,
/// each by name and by path, and no messages from other sessions.
pub fn claude_settings(bin: &Path) -> io::Result<Value> {
    let bin_text = bin.to_str().ok_or_else(|| {
        io::Error::other(format!("the-loop's path {} is not UTF-8", bin.display()))
    })?;
    let quoted = shlex::try_quote(bin_text).map_err(io::Error::other)?;
    let hook = json!([{
        "type": "command",
        "command": format!("{quoted} hook claude"),
        "timeout": HOOK_TIMEOUT_SECS,
    }]);
    let mut hooks = serde_json::Map::new();
    for (event, matcher) in CLAUDE_EVENTS {
        let entry = if matcher {
            json!([{"matcher": "", "hooks": hook}])
        } else {
            json!([{"hooks": hook}])
        };
        hooks.insert(event.to_string(), entry);
    }
    Ok(json!({
        "hooks": hooks,
        // Claude Code 2.1.224+ takes messages from any process of the user on a
        // per-session socket (its cross-session inbox); a session the-loop feeds takes
        // text only through the-loop: authorized, framed, recorded (decision
        // 2026-12-04-current-claude-code). Releases without the inbox ignore the key.
        "crossSessionInbound": "refuse",
        "permissions": {
            "allow": [
                "Bash(the-loop ask:*)",
                format!("Bash({bin_text} ask:*)"),
                "Bash(the-loop comment:*)",
                format!("Bash({bin_text} comment:*)"),
            ],
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_settings_hook_every_event_and_allow_ask_and_comment() {
        let settings = claude_settings(Path::new("/opt/my tools/the-loop")).unwrap();
        assert_eq!(settings["crossSessionInbound"], "refuse");
        let hooks = settings["hooks"].as_object().unwrap();
        assert_eq!(hooks.len(), 9);
        for (event, matcher) in CLAUDE_EVENTS {
            let entry = &hooks[event][0];
            assert_eq!(entry.get("matcher").is_some(), matcher, "{event}");
            if matcher {
                assert_eq!(entry["matcher"], "");
            }
            assert_eq!(entry["hooks"][0]["type"], "command");
            assert_eq!(
                entry["hooks"][0]["command"], "'/opt/my tools/the-loop' hook claude",
                "quoted for the shell Claude runs it with"
            );
            assert_eq!(entry["hooks"][0]["timeout"], HOOK_TIMEOUT_SECS);
        }
        assert_eq!(
            settings["permissions"]["allow"],
            json!([
                "Bash(the-loop ask:*)",
                "Bash(/opt/my tools/the-loop ask:*)",
                "Bash(the-loop comment:*)",
                "Bash(/opt/my tools/the-loop comment:*)",
            ])
        );
    }

    #[test]
    fn a_path_that_would_break_out_of_the_quotes_is_still_one_word() {
        let settings = claude_settings(Path::new("/tmp/x'; touch pwned; '/the-loop")).unwrap();
        let command = settings["hooks"]["Stop"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .to_string();
        let words = shlex::split(&command).unwrap();
        assert_eq!(
            words,
            ["/tmp/x'; touch pwned; '/the-loop", "hook", "claude"]
        );
    }

    #[test]
    fn the_file_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        let item = WorkItemRef::new("octo", "repo", 15);
        let file = write_claude_settings(&paths, &item, Path::new("/bin/the-loop")).unwrap();
        assert!(file.starts_with(session_dir(&paths, &item)));
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(file.parent().unwrap()), 0o700);
        let written: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(
            written,
            claude_settings(Path::new("/bin/the-loop")).unwrap()
        );
        // Written again (a respawn): same file, same content.
        assert_eq!(
            write_claude_settings(&paths, &item, Path::new("/bin/the-loop")).unwrap(),
            file
        );
    }
}
