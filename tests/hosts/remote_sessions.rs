//! A session on another host, end to end: the real binary installs itself there, a
//! session starts in the host's own tmux server, and authorized comments reach its pane
//! through the dispatcher, each exactly once and in order — also when the SSH master
//! is killed in the middle of the burst.

use crate::support::sshd::Sshd;
use crate::support::tmux_server::{BIN, wait_for};
use crate::support::webhook::fixture;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};
use the_loop::config;
use the_loop::events::Source;
use the_loop::ingress::{InboundEvent, Ingest};
use the_loop::paths::StatePaths;
use the_loop::session::{Dispatcher, Origin, PromptInputs, SessionRecord, Sessions, StartOutcome};
use the_loop::ssh::{Destination, Transport};
use the_loop::work_item::WorkItemRef;

pub(crate) const HOST: &str = "build";

/// A state root short enough for a control socket path.
pub(crate) fn short_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("tlh")
        .tempdir_in("/tmp")
        .unwrap()
}

fn transport(sshd: &Sshd, dir: &Path) -> Transport {
    Transport::new(
        Destination {
            name: HOST.into(),
            ssh: Sshd::alias().into(),
            config_file: Some(sshd.ssh_config().to_path_buf()),
            connect_timeout: Duration::from_secs(10),
            server_alive: Duration::from_secs(15),
        },
        &dir.join("ssh"),
    )
}

/// A real sshd and a transport to it, connected; `None` where no sshd can run.
async fn connected() -> Option<(Sshd, tempfile::TempDir, Transport)> {
    if !Sshd::available() {
        return None;
    }
    let sshd = Sshd::start();
    let dir = short_dir();
    let host = transport(&sshd, dir.path());
    host.connect().await.unwrap();
    Some((sshd, dir, host))
}

fn words(list: &[&str]) -> Vec<String> {
    list.iter().map(|w| w.to_string()).collect()
}

pub(crate) fn kill(pid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
    assert!(ended(pid), "pid {pid} outlived SIGKILL");
}

/// Whether `pid` is gone, or a zombie nobody reaped yet, within 10 s.
fn ended(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return true;
        };
        let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
        if state.is_some_and(|s| s.starts_with('Z')) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_argv_reaches_the_host_unchanged_over_one_connection_and_a_killed_master_is_replaced() {
    let Some((sshd, _dir, host)) = connected().await else {
        return;
    };
    assert_eq!(host.remote_home().map(PathBuf::from), Some(sshd.home()));
    let before = sshd.connections();
    let hostile = words(&[
        "printf", "%s\\0", "; id", "$(id)", "`id`", "a'b\"c", "*", "~", "x\ny", "\\", "-n", "''",
        "a b\tc", "#x", "!$", "--",
    ]);
    for _ in 0..5 {
        let out = host
            .run(&hostile, None, Duration::from_secs(10))
            .await
            .unwrap();
        let got: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .split_terminator('\0')
            .map(str::to_string)
            .collect();
        assert_eq!(got, hostile[2..], "the far side ran another argv");
    }
    assert_eq!(
        sshd.connections(),
        before,
        "commands opened connections of their own"
    );
    assert_eq!(host.stats().connections, 1);

    // The master dies (its socket file stays behind): the next call replaces it.
    let master = host.master_pid().expect("the master's pid");
    kill(master);
    let out = host
        .run(&words(&["echo", "back"]), None, Duration::from_secs(10))
        .await;
    // The call that finds the master gone may fail (its host is then unreachable); the
    // one after it connects again.
    if out.is_err() {
        host.run(&words(&["echo", "back"]), None, Duration::from_secs(10))
            .await
            .unwrap();
    }
    assert_ne!(host.master_pid(), Some(master));
    assert_eq!(
        host.stats().connections,
        2,
        "one new master, no stray direct connections"
    );
    assert_eq!(sshd.connections(), before + 1);
    host.disconnect().await;
}

