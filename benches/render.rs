//! Drawing a full frame of the TUI into ratatui's `TestBackend`: 50 sessions, 1,000
//! events, a question, critic runs and a colored pane capture — what one redraw costs.
//! Also the cost of taking in a burst of events (`update` with 1,000 at once) and of
//! getting from nothing to the first frame. Run:
//! `cargo bench --bench render -- --measurement-time 3`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::hint::black_box;
use the_loop::events::Event;
use the_loop::tui::action::Action;
use the_loop::tui::app::{App, AppSettings};
use the_loop::tui::backend::{SessionState, Snapshot};
use the_loop::tui::sample;
use the_loop::tui::update::update;
use the_loop::tui::view;
use time::OffsetDateTime;
use time::macros::datetime;

const NOW: OffsetDateTime = datetime!(2026-01-31 12:05:00 UTC);

fn snapshot() -> Snapshot {
    let mut s = sample::snapshot(NOW);
    let states = [
        SessionState::Working,
        SessionState::Idle,
        SessionState::AwaitingInput,
        SessionState::Paused,
        SessionState::Dead,
        SessionState::NoSession,
    ];
    s.sessions = (0..50)
        .map(|i| {
            let repo = ["octo/repo", "octo/web", "octo/api-gateway"][i % 3];
            sample::session(
                repo,
                100 + i as u64,
                "claude",
                states[i % states.len()],
                i as u64 * 37,
            )
        })
        .collect();
    s
}

fn events(n: usize) -> Vec<Event> {
    let history = sample::history(NOW);
    (0..n)
        .map(|i| {
            let mut e = history[4 + i % 7].clone();
            e.fields.insert(
                "work_item".into(),
                format!("github:octo/repo#{}", 100 + i % 50).into(),
            );
            e
        })
        .collect()
}

fn app(width: u16, height: u16) -> App {
    let mut app = App::new(AppSettings::builtin(), NOW);
    update(&mut app, Action::Resize { width, height });
    update(&mut app, Action::History(events(1000)));
    update(&mut app, Action::Snapshot(Box::new(snapshot())));
    let target = app.preview_target().map(|s| s.work_item.clone()).unwrap();
    update(
        &mut app,
        Action::Captured {
            work_item: target,
            result: Ok(sample::capture()),
        },
    );
    app
}

fn bench_render(c: &mut Criterion) {
    let mut group = c.benchmark_group("render");
    for (w, h) in [(200, 50), (120, 40), (80, 24)] {
        let app = app(w, h);
        let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
        group.bench_function(format!("full_frame_{w}x{h}"), |b| {
            b.iter(|| {
                terminal.draw(|f| view::render(black_box(&app), f)).unwrap();
            })
        });
    }
    // A frame where everything changed since the last one (the diff writes every cell).
    let app_a = app(200, 50);
    let mut app_b = app(200, 50);
    update(
        &mut app_b,
        Action::Key(crossterm::event::KeyEvent::from(
            crossterm::event::KeyCode::Char('?'),
        )),
    );
    let mut terminal = Terminal::new(TestBackend::new(200, 50)).unwrap();
    let mut flip = false;
    group.bench_function("alternating_frames_200x50", |b| {
        b.iter(|| {
            flip = !flip;
            let app = if flip { &app_a } else { &app_b };
            terminal.draw(|f| view::render(app, f)).unwrap();
        })
    });
    group.finish();

    // From nothing to the first full frame: keymap and theme parsed, 500 events of
    // history and a snapshot taken in, drawn (the backend's own I/O not included).
    let history = events(500);
    let snap = snapshot();
    c.bench_function("render/first_frame_200x50", |b| {
        b.iter(|| {
            let options = the_loop::tui::run::RunOptions {
                config_dir: None,
                ..the_loop::tui::run::RunOptions::new(Default::default())
            };
            let mut app = options.app(NOW);
            update(
                &mut app,
                Action::Resize {
                    width: 200,
                    height: 50,
                },
            );
            update(&mut app, Action::History(history.clone()));
            update(&mut app, Action::Snapshot(Box::new(snap.clone())));
            let mut terminal = Terminal::new(TestBackend::new(200, 50)).unwrap();
            terminal.draw(|f| view::render(&app, f)).unwrap();
        })
    });

    let burst = events(1000);
    c.bench_function("update/ingest_1000_events", |b| {
        b.iter_batched(
            || (app(200, 50), burst.clone()),
            |(mut app, burst)| update(&mut app, Action::Events(burst)),
            BatchSize::LargeInput,
        )
    });
}

criterion_group!(benches, bench_render);
criterion_main!(benches);
