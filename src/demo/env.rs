//! The demo's private world: a temp state root, a private tmux socket name, the config
//! that points everything at the simulator, and the environment every child process
//! gets. [`World::cleanup`] (also run on drop) takes all of it down again: the tmux
//! server and every process in its panes, then the files.
//!
//! Children get their settings through `Command::env` — never `std::env::set_var`, which
//! is `unsafe` in a threaded process and would leak into the operator's own setup.

use super::scenario::{self, Pace};
use crate::paths;
use std::ffi::OsStr;
use std::fs::DirBuilder;
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Every name the demo creates starts with this (temp dirs and tmux sockets), followed
/// by `<pid>-<random>`: a later demo can tell a dead demo's leftovers by the pid.
pub const PREFIX: &str = "the-loop-demo-";

/// The placeholder session that keeps the demo's tmux server up.
pub const KEEPALIVE: &str = "the-loop-demo";

/// The demo agent's harness name (it runs `the-loop fake-agent`).
pub const AGENT: &str = "demo-agent";

/// The name of the demo's built-in critic.
pub const CRITIC: &str = "demo-critic";

/// The private world of one demo run.
#[derive(Debug)]
pub struct World {
    root: PathBuf,
    socket: String,
    exe: PathBuf,
    pace: Pace,
    api_url: Option<String>,
    keep: bool,
    cleaned: bool,
}

impl World {
    /// Creates `<temp>/the-loop-demo-<pid>-<random>/` (private to this user) and links
    /// the running executable into it as `bin/the-loop`: the config names programs by
    /// path, a path must not contain whitespace there, and the temp dir's never does.
    pub fn create(temp: &Path, exe: &Path, pace: Pace) -> io::Result<Self> {
        let name = format!(
            "{PREFIX}{}-{:08x}",
            std::process::id(),
            rand::random::<u32>()
        );
        let root = std::path::absolute(temp.join(&name))?;
        DirBuilder::new().mode(0o700).create(&root)?;
        let mut world = Self {
            root,
            socket: name,
            exe: PathBuf::new(),
            pace,
            api_url: None,
            keep: false,
            cleaned: false,
        };
        // From here on, a failure drops `world`, which removes what was made.
        let bin = world.root.join("bin");
        DirBuilder::new().mode(0o700).create(&bin)?;
        let link = bin.join("the-loop");
        std::os::unix::fs::symlink(exe, &link)?;
        world.exe = link;
        if world.exe.to_string_lossy().chars().any(char::is_whitespace) {
            return Err(io::Error::other(format!(
                "the demo's temp directory {} contains whitespace; set TMPDIR to a directory without spaces",
                world.root.display()
            )));
        }
        std::fs::create_dir_all(world.workdir())?;
        Ok(world)
    }

    /// Keep the state root on cleanup (for a look inside after the demo).
    pub fn keep(&mut self, keep: bool) {
        self.keep = keep;
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The tmux `-L` socket name, private to this run.
    pub fn socket(&self) -> &str {
        &self.socket
    }

    /// The program every child runs (a link to the demo's own executable).
    pub fn exe(&self) -> &Path {
        &self.exe
    }

    pub fn config_path(&self) -> PathBuf {
        self.root.join("config.yaml")
    }

    pub fn events_path(&self) -> PathBuf {
        paths::StatePaths::new(&self.root).events()
    }

    /// What the demo agent received, one JSON line per submission.
    pub fn agent_log(&self) -> PathBuf {
        self.root.join("fake-agent.jsonl")
    }

    /// The demo repository's checkout: the sessions' working directory.
    pub fn workdir(&self) -> PathBuf {
        self.root.join("work").join(scenario::NAME)
    }

    /// Writes the demo config pointing at the simulator's `api_url`.
    pub fn write_config(&mut self, api_url: &str) -> io::Result<()> {
        let text = render_config(&ConfigInputs {
            api_url,
            workdir: &self.workdir(),
            exe: &self.exe,
            agent_log: &self.agent_log(),
            socket: &self.socket,
        });
        crate::fsutil::atomic_write(&self.config_path(), text.as_bytes())?;
        self.api_url = Some(api_url.to_string());
        Ok(())
    }

    /// `bin/the-loop ARGS` with the demo's environment: its state root, config,
    /// simulator, tmux socket and token. The operator's own tmux and tokens are kept out
    /// (`TMUX`, `GITHUB_TOKEN`): nothing the demo runs can reach a real server.
    pub fn command<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = Command::new(&self.exe);
        cmd.args(args);
        self.environment(&mut cmd);
        cmd
    }

