//! `the-loop tui` end to end (SPEC §11): the real binary in a tmux pane on a private
//! socket, against the simulated GitHub, with fake-agent sessions — driven with
//! `send-keys` and read with `capture-pane`, as an operator would use it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::tui_world::*;
use crate::support::{tmux_server, tui_world};
use serde_json::Value;
use the_loop::guard::is_self_authored;
use the_loop::session::reply::framed;

/// Distinctive words of the comment and the reply, to find them wherever they land.
const COMMENT: &str = "Please settle the retry cap BLUEBIRD ASK-OPERATOR";
const REPLY_LINES: [&str; 2] = ["Per repo, ZEBRA.", "Keep a global ceiling of 10."];

fn is_boot(line: &Value) -> bool {
    line["boot"] == true
}

/// The whole loop from the operator's screen: start a session on a watched item, see a
/// routed comment reach the agent, answer its question inline over two lines, attach
/// and come back, run a critic and read its result, watch it all from a second screen
/// (a viewer), and quit both with the terminal restored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_runs_the_loop_from_the_screen() {
    let world = TuiWorld::new().await;
    let screen = world.open_screen("supervisor", &[]);

    // First frame: this screen supervises; the watched item is listed without a session.
    screen.wait_text("supervising octo/repo").await;
    screen.wait_text("no session").await;

    // `s` starts a session on it (the first row is selected).
    screen.keys(&["s"]);
    world.wait_agent("the boot prompt", is_boot).await;
    let spawned = world.events_named("session.spawned");
    assert_eq!(spawned.len(), 1, "{spawned:?}");
    assert_eq!(spawned[0]["trigger"], "tui");
    tui_world::wait("the agent to be ready", || {
        world
            .agent_screen(15)
            .contains("fake-agent ready")
            .then_some(())
    })
    .await;

    // A comment from the authorized user is routed and delivered; the screen shows it.
    world.sim.add_comment(REPO, 15, OPERATOR, COMMENT).unwrap();
    let delivered = world
        .wait_agent("the comment in the agent", |l| {
            l["text"].as_str().is_some_and(|t| t.contains("BLUEBIRD"))
        })
        .await;
    assert_eq!(delivered["bracketed"], true, "{delivered}");
    screen.wait_text("delivered #15").await;

    // The agent asked (the comment held its trigger): the question is on screen.
    screen.wait_text("How should I proceed").await;
    screen.wait_text("Questions 1 ").await;

    // Answer inline: Questions pane, reply key, two lines (Enter is a new line in the
    // box), send with ctrl-s.
    screen.keys(&["3", "r"]);
    screen.wait_text("Reply to octo/repo#15").await;
    screen.type_text(REPLY_LINES[0]);
    screen.keys(&["Enter"]);
    screen.type_text(REPLY_LINES[1]);
    screen.keys(&["C-s"]);
    let text = REPLY_LINES.join("\n");
    let expected = framed(&item(15), &text);
    let reply = world
        .wait_agent("the reply in the agent", |l| {
            l["text"].as_str().is_some_and(|t| t.contains("ZEBRA"))
        })
        .await;
    assert_eq!(reply["text"], expected.as_str(), "{reply}");
    assert_eq!(reply["bracketed"], true, "one clean paste: {reply}");
    assert_eq!(reply["pastes"], 1, "one paste: {reply}");
    screen.wait_text("No open questions").await;
    screen.wait_text("Reply delivered to octo/repo#15").await;
    let sent = world.events_named("session.reply_sent");
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["via"], "tui");

    // Attach (`a` on the session) hands the terminal to tmux; detaching comes back.
    screen.keys(&["1", "a"]);
    screen
        .wait_for("the agent's session in place of the screen", |t| {
            t.contains("fake-agent ready") && !t.contains("supervising")
        })
        .await;
    screen.keys(&["C-b", "d"]);
    screen.wait_text("supervising octo/repo").await;

    // A second screen finds the lock held and becomes a viewer of the same events.
    let viewer = world.open_screen("viewer", &["--attach", "octo/repo#15"]);
    viewer.wait_text("viewer of pid").await;
    viewer.wait_text("delivered #15").await;
    viewer.wait_text("reply sent").await;

    // The agent edits its own worktree; `d` shows that diff against its base.
    world.agent_edits(15);
    screen.keys(&["1", "d"]);
    screen
        .wait_text("Diff · octo/repo#15 · the-loop/issue-15")
        .await;
    screen
        .wait_text(&format!("+per_repo = true # {DIFF_MARK}"))
        .await;
    screen.keys(&["Escape"]);
    // An Escape followed at once by another key reads as Alt+key: let it land first.
    screen
        .wait_for("the diff to close", |t| !t.contains("Diff · octo/repo#15"))
        .await;

    // A critic by key: picker, run, spinner while it works, then its result.
    screen.keys(&["c"]);
    screen.wait_text("diffcheck").await;
    screen.keys(&["Enter"]);
    screen
        .wait_for("the running critic's spinner", |t| {
            ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]
                .iter()
                .any(|s| t.contains(&format!("{s} diffcheck")))
        })
        .await;
    screen.wait_text("diffcheck reviewed").await;
    // The viewer sees the same round live, from the log.
    viewer.wait_text("diffcheck reviewed").await;
    screen.keys(&["5", "Enter"]);
    screen
        .wait_text(&format!("saw {DIFF_MARK} in the diff"))
        .await;
    // `P` posts the findings on the work item, marked so the loop never reads them back.
    screen.keys(&["P"]);
    screen.wait_text("Posted diffcheck's round").await;
    screen.keys(&["Escape"]);
    // An Escape followed at once by another key reads as Alt+key: let it land first.
    screen
        .wait_for("the result popup to close", |t| !t.contains("esc close"))
        .await;
    let posted = world.sim.comments_on(REPO, 15);
    let review = posted
        .iter()
        .find(|c| c.body.contains("critic review"))
        .expect("the critic's findings on the issue");
    assert!(review.body.contains(DIFF_MARK), "{}", review.body);
    assert!(is_self_authored(Some(&review.body)), "{}", review.body);
    assert_eq!(world.events_named("critic.posted").len(), 1);
    let finished = world.events_named("critic.finished");
    assert_eq!(finished.len(), 1, "{finished:?}");
    assert_eq!(finished[0]["ok"], true);
    let saved = finished[0]["path"].as_str().unwrap();
    assert!(
        std::path::Path::new(saved).is_file(),
        "envelope saved: {saved}"
    );

    // Quit the supervisor: it exits 0, leaves the terminal as it found it, and stops the
    // supervisor; the viewer notices that nothing supervises any more.
    screen.keys(&["q"]);
    assert_eq!(screen.wait_exit().await, 0);
    assert_restored(&screen);
    let stopped = world.events_named("supervisor.stopped");
    assert_eq!(stopped.len(), 1, "{stopped:?}");
    assert_eq!(stopped[0]["reason"], "quit");
    viewer.wait_text("no supervisor is running").await;
    viewer.keys(&["q"]);
    assert_eq!(viewer.wait_exit().await, 0);
    assert_restored(&viewer);
    // Only one supervisor ever ran: the viewer never polled.
    assert_eq!(world.events_named("supervisor.started").len(), 1);
}

