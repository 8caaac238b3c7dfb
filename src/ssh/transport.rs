//! One host's connection: a ControlMaster the transport starts (`ssh -M -N -f`, with
//! `ControlPersist` so a CLI command that started it does not take it down, for at most
//! [`PERSIST_IDLE`] with nothing over it) and every
//! command multiplexed over it (`ssh -S … -o ControlMaster=no`).
//!
//! The pitfalls of the anchors, handled here:
//! - a stale control socket (its master gone, or hung on a dead network) makes every
//!   client hang or fail, and `ConnectTimeout` does not cover it: the master is probed
//!   (`-O check`, bounded) before it is trusted, and a stale or hung one is replaced;
//! - sshd's `MaxSessions` (10 by default) caps the channels of one connection: at most
//!   [`CHANNELS`] commands run at once per host, the rest queue;
//! - an idle connection dropped by a middlebox: `ServerAliveInterval`, after which a
//!   dead master exits and the next call connects again.

use super::forward::Forward;
use super::state::StateCell;
use super::{HostState, SshError, command_line};
use crate::secrets::ChildEnv;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::sync::Semaphore;

/// Commands at once over one connection: below sshd's default `MaxSessions` (10), with
/// room for the master's own probes and an operator's attach.
pub const CHANNELS: usize = 7;

/// How long a master with nothing over it stays (`ControlPersist`): a CLI command's
/// next neighbour reuses it, and one left by a CLI command goes by itself. The
/// supervisor's pings keep its own busy; it closes them when it stops
/// ([`Transport::disconnect`] for each host).
const PERSIST_IDLE: &str = "10m";

/// How long a probe of the master (`-O check`) may take before the master is taken for
/// hung.
pub(super) const CHECK_TIMEOUT: Duration = Duration::from_secs(3);

/// `sun_path` holds 108 bytes with its NUL, and ssh binds the master at the path plus
/// a 17-byte random suffix before renaming it into place.
const MAX_CONTROL_PATH: usize = 107 - 17;

/// Where and how to reach one host (from a `hosts:` entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    /// The entry's name (`hosts[].name`): names the control socket and every message.
    pub name: String,
    /// What the operator's `ssh` takes (`dev@build-1`, an alias, `ssh://h:2222`).
    pub ssh: String,
    /// `-F`: an ssh_config file instead of the user's own.
    pub config_file: Option<PathBuf>,
    pub connect_timeout: Duration,
    pub server_alive: Duration,
}

/// What one remote command did.
#[derive(Debug, Clone)]
pub struct Output {
    pub success: bool,
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

/// Counters a host reports (the figures of `connections per deliveries`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Masters started: each is one SSH connection (one authentication).
    pub connections: u64,
    /// Commands run over the connection.
    pub commands: u64,
}

/// What the far side is like, learned once per connection.
#[derive(Debug, Clone, Default)]
struct Facts {
    home: String,
    path: String,
}

/// The probe's answer about the control socket.
#[derive(Debug, PartialEq, Eq)]
enum Master {
    Running(u32),
    /// No socket file: nothing to replace.
    Absent,
    /// A socket file nobody answers on, or a master that does not answer in time.
    Stale,
}

/// One host's SSH connection and the commands over it.
#[derive(Debug)]
pub struct Transport {
    pub(super) dest: Destination,
    control: PathBuf,
    /// Where a master's own messages go (it runs in the background, so stderr is a file).
    log: PathBuf,
    pub(super) program: OsString,
    pub(super) child_env: ChildEnv,
    channels: Semaphore,
    pub(super) connecting: tokio::sync::Mutex<()>,
    state: StateCell,
    facts: Mutex<Option<Facts>>,
    master_pid: Mutex<Option<u32>>,
    /// Unix sockets on the host forwarded to sockets here, on every master.
    pub(super) forwards: Mutex<Vec<Forward>>,
    /// The master the forwards were last set up on.
    pub(super) forwarded_on: Mutex<Option<u32>>,
    /// Why the last setup of the forwards failed.
    pub(super) forward_problem: Mutex<Option<String>>,
    connections: AtomicU64,
    commands: AtomicU64,
}