    /// Starts the demo's tmux server with its own config (not the operator's
    /// `~/.tmux.conf`), so detached sessions get `cols`×`rows` windows and the agent
    /// draws at about the size the screen's preview shows it. The server's environment
    /// is the demo's, so the agents in its panes reach the simulator with the demo
    /// token. A placeholder session ([`KEEPALIVE`], an idle `cat`) holds the server up:
    /// a server without sessions answers "no current target" to the session probe.
    /// On an old tmux that lacks an option the server still starts, with its defaults.
    pub fn start_tmux(&self, cols: u16, rows: u16) -> io::Result<()> {
        let conf = self.root.join("tmux.conf");
        std::fs::write(
            &conf,
            format!(
                "# The demo's private tmux server (your ~/.tmux.conf is not read).\n\
                 set -g default-size {cols}x{rows}\n"
            ),
        )?;
        let mut cmd = Command::new("tmux");
        cmd.arg("-L")
            .arg(&self.socket)
            .arg("-f")
            .arg(&conf)
            .args(["new-session", "-d", "-s", KEEPALIVE, "cat"])
            .stdin(Stdio::null());
        self.environment(&mut cmd);
        match output_within(cmd, Duration::from_secs(10)) {
            Some(out) if out.status.success() => Ok(()),
            Some(out) => Err(io::Error::other(format!(
                "tmux could not start: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ))),
            None => Err(io::Error::other("tmux did not start within 10 s")),
        }
    }

    fn environment(&self, cmd: &mut Command) {
        cmd.env(paths::ENV_HOME, &self.root)
            .env(paths::ENV_CONFIG, self.config_path())
            .env(paths::ENV_TMUX_SOCKET, &self.socket)
            .env("GH_TOKEN", scenario::TOKEN)
            .env(scenario::ENV_PACE, self.pace.as_str())
            .env_remove("GITHUB_TOKEN")
            .env_remove(paths::ENV_WORK_ITEM)
            .env_remove("TMUX")
            .env_remove("TMUX_PANE");
        if let Some(url) = &self.api_url {
            cmd.env(paths::ENV_API_URL, url);
        }
    }

    /// Takes everything down: the tmux server and the processes in its panes (waited
    /// for, killed if they linger), the socket file, then the state root. Idempotent.
    pub fn cleanup(&mut self) -> Cleanup {
        if self.cleaned {
            return Cleanup::default();
        }
        self.cleaned = true;
        let mut report = Cleanup {
            tmux: stop_tmux_server(&self.socket),
            ..Cleanup::default()
        };
        if let Some(file) = socket_file(&self.root, &self.socket) {
            let _ = std::fs::remove_file(file);
        }
        if self.keep {
            report.kept = Some(self.root.clone());
        } else {
            report.removed = remove_tree(&self.root);
        }
        report
    }
}

impl Drop for World {
    fn drop(&mut self) {
        self.cleanup();
    }
}

/// What [`World::cleanup`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cleanup {
    pub tmux: TmuxStop,
    /// The state root is gone.
    pub removed: bool,
    /// The state root was kept on request.
    pub kept: Option<PathBuf>,
}

/// How the demo's tmux server ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TmuxStop {
    /// A server was running on the socket.
    pub was_running: bool,
    /// Pane processes that outlived `kill-server` and were killed.
    pub killed: usize,
}

/// The inputs of the demo config.
#[derive(Debug, Clone, Copy)]
pub struct ConfigInputs<'a> {
    pub api_url: &'a str,
    pub workdir: &'a Path,
    pub exe: &'a Path,
    pub agent_log: &'a Path,
    pub socket: &'a str,
}

