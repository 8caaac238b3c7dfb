//! Safe delivery's figures (SPEC §18), printed as median and p99:
//! - **release**: from the moment a permission dialog goes away (as the hook that ends
//!   it reports) to the held delivery's submitting Enter, through the real dispatcher,
//!   lane and paste path over the fake tmux, whose pane draws a Claude-like screen;
//! - **look**: the pre-paste look — one `capture-pane -e` of a real tmux pane and its
//!   classification — the extra cost per delivery, for Claude Code's screen and for
//!   Codex's (its recorded empty composer, `screen/codex/fixtures/`);
//! - **agreement**: 10 comments, one after another, into a Claude session on a recorded
//!   release (2.1.197) and on one nobody recorded (2.1.999, read on the agreement of its
//!   hooks and its screen, issue 40): how many went out without the operator, and the
//!   time per delivery through the dispatcher;
//! - **burst**: 200 comments over 20 sessions — a harness whose screen is unknown
//!   (cursor: pasted blind, as before §18), Claude ready (looked at), Claude held and
//!   released at once: every delivery exactly once and in order, and the time until the
//!   last.
//!
//! `cargo bench --bench hold` (a plain `main`: criterion has no percentiles).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use the_loop::config::{Config, RepoConfig};
use the_loop::events::{EventLog, Source};
use the_loop::ingress::{InboundEvent, Ingest};
use the_loop::paths::StatePaths;
use the_loop::session::delivery::ScreenReader;
use the_loop::session::hooks::{Reported, ReportedState};
use the_loop::session::{Dispatcher, Registry, SessionRecord, Sessions, Settings};
use the_loop::tmux::fake::{FakeClaude, FakeTmux, RULE};
use the_loop::tmux::{PaneId, RealTmux, Socket, SpawnSpec, Tmux};
use the_loop::work_item::WorkItemRef;

struct World {
    _dir: tempfile::TempDir,
    tmux: Arc<FakeTmux>,
    sessions: Arc<Sessions>,
    dispatcher: Dispatcher,
}

fn item(n: u64) -> WorkItemRef {
    WorkItemRef::new("octo", "repo", n)
}

fn comment(id: u64, n: u64) -> InboundEvent {
    InboundEvent::from_webhook(
        "issue_comment",
        &format!("d-{id}"),
        json!({
            "action": "created",
            "comment": {"id": id, "body": format!("COMMENT-{id:06}"), "user": {"login": "alice"},
                "html_url": format!("https://github.com/octo/repo/issues/{n}#issuecomment-{id}")},
            "issue": {"number": n, "title": "t", "state": "open", "user": {"login": "carol"},
                "html_url": format!("https://github.com/octo/repo/issues/{n}"), "labels": []},
            "repository": {"full_name": "octo/repo"},
            "sender": {"login": "alice"}
        }),
    )
}

impl World {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::default();
        config.routing.authorized_users = vec!["alice".into()];
        config.repos = vec![RepoConfig {
            name: "octo/repo".into(),
            path: Some(dir.path().display().to_string()),
            ..RepoConfig::named("octo/repo")
        }];
        let paths = StatePaths::new(dir.path());
        let events = EventLog::open(&paths);
        let mut settings = Settings::new(&config, None, &paths).unwrap();
        settings.claude_config = None;
        let tmux = Arc::new(FakeTmux::new());
        let registry = Registry::new(&paths, events.clone(), Source::Dispatch);
        let sessions = Arc::new(Sessions::new(tmux.clone(), registry, events, settings));
        let dispatcher = Dispatcher::new(Arc::clone(&sessions), &config, &paths).unwrap();
        Self {
            _dir: dir,
            tmux,
            sessions,
            dispatcher,
        }
    }

    /// A Claude session on #`n` behind a dialog.
    fn held_session(&self, n: u64) -> (PaneId, Arc<FakeClaude>) {
        self.session(n, "claude", true)
    }

    /// A session of `harness` on #`n`, its screen Claude-like, behind a dialog or not.
    fn session(&self, n: u64, harness: &str, dialog: bool) -> (PaneId, Arc<FakeClaude>) {
        // The fake draws a recorded release's screens.
        self.session_at(n, harness, dialog, "2.1.197")
    }

    /// [`Self::session`], its client reporting `release`, its hooks the turn ended.
    fn session_at(
        &self,
        n: u64,
        harness: &str,
        dialog: bool,
        release: &str,
    ) -> (PaneId, Arc<FakeClaude>) {
        let item = item(n);
        let pane = self.tmux.add_session(&item.tmux_session_name(), false);
        let mut record = SessionRecord::new(&item, harness, std::env::temp_dir());
        record.pane_id = Some(pane.to_string());
        record.harness_version = Some(release.into());
        record.reported = Some(Reported {
            harness: harness.into(),
            state: ReportedState::Idle,
            at: "2026-01-01T00:00:00.000Z".into(),
            event: "Stop".into(),
            permission: None,
            last_tool: None,
            conversation: None,
            model: None,
            prompts: 0,
        });
        self.sessions.registry().put(&record).unwrap();
        let claude = Arc::new(FakeClaude::default());
        claude.dialog.store(dialog, Ordering::SeqCst);
        self.tmux.set_screen(&pane, claude.screen());
        (pane, claude)
    }

    /// When the first submitting Enter reached `pane`.
    fn enter_at(&self, pane: &PaneId) -> Option<Instant> {
        self.tmux.enters(pane).first().copied()
    }

    async fn wait_held(&self, n: u64) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self
            .sessions
            .registry()
            .get(&item(n))
            .unwrap()
            .is_none_or(|r| r.hold.events.is_none())
        {
            assert!(Instant::now() < deadline, "#{n} was never held");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

fn percentiles(mut samples: Vec<Duration>) -> (Duration, Duration, Duration) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.99), *samples.last().unwrap())
}

