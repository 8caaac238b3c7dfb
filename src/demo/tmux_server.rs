//! The demo's tmux server from the outside: where its socket is, and how to take it
//! down so that no process of its panes survives.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How the demo's tmux server ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TmuxStop {
    /// A server was running on the socket.
    pub was_running: bool,
    /// Pane processes that outlived `kill-server` and were killed.
    pub killed: usize,
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
pub(crate) fn output_within(mut cmd: Command, limit: Duration) -> Option<std::process::Output> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