impl Transport {
    /// The host's control socket is `<control_dir>/<name>`; `control_dir` must be
    /// private (0700), as the state root is.
    pub fn new(dest: Destination, control_dir: &Path) -> Self {
        let control = control_dir.join(&dest.name);
        Self {
            log: control_dir.join(format!("{}.log", dest.name)),
            dest,
            control,
            program: "ssh".into(),
            child_env: ChildEnv::default(),
            channels: Semaphore::new(CHANNELS),
            connecting: tokio::sync::Mutex::new(()),
            state: StateCell::default(),
            facts: Mutex::new(None),
            master_pid: Mutex::new(None),
            forwards: Mutex::new(Vec::new()),
            forwarded_on: Mutex::new(None),
            forward_problem: Mutex::new(None),
            connections: AtomicU64::new(0),
            commands: AtomicU64::new(0),
        }
    }

    /// What ssh (and so the far side) gets of our environment: no secrets.
    pub fn with_child_env(mut self, child_env: ChildEnv) -> Self {
        self.child_env = child_env;
        self
    }

    /// Runs this program instead of `ssh` from `PATH`.
    pub fn with_program(mut self, program: impl Into<OsString>) -> Self {
        self.program = program.into();
        self
    }

    pub fn name(&self) -> &str {
        &self.dest.name
    }

    pub fn destination(&self) -> &Destination {
        &self.dest
    }

    pub fn control_path(&self) -> &Path {
        &self.control
    }

    pub fn state(&self) -> HostState {
        self.state.get()
    }

    pub fn stats(&self) -> Stats {
        Stats {
            connections: self.connections.load(Ordering::Relaxed),
            commands: self.commands.load(Ordering::Relaxed),
        }
    }

