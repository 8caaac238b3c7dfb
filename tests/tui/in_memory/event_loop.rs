//! The real event loop into a `TestBackend`, with a scripted console and the fake
//! backend, on tokio's paused clock: what is drawn when, and what happens around attach.

use crate::support::tui_app::*;
use crossterm::event::{Event as TermEvent, KeyEvent};
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use the_loop::events::{Event, EventType, Source};
use the_loop::tui::action::Notification;
use the_loop::tui::action::Request;
use the_loop::tui::app::App;
use the_loop::tui::backend::{CriticResult, QuestionView, RunId, SessionState, Snapshot};
use the_loop::tui::fake::FakeBackend;
use the_loop::tui::run::{Console, LoopSettings, LoopStats, Timing, event_loop};
use the_loop::tui::sample;
use tokio::sync::mpsc;

/// What the loop did to the terminal side, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Did {
    Suspend,
    Resume,
    Foreground(Vec<String>),
    Background(Vec<String>),
    Bell,
    Desktop(Notification),
}

#[derive(Clone)]
pub struct Script {
    rx: Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<io::Result<TermEvent>>>>,
    pub log: Arc<Mutex<Vec<Did>>>,
}

pub struct ScriptedConsole(pub Script);

impl Console for ScriptedConsole {
    fn input(&mut self) -> BoxStream<'static, io::Result<TermEvent>> {
        futures::stream::unfold(self.0.rx.clone(), |rx| async move {
            let next = rx.lock().await.recv().await?;
            Some((next, rx))
        })
        .boxed()
    }
    fn suspend(&mut self) -> io::Result<()> {
        self.0.log.lock().unwrap().push(Did::Suspend);
        Ok(())
    }
    fn resume(&mut self) -> io::Result<()> {
        self.0.log.lock().unwrap().push(Did::Resume);
        Ok(())
    }
    fn run_foreground(&mut self, argv: Vec<String>) -> BoxFuture<'static, io::Result<()>> {
        self.0.log.lock().unwrap().push(Did::Foreground(argv));
        Box::pin(async { Ok(()) })
    }
    fn run_background(&mut self, argv: Vec<String>) -> BoxFuture<'static, io::Result<()>> {
        self.0.log.lock().unwrap().push(Did::Background(argv));
        Box::pin(async { Ok(()) })
    }
    fn bell(&mut self) {
        self.0.log.lock().unwrap().push(Did::Bell);
    }
    fn desktop(&mut self, n: &Notification) {
        self.0.log.lock().unwrap().push(Did::Desktop(n.clone()));
    }
}

pub struct Rig {
    pub keys: mpsc::UnboundedSender<io::Result<TermEvent>>,
    pub script: Script,
    pub backend: Arc<FakeBackend>,
}

impl Rig {
    pub fn new(snapshot: Snapshot) -> (Self, ScriptedConsole) {
        let (keys, rx) = mpsc::unbounded_channel();
        let script = Script {
            rx: Arc::new(tokio::sync::Mutex::new(rx)),
            log: Arc::default(),
        };
        let backend = Arc::new(FakeBackend::new(snapshot));
        backend.set_now(NOW);
        (
            Self {
                keys,
                script: script.clone(),
                backend,
            },
            ScriptedConsole(script),
        )
    }

    pub fn press(&self, spec: &str) {
        let k = the_loop::tui::keys::Key::parse(spec).unwrap();
        self.keys
            .send(Ok(TermEvent::Key(KeyEvent::new(k.code, k.mods))))
            .unwrap();
    }

    pub fn paste(&self, text: &str) {
        self.keys.send(Ok(TermEvent::Paste(text.into()))).unwrap();
    }

    pub fn did(&self) -> Vec<Did> {
        self.script.log.lock().unwrap().clone()
    }
}

pub fn settings_fixed_clock() -> LoopSettings {
    LoopSettings {
        timing: Timing::default(),
        history: 100,
        clock: now,
    }
}