async fn release(iterations: u64) {
    let world = World::new();
    let mut samples = Vec::new();
    for n in 1..=iterations {
        let (pane, claude) = world.held_session(n);
        let settled = world.dispatcher.ingest(comment(n, n));
        let settled = tokio::spawn(settled);
        world.wait_held(n).await;
        // The dialog ends at a random point of the lane's 500 ms look cycle.
        tokio::time::sleep(Duration::from_millis(rand::random::<u64>() % 500)).await;
        claude.dialog.store(false, Ordering::SeqCst);
        let cleared = Instant::now();
        settled.await.unwrap();
        samples.push(world.enter_at(&pane).unwrap() - cleared);
    }
    let (median, p99, max) = percentiles(samples);
    println!(
        "release: dialog gone → held delivery's Enter, {iterations} holds: median {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        ms(median),
        ms(p99),
        ms(max)
    );
}

/// 200 comments over 20 sessions: `held` ones released at once, or ready ones of
/// `harness` (`claude`: looked at; `cursor`: the blind path with its submit delay).
async fn burst(harness: &str, held: bool) {
    let world = World::new();
    let (sessions, per_session) = (20u64, 10u64);
    let mut panes = Vec::new();
    for n in 1..=sessions {
        panes.push(world.session(n, harness, held));
    }
    let mut settled = Vec::new();
    let mut id = 0;
    let started = Instant::now();
    for _ in 0..per_session {
        for n in 1..=sessions {
            id += 1;
            settled.push(tokio::spawn(world.dispatcher.ingest(comment(id, n))));
        }
    }
    let started = if held {
        for n in 1..=sessions {
            world.wait_held(n).await;
        }
        for (_, claude) in &panes {
            claude.dialog.store(false, Ordering::SeqCst);
        }
        Instant::now()
    } else {
        started
    };
    for s in settled {
        s.await.unwrap();
    }
    let took = started.elapsed();
    let mut exactly_once_in_order = true;
    for (i, (pane, _)) in panes.iter().enumerate() {
        let input = String::from_utf8(world.tmux.pane_input(pane)).unwrap();
        let ids: Vec<u64> = input
            .match_indices("COMMENT-")
            .map(|(at, _)| input[at + 8..at + 14].parse().unwrap())
            .collect();
        let want: Vec<u64> = (0..per_session)
            .map(|r| r * sessions + i as u64 + 1)
            .collect();
        exactly_once_in_order &= ids == want;
    }
    println!(
        "burst ({harness}, {}): {} comments over {sessions} sessions, all out in {:.0} ms; exactly once and in order: {exactly_once_in_order}",
        if held {
            "held, released at once"
        } else {
            "ready"
        },
        sessions * per_session,
        ms(took)
    );
    assert!(exactly_once_in_order);
}

