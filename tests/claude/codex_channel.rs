//! `channel::codex` against the real Codex 0.171.0 app server (issue 41): the TUI in a
//! tmux pane attached to `codex app-server --listen unix://…`, the-loop's client as a
//! second client, the tests' fake of the Responses API as the model. Private
//! `HOME`/`CODEX_HOME`, everything that would leave loopback off, and every process
//! and the tmux server gone at the end (as in `codex_delivery.rs`).

use crate::support::claude::npm_bin;
use crate::support::fake_openai::{FakeOpenAi, codex_config};
use crate::support::processes::end_world;
use crate::support::tmux_server::TmuxServer;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use the_loop::channel::codex::{Approval, ApprovalKind, Client, Decision, Inbound};

const PATIENCE: Duration = Duration::from_secs(90);

/// An app server and the TUI attached to it, each in a window of a private tmux.
pub(crate) struct ServerWorld {
    pub model: FakeOpenAi,
    pub tmux: TmuxServer,
    pub socket: PathBuf,
    pub home: PathBuf,
    pub project: PathBuf,
    _dir: tempfile::TempDir,
}

impl ServerWorld {
    pub async fn new() -> Option<Self> {
        let codex = npm_bin("codex", "THE_LOOP_CODEX_BIN", "Codex")?;
        let model = FakeOpenAi::start().await;
        let dir = tempfile::tempdir().unwrap();
        let (home, project) = (dir.path().join("home"), dir.path().join("project"));
        let run = dir.path().join("run");
        for d in [
            &home.join(".codex"),
            &project,
            &dir.path().join("tmp"),
            &run,
        ] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(
            home.join(".codex/config.toml"),
            codex_config(&model.base_url, &project),
        )
        .unwrap();
        let socket = run.join("codex.sock");
        let tmux = TmuxServer::new();
        let listen = format!("unix://{}", socket.display());
        let codex = codex.display().to_string();
        let mut command = Command::new("tmux");
        command
            .args(["-L", &tmux.socket, "-f", "/dev/null"])
            .args(["new-session", "-d", "-s", "w", "-n", "server"])
            .args([&codex, "app-server", "--listen", &listen])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap())
            .env("HOME", &home)
            .env("CODEX_HOME", home.join(".codex"))
            .env("TMPDIR", dir.path().join("tmp"))
            .env("TERM", "xterm-256color")
            .env("HTTPS_PROXY", "http://127.0.0.1:9")
            .env("HTTP_PROXY", "http://127.0.0.1:9")
            .env("NO_PROXY", "127.0.0.1,localhost");
        assert!(command.status().unwrap().success(), "tmux did not start");
        let world = Self {
            model,
            tmux,
            socket,
            home,
            project,
            _dir: dir,
        };
        world
            .wait("the app server's socket", || {
                world.socket.exists().then_some(())
            })
            .await;
        let cwd = world.project.display().to_string();
        let out = world.tmux.raw(&[
            "new-window",
            "-d",
            "-t",
            "=w:",
            "-n",
            "tui",
            &codex,
            "--remote",
            &listen,
            "-C",
            &cwd,
        ]);
        assert!(out.status.success(), "{out:?}");
        Some(world)
    }

    pub async fn wait<T>(&self, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
        let start = Instant::now();
        loop {
            if let Some(value) = check() {
                return value;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "timed out waiting for {what}; the pane:\n{}\nthe model got: {:#?}",
                self.screen(),
                self.model.fresh()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn screen(&self) -> String {
        let out = self.tmux.raw(&["capture-pane", "-p", "-t", "=w:tui"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub async fn connect(&self) -> Client {
        Client::connect(&self.socket, "the-loop-test")
            .await
            .unwrap()
    }

    /// The session's thread, once the TUI made it.
    pub async fn thread(&self, client: &Client) -> String {
        let start = Instant::now();
        loop {
            if let Some(id) = client.thread_of(&self.project).await.unwrap() {
                return id;
            }
            assert!(start.elapsed() < PATIENCE, "no thread:\n{}", self.screen());
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    pub fn ran(&self) -> bool {
        self.project.join("ran.txt").exists()
    }

    /// Ends every process this world started; the ones left running from its home.
    pub fn shut_down(&self) -> Vec<i32> {
        end_world(&self.tmux, &self.home)
    }
}

impl Drop for ServerWorld {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// The next inbound message for which `pick` says something, within the patience.
pub(crate) async fn next_matching<T>(
    client: &mut Client,
    mut pick: impl FnMut(&Inbound) -> Option<T>,
) -> T {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let message = tokio::time::timeout(left, client.next())
            .await
            .expect("timed out waiting for a message")
            .expect("the connection closed");
        if let Some(found) = pick(&message) {
            return found;
        }
    }
}

async fn turn_completed(client: &mut Client, thread: &str) -> String {
    next_matching(client, |m| match m {
        Inbound::TurnCompleted {
            thread: t, turn, ..
        } if t == thread => Some(turn.clone()),
        _ => None,
    })
    .await
}

async fn approval(client: &mut Client) -> Approval {
    next_matching(client, |m| match m {
        Inbound::Approval(a) => Some(a.clone()),
        _ => None,
    })
    .await
}

fn project_cwd(project: &Path) -> String {
    project.display().to_string()
}

/// The-loop's client finds the TUI's thread, starts a turn on it (the model gets the
/// message once, the pane shows it), subscribes, receives the approval request for an
/// escalated command with its command and cwd, and answers it: the command runs once
/// accepted, and not before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_client_delivers_and_answers_an_approval() {
    let Some(world) = ServerWorld::new().await else {
        return;
    };
    let mut client = world.connect().await;
    let thread = world.thread(&client).await;
    client.start_turn(&thread, "OSPREY: hello.").await.unwrap();
    world
        .wait("the message to reach the model", || {
            (!world.model.requests_with("OSPREY").is_empty()).then_some(())
        })
        .await;
    world
        .wait("the message in the pane", || {
            world.screen().contains("OSPREY: hello.").then_some(())
        })
        .await;
    // Subscribed after the first turn (codex refuses it before).
    let start = Instant::now();
    while let Err(e) = client.subscribe(&thread).await {
        assert!(start.elapsed() < PATIENCE, "resume: {e}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    client
        .start_turn(&thread, "Check, please: RUN[touch ran.txt]")
        .await
        .unwrap();
    let asked = approval(&mut client).await;
    assert_eq!(asked.kind, ApprovalKind::Command);
    assert_eq!(asked.thread, thread);
    assert!(
        asked
            .command
            .as_deref()
            .unwrap_or_default()
            .contains("touch ran.txt"),
        "{asked:?}"
    );
    assert_eq!(asked.cwd.as_deref(), Some(&*project_cwd(&world.project)));
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!world.ran(), "ran before the answer");
    client.answer(&asked, Decision::Accept).await.unwrap();
    world
        .wait("the command to run", || world.ran().then_some(()))
        .await;
    turn_completed(&mut client, &thread).await;
    assert_eq!(world.model.requests_with("OSPREY").len(), 1);
    drop(client);
    assert_eq!(world.shut_down(), Vec::<i32>::new(), "processes left");
}

/// Declined, the command does not run; words steered into the turn while it waited
/// reach the model once, in that turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_command_does_not_run_and_a_steer_joins_the_turn() {
    let Some(world) = ServerWorld::new().await else {
        return;
    };
    let mut client = world.connect().await;
    let thread = world.thread(&client).await;
    client.start_turn(&thread, "OSPREY: hello.").await.unwrap();
    world
        .wait("the first turn to reach the model", || {
            (!world.model.requests_with("OSPREY").is_empty()).then_some(())
        })
        .await;
    let start = Instant::now();
    while let Err(e) = client.subscribe(&thread).await {
        assert!(start.elapsed() < PATIENCE, "resume: {e}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    client
        .start_turn(&thread, "Check, please: RUN[touch ran.txt]")
        .await
        .unwrap();
    let asked = approval(&mut client).await;
    client
        .steer(&thread, &asked.turn, "HERON: and one more thing.")
        .await
        .unwrap();
    let wrong = client.steer(&thread, "not-the-turn", "never").await;
    assert!(wrong.is_err(), "{wrong:?}");
    client.answer(&asked, Decision::Decline).await.unwrap();
    turn_completed(&mut client, &thread).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!world.ran(), "a declined command ran");
    assert_eq!(
        world.model.requests_with("HERON").len(),
        1,
        "{:#?}",
        world.model.fresh()
    );
    assert!(world.model.requests_with("never").is_empty());
    drop(client);
    assert_eq!(world.shut_down(), Vec::<i32>::new(), "processes left");
}

/// `sessions.codexChannel: app-server` (issue 41): the session's tmux session runs
/// codex's app server on a private socket under the state root, and in front of it the
/// TUI attached to it. The hooks, declared on the server, report the boot turn's end;
/// the record names the channel; a second client finds the session's thread there; a
/// comment goes in through the channel (`codex_channel_delivery.rs`) and reaches the
/// model once; nothing is left running after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_session_with_an_app_server_runs_its_tui_attached() {
    use crate::codex_delivery::{CodexWorld, item};
    use std::os::unix::fs::PermissionsExt;
    use the_loop::channel::ChannelRecord;
    let Some(world) = CodexWorld::with_app_server().await else {
        return;
    };
    world.start().await;
    let record = world.sessions.registry().get(&item()).unwrap().unwrap();
    let Some(ChannelRecord::CodexAppServer {
        socket,
        server_pane,
    }) = record.channel.clone()
    else {
        panic!("no channel recorded: {record:#?}");
    };
    assert_eq!(
        socket,
        world
            .state
            .join("channels")
            .join(item().slug())
            .join("codex.sock")
    );
    let mode = std::fs::metadata(socket.parent().unwrap())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
    assert!(server_pane.is_some());
    assert_ne!(
        server_pane, record.pane_id,
        "the TUI's pane is the one tracked"
    );
    let spawned = world.events_named("session.spawned");
    assert_eq!(spawned[0]["channel"], "codex-app-server", "{spawned:#?}");
    // The pane the-loop tracks and shows is the TUI's.
    let screen = world.screen();
    assert!(screen.contains("Ask Codex to do anything"), "{screen}");
    let panes = world.tmux.raw(&[
        "list-panes",
        "-s",
        "-t",
        &CodexWorld::target(),
        "-F",
        "#{window_index} #{pane_id} #{pane_current_command}",
    ]);
    let panes = String::from_utf8_lossy(&panes.stdout).into_owned();
    assert_eq!(panes.lines().count(), 2, "{panes}");
    assert!(
        panes
            .lines()
            .next()
            .unwrap()
            .contains(record.pane_id.as_deref().unwrap()),
        "{panes}"
    );

    let client = Client::connect(&socket, "the-loop-test").await.unwrap();
    let thread = client.thread_of(&world.project).await.unwrap();
    let thread = thread.expect("the session's thread on its app server");
    client.subscribe(&thread).await.unwrap();
    drop(client);

    world
        .deliver_until_seen("d-1", "HERON: five retries.", "HERON")
        .await;
    assert_eq!(world.model.requests_with("HERON").len(), 1);
    eprintln!(
        "figure: processes per codex session (app-server channel): {}",
        session_processes(&world.tmux)
    );
    assert_eq!(world.shut_down(), Vec::<i32>::new(), "processes left");
}

/// Every process under the panes of a tmux server (each pane's first process and its
/// descendants).
pub(crate) fn session_processes(tmux: &TmuxServer) -> usize {
    let out = tmux.raw(&["list-panes", "-a", "-F", "#{pane_pid}"]);
    let roots: Vec<u32> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    let mut parent = std::collections::HashMap::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let Some(after) = stat.rfind(')').map(|at| &stat[at + 1..]) else {
            continue;
        };
        if let Some(ppid) = after
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse::<u32>().ok())
        {
            parent.insert(pid, ppid);
        }
    }
    parent
        .keys()
        .filter(|pid| {
            let mut at = **pid;
            for _ in 0..64 {
                if roots.contains(&at) {
                    return true;
                }
                match parent.get(&at) {
                    Some(up) if *up > 1 => at = *up,
                    _ => return false,
                }
            }
            false
        })
        .count()
}