/// A YAML string (JSON strings are YAML double-quoted scalars).
fn quoted(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

fn quoted_path(path: &Path) -> String {
    quoted(&path.to_string_lossy())
}

/// The demo's operator config: one watched repo with one authorized login, a fast poll,
/// the demo agent as the harness, no server, and the demo critic.
pub fn render_config(c: &ConfigInputs<'_>) -> String {
    let exe = quoted_path(c.exe);
    format!(
        r#"# The config of one `the-loop demo` run; it is deleted when the demo ends.
# Real use starts from `the-loop config init` (see README.md).
github:
  apiUrl: {api}              # the simulated GitHub, in the demo process
repos:
  - name: {repo}
    path: {workdir}
    label: {label}
routing:
  authorizedUsers: [{operator}]     # {stranger} is not here: their comments are refused
polling:
  intervalSeconds: 5
sessions:
  harness: {agent}
  harnesses:
    {agent}:                   # takes pastes, shows them, asks when told to
      command: {exe}
      args: [fake-agent, --log, {log}, --ask-trigger, {trigger}, "--", "{{prompt}}"]
  tmux:
    socket: {socket}
server:
  enabled: false
critics:
  - name: {critic}
    command: {exe}
    args: [{critic}, "{{promptFile}}"]
    outputFormat: json
    timeoutSeconds: 60
"#,
        api = quoted(c.api_url),
        repo = scenario::REPO,
        workdir = quoted_path(c.workdir),
        label = scenario::LABEL,
        operator = scenario::OPERATOR,
        stranger = scenario::STRANGER,
        log = quoted_path(c.agent_log),
        trigger = quoted(scenario::ASK_TRIGGER),
        socket = quoted(c.socket),
        critic = CRITIC,
        agent = AGENT,
    )
}

/// Where tmux puts a `-L` socket: `${TMUX_TMPDIR:-/tmp}/tmux-<uid>/<name>`. The uid is
/// read from a directory this process created.
pub fn socket_file(own_dir: &Path, socket: &str) -> Option<PathBuf> {
    Some(socket_dir(own_dir)?.join(socket))
}

pub fn socket_dir(own_dir: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata(own_dir).ok()?.uid();
    let base = std::env::var_os("TMUX_TMPDIR")
        .filter(|d| !d.is_empty())
        .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    Some(base.join(format!("tmux-{uid}")))
}

/// `tmux ARGS` on the demo's socket, outside any tmux the operator is in, bounded in time.
fn tmux(target: &TmuxTarget<'_>, args: &[&str]) -> Option<std::process::Output> {
    let mut cmd = Command::new("tmux");
    match target {
        TmuxTarget::Name(name) => cmd.arg("-L").arg(name),
        TmuxTarget::File(path) => cmd.arg("-S").arg(path),
    };
    cmd.args(args)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .stdin(Stdio::null());
    output_within(cmd, Duration::from_secs(5))
}

pub(crate) enum TmuxTarget<'a> {
    Name(&'a str),
    File(&'a Path),
}

/// Runs `cmd` with captured output; kills it and returns `None` after `limit`.
fn output_within(mut cmd: Command, limit: Duration) -> Option<std::process::Output> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return child.wait_with_output().ok(),
            Ok(None) if start.elapsed() < limit => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

/// Kills the server on `socket` and makes sure the processes of its panes are gone.
pub fn stop_tmux_server(socket: &str) -> TmuxStop {
    stop_server(&TmuxTarget::Name(socket))
}

pub(crate) fn stop_server(target: &TmuxTarget<'_>) -> TmuxStop {
    let panes: Vec<i32> = tmux(target, &["list-panes", "-a", "-F", "#{pane_pid}"])
        .filter(|o| o.status.success())
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter_map(|l| l.trim().parse().ok())
                .collect()
        })
        .unwrap_or_default();
    let server: Option<i32> = tmux(target, &["display-message", "-p", "#{pid}"])
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok());
    // Unconditionally: a server that did not answer the questions above may still run.
    let killed_server = tmux(target, &["kill-server"]).is_some_and(|o| o.status.success());
    let was_running = server.is_some() || !panes.is_empty() || killed_server;
    // kill-server hangs up every pane; give their processes a moment, then make sure.
    let mut pids = panes.clone();
    pids.extend(server);
    let killed = reap(&pids, Duration::from_secs(3));
    TmuxStop {
        was_running,
        killed,
    }
}