/// The classification a look adds to its capture, over Claude Code 2.1.332's recorded
/// idle screen: a recorded release's reading (the box and dialog) against a release
/// nobody recorded (the same, plus the footer's mode: the screen witness of an empty
/// box).
fn classify(iterations: u32) {
    let screen = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src/session/delivery/screen/claude/fixtures/2.1.332/idle_empty_manual.100x30.ansi"
    ))
    .unwrap();
    let reader = ScreenReader::Claude;
    let time = |witness: bool| {
        let started = Instant::now();
        for _ in 0..iterations {
            let look = std::hint::black_box(reader.look(std::hint::black_box(&screen)));
            // An empty box: the witness reads its footer (a screen without a box, not
            // this one, would be checked for blank instead).
            if witness {
                std::hint::black_box((reader.shown_mode(&screen), look));
            }
        }
        started.elapsed().as_secs_f64() * 1e6 / f64::from(iterations)
    };
    let (recorded, unrecorded) = (time(false), time(true));
    println!(
        "classify (Claude Code idle screen, {iterations} times): recorded release {recorded:.1} µs, release nobody recorded (screen witness) {unrecorded:.1} µs"
    );
}

/// 10 comments in turn into one Claude session at `release`, its hooks and its screen
/// idle: how many went out by themselves, and the time per delivery.
async fn agreement(release: &str) {
    let world = World::new();
    let (pane, _claude) = world.session_at(1, "claude", false, release);
    let mut samples = Vec::new();
    for id in 1..=10 {
        let started = Instant::now();
        world.dispatcher.ingest(comment(id, 1)).await;
        samples.push(started.elapsed());
    }
    let input = String::from_utf8(world.tmux.pane_input(&pane)).unwrap();
    let out = input.matches("COMMENT-").count();
    let held = world
        .sessions
        .registry()
        .get(&item(1))
        .unwrap()
        .and_then(|r| r.held())
        .map_or(0, |h| h.count);
    let (median, p99, _) = percentiles(samples);
    println!(
        "agreement (Claude Code {release}): {out} of 10 comments out by themselves, {held} held; per delivery median {:.2} ms, p99 {:.2} ms",
        ms(median),
        ms(p99)
    );
    assert_eq!(out, 10);
}

/// `iterations` looks at a real pane whose program draws with `script`, read by `reader`.
async fn look(iterations: usize, reader: ScreenReader, script: String) {
    let socket = format!("the-loop-bench-hold-{}", std::process::id());
    let tmux = RealTmux::new(Socket::Name(socket.clone()), Duration::from_secs(10));
    let spec = SpawnSpec {
        name: "loop-bench-look".into(),
        cwd: std::env::temp_dir(),
        env: vec![],
        argv: vec!["sh".into(), "-c".into(), script],
        remain_on_exit: true,
        private_files: false,
    };
    let pane = tmux.new_session(&spec).await.unwrap();
    // The recorded screens are 100 columns wide: drawn in a narrower pane they wrap.
    let _ = std::process::Command::new("tmux")
        .args(["-L", &socket, "resize-window", "-t", &pane.to_string()])
        .args(["-x", "100", "-y", "30"])
        .env_remove("TMUX")
        .output();
    tokio::time::sleep(Duration::from_millis(800)).await;
    let mut samples = Vec::new();
    let mut classified = None;
    for _ in 0..iterations {
        let started = Instant::now();
        let shown = tmux.capture_pane(&pane, true).await.unwrap();
        classified = Some(reader.look(&shown));
        samples.push(started.elapsed());
    }
    let (median, p99, _) = percentiles(samples);
    println!(
        "look ({}): capture-pane -e + classify ({:?}), {iterations} looks: median {:.2} ms, p99 {:.2} ms",
        reader.client(),
        classified.map(|l| l.input),
        ms(median),
        ms(p99)
    );
    let _ = std::process::Command::new("tmux")
        .args(["-L", &socket, "kill-server"])
        .env_remove("TMUX")
        .output();
}

/// Claude Code's screen: a transcript above an empty box.
fn claude_screen() -> String {
    format!(
        "for i in $(seq 1 40); do echo \"⏺ transcript line $i of the agent's work\"; done; echo {RULE}; printf '❯\\302\\240\\n'; echo {RULE}; echo '  ? for shortcuts'; exec sleep 600"
    )
}

/// Codex 0.171.0's recorded empty composer after two turns, drawn as recorded.
fn codex_screen() -> String {
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src/session/delivery/screen/codex/fixtures/idle_after_turns.100x30.ansi"
    );
    format!("sleep 0.5; cat '{fixture}'; exec sleep 600")
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing to run.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        look(200, ScreenReader::Claude, claude_screen()).await;
        look(200, ScreenReader::Codex, codex_screen()).await;
        release(100).await;
        classify(5_000);
        agreement("2.1.197").await;
        agreement("2.1.999").await;
        burst("cursor", false).await;
        burst("claude", false).await;
        burst("claude", true).await;
    });
}