fn assert_restored(screen: &Screen) {
    assert_eq!(
        screen.format("#{alternate_on}"),
        "0",
        "left the alternate screen"
    );
    assert_eq!(screen.format("#{cursor_flag}"), "1", "the cursor is shown");
}

/// A config error is reported on the plain terminal with its position, before the
/// screen is taken: exit 2, nothing drawn, nothing started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_config_is_reported_before_the_screen_is_taken() {
    let world = TuiWorld::new().await;
    std::fs::write(
        &world.config,
        "repos:\n  - name: octo/repo\n    colour: blue\n",
    )
    .unwrap();
    let screen = world.open_screen("broken", &[]);
    assert_eq!(screen.wait_exit().await, 2);
    let text = screen.text();
    assert!(text.contains("colour"), "names the bad key: {text}");
    assert!(text.contains(":3:"), "with its line: {text}");
    assert_restored(&screen);
    assert!(world.events_named("supervisor.started").is_empty());
}

/// Without a terminal there is no screen to draw: a usage error that points at `run`.
#[test]
fn without_a_terminal_it_says_what_to_use_instead() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(tmux_server::BIN)
        .arg("tui")
        .env("THE_LOOP_HOME", dir.path())
        .env("THE_LOOP_CONFIG", dir.path().join("none.yaml"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("needs a terminal") && err.contains("the-loop run"),
        "{err}"
    );
}

