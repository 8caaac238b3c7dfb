//! An agent on another host reaches the supervisor over the host's SSH connection: its
//! `the-loop ask` goes through the socket forwarded to `<stateDir>/operator.sock` there,
//! the supervisor posts with its own token, and the operator's reply is pasted back
//! into the remote pane. Only that host's sessions may ask, and only ask and comment
//! are served there.

use super::remote_sessions::{Started, started};
use crate::support::sshd::Sshd;
use crate::support::tmux_server::wait_for;
use std::sync::Arc;
use std::time::Duration;
use the_loop::config::LoadedConfig;
use the_loop::events::EventLog;
use the_loop::github::Client;
use the_loop::github::sim::{IssueSpec, SimGithub};
use the_loop::operator::{OperatorApi, serve_host};
use the_loop::paths::StatePaths;
use the_loop::session::Sessions;
use the_loop::session::reply::{Replier, ReplyRequest, Via};
use the_loop::tmux::RemoteHost;
use the_loop::work_item::WorkItemRef;

const TOKEN: &str = "ghp_remotehoststoken_0123456789abcdef";

/// `the-loop ARGS` run by the host's user, as a process in a pane there would run it.
pub(crate) fn on_host(sshd: &Sshd, work_item: &str, args: &[&str]) -> std::process::Output {
    on_host_with(sshd, work_item, args, None)
}

/// [`on_host`] with `input` on its stdin.
fn on_host_with(
    sshd: &Sshd,
    work_item: &str,
    args: &[&str],
    input: Option<&[u8]>,
) -> std::process::Output {
    let home = sshd.home();
    let state = format!("THE_LOOP_HOME={}/.tl", home.display());
    let bin = format!("{}/.tl/bin/the-loop", home.display());
    let item = format!("THE_LOOP_WORK_ITEM={work_item}");
    let mut argv = vec!["env", &state, &item, "THE_LOOP_HOST=build", &bin];
    argv.extend(args);
    sshd.run_as_user_with(&argv, input)
}

/// Serves the world's host's agents (as the supervisor does) with `client` for GitHub,
/// and has the next command over the connection set the forward up.
pub(crate) async fn serve(
    world: &Started,
    client: Arc<Client>,
    events: &EventLog,
) -> the_loop::operator::OperatorSocket {
    serve_for(
        &world.sessions,
        &world.host,
        &world.paths,
        &world.loaded,
        client,
        events,
    )
    .await
}

/// [`serve`] for a world whose session is not started yet (its first hook reports
/// must find the supervisor).
pub(crate) async fn serve_for(
    sessions: &Arc<Sessions>,
    host: &Arc<RemoteHost>,
    paths: &StatePaths,
    loaded: &LoadedConfig,
    client: Arc<Client>,
    events: &EventLog,
) -> the_loop::operator::OperatorSocket {
    let api = Arc::new(OperatorApi::new(
        Arc::clone(sessions),
        client,
        events.clone(),
    ));
    let socket = serve_host(
        api,
        host,
        &paths.ssh_dir(),
        the_loop::server::limits(&loaded.config.server),
        events.clone(),
    )
    .unwrap();
    host.transport
        .run(&["true".to_string()], None, Duration::from_secs(10))
        .await
        .unwrap();
    socket
}

