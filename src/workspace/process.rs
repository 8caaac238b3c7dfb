//! Running one child for the workspace module — git, or a setup command: argv only,
//! its own process group (a timeout kills it and everything it started), stdin closed,
//! stdout kept up to a cap, the end of stderr kept for messages.

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};

/// How much of the end of stderr is kept.
const STDERR_KEEP: usize = 16 * 1024;

/// One child to run.
pub(super) struct Spec {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub cwd: Option<PathBuf>,
    pub set: Vec<(String, String)>,
    pub remove: Vec<&'static str>,
    /// Takes the secrets out of the inherited environment (SPEC §14.4) before `set`.
    pub child_env: crate::secrets::ChildEnv,
    pub timeout: Duration,
    /// stdout beyond this is not kept (the child is stopped once it is reached).
    pub cap: usize,
}

pub(super) enum RunError {
    NotFound,
    Timeout,
    Io(String),
}

pub(super) struct Ran {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    /// The last [`STDERR_KEEP`] bytes of stderr.
    pub stderr: String,
    /// stdout reached the cap.
    pub cut: bool,
}

pub(super) async fn run(spec: Spec) -> Result<Ran, RunError> {
    let mut command = tokio::process::Command::new(&spec.program);
    command
        .args(&spec.args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    spec.child_env.scrub(&mut command);
    for var in &spec.remove {
        command.env_remove(var);
    }
    for (key, value) in &spec.set {
        command.env(key, value);
    }
    let mut child = command.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => RunError::NotFound,
        _ => RunError::Io(e.to_string()),
    })?;
    let group = child
        .id()
        .and_then(|p| i32::try_from(p).ok())
        .filter(|p| *p > 1)
        .map(Pid::from_raw);
    let kill_group = || {
        if let Some(pgid) = group {
            // ESRCH (nobody left in the group) is the outcome we want.
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    };
    let stdout = child.stdout.take();
    let errors = tokio::spawn(read_tail(child.stderr.take()));
    let cap = spec.cap;
    let work = async {
        let (bytes, cut) = read_capped(stdout, cap).await;
        if cut {
            kill_group(); // nobody reads the rest
        }
        (bytes, cut, child.wait().await)
    };
    let Ok((bytes, cut, status)) = tokio::time::timeout(spec.timeout, work).await else {
        kill_group();
        errors.abort();
        return Err(RunError::Timeout);
    };
    // Whatever the child left behind in its group goes with it.
    kill_group();
    let status = status.map_err(|e| RunError::Io(e.to_string()))?;
    let stderr = match tokio::time::timeout(Duration::from_secs(5), errors).await {
        Ok(Ok(text)) => text,
        _ => String::new(),
    };
    Ok(Ran {
        status,
        stdout: bytes,
        stderr,
        cut,
    })
}

async fn read_capped(stream: Option<impl AsyncRead + Unpin>, cap: usize) -> (Vec<u8>, bool) {
    let mut bytes = Vec::new();
    let mut cut = false;
    if let Some(mut stream) = stream {
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = cap.saturating_sub(bytes.len());
                    bytes.extend_from_slice(&chunk[..n.min(room)]);
                    if n > room {
                        cut = true;
                        break;
                    }
                }
            }
        }
    }
    if cut {
        let end = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        bytes.truncate(end);
    }
    (bytes, cut)
}

/// Reads a stream to its end, keeping its last [`STDERR_KEEP`] bytes.
async fn read_tail(stream: Option<impl AsyncRead + Unpin>) -> String {
    let mut kept: Vec<u8> = Vec::new();
    if let Some(mut stream) = stream {
        let mut chunk = vec![0u8; 8192];
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    kept.extend_from_slice(&chunk[..n]);
                    if kept.len() > 2 * STDERR_KEEP {
                        kept.drain(..kept.len() - STDERR_KEEP);
                    }
                }
            }
        }
    }
    if kept.len() > STDERR_KEEP {
        kept.drain(..kept.len() - STDERR_KEEP);
    }
    String::from_utf8_lossy(&kept).into_owned()
}
