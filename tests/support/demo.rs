//! The newcomer's terminal: a pane on a private outer tmux server running
//! `the-loop demo`, with its own `TMPDIR` (the demo's state root goes there) and
//! `TMUX_TMPDIR` (both tmux servers' sockets go there), so the test can see everything
//! the demo creates and check that it is gone afterwards.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};
use tempfile::TempDir;

pub const BIN: &str = env!("CARGO_BIN_EXE_the-loop");
pub const WIDTH: u32 = 160;
pub const HEIGHT: u32 = 48;

pub struct Outer {
    pub socket: String,
    pub dir: TempDir,
}

impl Outer {
    /// Starts `the-loop demo` (fast pace) in a `WIDTH`×`HEIGHT` pane.
    pub fn start_demo() -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        assert!(
            Command::new("tmux").arg("-V").output().is_ok(),
            "these tests need tmux: install it (e.g. apt-get install tmux)"
        );
        let socket = format!(
            "the-loop-outer-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let dir = tempfile::tempdir().unwrap();
        for sub in ["tmp", "tmux", "xdg-config", "xdg-state"] {
            std::fs::create_dir(dir.path().join(sub)).unwrap();
        }
        let outer = Self { socket, dir };
        let env = |k: &str, sub: &str| format!("{k}={}", outer.dir.path().join(sub).display());
        let (w, h) = (WIDTH.to_string(), HEIGHT.to_string());
        let started = outer.tmux(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "demo",
            "-x",
            &w,
            "-y",
            &h,
            "-e",
            &env("TMPDIR", "tmp"),
            "-e",
            &env("XDG_CONFIG_HOME", "xdg-config"),
            "-e",
            &env("XDG_STATE_HOME", "xdg-state"),
            "-e",
            "THE_LOOP_DEMO_PACE=fast",
            "-e",
            "TERM=xterm-256color",
            // tmux does not always report a pane's exit status (3.3a), so a shell
            // around the demo writes it down.
            "sh",
            "-c",
            "\"$0\" demo; echo $? > \"$1\"",
            BIN,
            &outer.status_file().to_string_lossy(),
            ";",
            "set-option",
            "-t",
            "demo",
            "remain-on-exit",
            "on",
        ]);
        assert!(
            started.status.success(),
            "outer tmux: {}",
            String::from_utf8_lossy(&started.stderr)
        );
        outer
    }

    /// `tmux -L <outer> ARGS`; both servers' sockets live under our `TMUX_TMPDIR`.
    pub fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .env("TMUX_TMPDIR", self.dir.path().join("tmux"))
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .output()
            .unwrap()
    }

    fn display(&self, format: &str) -> String {
        let out = self.tmux(&["display-message", "-p", "-t", "demo", format]);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    fn status_file(&self) -> PathBuf {
        self.dir.path().join("exit-status")
    }

    /// The pane's shell: it leads the terminal session the demo runs in.
    pub fn session_leader(&self) -> i32 {
        self.display("#{pane_pid}").parse().unwrap()
    }

    /// The demo process (the pane shell's child).
    pub fn demo_pid(&self) -> i32 {
        let shell = self.session_leader();
        wait_until(
            "the demo process",
            Duration::from_secs(10),
            || {
                let children =
                    std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).ok()?;
                children.split_whitespace().next()?.parse().ok()
            },
            || self.screen(),
        )
    }

    /// The demo's exit status, once it has exited.
    pub fn exit_status(&self) -> Option<i32> {
        std::fs::read_to_string(self.status_file())
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    pub fn alternate_screen(&self) -> bool {
        self.display("#{alternate_on}") == "1"
    }

    pub fn screen(&self) -> String {
        let out = self.tmux(&["capture-pane", "-p", "-t", "demo"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Named keys (`Enter`, `C-s`, `q`).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "demo"];
        args.extend_from_slice(keys);
        assert!(self.tmux(&args).status.success());
    }

    /// Literal text, as typed.
    pub fn type_text(&self, text: &str) {
        assert!(
            self.tmux(&["send-keys", "-t", "demo", "-l", text])
                .status
                .success()
        );
    }

    /// Waits for the demo to exit; its exit status.
    pub fn wait_exit(&self, limit: Duration) -> i32 {
        let start = Instant::now();
        loop {
            if let Some(status) = self.exit_status() {
                return status;
            }
            assert!(
                start.elapsed() < limit,
                "the demo did not exit; screen:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Where `TMPDIR` points for the demo.
    pub fn temp(&self) -> PathBuf {
        self.dir.path().join("tmp")
    }

    /// The demo's state root while it runs.
    pub fn state_root(&self) -> Option<PathBuf> {
        demo_entries(&self.temp()).into_iter().next()
    }

    /// The socket files of the demo's own tmux server(s).
    pub fn demo_sockets(&self) -> Vec<PathBuf> {
        let uid_dirs = std::fs::read_dir(self.dir.path().join("tmux"))
            .map(|rd| rd.flatten().map(|e| e.path()).collect::<Vec<_>>())
            .unwrap_or_default();
        uid_dirs.iter().flat_map(|d| demo_entries(d)).collect()
    }

    /// Everything that belongs to the demo right now: its own session's processes
    /// (the demo, the screen, critics), and the demo tmux server with every process in
    /// its panes' sessions.
    pub fn demo_processes(&self, demo_pid: i32) -> BTreeSet<i32> {
        let mut sessions = vec![self.session_leader()];
        let mut pids = BTreeSet::from([demo_pid]);
        for socket in self.demo_sockets() {
            let s = socket.to_string_lossy().into_owned();
            let tmux = |args: &[&str]| {
                let out = Command::new("tmux")
                    .args(["-S", &s])
                    .args(args)
                    .env_remove("TMUX")
                    .output()
                    .unwrap();
                String::from_utf8_lossy(&out.stdout).into_owned()
            };
            if let Ok(pid) = tmux(&["display-message", "-p", "#{pid}"]).trim().parse() {
                pids.insert(pid);
            }
            for line in tmux(&["list-panes", "-a", "-F", "#{pane_pid}"]).lines() {
                if let Ok(pid) = line.trim().parse() {
                    sessions.push(pid);
                }
            }
        }
        let leader = self.session_leader();
        for (pid, sid) in process_sessions() {
            if sessions.contains(&sid) && pid != leader {
                pids.insert(pid);
            }
        }
        pids
    }
}

impl Drop for Outer {
    fn drop(&mut self) {
        // If a test failed half-way: take down whatever is left, demo servers included.
        for socket in self.demo_sockets() {
            let _ = Command::new("tmux")
                .arg("-S")
                .arg(&socket)
                .arg("kill-server")
                .env_remove("TMUX")
                .output();
        }
        let _ = self.tmux(&["kill-server"]);
    }
}

/// `the-loop-demo-*` entries of a directory.
pub fn demo_entries(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .starts_with("the-loop-demo-")
                })
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// `(pid, session id)` of every live (non-zombie) process.
fn process_sessions() -> Vec<(i32, i32)> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (_, rest) = stat.rsplit_once(") ")?;
            // state ppid pgrp session …
            let fields: Vec<&str> = rest.split_whitespace().collect();
            (fields.first()? != &"Z").then_some(())?;
            Some((pid, fields.get(3)?.parse().ok()?))
        })
        .collect()
}