/// Figures for the decision note, printed (never asserted): run with the release binary,
/// `THE_LOOP_BIN=$PWD/target/release/the-loop cargo test --test tui figures --
/// --ignored --nocapture`. Time to the first frame and peak memory with 50 sessions and
/// 100,000 events in the log; CPU used over 60 s idle with 20 sessions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "takes minutes; prints figures for the release binary"]
async fn figures() {
    use crate::support::tui_figures::*;
    use std::time::{Duration, Instant};
    let bin = std::env::var("THE_LOOP_BIN").unwrap_or_else(|_| tmux_server::BIN.to_string());
    println!("binary: {bin}");

    let world = TuiWorld::with_issues(1..=50).await;
    fill_log(&world, 100_000, 50);
    world.start_sessions(1..=50).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    for run in 1..=3 {
        let name = format!("big{run}");
        let started = Instant::now();
        let screen = world.open_program(&bin, &name, 200, 50);
        let (first, loaded) = startup(&screen, started).await;
        let pid = screen.pid();
        tokio::time::sleep(Duration::from_secs(10)).await;
        let (peak, rss) = memory_kib(pid);
        println!(
            "50 sessions, 100k events, run {run}: first frame {:.0} ms, first snapshot {:.0} ms, peak RSS {:.1} MiB (now {:.1} MiB)",
            first.as_secs_f64() * 1000.0,
            loaded.as_secs_f64() * 1000.0,
            peak as f64 / 1024.0,
            rss as f64 / 1024.0
        );
        screen.keys(&["q"]);
        tui_world::wait("the screen to quit", || {
            (!std::path::Path::new(&format!("/proc/{pid}")).exists()).then_some(())
        })
        .await;
    }
    drop(world);

    let world = TuiWorld::with_issues(1..=20).await;
    // The default interval, as an operator would run it.
    let yaml = std::fs::read_to_string(&world.config).unwrap();
    std::fs::write(
        &world.config,
        yaml.replace("intervalSeconds: 5", "intervalSeconds: 30"),
    )
    .unwrap();
    world.start_sessions(1..=20).await;
    let screen = world.open_program(&bin, "idle", 200, 50);
    startup(&screen, Instant::now()).await;
    let pid = screen.pid();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let before = cpu_ticks(pid);
    tokio::time::sleep(Duration::from_secs(60)).await;
    let used = cpu_ticks(pid) - before;
    let hz = clock_ticks_per_second();
    println!(
        "20 sessions, 60 s idle (polling every 30 s, preview visible): {used} ticks = {:.2} s CPU ({:.2}% of one core)",
        used as f64 / hz as f64,
        used as f64 / hz as f64 / 60.0 * 100.0
    );
    screen.keys(&["q"]);
}

/// A critic round run from a shell with `--work-item` (not from this screen) is listed
/// in the Critics pane, from the event log and its saved result (SPEC §17.7).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_run_from_the_cli_is_listed_in_the_critics_pane() {
    let world = TuiWorld::new().await;
    world.start_sessions([15]).await;
    let screen = world.open_screen("supervisor", &[]);
    screen.wait_text("supervising octo/repo").await;
    screen.keys(&["5"]);
    screen.wait_text("No runs yet").await;

    let out = std::process::Command::new(tmux_server::BIN)
        .args([
            "critic",
            "run",
            "diffcheck",
            "--prompt",
            "Review the retry cap.",
        ])
        .args(["--work-item", "github:octo/repo#15"])
        .env("THE_LOOP_HOME", &world.home)
        .env("THE_LOOP_CONFIG", &world.config)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = screen.wait_text("✓ diffcheck #15").await;
    assert!(!text.contains("No runs yet"), "{text}");
    // Its saved output opens like a round of this screen's.
    screen.keys(&["Enter"]);
    screen.wait_text("read ").await;
    screen.keys(&["Escape"]);
    screen
        .wait_for("the output closed", |t| !t.contains("read "))
        .await;
    screen.keys(&["q"]);
    assert_eq!(screen.wait_exit().await, 0);
}

