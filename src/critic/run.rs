//! Running one critic process (SPEC §9.3): argv only, never a shell; its own process
//! group, so a timeout or a cancellation kills the critic *and* everything it started;
//! stdout and stderr read concurrently (a full pipe never stalls the child) and capped.

use crate::secrets::ChildEnv;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::collections::BTreeMap;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::watch;

/// The most kept of each stream; the rest is read and dropped.
pub const STREAM_CAP: usize = 1024 * 1024;
/// SIGTERM first, then SIGKILL after this long.
pub const KILL_GRACE: Duration = Duration::from_secs(2);
/// After the critic exits, how long the pipes may stay open (something it started still
/// holds them) before the rest of its group is killed.
pub const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// One process to run.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessSpec {
    /// The resolved executable.
    pub program: PathBuf,
    /// The full argv; `argv[0]` is what the child sees as its name.
    pub argv: Vec<String>,
    /// Overlaid on the inherited environment.
    pub env: BTreeMap<String, String>,
    /// Takes the secrets out of the inherited environment (SPEC §14.4); the entry's own
    /// `env` is applied after it.
    pub child_env: ChildEnv,
    pub cwd: PathBuf,
    pub timeout: Duration,
    pub kill_grace: Duration,
}

/// What was read from one stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    /// At most [`STREAM_CAP`] bytes.
    pub bytes: Vec<u8>,
    /// Everything the stream carried, kept or not.
    pub total: u64,
}

impl Captured {
    pub fn was_cut(&self) -> bool {
        self.total > self.bytes.len() as u64
    }

    /// The kept bytes as text, with a note when the stream was cut.
    pub fn text(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.bytes).into_owned();
        if self.was_cut() {
            let dropped = self.total - self.bytes.len() as u64;
            text.push_str(&format!(
                "\n[the-loop: output cut at {} MiB; {dropped} more bytes were not kept]",
                STREAM_CAP / (1024 * 1024)
            ));
        }
        text
    }
}

/// How the process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    Exited(i32),
    Signalled(i32),
    /// The timeout struck and the group was killed; the code is how the critic ended.
    TimedOut {
        code: i32,
    },
}

impl Ending {
    fn from_status(status: ExitStatus) -> Self {
        match (status.code(), status.signal()) {
            (Some(code), _) => Ending::Exited(code),
            (None, Some(signal)) => Ending::Signalled(signal),
            (None, None) => Ending::Exited(-1),
        }
    }

    /// The envelope's `exitCode`: the code, or `128 + signal`.
    pub fn code(self) -> i32 {
        match self {
            Ending::Exited(code) | Ending::TimedOut { code } => code,
            Ending::Signalled(signal) => 128 + signal,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    pub ending: Ending,
    pub stdout: Captured,
    pub stderr: Captured,
    pub elapsed: Duration,
}

/// Runs `spec` to its end. `Err` only when it could not be started. Dropping the future
/// (cancelling the round) kills the whole process group.
pub async fn execute(spec: &ProcessSpec) -> io::Result<Finished> {
    let started = Instant::now();
    let mut command = tokio::process::Command::new(&spec.program);
    if let Some(name) = spec.argv.first() {
        command.arg0(name);
    }
    spec.child_env.scrub(&mut command);
    command
        .args(spec.argv.iter().skip(1))
        .envs(&spec.env)
        .current_dir(&spec.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = command.spawn()?;
    let mut group = GroupGuard::new(child.id());
    let (stop_tx, stop_rx) = watch::channel(false);
    let stdout = child
        .stdout
        .take()
        .map(|s| tokio::spawn(read_capped(s, STREAM_CAP, stop_rx.clone())));
    let stderr = child
        .stderr
        .take()
        .map(|s| tokio::spawn(read_capped(s, STREAM_CAP, stop_rx)));

    let ending = match tokio::time::timeout(spec.timeout, child.wait()).await {
        Ok(status) => Ending::from_status(status?),
        Err(_) => {
            group.signal(Signal::SIGTERM);
            let on_term = tokio::time::timeout(spec.kill_grace, child.wait()).await;
            // SIGKILL even if the leader went on SIGTERM: its children may not have.
            group.signal(Signal::SIGKILL);
            let status = match on_term {
                Ok(status) => status?,
                Err(_) => child.wait().await?,
            };
            Ending::TimedOut {
                code: Ending::from_status(status).code(),
            }
        }
    };

    let readers = async {
        let out = join_reader(stdout).await;
        let err = join_reader(stderr).await;
        (out, err)
    };
    tokio::pin!(readers);
    let (stdout, stderr) = match tokio::time::timeout(DRAIN_GRACE, &mut readers).await {
        Ok(both) => both,
        Err(_) => {
            // The critic is gone but something it started still holds the pipes.
            group.signal(Signal::SIGKILL);
            match tokio::time::timeout(DRAIN_GRACE, &mut readers).await {
                Ok(both) => both,
                Err(_) => {
                    // Escaped the group (setsid) and kept the pipe: stop reading.
                    let _ = stop_tx.send(true);
                    readers.await
                }
            }
        }
    };
    group.disarm();
    Ok(Finished {
        ending,
        stdout,
        stderr,
        elapsed: started.elapsed(),
    })
}

async fn join_reader(handle: Option<tokio::task::JoinHandle<Captured>>) -> Captured {
    match handle {
        Some(h) => h.await.unwrap_or_default(),
        None => Captured::default(),
    }
}

/// Reads to EOF (or until told to stop), keeping the first `cap` bytes.
async fn read_capped(
    mut stream: impl AsyncRead + Unpin,
    cap: usize,
    mut stop: watch::Receiver<bool>,
) -> Captured {
    let mut captured = Captured::default();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        tokio::select! {
            biased;
            read = stream.read(&mut chunk) => match read {
                Ok(0) => break,
                Ok(n) => {
                    captured.total += n as u64;
                    let room = cap.saturating_sub(captured.bytes.len());
                    captured.bytes.extend_from_slice(&chunk[..n.min(room)]);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            },
            _ = stop.changed() => break,
        }
    }
    captured
}

/// Kills the critic's process group when dropped while armed: a cancelled round (the
/// future dropped, Ctrl-C) leaves nothing running.
struct GroupGuard {
    pgid: Option<Pid>,
}

impl GroupGuard {
    fn new(pid: Option<u32>) -> Self {
        // `process_group(0)`: the child leads a new group whose id is its pid.
        let pgid = pid
            .and_then(|p| i32::try_from(p).ok())
            .filter(|p| *p > 1)
            .map(Pid::from_raw);
        Self { pgid }
    }

    fn signal(&self, signal: Signal) {
        if let Some(pgid) = self.pgid {
            // ESRCH (nobody left in the group) is the outcome we want.
            let _ = killpg(pgid, signal);
        }
    }

    fn disarm(&mut self) {
        self.pgid = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.signal(Signal::SIGKILL);
    }
}
