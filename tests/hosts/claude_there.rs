//! The real Claude Code on the host (the pinned release under test, offline against the
//! tests' fake model on loopback): started there in a pane of the host's tmux, in a
//! directory the-loop trusted there, with its hooks running the-loop installed there.
//! An authorized comment reaches the model once; each turn's end and what it used come
//! back over the forwarded socket, and the record here equals what the model reported.

use super::agents::serve_for;
use super::remote_sessions::{opened_with, spawned};
use crate::support::claude::{API_KEY, ClaudeVersion, claude_bin};
use crate::support::fake_model::{FakeModel, Sent, Turn};
use crate::support::sshd::Sshd;
use crate::support::tmux_server::wait_for;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use the_loop::events::EventLog;
use the_loop::events::lines::named;
use the_loop::github::Client;
use the_loop::session::PromptInputs;
use the_loop::work_item::WorkItemRef;

/// Long enough for Claude Code's first start on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(90);

/// Writes `text` to `path` in the host user's home, as that user (so it is theirs).
fn write_as_user(sshd: &Sshd, path: &std::path::Path, text: &str) {
    let made = sshd.run_as_user(&["mkdir", "-p", path.parent().unwrap().to_str().unwrap()]);
    assert!(made.status.success(), "{made:?}");
    let of = format!("of={}", path.display());
    let out = sshd.run_as_user_with(&["dd", &of, "status=none"], Some(text.as_bytes()));
    assert!(out.status.success(), "{out:?}");
}

/// The host user's Claude Code set up as a user of it would have it, offline: onboarding
/// done, the dummy key approved, and (user settings' `env`) the model at the fake, no
/// updater, no telemetry. Trust is left to the-loop.
fn claude_home_on_host(sshd: &Sshd, model: &FakeModel) {
    let home = sshd.home();
    let config = json!({
        "hasCompletedOnboarding": true,
        "customApiKeyResponses": {"approved": [&API_KEY[API_KEY.len() - 20..]], "rejected": []},
    });
    write_as_user(sshd, &home.join(".claude.json"), &config.to_string());
    let settings = json!({"env": {
        "ANTHROPIC_API_KEY": API_KEY,
        "ANTHROPIC_BASE_URL": model.url,
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
    }});
    write_as_user(
        sshd,
        &home.join(".claude/settings.json"),
        &settings.to_string(),
    );
}

/// Claude Code's binary (one file since 2.1: the native build) copied to the host
/// user's `~/bin`, owned by them; where it runs there.
fn install_on_host(sshd: &Sshd, claude: &std::path::Path) -> std::path::PathBuf {
    let bin = sshd.home().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let there = bin.join("claude");
    std::fs::copy(claude, &there).unwrap();
    let owner = format!("{0}:{0}", sshd.user());
    let out = std::process::Command::new("chown")
        .args(["-R", &owner])
        .arg(&bin)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    there
}

/// Input and output tokens the agent loop's responses reported.
fn sums(sent: &[Sent]) -> (u64, u64) {
    sent.iter()
        .filter(|s| s.agent_loop)
        .fold((0, 0), |(i, o), s| {
            let n = |v: &Value| v.as_u64().unwrap();
            (
                i + n(&s.usage["input_tokens"]),
                o + n(&s.usage["output_tokens"]),
            )
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_on_the_host_takes_a_comment_once_and_reports_its_turns_back() {
    if !Sshd::available() {
        return;
    }
    let Some(claude) = claude_bin() else {
        return;
    };
    let claude = std::fs::canonicalize(&claude).unwrap();
    let version = ClaudeVersion::of(&claude);
    let sshd = Sshd::start();
    let model = FakeModel::start().await;
    model.vary_usage();
    claude_home_on_host(&sshd, &model);
    // Installed on the host, as its user's own: the same release, whatever the
    // permissions of the checkout it came from.
    let claude = install_on_host(&sshd, &claude);
    let there = sshd.run_as_user(&[claude.to_str().unwrap(), "--version"]);
    assert!(
        String::from_utf8_lossy(&there.stdout).contains(&version.to_string()),
        "the host's user cannot run {}: {there:?}",
        claude.display()
    );

    let opened = opened_with(&sshd, None, |yaml| {
        yaml.replace("  harness: fake\n", "  harness: claude\n")
            .replace(
                "  harnesses:\n",
                &format!(
                    "  harnesses:\n    claude: {{command: \"{}\"}}\n",
                    claude.display()
                ),
            )
            .replace("submitDelayMs: 50", "submitDelayMs: 150")
    });
    let (sessions, host, paths) = (&opened.sessions, &opened.host, &opened.paths);
    let events = EventLog::open(paths);
    let client = Arc::new(Client::builder("http://127.0.0.1:9").build().unwrap());
    let socket = serve_for(sessions, host, paths, &opened.loaded, client, &events).await;
    let turns_ended = |n: usize| {
        let log = events.path().to_path_buf();
        async move {
            let ended = named(&log, "session.turn_ended");
            (ended.len() >= n).then_some(ended)
        }
    };

    // The boot prompt is the first turn; its end comes back from the host's hook.
    let item = WorkItemRef::new("octo", "repo", 15);
    model.script([Turn::text("Ready on the host.")]);
    let record = spawned(sessions, &item).await;
    assert_eq!(record.host.as_deref(), Some(super::remote_sessions::HOST));
    let ended = wait_for("the boot turn's end, from the host", PATIENCE, || {
        turns_ended(1)
    })
    .await;
    assert_eq!(ended[0]["work_item"], "github:octo/repo#15");

    // Alice's comment is pasted into the box there and submitted, once.
    model.script([Turn::text("Done on the host.")]);
    let excerpt =
        json!({"comment": {"user": {"login": "alice"}, "body": "host-marker-7: retry twice"}})
            .to_string();
    let inputs = PromptInputs {
        event: "issue_comment".into(),
        action: "created".into(),
        delivery_id: "d-host-1".into(),
        repository: "octo/repo".into(),
        excerpt,
    };
    sessions.deliver_event(&item, &inputs).await.unwrap();
    wait_for("the comment's turn's end", PATIENCE, || turns_ended(2)).await;
    let reached: Vec<String> = model
        .agent_requests()
        .iter()
        .filter_map(|r| r.fresh_text())
        .filter(|t| t.contains("host-marker-7"))
        .collect();
    assert_eq!(reached.len(), 1, "{reached:#?}");
    assert!(reached[0].contains("retry twice"), "{}", reached[0]);

    // What both turns used comes back whole from the host and equals what was reported.
    let want = sums(&model.sent());
    assert!(want.0 > 0, "{:?}", model.sent().len());
    let told = wait_for("session.usage equal to the model's", PATIENCE, || {
        let told = named(events.path(), "session.usage");
        async move {
            told.into_iter().rev().find(|t| {
                (t["input"].as_u64(), t["output"].as_u64()) == (Some(want.0), Some(want.1))
            })
        }
    })
    .await;
    assert_eq!(told["work_item"], "github:octo/repo#15");
    let record = sessions.registry().get(&item).unwrap().unwrap();
    let tokens = record.usage.tally().tokens();
    assert_eq!((tokens.input, tokens.output), want);
    // The hooks ran the-loop there, which wrote nothing of the session's state there.
    assert!(!sshd.home().join(".tl/sessions").exists());

    socket.shutdown().await;
    host.transport.disconnect().await;
}