/// Waits up to `limit` for `pids` to exit, then kills the process group of each one
/// still alive (a pane's process leads its own group). Returns how many were killed.
fn reap(pids: &[i32], limit: Duration) -> usize {
    use nix::sys::signal::{Signal, kill, killpg};
    use nix::unistd::Pid;
    let start = Instant::now();
    while pids.iter().any(|&p| alive(p)) && start.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(25));
    }
    let mut killed = 0;
    for &pid in pids.iter().filter(|&&p| alive(p)) {
        let pid = Pid::from_raw(pid);
        if killpg(pid, Signal::SIGKILL).is_err() {
            let _ = kill(pid, Signal::SIGKILL);
        }
        killed += 1;
    }
    killed
}

/// The process exists and is not a zombie (a zombie is dead; only its parent's
/// bookkeeping remains).
pub fn alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name, which may contain spaces.
        Ok(stat) => stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.chars().next())
            .is_some_and(|state| state != 'Z'),
        Err(_) if Path::new("/proc/self/stat").exists() => false,
        Err(_) => nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok(),
    }
}

/// Removes a tree, again if a straggler recreated it a moment later.
fn remove_tree(root: &Path) -> bool {
    for _ in 0..3 {
        let _ = std::fs::remove_dir_all(root);
        std::thread::sleep(Duration::from_millis(50));
        if !root.exists() {
            return true;
        }
    }
    !root.exists()
}