/// Figures for SPEC §15.5 (printed, never asserted; run with the release binary:
/// `THE_LOOP_BIN=$PWD/target/release/the-loop cargo test --release --test tui
/// log_figures -- --ignored --nocapture`): `sessions list` and the TUI's first frame
/// and first snapshot with 20 sessions, once with an empty log and once with 150 MB of
/// history (an open question at its start).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes 150 MB and takes minutes; prints figures"]
async fn log_figures() {
    use crate::support::tui_figures::*;
    use std::time::{Duration, Instant};
    let bin = std::env::var("THE_LOOP_BIN").unwrap_or_else(|_| tmux_server::BIN.to_string());
    println!("binary: {bin}");
    let world = TuiWorld::with_issues(1..=20).await;
    world.start_sessions(1..=20).await;
    let world = &world;
    let bin = bin.as_str();
    let list = |label: &str| {
        let mut runs = Vec::new();
        for _ in 0..5 {
            let started = Instant::now();
            let out = std::process::Command::new(bin)
                .args(["sessions", "list", "--json"])
                .env("THE_LOOP_HOME", &world.home)
                .env("THE_LOOP_CONFIG", &world.config)
                .env_remove("TMUX")
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            runs.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        let log = world.home.join("events.jsonl");
        let size = std::fs::metadata(&log).map_or(0, |m| m.len());
        println!(
            "sessions list, {label} (events.jsonl {:.1} MB): first {:.1} ms, then {:.1} / {:.1} / {:.1} / {:.1} ms",
            size as f64 / 1e6,
            runs[0],
            runs[1],
            runs[2],
            runs[3],
            runs[4]
        );
    };
    let frames = |label: &'static str, run: u32| async move {
        let started = Instant::now();
        let screen = world.open_program(bin, &format!("{label}{run}"), 200, 50);
        let (first, loaded) = startup(&screen, started).await;
        println!(
            "tui, {label}, run {run}: first frame {:.0} ms, first snapshot {:.0} ms",
            first.as_secs_f64() * 1000.0,
            loaded.as_secs_f64() * 1000.0
        );
        let pid = screen.pid();
        // Let it settle (as the other figures do) before it is asked to quit.
        tokio::time::sleep(Duration::from_secs(5)).await;
        screen.keys(&["q"]);
        // Gone, or exited and not reaped yet by tmux (a zombie).
        let gone = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
                stat.rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z'))
            })
        };
        let asked = Instant::now();
        while !gone() && asked.elapsed() < Duration::from_secs(60) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(gone(), "the screen did not quit:\n{}", screen.text());
    };
    list("empty log");
    for run in 1..=2 {
        frames("empty", run).await;
    }

    // 150 MB of history, with a question asked at its start and never answered.
    let log = world.home.join("events.jsonl");
    the_loop::events::EventLog::open_path(&log)
        .emit(
            the_loop::events::Event::new(
                the_loop::events::Source::Cli,
                the_loop::events::EventType::SessionAwaitingInput,
            )
            .with("work_item", "github:octo/repo#3")
            .with("question_id", "old")
            .with("question", "Asked 150 MB ago?"),
        )
        .unwrap();
    let target: u64 = std::env::var("FIG_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(150_000_000);
    while std::fs::metadata(&log).unwrap().len() < target {
        fill_log(world, 100_000, 20);
    }
    list("150 MB appended since the last checkpoint, no supervisor (one-time catch-up)");
    for run in 1..=2 {
        // Run 1 is the supervisor rotating the oversized log at start.
        frames("history", run).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    list("150 MB of history, rotated");
    let kept: Vec<String> = the_loop::events::rotate::retained(&log)
        .iter()
        .map(|p| {
            format!(
                "{} {:.1} MB",
                p.display(),
                std::fs::metadata(p).unwrap().len() as f64 / 1e6
            )
        })
        .collect();
    println!("kept files: {kept:?}");
}