pub(crate) fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_on_the_host_asks_through_the_forwarded_socket_and_the_reply_reaches_its_pane() {
    if !Sshd::available() {
        return;
    }
    let sshd = Sshd::start();
    let sim = SimGithub::start().await.unwrap();
    for n in [15, 16] {
        let spec = IssueSpec::new(&format!("Issue {n}"))
            .number(n)
            .author("carol")
            .labels(&["the-loop"]);
        sim.add_issue("octo/repo", spec).unwrap();
    }
    sim.require_token(Some(TOKEN));
    let world = started(&sshd, Some(&sim.base_url())).await;
    let (sessions, host, paths) = (&world.sessions, &world.host, &world.paths);
    let item = WorkItemRef::new("octo", "repo", 15);

    // Before anything serves the host's agents, a question there is refused, not lost
    // in the host's own state.
    let lonely = on_host(
        &sshd,
        "github:octo/repo#15",
        &["ask", "--question", "anyone?"],
    );
    assert_eq!(lonely.status.code(), Some(1), "{}", text(&lonely));
    assert!(
        text(&lonely).contains("the question was not sent"),
        "{}",
        text(&lonely)
    );

    let events = EventLog::open(paths);
    let client = Arc::new(
        Client::builder(&sim.base_url())
            .token(Some(TOKEN))
            .build()
            .unwrap(),
    );
    let socket = serve(&world, Arc::clone(&client), &events).await;
    // The forwarded socket is there, owned by the host's user.
    let remote_socket = sshd.home().join(".tl/operator.sock");
    assert!(remote_socket.exists(), "no {}", remote_socket.display());

    // The session asks; the supervisor posts it with its token (the host has none).
    let asked = on_host(
        &sshd,
        "github:octo/repo#15",
        &["ask", "--question", "Which branch should I base this on?"],
    );
    assert!(asked.status.success(), "{}", text(&asked));
    let posted = sim.comments_on("octo/repo", 15);
    assert_eq!(posted.len(), 1, "{posted:?}");
    assert!(
        posted[0]
            .body
            .contains("Which branch should I base this on?")
    );
    let awaiting = the_loop::events::lines::named(events.path(), "session.awaiting_input");
    assert_eq!(awaiting.len(), 1, "{awaiting:?}");

    // An agent there cannot speak for an item without a session on its host, …
    let other = on_host(&sshd, "github:octo/repo#16", &["ask", "--question", "me?"]);
    assert!(!other.status.success(), "{}", text(&other));
    assert!(
        text(&other).contains("no open session on host `build`"),
        "{}",
        text(&other)
    );
    let commented = on_host(
        &sshd,
        "github:octo/repo#16",
        &["comment", "--body", "done, says #16"],
    );
    assert!(!commented.status.success(), "{}", text(&commented));
    assert!(sim.comments_on("octo/repo", 16).is_empty());
    // … nor reply into a session as the operator: that route is not served there.
    let replied = on_host(
        &sshd,
        "github:octo/repo#15",
        &[
            "reply",
            "--work-item",
            "github:octo/repo#15",
            "--text",
            "approve everything",
        ],
    );
    assert!(!replied.status.success(), "{}", text(&replied));
    assert!(
        text(&replied).contains("`/api/v1/sessions/reply` is not served to host `build`"),
        "{}",
        text(&replied)
    );

    // The operator answers here; the answer reaches the pane on the host.
    let replier = Replier::new(Arc::clone(sessions));
    replier
        .reply(ReplyRequest {
            work_item: item.to_string(),
            text: "Base it on main.".into(),
            actor: None,
            comment: false,
            via: Via::Cli,
            over_budget: false,
        })
        .await
        .unwrap();
    let log = sshd.home().join("agent.jsonl");
    wait_for(
        "the reply in the agent's log",
        Duration::from_secs(30),
        || async {
            let text = std::fs::read_to_string(&log).ok()?;
            text.contains("Base it on main.").then_some(())
        },
    )
    .await;
    let log_text = std::fs::read_to_string(&log).unwrap();
    assert!(!log_text.contains("approve everything"), "{log_text}");
    assert_eq!(log_text.matches("Base it on main.").count(), 1);

    socket.shutdown().await;
    host.transport.disconnect().await;
    drop(sim);
    assert!(!paths.ssh_dir().join("build.agents.sock").exists());
}

/// A host whose sshd refuses forwarding: `hosts check` says the agents there cannot
/// reach the supervisor and what the host needs; the sessions still run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_check_names_a_host_whose_sshd_refuses_forwarding() {
    if !Sshd::available() {
        return;
    }
    let sshd = Sshd::start_with(&["AllowTcpForwarding no"]);
    let world = started(&sshd, None).await;
    let checked = super::remote_sessions::hosts_cli(
        &world.config_path(),
        &world.paths.root,
        &["check", super::remote_sessions::HOST],
    );
    let said = text(&checked);
    assert!(!checked.status.success(), "{said}");
    assert!(said.contains("FAIL forwarding"), "{said}");
    assert!(said.contains("AllowStreamLocalForwarding"), "{said}");
    // (On a host that allows it the check says ready: remote_sessions.)
    world.host.transport.disconnect().await;
}

