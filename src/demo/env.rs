//! The demo's private world: a temp state root, a private tmux socket name, the config
//! that points everything at the simulator, and the environment every child process
//! gets. [`World::cleanup`] (also run on drop) takes all of it down again: the tmux
//! server and every process in its panes, then the files.
//!
//! Children get their settings through `Command::env` — never `std::env::set_var`, which
//! is `unsafe` in a threaded process and would leak into the operator's own setup.

use super::config::{ConfigInputs, render_config};
use super::scenario::{self, Pace};
use super::tmux_server::{TmuxStop, output_within, socket_file, stop_tmux_server};
use crate::paths;
use std::ffi::OsStr;
use std::fs::DirBuilder;
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

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
    /// Where tmux puts the socket, learned while the root exists (the uid is read from it).
    socket_file: Option<PathBuf>,
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
        let socket_file = socket_file(&root, &name);
        let mut world = Self {
            root,
            socket: name,
            socket_file,
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
        // In the demo's state root, which is private throughout (SPEC §18.5).
        crate::fsutil::create_private_dir_all(&world.workdir())?;
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

    /// The demo agent's fix, copied into its worktree when the operator asks for it.
    pub fn fix_dir(&self) -> PathBuf {
        self.root.join("fix")
    }

    /// Writes the demo config pointing at the simulator's `api_url`.
    pub fn write_config(&mut self, api_url: &str) -> io::Result<()> {
        let text = render_config(&ConfigInputs {
            api_url,
            workdir: &self.workdir(),
            exe: &self.exe,
            agent_log: &self.agent_log(),
            fix: &self.fix_dir(),
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
        // The operator's real tokens and webhook secret stay out; the demo token is fake.
        crate::secrets::ChildEnv::default().scrub(cmd);
        cmd.env(paths::ENV_HOME, &self.root)
            .env(paths::ENV_CONFIG, self.config_path())
            .env(paths::ENV_TMUX_SOCKET, &self.socket)
            .env("GH_TOKEN", scenario::TOKEN)
            .env(scenario::ENV_PACE, self.pace.as_str())
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
        // tmux never removes its socket file; a server that may still run keeps it, so
        // it can be reached (and a later demo's sweep can take it down).
        if let Some(file) = &self.socket_file
            && report.tmux.gone
        {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
