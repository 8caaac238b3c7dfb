//! SPEC §16.6 through the real binary: before the `claude` harness starts in a new
//! worktree, `~/.claude.json` gains `projects.<worktree>.hasTrustDialogAccepted` and
//! nothing else changes. (A stand-in binary runs as `claude` here, so the file is
//! compared before anything else could write it; tests/claude/claude_code.rs boots the real
//! Claude Code the same way.)

use crate::support::e2e::{Setup, item};
use crate::support::workspaces::{Repo, workspace_of};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trust_mark_is_the_only_change_to_claude_codes_config() {
    let repo = Repo::new();
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join(".claude.json");
    let before = json!({
        "numStartups": 7,
        "hasCompletedOnboarding": true,
        "theme": "dark",
        "projects": {
            "/elsewhere": {"allowedTools": ["Bash(ls:*)"], "hasTrustDialogAccepted": false}
        },
        "zLast": [1, 2.5, "three", null]
    });
    std::fs::write(&file, serde_json::to_string_pretty(&before).unwrap()).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let setup = Setup {
        env: vec![
            ("HOME".into(), home.path().display().to_string()),
            ("CLAUDE_CONFIG_DIR".into(), String::new()),
        ],
        ..Setup::default()
    };
    let w = repo.world(setup).await;
    // `claude` is the built-in adapter with its binary moved: `true` ignores the argv.
    let yaml = w
        .config_yaml(&w.setup.clone())
        .replace("  harness: fake\n", "  harness: claude\n")
        .replace("    fake:\n", "    claude:\n");
    let yaml = yaml
        .lines()
        .filter(|l| !l.trim_start().starts_with("args:"))
        .map(|l| {
            if l.trim_start().starts_with("command:") {
                "      command: true".to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&w.config, yaml).unwrap();
    w.watched_issue(9);
    w.cli(&["sessions", "start", &item(9)]).assert().success();
    let worktree = workspace_of(&w, 9).canonicalize().unwrap();

    let after: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let key = worktree.display().to_string();
    assert_eq!(
        after["projects"][&key],
        json!({"hasTrustDialogAccepted": true})
    );
    let mut without = after.clone();
    without["projects"].as_object_mut().unwrap().remove(&key);
    assert_eq!(without, before, "nothing else changed");
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&after), keys(&before), "same keys, same order");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the file keeps its mode");
    // Only the directory the agent starts in is marked, not the operator's checkout.
    assert!(
        after["projects"]
            .get(repo.clone.display().to_string())
            .is_none()
    );
}
