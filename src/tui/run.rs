//! The event loop: one tokio `select!` over terminal input, backend events, results of
//! background work, and timers; every input becomes an [`Action`] for the one `update`,
//! and the screen is drawn only when `update` marked it dirty.
//!
//! The loop is generic over the ratatui backend and takes the terminal side as a
//! [`Console`], so tests run the real loop into a `TestBackend` with scripted keys.
//! Timers that have nothing to do are switched off: the spinner runs only while a
//! critic does, the preview refresh only while a pane is visible.

use super::action::{Action, Effect, Notification, Request};
use super::app::{App, AppSettings};
use super::backend::{ActionResult, AttachPlan, Backend};
use super::keymap::Keymap;
use super::terminal::{CrosstermConsole, Restorer, TerminalGuard};
use super::theme::{Theme, no_color_from_env};
use super::update::update;
use super::view;
use crate::config::TuiConfig;
use crate::events::Event;
use crossterm::event::Event as TermEvent;
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use time::{OffsetDateTime, UtcOffset};
use tokio::sync::{broadcast, mpsc};
use tokio::time::MissedTickBehavior;

/// The terminal side of the loop: input, suspend/resume around `tmux attach`, child
/// processes, bell and desktop notifications.
pub trait Console: Send {
    /// A fresh input stream (after a resume the old one is gone).
    fn input(&mut self) -> BoxStream<'static, io::Result<TermEvent>>;
    fn suspend(&mut self) -> io::Result<()>;
    fn resume(&mut self) -> io::Result<()>;
    /// Runs a child that owns the terminal until it exits.
    fn run_foreground(&mut self, argv: Vec<String>) -> BoxFuture<'static, io::Result<()>>;
    /// Runs a quick child without the terminal (`tmux switch-client`).
    fn run_background(&mut self, argv: Vec<String>) -> BoxFuture<'static, io::Result<()>>;
    fn bell(&mut self);
    fn desktop(&mut self, notification: &Notification);
}

/// How often the loop's timers fire (each only while it has something to do).
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// Relative times and message expiry.
    pub clock: Duration,
    /// The running-critic spinner.
    pub spinner: Duration,
    /// The pane preview, while visible.
    pub preview: Duration,
    /// A fresh snapshot even without events (idle times, activity).
    pub refresh: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            clock: Duration::from_secs(1),
            spinner: Duration::from_millis(100),
            preview: Duration::from_millis(500),
            refresh: Duration::from_secs(2),
        }
    }
}

/// What `tui::run` needs besides the backend.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub tui: TuiConfig,
    /// `sessions.holdNotifySeconds` (SPEC §18.3).
    pub hold_notify_secs: u64,
    /// Where `keymap.yaml` and `themes/` overrides live.
    pub config_dir: Option<PathBuf>,
    /// `--attach X`: open focused on this session.
    pub focus: Option<String>,
    pub no_color: bool,
    /// Event times are shown in this offset.
    pub utc_offset: UtcOffset,
    pub timing: Timing,
    /// Recent events loaded into the Events pane at start.
    pub history: usize,
}

impl RunOptions {
    /// Defaults from the environment: the user config dir, `NO_COLOR`, the local offset.
    pub fn new(tui: TuiConfig) -> Self {
        Self {
            tui,
            hold_notify_secs: crate::config::DEFAULT_HOLD_NOTIFY_SECONDS,
            config_dir: crate::paths::config_dir(),
            focus: None,
            no_color: no_color_from_env(),
            // The local offset can only be read safely while single-threaded; callers
            // that know it set it, otherwise times show in UTC.
            utc_offset: UtcOffset::current_local_offset().unwrap_or(UtcOffset::UTC),
            timing: Timing::default(),
            history: 500,
        }
    }

    /// The app these options describe: keymap and theme loaded, problems as warnings.
    pub fn app(&self, now: OffsetDateTime) -> App {
        let dir = self.config_dir.as_deref();
        let (keymap, mut warnings) = Keymap::load(&self.tui.keymap, dir);
        let (theme, theme_warnings) = Theme::load(&self.tui.theme, dir, self.no_color);
        warnings.extend(theme_warnings);
        App::new(
            AppSettings {
                keymap,
                theme,
                notify: self.tui.notify,
                hold_notify_secs: self.hold_notify_secs,
                utc_offset: self.utc_offset,
                warnings,
                focus: self.focus.clone(),
                mouse: self.tui.mouse,
            },
            now,
        )
    }
}

/// The loop's knobs; tests shorten timers and fix the clock.
#[derive(Debug, Clone, Copy)]
pub struct LoopSettings {
    pub timing: Timing,
    /// Recent events loaded at start.
    pub history: usize,
    /// The wall clock (tests pass a fixed one so relative times are stable).
    pub clock: fn() -> OffsetDateTime,
}