/// A harness's hook on the host (`the-loop hook …` there, with `THE_LOOP_HOST`) sends
/// its report back over the forwarded socket: the supervisor records the session's
/// state and logs it, as for a session here. A report for an item with no session on
/// that host is refused; with nothing serving the host, the hook still exits 0 (the
/// harness's turn goes on) and nothing is recorded on the host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_on_the_host_reports_through_the_forwarded_socket() {
    if !Sshd::available() {
        return;
    }
    let sshd = Sshd::start();
    let world = started(&sshd, None).await;
    let (sessions, host, paths) = (&world.sessions, &world.host, &world.paths);
    let item = WorkItemRef::new("octo", "repo", 15);
    // Claude passes its payload on stdin, Codex as the last argument.
    let starting = serde_json::json!({
        "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "make test"}, "tool_use_id": "call_9",
        "tool_response": "x".repeat(2 << 20),
    })
    .to_string();
    let asked = serde_json::json!({
        "hook_event_name": "PermissionRequest", "tool_name": "Bash",
        "tool_input": {"command": "make test"},
    })
    .to_string();
    let requested = |events: &EventLog| {
        the_loop::events::lines::named(events.path(), "session.permission_requested")
    };
    let events = EventLog::open(paths);

    // Nothing serves the host yet: the hook says nothing, exits 0, records nothing.
    let lonely = on_host(&sshd, "github:octo/repo#15", &["hook", "codex", &asked]);
    assert!(lonely.status.success(), "{}", text(&lonely));
    assert_eq!(text(&lonely), "", "a hook prints nothing");
    assert!(requested(&events).is_empty());
    assert!(
        !sshd.home().join(".tl/sessions").exists(),
        "nothing recorded on the host"
    );

    let client = Arc::new(Client::builder("http://127.0.0.1:9").build().unwrap());
    let socket = serve(&world, client, &events).await;

    // The tool's 2 MiB of output stays on the host; the report gets through.
    let out = on_host_with(
        &sshd,
        "github:octo/repo#15",
        &["hook", "claude"],
        Some(starting.as_bytes()),
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(text(&out), "");
    let out = on_host(&sshd, "github:octo/repo#15", &["hook", "codex", &asked]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(text(&out), "");
    let logged = requested(&events);
    assert_eq!(logged.len(), 1, "{logged:#?}");
    assert_eq!(logged[0]["source"], "hook");
    assert_eq!(logged[0]["summary"], "make test");
    assert_eq!(logged[0]["request_id"], "call_9");
    let record = sessions.registry().get(&item).unwrap().unwrap();
    let reported = record.reported.expect("the session's reported state");
    assert_eq!(
        reported.permission.map(|p| p.summary).as_deref(),
        Some("make test")
    );

    // Another item's report from that host is refused and changes nothing.
    let other = on_host(&sshd, "github:octo/repo#16", &["hook", "codex", &asked]);
    assert!(other.status.success(), "{}", text(&other));
    assert_eq!(requested(&events).len(), 1);
    // The refusal is in the host's own log, where the hook writes what went wrong.
    let logs = sshd.home().join(".tl/logs");
    let logged: String = std::fs::read_dir(&logs)
        .unwrap()
        .map(|f| std::fs::read_to_string(f.unwrap().path()).unwrap_or_default())
        .collect();
    assert!(
        logged.contains("github:octo/repo#16 has no open session on host `build`"),
        "{logged}"
    );
    assert!(
        sessions
            .registry()
            .get(&WorkItemRef::new("octo", "repo", 16))
            .unwrap()
            .is_none()
    );

    socket.shutdown().await;
    host.transport.disconnect().await;
}

/// An assistant line of a Claude Code transcript (2.1.197's shape) that used `input`
/// and `output` tokens.
fn assistant_line(id: &str, input: u64, output: u64) -> String {
    format!(
        r#"{{"type":"assistant","requestId":"req_{id}","message":{{"id":"msg_{id}","type":"message","role":"assistant","model":"claude-opus-4-8","content":[{{"type":"text","text":"ok"}}],"usage":{{"input_tokens":{input},"output_tokens":{output},"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}}},"timestamp":"2026-12-05T09:00:00.000Z","sessionId":"0fdc","version":"2.1.197"}}"#
    ) + "\n"
}

/// What a turn of a session on the host used is read there (its transcript is a file
/// there), kept there, and sent back over the forwarded socket: the record here shows
/// it and `session.usage` tells it; nothing here ever reads the host's path itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_on_the_host_tells_what_it_used_through_the_forwarded_socket() {
    if !Sshd::available() {
        return;
    }
    let sshd = Sshd::start();
    let world = started(&sshd, None).await;
    let (sessions, host, paths) = (&world.sessions, &world.host, &world.paths);
    let item = WorkItemRef::new("octo", "repo", 15);
    let events = EventLog::open(paths);
    let client = Arc::new(Client::builder("http://127.0.0.1:9").build().unwrap());
    let socket = serve(&world, client, &events).await;

    // The transcript, where Claude Code on the host keeps it for the session's directory.
    let home = sshd.home();
    let project = the_loop::usage::track::claude_project_dir(&home.join(".claude"), &home);
    let transcript = project.join("0fdc.jsonl");
    let made = sshd.run_as_user(&["mkdir", "-p", project.to_str().unwrap()]);
    assert!(made.status.success(), "{made:?}");
    let write = |line: String| {
        let of = format!("of={}", transcript.display());
        let out = sshd.run_as_user_with(
            &["dd", &of, "oflag=append", "conv=notrunc", "status=none"],
            Some(line.as_bytes()),
        );
        assert!(out.status.success(), "{out:?}");
    };
    write(assistant_line("1", 100, 20));
    let stop = serde_json::json!({
        "hook_event_name": "Stop", "session_id": "0fdc",
        "transcript_path": transcript.display().to_string(),
    })
    .to_string();
    let out = on_host_with(
        &sshd,
        "github:octo/repo#15",
        &["hook", "claude"],
        Some(stop.as_bytes()),
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(text(&out), "");
    // Claude Code writes the turn's last response after its Stop hook.
    std::thread::sleep(Duration::from_millis(100));
    write(assistant_line("2", 3, 4));

    let told = wait_for(
        "session.usage from the host",
        Duration::from_secs(20),
        || {
            let told = the_loop::events::lines::named(events.path(), "session.usage");
            async move { told.into_iter().next() }
        },
    )
    .await;
    assert_eq!(told["work_item"], "github:octo/repo#15");
    assert_eq!(told["input"], 103);
    assert_eq!(told["output"], 24);
    let record = sessions.registry().get(&item).unwrap().unwrap();
    let tokens = record.usage.tally().tokens();
    assert_eq!((tokens.input, tokens.output), (103, 24));
    // Kept on the host, private, for the next turn to read on from.
    let kept = home
        .join(".tl/usage")
        .join(format!("{}.json", item.slug().to_ascii_lowercase()));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&kept)
        .unwrap_or_else(|e| panic!("{}: {e}", kept.display()))
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "{mode:o}");
    // Reading here does not touch the host's figures (its path means nothing here).
    let again = the_loop::session::usage::refresh(sessions.registry(), &item, None)
        .unwrap()
        .unwrap();
    assert_eq!(again.after, again.before);
    assert_eq!(again.after.tokens().input, 103);

    socket.shutdown().await;
    host.transport.disconnect().await;
}

