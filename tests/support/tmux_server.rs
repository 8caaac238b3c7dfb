//! Helpers for tests that drive real tmux: a private server per test, killed when the
//! guard drops (also when the test panics), and `the-loop fake-agent` as the harness.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};
use the_loop::tmux::{PaneId, RealTmux, Socket, SpawnSpec, Tmux};

pub const BIN: &str = env!("CARGO_BIN_EXE_the-loop");

/// A private tmux server (`tmux -L <unique>`), killed on drop.
pub struct TmuxServer {
    pub socket: String,
}

impl TmuxServer {
    pub fn new() -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        assert!(
            Command::new("tmux").arg("-V").output().is_ok(),
            "these tests need tmux: install it (e.g. apt-get install tmux)"
        );
        let socket = format!(
            "the-loop-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        Self { socket }
    }

    /// Where tmux puts a `-L` socket: `${TMUX_TMPDIR:-/tmp}/tmux-<uid>/<name>`. tmux
    /// never removes it, so the guard does.
    pub fn socket_file(&self) -> PathBuf {
        use std::os::unix::fs::MetadataExt;
        let uid = tempfile::tempfile()
            .and_then(|f| f.metadata())
            .map(|m| m.uid())
            .unwrap_or(0);
        let dir = std::env::var_os("TMUX_TMPDIR")
            .filter(|d| !d.is_empty())
            .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
        dir.join(format!("tmux-{uid}")).join(&self.socket)
    }

    pub fn tmux(&self) -> RealTmux {
        RealTmux::new(Socket::Name(self.socket.clone()), Duration::from_secs(10))
    }

    /// Runs a raw tmux command on this server (for test set-up only).
    pub fn raw(&self, args: &[&str]) -> std::process::Output {
        raw_on(&self.socket, args)
    }
}

/// Runs a raw tmux command on the server of `socket` (`tmux -L`), outside any tmux.
pub fn raw_on(socket: &str, args: &[&str]) -> std::process::Output {
    Command::new("tmux")
        .arg("-L")
        .arg(socket)
        .args(args)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .output()
        .expect("run tmux")
}

impl Drop for TmuxServer {
    fn drop(&mut self) {
        let _ = self.raw(&["kill-server"]);
        let _ = std::fs::remove_file(self.socket_file());
    }
}

/// A spec running `the-loop fake-agent --log LOG [BOOT]`.
pub fn fake_agent(name: &str, log: &Path, boot: Option<&str>) -> SpawnSpec {
    let mut argv = vec![
        BIN.to_string(),
        "fake-agent".into(),
        "--log".into(),
        log.display().to_string(),
    ];
    if let Some(boot) = boot {
        argv.extend(["--".to_string(), boot.to_string()]);
    }
    SpawnSpec {
        name: name.into(),
        cwd: std::env::temp_dir(),
        env: vec![("THE_LOOP_WORK_ITEM".into(), "github:octo/repo#1".into())],
        argv,
        remain_on_exit: true,
        private_files: false,
    }
}

/// Polls `check` every 20 ms until it returns `Some`, or panics after `limit`.
pub async fn wait_for<T, F, Fut>(what: &str, limit: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Spawns a fake agent and waits until it has enabled bracketed paste.
pub async fn start_agent(tmux: &RealTmux, name: &str, log: &Path) -> PaneId {
    let pane = tmux
        .new_session(&fake_agent(name, log, None))
        .await
        .unwrap();
    wait_ready(tmux, &pane).await;
    pane
}

/// Waits for the fake agent's header, which it prints after enabling bracketed paste.
pub async fn wait_ready(tmux: &RealTmux, pane: &PaneId) {
    wait_for(
        "the fake agent to start",
        Duration::from_secs(15),
        || async {
            let screen = tmux.capture_pane(pane, false).await.ok()?;
            screen.contains("fake-agent ready").then_some(())
        },
    )
    .await
}

/// The log's complete JSON lines (a line still being written — a 100 KB paste takes
/// more than one write — is left for the next read).
pub fn read_log(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete
        .lines()
        .map(|l| serde_json::from_str(l).expect("log lines are JSON"))
        .collect()
}

/// Waits until the log holds `n` lines and returns them.
pub async fn wait_log(path: &Path, n: usize) -> Vec<serde_json::Value> {
    let what = format!("{n} lines in {}", path.display());
    wait_for(&what, Duration::from_secs(20), || async {
        let lines = read_log(path);
        (lines.len() >= n).then_some(lines)
    })
    .await
}

pub fn temp_log(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.jsonl"))
}

/// What was typed into a tmux server's panes: tmux's own hooks append a line per
/// `paste-buffer` and per `send-keys` to a file each, so "nothing typed" is a count.
pub struct KeyCounter {
    pastes: PathBuf,
    keys: PathBuf,
}

impl KeyCounter {
    /// Counts from now on, into files in `dir`.
    pub fn install(tmux: &TmuxServer, dir: &Path) -> Self {
        let counter = Self {
            pastes: dir.join("pastes.log"),
            keys: dir.join("keys.log"),
        };
        for (hook, file) in [
            ("after-paste-buffer", &counter.pastes),
            ("after-send-keys", &counter.keys),
        ] {
            let command = format!("run-shell \"echo x >> '{}'\"", file.display());
            let out = tmux.raw(&["set-hook", "-g", hook, &command]);
            assert!(out.status.success(), "{out:?}");
        }
        counter
    }

    fn count(file: &Path) -> usize {
        std::fs::read_to_string(file)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    /// `paste-buffer`s so far.
    pub fn pastes(&self) -> usize {
        Self::count(&self.pastes)
    }

    /// `send-keys` so far.
    pub fn keys(&self) -> usize {
        Self::count(&self.keys)
    }
}
