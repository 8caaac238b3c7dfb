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
    /// Neither the server nor any process of its panes runs any more.
    pub gone: bool,
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

impl TmuxTarget<'_> {
    /// The `-L` name (a socket file's name is the name it was created under).
    fn name(&self) -> String {
        match self {
            TmuxTarget::Name(name) => name.to_string(),
            TmuxTarget::File(path) => path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        }
    }
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
    let mut panes: Vec<i32> = tmux(target, &["list-panes", "-a", "-F", "#{pane_pid}"])
        .filter(|o| o.status.success())
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter_map(|l| l.trim().parse().ok())
                .collect()
        })
        .unwrap_or_default();
    let mut servers: Vec<i32> = tmux(target, &["display-message", "-p", "#{pid}"])
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .into_iter()
        .collect();
    // A server whose socket is gone, or that does not answer, is found by its argv.
    for server in servers_named(&target.name()) {
        if !servers.contains(&server) {
            servers.push(server);
        }
    }
    for &server in &servers {
        for child in children_of(server) {
            if !panes.contains(&child) {
                panes.push(child);
            }
        }
    }
    // Unconditionally: a server that did not answer the questions above may still run.
    let killed_server = tmux(target, &["kill-server"]).is_some_and(|o| o.status.success());
    for &server in servers.iter().filter(|&&s| alive(s)) {
        // SIGTERM: tmux exits and hangs up its panes, as kill-server would.
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(server),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    let was_running = !servers.is_empty() || !panes.is_empty() || killed_server;
    // Hung-up panes get a moment to exit; then whatever lingers is killed.
    let mut pids = panes;
    pids.extend(&servers);
    let killed = reap(&pids, Duration::from_secs(3));
    TmuxStop {
        was_running,
        killed,
        gone: !pids.iter().any(|&p| alive(p)),
    }
}

/// Live tmux servers started as `tmux -L <name> …` (a server keeps the argv of the
/// client that started it, and leads its own session). Linux only: elsewhere none.
fn servers_named(name: &str) -> Vec<i32> {
    processes()
        .into_iter()
        .filter(|p| p.pid == p.sid && alive(p.pid))
        .filter(|p| {
            let argv: Vec<&str> = p.cmdline.split('\0').collect();
            let program = argv.first().map(Path::new).and_then(Path::file_name);
            program.is_some_and(|f| f == "tmux") && argv.windows(2).any(|w| w == ["-L", name])
        })
        .map(|p| p.pid)
        .collect()
}

fn children_of(parent: i32) -> Vec<i32> {
    processes()
        .into_iter()
        .filter(|p| p.ppid == parent)
        .map(|p| p.pid)
        .collect()
}

struct Process {
    pid: i32,
    ppid: i32,
    sid: i32,
    cmdline: String,
}

/// Every process `/proc` shows.
fn processes() -> Vec<Process> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // pid (comm) state ppid pgrp session …
            let (_, rest) = stat.rsplit_once(") ")?;
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let cmdline =
                std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            Some(Process {
                pid,
                ppid: fields.get(1)?.parse().ok()?,
                sid: fields.get(3)?.parse().ok()?,
                cmdline,
            })
        })
        .collect()
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

    #[test]
    fn a_server_whose_socket_is_gone_is_still_taken_down() {
        let dir = tempfile::tempdir().unwrap();
        let name = format!(
            "the-loop-demo-test-{}-{}",
            std::process::id(),
            rand::random::<u32>()
        );
        let started = Command::new("tmux")
            .args([
                "-L",
                &name,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                "x",
                "sleep",
                "600",
            ])
            .env_remove("TMUX")
            .status()
            .unwrap();
        assert!(started.success());
        let socket = socket_file(dir.path(), &name).unwrap();
        // tmux daemonizes by forking: for a moment the fork and the server share the argv.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let server = loop {
            let found = servers_named(&name);
            if found.len() == 1 || std::time::Instant::now() > deadline {
                break found;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        assert_eq!(server.len(), 1, "found by its argv");
        let panes = children_of(server[0]);
        assert_eq!(panes.len(), 1, "the pane's sleep");
        // What a half-finished cleanup could leave: a live server nobody can reach.
        std::fs::remove_file(&socket).unwrap();
        let stop = stop_tmux_server(&name);
        assert!(stop.was_running && stop.gone, "{stop:?}");
        assert!(!alive(server[0]) && !alive(panes[0]));
    }

    #[test]
    fn no_server_is_nothing_to_do() {
        let stop = stop_tmux_server(&format!("the-loop-demo-none-{}", std::process::id()));
        assert!(!stop.was_running && stop.gone, "{stop:?}");
    }
}