/// The process exists and is not a zombie.
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(") ")
                .and_then(|(_, r)| r.chars().next())
                .map(|c| c != 'Z')
        })
        .unwrap_or(false)
}

/// Polls `check` every 100 ms until it returns `Some`, or panics after `limit` with
/// `context()` (e.g. the screen).
pub fn wait_until<T>(
    what: &str,
    limit: Duration,
    mut check: impl FnMut() -> Option<T>,
    context: impl Fn() -> String,
) -> T {
    let start = Instant::now();
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(
            start.elapsed() < limit,
            "timed out waiting for {what}; last screen:\n{}",
            context()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The demo's event log lines (while it runs).
pub fn events(root: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(root.join("events.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Everything is gone: the processes, the demo's tmux socket(s), its temp state.
pub fn assert_all_gone(outer: &Outer, pids: &BTreeSet<i32>) {
    let left: Vec<i32> = wait_until(
        "the demo's processes to be gone",
        Duration::from_secs(10),
        || {
            let left: Vec<i32> = pids.iter().copied().filter(|p| alive(*p)).collect();
            left.is_empty().then_some(left)
        },
        || {
            let left: Vec<String> = pids
                .iter()
                .filter(|p| alive(**p))
                .map(|p| {
                    let cmd = std::fs::read_to_string(format!("/proc/{p}/cmdline"))
                        .unwrap_or_default()
                        .replace('\0', " ");
                    format!("{p}: {cmd}")
                })
                .collect();
            format!("still running: {left:#?}")
        },
    );
    assert!(left.is_empty());
    assert_eq!(
        outer.demo_sockets(),
        Vec::<PathBuf>::new(),
        "demo tmux socket left"
    );
    assert_eq!(
        demo_entries(&outer.temp()),
        Vec::<PathBuf>::new(),
        "demo temp state left"
    );
}