impl Default for LoopSettings {
    fn default() -> Self {
        Self {
            timing: Timing::default(),
            history: 500,
            clock: OffsetDateTime::now_utc,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoopStats {
    /// Frames drawn.
    pub draws: u64,
}

/// Runs the TUI on the real terminal until the operator quits.
pub async fn run(backend: Arc<dyn Backend>, options: RunOptions) -> anyhow::Result<()> {
    let restorer = Restorer::stdout().with_mouse(options.tui.mouse);
    guarded(restorer.clone(), async move {
        let mut terminal = Terminal::new(CrosstermBackend::new(io::stdout()))?;
        full_redraw(&mut terminal)?;
        let mut app = options.app(OffsetDateTime::now_utc());
        let mut console = CrosstermConsole::new(restorer);
        let settings = LoopSettings {
            timing: options.timing,
            history: options.history,
            clock: OffsetDateTime::now_utc,
        };
        tokio::select! {
            result = event_loop(&mut terminal, &mut app, backend, &mut console, settings) => result.map(|_| ()),
            signal = terminate_signal() => {
                tracing::info!("leaving the TUI on {signal}");
                Ok(())
            }
        }
    })
    .await
}

/// Takes the terminal, runs `body`, and restores the terminal whatever happens: an
/// `Ok`, an `Err`, or a panic (through the guard's hook, then its drop).
pub async fn guarded<T>(
    restorer: Restorer,
    body: impl Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    let guard = TerminalGuard::enter(restorer)?;
    let result = body.await;
    drop(guard);
    if let Err(e) = &result {
        tracing::error!("the TUI stopped: {e:#}");
    }
    result
}

/// Clears the screen and forgets the last frame, so the next draw paints every cell.
/// Not `Terminal::clear`: that asks the terminal where its cursor is, and the answer can
/// be lost or late right after a child (`tmux attach`) had the terminal — the resume then
/// failed after two seconds.
fn full_redraw<B>(terminal: &mut Terminal<B>) -> anyhow::Result<()>
where
    B: ratatui::backend::Backend,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let area = terminal.size()?;
    terminal.resize(ratatui::layout::Rect::new(0, 0, area.width, area.height))?;
    Ok(())
}

#[cfg(unix)]
async fn terminate_signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) {
        (Ok(mut term), Ok(mut hup)) => tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = hup.recv() => "SIGHUP",
        },
        _ => std::future::pending().await,
    }
}

#[cfg(not(unix))]
async fn terminate_signal() -> &'static str {
    std::future::pending().await
}

fn to_action(event: TermEvent) -> Option<Action> {
    match event {
        TermEvent::Key(key) => Some(Action::Key(key)),
        TermEvent::Paste(text) => Some(Action::Paste(text)),
        TermEvent::Resize(width, height) => Some(Action::Resize { width, height }),
        TermEvent::Mouse(event) => Some(Action::Mouse {
            event,
            at: std::time::Instant::now(),
        }),
        _ => None,
    }
}

/// Live events, batched: one wake-up per burst rather than per event.
async fn next_live(live: &mut Option<broadcast::Receiver<Event>>) -> Option<Action> {
    const BATCH: usize = 512;
    let Some(rx) = live.as_mut() else {
        return std::future::pending().await;
    };
    match rx.recv().await {
        Ok(first) => {
            let mut batch = vec![first];
            while batch.len() < BATCH {
                match rx.try_recv() {
                    Ok(e) => batch.push(e),
                    Err(_) => break,
                }
            }
            Some(Action::Events(batch))
        }
        Err(broadcast::error::RecvError::Lagged(n)) => Some(Action::EventsLagged(n)),
        Err(broadcast::error::RecvError::Closed) => {
            *live = None;
            None
        }
    }
}

fn interval(period: Duration) -> tokio::time::Interval {
    let mut i = tokio::time::interval(period);
    i.set_missed_tick_behavior(MissedTickBehavior::Skip);
    i
}

/// The loop. Returns when the app quits or the input ends; an input or drawing error
/// is returned (the caller's guard restores the terminal either way).
pub async fn event_loop<B>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    backend: Arc<dyn Backend>,
    console: &mut dyn Console,
    settings: LoopSettings,
) -> anyhow::Result<LoopStats>
where
    B: ratatui::backend::Backend,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let (tx, mut results) = mpsc::unbounded_channel::<Action>();
    // Subscribe before reading the history, so nothing falls between the two; what
    // arrives twice is dropped by `update`. The history is read before the first frame
    // (a backwards read of the log's tail) so live events always come after it.
    let mut live = Some(backend.subscribe());
    let history = backend.recent_events(settings.history).await;
    let size = terminal.size()?;
    let mut stats = LoopStats::default();
    let mut pending = update(
        app,
        Action::Resize {
            width: size.width,
            height: size.height,
        },
    );
    pending.extend(update(app, Action::History(history)));
    let mut input = console.input();
    let timing = settings.timing;
    let mut clock_tick = interval(timing.clock);
    let mut spin = interval(timing.spinner);
    let mut preview = interval(timing.preview);
    let mut refresh = interval(timing.refresh);

    loop {
        for effect in std::mem::take(&mut pending) {
            perform(effect, app, &backend, console, &tx, terminal, &mut input).await?;
        }
        if app.dirty {
            terminal.draw(|frame| view::render(app, frame))?;
            app.dirty = false;
            stats.draws += 1;
        }
        if app.quit {
            break;
        }
        let action = tokio::select! {
            event = input.next() => match event {
                Some(Ok(event)) => match to_action(event) {
                    Some(action) => action,
                    None => continue,
                },
                Some(Err(e)) => return Err(anyhow::Error::new(e).context("reading the terminal")),
                None => break,
            },
            Some(action) = results.recv() => action,
            action = next_live(&mut live) => match action {
                Some(action) => action,
                None => continue,
            },
            _ = clock_tick.tick() => Action::Tick((settings.clock)()),
            _ = spin.tick(), if app.critic_running() => Action::Spin,
            _ = preview.tick(), if app.wants_preview() => Action::PreviewDue,
            _ = refresh.tick() => Action::RefreshDue,
        };
        pending = update(app, action);
    }
    Ok(stats)
}