/// Fills the demo checkout: a small repository whose working tree holds an uncommitted
/// change, so a critic launched from the demo has a real diff to review. Best effort:
/// without git it is a plain directory holding the changed file.
pub fn prepare_workdir(dir: &Path) {
    let write = |rel: &str, text: &str| {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let _ = std::fs::write(path, text);
    };
    write(
        "README.md",
        "# demo\n\nA retry helper, for `the-loop demo`.\n",
    );
    write("src/retry.rs", RETRY_BEFORE);
    let git = |args: &[&str]| {
        let mut cmd = Command::new("git");
        cmd.args([
            "-c",
            "user.name=the-loop demo",
            "-c",
            "user.email=demo@example.invalid",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .stdin(Stdio::null());
        output_within(cmd, Duration::from_secs(10)).is_some_and(|o| o.status.success())
    };
    let _ = git(&["init", "-q"])
        && git(&["add", "-A"])
        && git(&["commit", "-q", "-m", "Retry with exponential backoff"]);
    write("src/retry.rs", RETRY_AFTER);
}

const RETRY_BEFORE: &str =
    "/// The delay before retry number `attempt` (0-based): doubles each time.
pub fn backoff_ms(attempt: u32, base_ms: u64) -> u64 {
    base_ms.saturating_mul(1 << attempt.min(20))
}
";

const RETRY_AFTER: &str =
    "/// The delay before retry number `attempt` (0-based): doubles each time, up to `cap_ms`.
pub fn backoff_ms(attempt: u32, base_ms: u64, cap_ms: u64) -> u64 {
    base_ms.saturating_mul(1 << attempt.min(20)).min(cap_ms)
}
";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config;

    fn inputs<'a>(dir: &'a Path, exe: &'a Path, log: &'a Path) -> ConfigInputs<'a> {
        ConfigInputs {
            api_url: "http://127.0.0.1:4321",
            workdir: dir,
            exe,
            agent_log: log,
            socket: "the-loop-demo-1-abc",
        }
    }

    #[test]
    fn the_demo_config_is_valid_and_says_what_the_demo_needs() {
        let dir = Path::new("/tmp/demo work \"quoted\"/w");
        let exe = Path::new("/tmp/x/bin/the-loop");
        let log = Path::new("/tmp/x/fake-agent.jsonl");
        let text = render_config(&inputs(dir, exe, log));
        let parsed = config::parse_str(&text, Path::new("demo.yaml")).unwrap();
        assert_eq!(parsed.github.api_url, "http://127.0.0.1:4321");
        assert_eq!(parsed.repos.len(), 1);
        assert_eq!(parsed.repos[0].name, scenario::REPO);
        assert_eq!(parsed.repos[0].label, scenario::LABEL);
        assert_eq!(parsed.repos[0].working_dir().as_deref(), Some(dir));
        assert_eq!(parsed.routing.authorized_users, [scenario::OPERATOR]);
        assert_eq!(parsed.polling.interval_seconds, 5);
        assert!(!parsed.server.enabled);
        assert_eq!(parsed.sessions.tmux.socket, "the-loop-demo-1-abc");
        assert_eq!(parsed.sessions.harness, AGENT);
        let fake = &parsed.sessions.harnesses[AGENT];
        assert_eq!(fake.command, "/tmp/x/bin/the-loop");
        assert_eq!(
            fake.args,
            [
                "fake-agent",
                "--log",
                "/tmp/x/fake-agent.jsonl",
                "--ask-trigger",
                scenario::ASK_TRIGGER,
                "--",
                "{prompt}"
            ]
        );
        let critics = crate::critic::entries(&parsed);
        assert_eq!(critics.len(), 1);
        let spec = critics[0].spec.as_ref().unwrap();
        assert_eq!(critics[0].name.as_deref(), Some(CRITIC));
        assert_eq!(spec.program(), "/tmp/x/bin/the-loop");
    }

    #[test]
    fn a_world_is_private_and_gone_after_cleanup() {
        use std::os::unix::fs::PermissionsExt;
        let temp = tempfile::tempdir().unwrap();
        let exe = std::env::current_exe().unwrap();
        let mut world = World::create(temp.path(), &exe, Pace::Fast).unwrap();
        let root = world.root().to_path_buf();
        let name = root.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with(&format!("{PREFIX}{}-", std::process::id())));
        assert_eq!(world.socket(), name);
        let mode = std::fs::metadata(&root).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "only the user can read the demo state");
        assert_eq!(std::fs::read_link(world.exe()).unwrap(), exe);
        world.write_config("http://127.0.0.1:1").unwrap();
        assert!(world.config_path().is_file());

        let cmd = world.command(["sessions", "list"]);
        let envs: Vec<(String, Option<String>)> = cmd
            .get_envs()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.map(|v| v.to_string_lossy().into_owned()),
                )
            })
            .collect();
        let get = |k: &str| envs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        assert_eq!(get("GH_TOKEN"), Some(Some(scenario::TOKEN.into())));
        assert_eq!(get("GITHUB_TOKEN"), Some(None), "removed");
        assert_eq!(get("TMUX"), Some(None), "removed");
        assert_eq!(
            get(paths::ENV_HOME),
            Some(Some(root.to_string_lossy().into()))
        );
        assert_eq!(
            get(paths::ENV_API_URL),
            Some(Some("http://127.0.0.1:1".into()))
        );
        assert_eq!(
            get(paths::ENV_TMUX_SOCKET),
            Some(Some(world.socket().into()))
        );

        let report = world.cleanup();
        assert!(report.removed);
        assert!(!root.exists());
        assert!(!report.tmux.was_running);
        assert_eq!(world.cleanup(), Cleanup::default(), "idempotent");
    }

    #[test]
    fn a_kept_world_stays_for_inspection() {
        let temp = tempfile::tempdir().unwrap();
        let exe = std::env::current_exe().unwrap();
        let mut world = World::create(temp.path(), &exe, Pace::Normal).unwrap();
        world.keep(true);
        let report = world.cleanup();
        assert_eq!(report.kept.as_deref(), Some(world.root()));
        assert!(world.root().is_dir());
    }

    #[test]
    fn the_checkout_has_a_change_to_review() {
        let temp = tempfile::tempdir().unwrap();
        prepare_workdir(temp.path());
        let text = std::fs::read_to_string(temp.path().join("src/retry.rs")).unwrap();
        assert!(text.contains("cap_ms"));
        if temp.path().join(".git").is_dir() {
            let diff = Command::new("git")
                .args(["diff", "--stat"])
                .current_dir(temp.path())
                .output()
                .unwrap();
            assert!(String::from_utf8_lossy(&diff.stdout).contains("src/retry.rs"));
        }
    }

    #[test]
    fn liveness_reads_the_process_table() {
        assert!(alive(std::process::id() as i32));
        assert!(!alive(0));
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        child.wait().unwrap();
        assert!(!alive(pid));
    }
}