/// sshd takes at most `MaxSessions` (10) channels on one connection: a burst of 30
/// commands at once over one master is queued (`ssh::CHANNELS` at a time), and every
/// one of them runs, over that one connection. (With the cap raised past 10, sshd
/// refuses the extra channels and this fails.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_commands_over_max_sessions_queues_on_one_connection() {
    let Some((sshd, _dir, host)) = connected().await else {
        return;
    };
    let host = Arc::new(host);
    let before = sshd.connections();
    let burst: Vec<_> = (0..30)
        .map(|n| {
            let host = Arc::clone(&host);
            tokio::spawn(async move {
                let argv = words(&["sh", "-c", "sleep 0.3; echo \"$0\"", &n.to_string()]);
                host.run(&argv, None, Duration::from_secs(60)).await
            })
        })
        .collect();
    let mut said = Vec::new();
    for (n, task) in burst.into_iter().enumerate() {
        let out = task
            .await
            .unwrap()
            .unwrap_or_else(|e| panic!("command {n}: {e}"));
        assert!(out.success, "command {n}: {}", out.stderr);
        said.push(String::from_utf8(out.stdout).unwrap().trim().to_string());
    }
    let expected: Vec<String> = (0..30).map(|n| n.to_string()).collect();
    assert_eq!(said, expected, "each command ran once, as asked");
    assert_eq!(sshd.connections(), before, "no connection of its own");
    assert_eq!(host.stats().connections, 1);
    host.disconnect().await;
}

/// A master that hangs (stopped, its socket still there) makes a call time out, not
/// hang; the next call probes it (`-O check`, bounded), stops it and starts another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_master_is_probed_and_replaced() {
    let Some((sshd, _dir, host)) = connected().await else {
        return;
    };
    let before = sshd.connections();
    let hung = host.master_pid().expect("the master's pid");
    let stopped = Command::new("kill")
        .args(["-STOP", &hung.to_string()])
        .status()
        .unwrap();
    assert!(stopped.success());
    let err = host
        .run(&words(&["echo", "hung"]), None, Duration::from_secs(2))
        .await
        .unwrap_err();
    assert!(err.is_unreachable(), "{err}");
    assert!(
        matches!(host.state(), the_loop::ssh::HostState::Unreachable { .. }),
        "{:?}",
        host.state()
    );
    let out = host
        .run(&words(&["echo", "back"]), None, Duration::from_secs(20))
        .await
        .unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "back\n");
    assert_ne!(host.master_pid(), Some(hung), "a new master");
    assert_eq!(host.stats().connections, 2);
    assert_eq!(
        sshd.connections(),
        before + 1,
        "one new master, nothing more"
    );
    let left_behind = !ended(hung);
    kill(hung);
    assert!(!left_behind, "the hung master was left behind");
    host.disconnect().await;
}

/// The config of a world whose repo runs on the sshd's user: `the-loop` from the
/// host's state directory as the harness, logging what reaches its pane.
pub(crate) fn world_config(sshd: &Sshd, dir: &Path, api: Option<&str>) -> PathBuf {
    let log = sshd.home().join("agent.jsonl");
    let github = api.map_or(String::new(), |api| {
        format!("github: {{apiUrl: \"{api}\"}}\n")
    });
    let yaml = format!(
        r#"{github}hosts:
  - {{name: {HOST}, ssh: {alias}, sshConfig: "{ssh_config}", stateDir: "~/.tl"}}
repos:
  - {{name: octo/repo, path: "~", workspace: shared, host: {HOST}, label: the-loop}}
routing: {{authorizedUsers: [alice]}}
sessions:
  harness: fake
  harnesses:
    fake:
      command: the-loop
      args: [fake-agent, --log, "{log}", "--", "{{prompt}}"]
  tmux: {{submitDelayMs: 50, probeTimeoutSeconds: 10}}
critics:
  - {{name: whoami, command: env, args: ["PROMPT={{prompt}}", id, -un], outputFormat: text}}
  - {{name: where, command: env, args: ["PROMPT={{prompt}}", pwd], outputFormat: text}}
  - {{name: slow, command: env, args: ["PROMPT={{prompt}}", sleep, "30"], outputFormat: text, timeoutSeconds: 2}}
  - {{name: files, command: cat, args: ["{{promptFile}}"], outputFormat: text}}
"#,
        alias = Sshd::alias(),
        ssh_config = sshd.ssh_config().display(),
        log = log.display(),
    );
    let path = dir.join("config.yaml");
    std::fs::write(&path, yaml).unwrap();
    path
}

/// `the-loop hosts …` as the operator runs it.
pub(crate) fn hosts_cli(config: &Path, state: &Path, args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .arg("--config")
        .arg(config)
        .arg("hosts")
        .args(args)
        .env("THE_LOOP_HOME", state)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .env_remove("GH_TOKEN")
        .env_remove("GITHUB_TOKEN")
        .output()
        .unwrap()
}