async fn perform_request(backend: &dyn Backend, request: &Request) -> ActionResult {
    match request {
        Request::Reply {
            work_item,
            text,
            over_budget,
        } => backend.reply(work_item, text, *over_budget).await,
        Request::Start(w) => backend.start(w).await,
        Request::Pause(w) => backend.pause(w).await,
        Request::Resume(w) => backend.resume(w).await,
        Request::Stop(w) => backend.stop(w).await,
        Request::DeliverHeld(w) => backend.deliver_held(w).await,
        Request::Dismiss(w) => backend.dismiss_question(w).await,
        Request::Permission {
            work_item,
            request_id,
            approve,
        } => {
            backend
                .answer_permission(work_item, request_id, *approve)
                .await
        }
        Request::RunCritic { critic, work_item } => backend.run_critic(critic, work_item).await,
        Request::PostCritic(run) => backend.post_critic(run).await,
        Request::OpenUrl(url) => backend.open_url(url).await,
        Request::Ship {
            work_item,
            seen_head,
        } => backend.ship(work_item, seen_head).await,
        Request::SaveComment { work_item, comment } => {
            backend.save_comment(work_item, comment).await
        }
        Request::SendReview {
            work_item,
            comments,
            over_budget,
        } => backend.send_review(work_item, comments, *over_budget).await,
        Request::DiscardReview { work_item, ids, .. } => {
            backend.discard_review(work_item, ids).await
        }
    }
}

async fn perform<B>(
    effect: Effect,
    app: &mut App,
    backend: &Arc<dyn Backend>,
    console: &mut dyn Console,
    tx: &mpsc::UnboundedSender<Action>,
    terminal: &mut Terminal<B>,
    input: &mut BoxStream<'static, io::Result<TermEvent>>,
) -> anyhow::Result<()>
where
    B: ratatui::backend::Backend,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let spawn = |f: BoxFuture<'static, Action>| {
        let tx = tx.clone();
        tokio::spawn(async move {
            let _ = tx.send(f.await);
        });
    };
    match effect {
        Effect::Quit => {}
        Effect::Bell => console.bell(),
        Effect::Desktop(n) => console.desktop(&n),
        Effect::Refresh => {
            let b = Arc::clone(backend);
            spawn(Box::pin(async move {
                let mut snapshot = b.snapshot().await;
                snapshot.status.hosts = b.hosts();
                Action::Snapshot(Box::new(snapshot))
            }));
        }
        Effect::Capture(work_item) => {
            let b = Arc::clone(backend);
            spawn(Box::pin(async move {
                let result = b.capture_pane(&work_item).await.map_err(|e| e.to_string());
                Action::Captured { work_item, result }
            }));
        }
        Effect::LoadDiff(work_item) => {
            let b = Arc::clone(backend);
            spawn(Box::pin(async move {
                let (result, review) =
                    futures::join!(b.diff(&work_item), b.review_material(&work_item));
                Action::DiffLoaded {
                    work_item,
                    result: result.map_err(|e| e.to_string()),
                    review,
                }
            }));
        }
        Effect::LoadShip(work_item) => {
            let b = Arc::clone(backend);
            spawn(Box::pin(async move {
                let result = b
                    .ship_preview(&work_item)
                    .await
                    .map(Box::new)
                    .map_err(|e| e.to_string());
                Action::ShipPreviewed { work_item, result }
            }));
        }
        Effect::Request(request) => {
            let b = Arc::clone(backend);
            spawn(Box::pin(async move {
                let result = perform_request(&*b, &request).await;
                Action::Done { request, result }
            }));
        }
        Effect::Attach {
            work_item,
            read_only,
        } => {
            let result = match backend.attach(&work_item, read_only).await {
                Ok(AttachPlan::Foreground(argv)) => {
                    // Stop reading keys before handing the terminal to the child, and
                    // take it back (fresh input, full redraw) when the child exits.
                    *input = futures::stream::empty().boxed();
                    console.suspend()?;
                    let result = console.run_foreground(argv).await;
                    console.resume()?;
                    *input = console.input();
                    full_redraw(terminal)?;
                    app.dirty = true;
                    result.map_err(|e| e.to_string())
                }
                Ok(AttachPlan::Background(argv)) => console
                    .run_background(argv)
                    .await
                    .map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            let _ = tx.send(Action::Attached { work_item, result });
        }
    }
    Ok(())
}