/// Runs the loop while `script` drives it; returns the loop's result and the final app.
pub async fn drive<F: Future<Output = ()>>(
    rig: &Rig,
    console: &mut ScriptedConsole,
    app: &mut App,
    terminal: &mut Terminal<TestBackend>,
    script: F,
) -> anyhow::Result<LoopStats> {
    let backend: Arc<dyn the_loop::tui::backend::Backend> = rig.backend.clone();
    let (result, ()) = tokio::join!(
        event_loop(terminal, app, backend, console, settings_fixed_clock()),
        script
    );
    result
}

/// Lets virtual time pass (the runtime's clock is paused and auto-advances).
pub async fn wait(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

pub fn quiet_snapshot() -> Snapshot {
    // Nothing whose shown text changes with time: no poll age, no question age, no
    // running critic.
    let mut s = sample::snapshot(NOW);
    s.status.last_poll = None;
    s.questions.clear();
    s.runs.retain(|r| !r.is_running());
    s.sessions[1].state = SessionState::Idle;
    s
}

fn new_app(w: u16, h: u16) -> (App, Terminal<TestBackend>) {
    let mut app = App::new(settings(), NOW);
    app.area = ratatui::layout::Rect::new(0, 0, w, h);
    (app, Terminal::new(TestBackend::new(w, h)).unwrap())
}

/// Frames drawn by a loop that runs `before` ms, sees `event` (if any), runs `after` ms
/// more, then quits.
async fn frames(
    snapshot: Snapshot,
    before: u64,
    event: impl FnOnce(&Rig),
    after: u64,
    keys: &[&str],
) -> (u64, Rig, String) {
    let (rig, mut console) = Rig::new(snapshot);
    rig.backend
        .set_capture(&sample::item("octo/repo", 15), &sample::capture());
    let (mut app, mut terminal) = new_app(120, 32);
    let stats = {
        let rig = &rig;
        drive(rig, &mut console, &mut app, &mut terminal, async move {
            wait(before).await;
            event(rig);
            for k in keys {
                rig.press(k);
            }
            wait(after).await;
            rig.press("q");
        })
        .await
        .unwrap()
    };
    (stats.draws, rig, terminal.backend().to_string())
}

#[tokio::test(start_paused = true)]
async fn an_idle_screen_is_not_redrawn() {
    let (short, _, _) = frames(quiet_snapshot(), 3_000, |_| {}, 0, &[]).await;
    let (long, rig, screen) = frames(quiet_snapshot(), 3_000, |_| {}, 60_000, &[]).await;
    // The idle minute still polled: ticks, snapshot refreshes, preview captures…
    let polls = rig.backend.calls().len();
    assert!(
        polls > 100,
        "only {polls} backend calls: the loop was not running"
    );
    // …and drew nothing.
    assert_eq!(long, short, "an idle minute drew {} frames", long - short);
    assert!(screen.contains("Reading src/ingress/poll.rs"), "{screen}");
}

#[tokio::test(start_paused = true)]
async fn a_key_that_changes_something_draws_one_frame() {
    let (base, _, _) = frames(quiet_snapshot(), 3_000, |_| {}, 3_000, &[]).await;
    let (pressed, _, screen) = frames(quiet_snapshot(), 3_000, |_| {}, 3_000, &["5"]).await;
    assert_eq!(pressed, base + 1, "one key, one frame");
    // A key that changes nothing draws nothing.
    let (noop, _, _) = frames(quiet_snapshot(), 3_000, |_| {}, 3_000, &["f12"]).await;
    assert_eq!(noop, base);
    assert!(screen.contains("Critics"));
}

fn finish(rig: &Rig) {
    rig.backend.finish_run(
        &RunId("run-2".into()),
        CriticResult {
            ok: true,
            exit_code: 0,
            duration_secs: 44.0,
            cost_usd: Some(0.02),
            attribution: "[cursor/gpt-5]".into(),
            output: "LGTM".into(),
            error: None,
            findings: Vec::new(),
        },
    );
}

#[tokio::test(start_paused = true)]
async fn the_spinner_ticks_only_while_a_critic_runs() {
    let running = || {
        let mut s = quiet_snapshot();
        s.runs = sample::runs(NOW);
        s
    };
    let (two, _, _) = frames(running(), 2_000, |_| {}, 0, &[]).await;
    let (four, _, _) = frames(running(), 4_000, |_| {}, 0, &[]).await;
    assert!(
        four - two >= 15,
        "about ten frames a second while running: {}",
        four - two
    );

    let (soon, _, _) = frames(running(), 1_000, finish, 5_000, &[]).await;
    let (later, _, screen) = frames(running(), 1_000, finish, 15_000, &[]).await;
    assert_eq!(later, soon, "no frames once the run finished");
    assert!(screen.contains("✓ cursor-gpt"), "{screen}");
}

#[tokio::test(start_paused = true)]
async fn attach_suspends_runs_the_child_and_resumes() {
    let (rig, mut console) = Rig::new(sample::snapshot(NOW));
    let (mut app, mut terminal) = new_app(120, 32);
    {
        let rig = &rig;
        drive(rig, &mut console, &mut app, &mut terminal, async move {
            wait(1_000).await;
            rig.press("A");
            wait(1_000).await;
            rig.press("q");
        })
        .await
        .unwrap();
    }
    assert_eq!(
        rig.did(),
        [
            Did::Suspend,
            Did::Foreground(vec![
                "tmux".into(),
                "attach-session".into(),
                "-r".into(),
                "-t".into(),
                "loop-github-octo-repo-15".into()
            ]),
            Did::Resume,
        ]
    );
    assert!(
        terminal
            .backend()
            .to_string()
            .contains("Back from octo/repo#15")
    );
}

#[tokio::test(start_paused = true)]
async fn a_reply_goes_through_the_backend_and_closes_the_question() {
    let (rig, mut console) = Rig::new(sample::snapshot(NOW));
    let (mut app, mut terminal) = new_app(120, 32);
    {
        let rig = &rig;
        drive(rig, &mut console, &mut app, &mut terminal, async move {
            wait(1_000).await;
            for k in [
                "3", "r", "P", "e", "r", "space", "r", "e", "p", "o", "enter",
            ] {
                rig.press(k);
            }
            rig.paste("Keep 3 as the default.");
            rig.press("ctrl-s");
            wait(3_000).await;
            rig.press("q");
        })
        .await
        .unwrap();
    }
    assert_eq!(
        rig.backend.actions(),
        [Request::Reply {
            work_item: sample::item("octo/repo", 18),
            text: "Per repo\nKeep 3 as the default.".into(),
            over_budget: false,
        }]
    );
    let screen = terminal.backend().to_string();
    assert!(screen.contains("No open questions"), "{screen}");
    assert!(
        screen.contains("Reply delivered to octo/repo#18"),
        "{screen}"
    );
    assert!(screen.contains("↩ reply sent"), "{screen}");
}

#[tokio::test(start_paused = true)]
async fn a_new_question_rings_the_bell_once() {
    let (rig, mut console) = Rig::new(quiet_snapshot());
    let (mut app, mut terminal) = new_app(120, 32);
    {
        let rig = &rig;
        drive(rig, &mut console, &mut app, &mut terminal, async move {
            wait(1_000).await;
            rig.backend.with_snapshot(|s| {
                s.questions.push(QuestionView {
                    work_item: sample::item("octo/web", 9),
                    question: "Merge now?".into(),
                    asked_at: NOW,
                    comment_url: None,
                })
            });
            rig.backend.emit(
                Event::new(Source::Cli, EventType::SessionAwaitingInput)
                    .with("work_item", "github:octo/web#9")
                    .with("question", "Merge now?"),
            );
            wait(5_000).await;
            rig.press("q");
        })
        .await
        .unwrap();
    }
    assert_eq!(rig.did(), [Did::Bell]);
    assert!(terminal.backend().to_string().contains("Merge now?"));
}

#[tokio::test(start_paused = true)]
async fn an_input_error_ends_the_loop_with_it() {
    let (rig, mut console) = Rig::new(Snapshot::default());
    let (mut app, mut terminal) = new_app(80, 24);
    let result = {
        let rig = &rig;
        drive(rig, &mut console, &mut app, &mut terminal, async move {
            wait(100).await;
            rig.keys.send(Err(io::Error::other("tty gone"))).unwrap();
        })
        .await
    };
    let err = result.unwrap_err();
    assert!(format!("{err:#}").contains("tty gone"), "{err:#}");
}