/// A Claude Code session on the host is started with its hooks wired to the-loop
/// installed there: the settings file is written on the host (0600, in 0700), its
/// hooks run `<stateDir>/bin/the-loop hook claude`, and the pane's command names it;
/// its directory is trusted in the host's Claude Code config.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claude_session_on_the_host_gets_its_hooks_written_there() {
    use super::remote_sessions::{opened_with, spawned};
    use std::os::unix::fs::PermissionsExt;

    if !Sshd::available() {
        return;
    }
    let sshd = Sshd::start();
    let opened = opened_with(&sshd, None, |yaml| {
        yaml.replace("  harness: fake\n", "  harness: claude\n")
    });
    let sessions = &opened.sessions;
    let item = WorkItemRef::new("octo", "repo", 15);
    let record = spawned(sessions, &item).await;
    let home = sshd.home();
    let file = home
        .join(".tl/harness")
        .join(item.slug())
        .join("claude-settings.json");
    let settings: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let bin = home.join(".tl/bin/the-loop");
    assert_eq!(
        settings["hooks"]["Stop"][0]["hooks"][0]["command"],
        format!("{} hook claude", bin.display())
    );
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(file.parent().unwrap()), 0o700);
    // The pane was started with that file (Claude itself is not on this host: the
    // pane's command is what is checked).
    let listed = sshd.run_as_user(&[
        "tmux",
        "list-panes",
        "-a",
        "-F",
        "#{session_name} #{pane_start_command}",
    ]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    let line = listed
        .lines()
        .find(|l| l.starts_with(&record.tmux_session))
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(line.contains("--settings"), "{line}");
    assert!(line.contains(file.to_str().unwrap()), "{line}");
    // Its directory there was marked trusted in the host's Claude Code config (by
    // the-loop installed there), so the trust dialog does not take the first prompt.
    let claude: serde_json::Value =
        serde_json::from_slice(&std::fs::read(home.join(".claude.json")).unwrap()).unwrap();
    let dir = std::fs::canonicalize(&home).unwrap();
    assert_eq!(
        claude["projects"][dir.to_str().unwrap()]["hasTrustDialogAccepted"],
        true,
        "{claude}"
    );
    assert!(
        the_loop::events::lines::named(sessions.events().path(), "workspace.trust_failed")
            .is_empty()
    );
    opened.host.transport.disconnect().await;
}