/// Alice's comment `body` on issue 15, as the poller hands it on.
pub(crate) fn comment(id: u64, body: &str) -> InboundEvent {
    let mut payload: Value = fixture("issue_comment.created");
    payload["comment"]["id"] = id.into();
    payload["comment"]["body"] = body.into();
    InboundEvent {
        source: Source::Poll,
        gh_event: "issue_comment".into(),
        action: "created".into(),
        delivery_id: format!("poll-comment-{id}"),
        payload,
    }
}

/// How many times each `burst-NNN` marker reached the agent, in the order first seen.
pub(crate) fn received(log: &Path) -> Vec<(String, usize)> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut seen: Vec<(String, usize)> = Vec::new();
    for line in text.lines() {
        let Ok(entry) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let pasted = entry["text"].as_str().unwrap_or_default();
        for (at, _) in pasted.match_indices("burst-") {
            let marker = pasted[at..].chars().take(9).collect::<String>();
            match seen.iter_mut().find(|(m, _)| *m == marker) {
                Some((_, n)) => *n += 1,
                None => seen.push((marker, 1)),
            }
        }
    }
    seen
}

/// Waits (30 s at most) until `n` markers reached the agent: what [`received`] says
/// then.
pub(crate) async fn received_all(log: &Path, n: usize) -> Vec<(String, usize)> {
    wait_for(
        "every comment in the agent's log",
        Duration::from_secs(30),
        || {
            let got = received(log);
            async move { (got.len() >= n).then_some(got) }
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn comments_reach_a_session_on_the_host_once_each_in_order_across_a_killed_master() {
    if !Sshd::available() {
        return;
    }
    let sshd = Sshd::start();
    let dir = short_dir();
    let state = dir.path().join("s");
    let config_path = world_config(&sshd, dir.path(), None);

    // What the host lacks, then the binary copied there by the real CLI.
    let checked = hosts_cli(&config_path, &state, &["check", HOST]);
    let said = String::from_utf8_lossy(&checked.stdout);
    assert!(!checked.status.success(), "{said}");
    assert!(
        said.contains("run `the-loop hosts install build`"),
        "{said}"
    );
    assert!(said.contains("runs argv unchanged"), "{said}");
    let installed = hosts_cli(&config_path, &state, &["install", HOST]);
    assert!(installed.status.success(), "{installed:?}");
    let checked = hosts_cli(&config_path, &state, &["check", HOST]);
    let said = String::from_utf8_lossy(&checked.stdout);
    assert!(said.contains("host `build` is ready"), "{said}");

    let loaded = config::load_file(&config_path).unwrap();
    let paths = StatePaths::new(&state);
    let sessions = Arc::new(Sessions::open(&loaded, &paths, Source::Cli).unwrap());
    let host = Arc::clone(sessions.hosts().get(HOST).unwrap());
    let item = WorkItemRef::new("octo", "repo", 15);
    let record = spawned(&sessions, &item).await;
    assert_eq!(record.host.as_deref(), Some(HOST));
    assert_eq!(record.cwd, sshd.home());
    // The session is in the host user's own tmux server, not in any of this machine's.
    let listed = sshd.run_as_user(&["tmux", "list-sessions", "-F", "#{session_name}"]);
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains(&record.tmux_session),
        "{listed:?}"
    );
    let pane = the_loop::tmux::PaneId::parse(record.pane_id.as_deref().unwrap()).unwrap();
    wait_for("the agent on the host", Duration::from_secs(30), || async {
        let screen = host.tmux.capture_pane(&pane, false).await.ok()?;
        screen.contains("fake-agent ready").then_some(())
    })
    .await;

    let dispatcher = Dispatcher::new(Arc::clone(&sessions), &loaded.config, &paths).unwrap();
    let log = sshd.home().join("agent.jsonl");
    const BURST: u64 = 24;
    let before = sshd.connections();
    let killer = {
        let log = log.clone();
        let host = Arc::clone(&host);
        tokio::spawn(async move {
            // Mid-burst: once a third of the comments are in, the master goes.
            wait_for("a third of the burst", Duration::from_secs(60), || async {
                (received(&log).len() >= (BURST / 3) as usize).then_some(())
            })
            .await;
            let pid = host.transport.master_pid().expect("the master's pid");
            kill(pid);
            pid
        })
    };
    let started = Instant::now();
    for n in 0..BURST {
        let disposition = dispatcher
            .ingest(comment(5000 + n, &format!("please do step burst-{n:03}")))
            .await;
        assert_eq!(
            format!("{disposition:?}"),
            "Delivered",
            "comment {n} was not delivered"
        );
    }
    let elapsed = started.elapsed();
    let killed = killer.await.unwrap();
    assert_ne!(host.transport.master_pid(), Some(killed));

    let got = received_all(&log, BURST as usize).await;
    let want: Vec<(String, usize)> = (0..BURST).map(|n| (format!("burst-{n:03}"), 1)).collect();
    assert_eq!(got, want, "each comment once, in order");
    // The new master; and at most one command that had found the old master alive just
    // before the kill, whose ssh then connected on its own (ssh has no "master only").
    let opened = sshd.connections() - before;
    assert!(
        (1..=2).contains(&opened),
        "{opened} connections for {BURST} deliveries and one killed master"
    );
    eprintln!(
        "figures: {BURST} remote deliveries in {:?}, {opened} new connection(s) after the master was killed, {} commands over ssh",
        elapsed,
        host.transport.stats().commands
    );
    drop(dispatcher);
    host.transport.disconnect().await;
}

/// A session on the sshd's user, started through the session module: the binary
/// installed there by the real CLI, the agent ready in the host's own tmux server.
pub(crate) struct Started {
    /// The state root and config, removed with the world.
    pub dir: tempfile::TempDir,
    pub loaded: config::LoadedConfig,
    pub paths: StatePaths,
    pub sessions: Arc<Sessions>,
    pub host: Arc<the_loop::tmux::RemoteHost>,
    pub pane: the_loop::tmux::PaneId,
}

impl Started {
    /// The config file the world runs on.
    pub fn config_path(&self) -> PathBuf {
        self.dir.path().join("config.yaml")
    }
}

/// `item`'s session started by hand (as `sessions start`): its record.
pub(crate) async fn spawned(sessions: &Sessions, item: &WorkItemRef) -> SessionRecord {
    let outcome = sessions
        .start(item, &PromptInputs::manual(item, "test"), &Origin::cli())
        .await
        .unwrap();
    let StartOutcome::Spawned(record) = outcome else {
        panic!("{outcome:?}");
    };
    record
}

pub(crate) async fn started(sshd: &Sshd, api: Option<&str>) -> Started {
    started_with(sshd, api, |yaml| yaml).await
}

/// The world's config (changed by `edit`), the-loop installed on the host by the real
/// CLI, and the sessions opened on it: no session started yet.
pub(crate) struct Opened {
    pub dir: tempfile::TempDir,
    pub loaded: config::LoadedConfig,
    pub paths: StatePaths,
    pub sessions: Arc<Sessions>,
    pub host: Arc<the_loop::tmux::RemoteHost>,
}

pub(crate) fn opened_with(
    sshd: &Sshd,
    api: Option<&str>,
    edit: impl FnOnce(String) -> String,
) -> Opened {
    let dir = short_dir();
    let state = dir.path().join("s");
    let config_path = world_config(sshd, dir.path(), api);
    let yaml = std::fs::read_to_string(&config_path).unwrap();
    std::fs::write(&config_path, edit(yaml)).unwrap();
    let installed = hosts_cli(&config_path, &state, &["install", HOST]);
    assert!(installed.status.success(), "{installed:?}");
    let loaded = config::load_file(&config_path).unwrap();
    let paths = StatePaths::new(&state);
    let sessions = Arc::new(Sessions::open(&loaded, &paths, Source::Cli).unwrap());
    let host = Arc::clone(sessions.hosts().get(HOST).unwrap());
    Opened {
        dir,
        loaded,
        paths,
        sessions,
        host,
    }
}

/// [`started`] with the config text changed by `edit` first.
pub(crate) async fn started_with(
    sshd: &Sshd,
    api: Option<&str>,
    edit: impl FnOnce(String) -> String,
) -> Started {
    let Opened {
        dir,
        loaded,
        paths,
        sessions,
        host,
    } = opened_with(sshd, api, edit);
    let item = WorkItemRef::new("octo", "repo", 15);
    let record = spawned(&sessions, &item).await;
    let pane = the_loop::tmux::PaneId::parse(record.pane_id.as_deref().unwrap()).unwrap();
    wait_for("the agent on the host", Duration::from_secs(30), || async {
        let screen = host.tmux.capture_pane(&pane, false).await.ok()?;
        screen.contains("fake-agent ready").then_some(())
    })
    .await;
    Started {
        dir,
        loaded,
        paths,
        sessions,
        host,
        pane,
    }
}
