//! SPEC §16.6 against the real Claude Code: started by `the-loop sessions start` in a
//! fresh worktree it boots without a trust dialog (the boot prompt is its first
//! message), and the keys of `~/.claude.json` the-loop did not set survive. The control
//! experiment (`sessions.trustWorkspaces: false`) shows the dialog that would otherwise
//! swallow the boot prompt.

use crate::support::claude::{API_KEY, claude_bin, user_messages};
use crate::support::tmux_server::{BIN, TmuxServer, wait_for};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use the_loop::tmux::{PaneId, Tmux};

/// What the trust dialog offers (2.1.197: `1. Yes, I trust this folder`; 2.1.332: `Yes, I trust this folder`).
const TRUST_DIALOG: &str = "trust this folder";

struct World {
    _dir: tempfile::TempDir,
    home: PathBuf,
    state: PathBuf,
    config: PathBuf,
    tmp: PathBuf,
    server: TmuxServer,
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// Claude Code's config before the-loop touches it: onboarding done, the dummy key
/// approved, another project, and keys the-loop must leave alone.
fn claude_json() -> Value {
    json!({
        "hasCompletedOnboarding": true,
        "customApiKeyResponses": {
            "approved": [&API_KEY[API_KEY.len() - 20..]],
            "rejected": []
        },
        "theLoopSentinel": {"nested": [1, 2.5, "kept"], "flag": false},
        "mcpServers": {"local": {"command": "true", "args": []}},
        "projects": {
            "/somewhere/else": {"allowedTools": ["Bash(ls:*)"], "hasTrustDialogAccepted": false}
        }
    })
}

impl World {
    fn new(bin: &Path, trust: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let repo = dir.path().join("repo");
        let state = dir.path().join("state");
        let tmp = dir.path().join("tmp");
        for d in [&home, &repo, &tmp] {
            std::fs::create_dir_all(d).unwrap();
        }
        git(&repo, &["init", "-q"]);
        std::fs::write(repo.join("README.md"), "x\n").unwrap();
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", "first"]);
        std::fs::write(
            home.join(".claude.json"),
            serde_json::to_string_pretty(&claude_json()).unwrap(),
        )
        .unwrap();
        let server = TmuxServer::new();
        let config = dir.path().join("config.yaml");
        std::fs::write(
            &config,
            format!(
                "repos:\n  - name: octo/repo\n    path: {}\nsessions:\n  harness: claude\n  trustWorkspaces: {trust}\n  harnesses:\n    claude:\n      command: {}\n  tmux:\n    socket: {}\n",
                repo.display(),
                bin.display(),
                server.socket
            ),
        )
        .unwrap();
        Self {
            _dir: dir,
            home,
            state,
            config,
            tmp,
            server,
        }
    }

    /// `the-loop sessions start github:octo/repo#1`, with Claude Code's offline
    /// environment (SPEC §17.6) for the tmux server it starts.
    fn start(&self) {
        let out = Command::new(BIN)
            .args(["sessions", "start", "github:octo/repo#1"])
            .env("HOME", &self.home)
            .env("THE_LOOP_HOME", &self.state)
            .env("THE_LOOP_CONFIG", &self.config)
            .env("ANTHROPIC_API_KEY", API_KEY)
            .env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_ERROR_REPORTING", "1")
            .env("TMPDIR", &self.tmp)
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }

    fn worktree(&self) -> PathBuf {
        self.state
            .join("worktrees/octo-repo/1")
            .canonicalize()
            .unwrap()
    }

    async fn pane(&self) -> PaneId {
        let tmux = self.server.tmux();
        let all = tmux.list_sessions().await.unwrap();
        all.into_iter()
            .find(|s| s.name == "loop-github-octo-repo-1")
            .expect("the session")
            .pane
    }

    fn claude_json(&self) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.home.join(".claude.json")).unwrap())
            .unwrap()
    }

    fn user_messages(&self) -> Vec<String> {
        user_messages(&self.home)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_boots_in_a_fresh_worktree_without_a_trust_dialog() {
    let Some(bin) = claude_bin() else { return };
    let world = World::new(&bin, true);
    world.start();
    let worktree = world.worktree();
    let pane = world.pane().await;
    let tmux = world.server.tmux();

    // The boot prompt is its first message: nothing held it up.
    let messages = wait_for(
        "the boot prompt in the transcript",
        Duration::from_secs(60),
        || async {
            let screen = tmux.capture_pane(&pane, false).await.ok()?;
            assert!(
                !screen.contains(TRUST_DIALOG),
                "the trust dialog showed:\n{screen}"
            );
            let m = world.user_messages();
            (!m.is_empty()).then_some(m)
        },
    )
    .await;
    assert!(
        messages[0].contains("the-loop started this session for github:octo/repo#1"),
        "{messages:?}"
    );
    let screen = tmux.capture_pane(&pane, false).await.unwrap();
    assert!(!screen.contains(TRUST_DIALOG), "{screen}");

    // The mark is there, for the worktree, and every key the-loop did not set survived
    // (Claude Code adds its own bookkeeping; nothing of ours or the operator's is lost).
    let after = world.claude_json();
    let key = worktree.display().to_string();
    assert_eq!(after["projects"][&key]["hasTrustDialogAccepted"], true);
    let before = claude_json();
    for k in [
        "hasCompletedOnboarding",
        "customApiKeyResponses",
        "theLoopSentinel",
        "mcpServers",
    ] {
        assert_eq!(after[k], before[k], "{k}");
    }
    assert_eq!(
        after["projects"]["/somewhere/else"],
        before["projects"]["/somewhere/else"]
    );
}

/// The control: without the mark, the same start stops at Claude Code's trust dialog
/// and the boot prompt never becomes a message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_trust_mark_claude_code_stops_at_its_trust_dialog() {
    let Some(bin) = claude_bin() else { return };
    let world = World::new(&bin, false);
    world.start();
    let pane = world.pane().await;
    let tmux = world.server.tmux();
    wait_for("the trust dialog", Duration::from_secs(60), || async {
        let screen = tmux.capture_pane(&pane, false).await.ok()?;
        screen.contains(TRUST_DIALOG).then_some(())
    })
    .await;
    assert!(
        world.user_messages().is_empty(),
        "the boot prompt waits behind it"
    );
    let key = world.worktree().display().to_string();
    assert_eq!(
        world.claude_json()["projects"].get(&key),
        None,
        "not marked"
    );
}