    /// The pid of the master this transport last saw running (tests kill it).
    pub fn master_pid(&self) -> Option<u32> {
        *self
            .master_pid
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The remote user's `HOME`, once connected.
    pub fn remote_home(&self) -> Option<String> {
        self.facts().map(|f| f.home)
    }

    /// The remote login's `PATH`, once connected.
    pub fn remote_path(&self) -> Option<String> {
        self.facts().map(|f| f.path)
    }

    fn facts(&self) -> Option<Facts> {
        self.facts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Each change of the host's state from now on, whoever noticed it (a ping, a
    /// command that failed or got through, a connect): see [`StateCell::changes`].
    pub fn changes(&self) -> tokio::sync::mpsc::UnboundedReceiver<HostState> {
        self.state.changes()
    }

    fn set_state(&self, state: HostState) {
        self.state.set(state);
    }

    /// The options of every invocation: the control socket, no prompt, no forwarding.
    pub(super) fn base_args(&self, master: bool) -> Vec<OsString> {
        let mut args: Vec<OsString> = Vec::new();
        if let Some(file) = &self.dest.config_file {
            args.push("-F".into());
            args.push(file.into());
        }
        let mut control_path = OsString::from("ControlPath=");
        control_path.push(&self.control);
        let options = [
            "BatchMode=yes".to_string(),
            format!("ControlMaster={}", if master { "yes" } else { "no" }),
            "ForwardAgent=no".into(),
            "ForwardX11=no".into(),
            "ClearAllForwardings=yes".into(),
            "PermitLocalCommand=no".into(),
            format!(
                "ConnectTimeout={}",
                self.dest.connect_timeout.as_secs().max(1)
            ),
            format!(
                "ServerAliveInterval={}",
                self.dest.server_alive.as_secs().max(1)
            ),
            "ServerAliveCountMax=3".into(),
        ];
        args.push("-o".into());
        args.push(control_path);
        for option in options {
            args.push("-o".into());
            args.push(option.into());
        }
        args
    }

    pub(super) fn command(&self, args: Vec<OsString>) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(args)
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        self.child_env.scrub(&mut command);
        command
    }

    fn io_error(&self, error: std::io::Error) -> SshError {
        if error.kind() == std::io::ErrorKind::NotFound {
            SshError::NotInstalled
        } else {
            SshError::Io {
                host: self.dest.name.clone(),
                reason: error.to_string(),
            }
        }
    }

    /// Asks the master whether it runs, within [`CHECK_TIMEOUT`].
    async fn check(&self) -> Result<Master, SshError> {
        let mut args = self.base_args(false);
        args.extend(["-O".into(), "check".into(), self.dest.ssh.clone().into()]);
        let child = self
            .command(args)
            .stdin(Stdio::null())
            .spawn()
            .map_err(|e| self.io_error(e))?;
        match tokio::time::timeout(CHECK_TIMEOUT, child.wait_with_output()).await {
            Err(_) => Ok(Master::Stale),
            Ok(Err(error)) => Err(self.io_error(error)),
            Ok(Ok(out)) => {
                let said = String::from_utf8_lossy(&out.stderr);
                let pid = said
                    .split_once("(pid=")
                    .and_then(|(_, rest)| rest.split_once(')'))
                    .and_then(|(pid, _)| pid.parse().ok());
                Ok(match pid {
                    Some(pid) if out.status.success() => Master::Running(pid),
                    _ if self.control.exists() => Master::Stale,
                    _ => Master::Absent,
                })
            }
        }
    }

    /// Makes sure a working master runs: probes the one there, replaces it when stale
    /// or hung, starts one when there is none, and learns the far side's `HOME` and
    /// `PATH`. Returns the round trip of that first command.
    pub async fn connect(&self) -> Result<Duration, SshError> {
        let _one = self.connecting.lock().await;
        let result = self.connect_locked().await;
        match &result {
            Ok(rtt) => self.set_state(HostState::Up { rtt: *rtt }),
            Err(error) => self.set_state(HostState::Unreachable {
                reason: error.to_string(),
            }),
        }
        result
    }

    async fn connect_locked(&self) -> Result<Duration, SshError> {
        let len = self.control.as_os_str().len();
        if len > MAX_CONTROL_PATH {
            return Err(SshError::SocketPathTooLong {
                path: self.control.display().to_string(),
                len,
                max: MAX_CONTROL_PATH,
            });
        }
        if let Some(dir) = self.control.parent() {
            crate::fsutil::create_private_dir_all(dir).map_err(|e| self.io_error(e))?;
        }
        match self.check().await? {
            Master::Running(pid) => {
                *self
                    .master_pid
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(pid);
            }
            found => {
                if found == Master::Stale {
                    self.replace_stale();
                }
                self.start_master().await?;
                *self.facts.lock().unwrap_or_else(PoisonError::into_inner) = None;
                if let Master::Running(pid) = self.check().await? {
                    *self
                        .master_pid
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = Some(pid);
                }
            }
        }
        let started = Instant::now();
        let out = self
            .exec(
                &["printenv".to_string(), "HOME".into(), "PATH".into()],
                None,
                self.dest.connect_timeout,
            )
            .await?;
        let rtt = started.elapsed();
        let text = String::from_utf8_lossy(&out.stdout);
        let mut lines = text.lines();
        let facts = Facts {
            home: lines.next().unwrap_or_default().to_string(),
            path: lines.next().unwrap_or_default().to_string(),
        };
        *self.facts.lock().unwrap_or_else(PoisonError::into_inner) = Some(facts);
        self.set_up_forwards().await;
        Ok(rtt)
    }

    /// A socket file nobody answers on: its master (if we know it) is stopped and the
    /// file removed, so the new master can bind the path.
    fn replace_stale(&self) {
        let pid = self
            .master_pid
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        tracing::warn!(host = %self.dest.name, "replacing a stale ssh control socket");
        let _ = std::fs::remove_file(&self.control);
    }

    /// `ssh -M -N -f`: returns once authenticated (or failed); the master stays in the
    /// background with `ControlPersist` ([`PERSIST_IDLE`]).
    async fn start_master(&self) -> Result<(), SshError> {
        let log = crate::fsutil::open_private(
            std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(true),
            &self.log,
        )
        .map_err(|e| self.io_error(e))?;
        let mut args = self.base_args(true);
        args.extend([
            "-o".into(),
            format!("ControlPersist={PERSIST_IDLE}").into(),
            "-N".into(),
            "-f".into(),
            self.dest.ssh.clone().into(),
        ]);
        let mut command = self.command(args);
        // The backgrounded master keeps these open: a pipe would never reach its end.
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log));
        let mut child = command.spawn().map_err(|e| self.io_error(e))?;
        self.connections.fetch_add(1, Ordering::Relaxed);
        let within = self.dest.connect_timeout + Duration::from_secs(5);
        let status = match tokio::time::timeout(within, child.wait()).await {
            Err(_) => {
                let _ = child.kill().await;
                return Err(
                    self.connect_error(format!("no connection within {}s", within.as_secs()))
                );
            }
            Ok(status) => status.map_err(|e| self.io_error(e))?,
        };
        if status.success() {
            Ok(())
        } else {
            let said = std::fs::read_to_string(&self.log).unwrap_or_default();
            let reason = said
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("ssh exited without a message")
                .trim()
                .to_string();
            Err(self.connect_error(reason))
        }
    }

    fn connect_error(&self, reason: String) -> SshError {
        SshError::Connect {
            host: self.dest.name.clone(),
            destination: self.dest.ssh.clone(),
            reason,
        }
    }

    /// Runs `argv` on the host (stdin fed when given), within `timeout`. Connects
    /// first when there is no working connection. A non-zero exit of the command is an
    /// `Ok` with `success: false`; a connection that fails or drops is an error, and the
    /// host is `Unreachable` until a call gets through again.
    pub async fn run(
        &self,
        argv: &[String],
        stdin: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<Output, SshError> {
        let _channel = self.channels.acquire().await.map_err(|_| SshError::Io {
            host: self.dest.name.clone(),
            reason: "the transport is closed".into(),
        })?;
        // A master that died leaves its socket file: a client would then open a direct
        // connection of its own for every command. Its pid tells first.
        let master_gone = self.master_pid().is_some_and(|pid| !process_runs(pid));
        if master_gone || !matches!(self.state(), HostState::Up { .. }) || !self.control.exists() {
            self.connect().await?;
        }
        if self.forwards_pending() {
            let _one = self.connecting.lock().await;
            self.set_up_forwards().await;
        }
        let result = self.exec(argv, stdin, timeout).await;
        if let Err(error) = &result
            && error.is_unreachable()
        {
            self.set_state(HostState::Unreachable {
                reason: error.to_string(),
            });
        }
        result
    }

    /// Measures a round trip (`true` on the host) and refreshes the state: the health
    /// check the supervisor runs per host.
    pub async fn ping(&self) -> Result<Duration, SshError> {
        let started = Instant::now();
        self.run(&["true".to_string()], None, self.dest.connect_timeout)
            .await?;
        let rtt = started.elapsed();
        self.set_state(HostState::Up { rtt });
        Ok(rtt)
    }

    /// One command over the master, no connecting.
    pub(super) async fn exec(
        &self,
        argv: &[String],
        stdin: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<Output, SshError> {
        let line = command_line(argv).map_err(|source| SshError::Quote {
            host: self.dest.name.clone(),
            source,
        })?;
        let shown = argv.join(" ");
        let mut args = self.base_args(false);
        args.extend([
            "-T".into(),
            self.dest.ssh.clone().into(),
            "--".into(),
            line.into(),
        ]);
        let mut command = self.command(args);
        command.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        self.commands.fetch_add(1, Ordering::Relaxed);
        let attempt = async {
            let mut child = command.spawn()?;
            if let (Some(data), Some(mut pipe)) = (stdin, child.stdin.take()) {
                pipe.write_all(data).await?;
                pipe.shutdown().await?;
            }
            child.wait_with_output().await
        };
        let out = match tokio::time::timeout(timeout, attempt).await {
            Err(_) => {
                return Err(SshError::Timeout {
                    host: self.dest.name.clone(),
                    command: shown,
                    after: timeout,
                });
            }
            Ok(Err(error)) => return Err(self.io_error(error)),
            Ok(Ok(out)) => out,
        };
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        // 255 is ssh's own failure: the connection, not the command.
        if out.status.code() == Some(255) {
            return Err(SshError::Dropped {
                host: self.dest.name.clone(),
                command: shown,
                reason: if stderr.is_empty() {
                    "ssh exited 255".into()
                } else {
                    stderr
                },
            });
        }
        Ok(Output {
            success: out.status.success(),
            code: out.status.code(),
            stdout: out.stdout,
            stderr,
        })
    }

    /// Ends the master (`-O exit`), best effort.
    pub async fn disconnect(&self) {
        let mut args = self.base_args(false);
        args.extend(["-O".into(), "exit".into(), self.dest.ssh.clone().into()]);
        let _ = tokio::time::timeout(
            CHECK_TIMEOUT,
            self.command(args).stdin(Stdio::null()).output(),
        )
        .await;
        self.set_state(HostState::Unknown);
    }
}

/// Whether process `pid` still runs: it exists (signal 0 sends nothing) and, where
/// `/proc` tells, is not a zombie nobody reaped yet.
fn process_runs(pid: u32) -> bool {
    let exists = i32::try_from(pid)
        .is_ok_and(|pid| nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok());
    let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rfind(')')
            .and_then(|end| stat[end + 1..].split_whitespace().next())
            == Some("Z")
    });
    exists && !zombie
}

#[cfg(test)]
#[path = "transport_tests.rs"]
mod tests;
