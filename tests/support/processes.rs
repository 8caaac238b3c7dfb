//! The processes a test world starts, found and ended: every world runs its clients
//! from a private directory, so what still runs is what names that directory.

use super::tmux_server::TmuxServer;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long the processes of an ended world have to go.
const GONE_WITHIN: Duration = Duration::from_secs(10);

/// Processes whose command line or environment names `dir`, zombies aside.
pub fn running_from(dir: &Path) -> Vec<i32> {
    let needle = dir.to_string_lossy().into_owned();
    pids()
        .filter(|pid| {
            let proc = PathBuf::from(format!("/proc/{pid}"));
            let cmdline = std::fs::read(proc.join("cmdline")).unwrap_or_default();
            let environ = std::fs::read(proc.join("environ")).unwrap_or_default();
            let stat = std::fs::read_to_string(proc.join("stat")).unwrap_or_default();
            let zombie = stat
                .rsplit(')')
                .next()
                .is_some_and(|s| s.trim_start().starts_with('Z'));
            !zombie
                && (String::from_utf8_lossy(&cmdline).contains(&needle)
                    || String::from_utf8_lossy(&environ).contains(&needle))
        })
        .collect()
}

/// The processes whose parent is `pid`.
pub fn children(pid: i32) -> Vec<i32> {
    pids()
        .filter(|child| {
            let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
            let ppid = stat
                .rsplit(')')
                .next()
                .and_then(|s| s.split_whitespace().nth(1));
            ppid == Some(&pid.to_string())
        })
        .collect()
}

fn pids() -> impl Iterator<Item = i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
}

/// Ends `tmux`'s server and every process of its panes: each pane's program leads its
/// own process group, which can outlive the server.
pub fn end_panes(tmux: &TmuxServer) {
    let out = tmux.raw(&["list-panes", "-a", "-F", "#{pane_pid}"]);
    let pids: Vec<i32> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    let _ = tmux.raw(&["kill-server"]);
    std::thread::sleep(Duration::from_millis(300));
    for pid in pids {
        let _ = kill(Pid::from_raw(-pid), Signal::SIGKILL);
    }
}

/// Ends a world: its panes ([`end_panes`]), then whatever still runs from `dir` (a
/// client's daemon leads a session of its own); the processes left after
/// [`GONE_WITHIN`] — none, when the clean-up works.
pub fn end_world(tmux: &TmuxServer, dir: &Path) -> Vec<i32> {
    end_panes(tmux);
    for pid in running_from(dir) {
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
    let start = Instant::now();
    loop {
        let left = running_from(dir);
        if left.is_empty() || start.elapsed() > GONE_WITHIN {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
