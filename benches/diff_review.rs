//! The diff view as a workplace (SPEC §21.2, §21.3): opening a 10,000-line diff (parse,
//! rows, first frame), moving the selection through it (a line, a page, with a frame
//! each), and a frame of a diff carrying 1,000 findings. Run:
//! `cargo bench --bench diff_review -- --measurement-time 3`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use the_loop::critic::findings::{Finding, Severity};
use the_loop::tui::action::Action;
use the_loop::tui::app::{App, AppSettings};
use the_loop::tui::diff_view::ReviewMaterial;
use the_loop::tui::keys::Key;
use the_loop::tui::sample;
use the_loop::tui::update::update;
use the_loop::tui::view;
use time::OffsetDateTime;
use time::macros::datetime;

const NOW: OffsetDateTime = datetime!(2026-01-31 12:05:00 UTC);
const FILES: usize = 20;
/// Lines of each file's single hunk: 20 × (4 header lines + 496) = 10,000.
const HUNK: usize = 496;

/// A 10,000-line diff: 20 files, one hunk each, a mix of context, removed and added.
fn diff() -> String {
    let mut out = String::with_capacity(600_000);
    for f in 0..FILES {
        out.push_str(&format!(
            "diff --git a/src/m{f}.rs b/src/m{f}.rs\n--- a/src/m{f}.rs\n+++ b/src/m{f}.rs\n"
        ));
        let (old, new) = (HUNK - HUNK / 4, HUNK - HUNK / 4);
        out.push_str(&format!("@@ -1,{old} +1,{new} @@ fn f{f}()\n"));
        for i in 0..HUNK {
            let sign = match i % 4 {
                1 => '-',
                2 => '+',
                _ => ' ',
            };
            out.push_str(&format!(
                "{sign}    let value_{i} = compute({i}, \"m{f}\");\n"
            ));
        }
    }
    out
}

fn findings(n: usize) -> Vec<Finding> {
    let severities = [Severity::Note, Severity::Warning, Severity::Error];
    (0..n)
        .map(|i| Finding {
            path: format!("src/m{}.rs", i % FILES),
            line: (i / FILES * 7 % 360 + 1) as u32,
            end_line: None,
            column: None,
            severity: severities[i % 3],
            message: format!("finding {i}: this value is computed twice"),
        })
        .collect()
}

/// The sample app, diff view of #15 open and waiting for its text.
fn opening(w: u16, h: u16) -> App {
    let mut app = App::new(AppSettings::builtin(), NOW);
    update(
        &mut app,
        Action::Resize {
            width: w,
            height: h,
        },
    );
    update(&mut app, Action::Snapshot(Box::new(sample::snapshot(NOW))));
    let mut fx = Vec::new();
    the_loop::tui::review::open_at(&mut app, sample::item("octo/repo", 15), None, &mut fx);
    app
}

fn loaded(w: u16, h: u16, text: &str, material: ReviewMaterial) -> App {
    let mut app = opening(w, h);
    update(
        &mut app,
        Action::DiffLoaded {
            work_item: sample::item("octo/repo", 15),
            result: Ok(text.to_string()),
            review: material,
        },
    );
    app
}

fn key(app: &mut App, spec: &str) {
    let k = Key::parse(spec).unwrap();
    update(
        app,
        Action::Key(crossterm::event::KeyEvent::new(k.code, k.mods)),
    );
}

fn bench_diff(c: &mut Criterion) {
    let text = diff();
    assert_eq!(text.lines().count(), 10_000);
    let mut group = c.benchmark_group("diff_view");
    group.bench_function("open_10000_lines_and_draw_200x50", |b| {
        let mut terminal = Terminal::new(TestBackend::new(200, 50)).unwrap();
        b.iter_batched(
            || opening(200, 50),
            |mut app| {
                update(
                    &mut app,
                    Action::DiffLoaded {
                        work_item: sample::item("octo/repo", 15),
                        result: Ok(text.clone()),
                        review: ReviewMaterial::default(),
                    },
                );
                terminal.draw(|f| view::render(&app, f)).unwrap();
            },
            BatchSize::LargeInput,
        )
    });

    let mut app = loaded(200, 50, &text, ReviewMaterial::default());
    let mut terminal = Terminal::new(TestBackend::new(200, 50)).unwrap();
    let mut down = true;
    group.bench_function("select_next_line_and_draw_200x50", |b| {
        b.iter(|| {
            key(&mut app, if down { "j" } else { "k" });
            terminal.draw(|f| view::render(&app, f)).unwrap();
        })
    });
    group.bench_function("page_down_and_draw_200x50", |b| {
        b.iter(|| {
            key(&mut app, if down { "pagedown" } else { "pageup" });
            down = !down;
            terminal.draw(|f| view::render(&app, f)).unwrap();
        })
    });

    let many = ReviewMaterial {
        pending: Ok(Vec::new()),
        findings: findings(1_000),
    };
    group.bench_function("open_10000_lines_with_1000_findings", |b| {
        b.iter_batched(
            || opening(200, 50),
            |mut app| {
                update(
                    &mut app,
                    Action::DiffLoaded {
                        work_item: sample::item("octo/repo", 15),
                        result: Ok(text.clone()),
                        review: many.clone(),
                    },
                );
                app
            },
            BatchSize::LargeInput,
        )
    });
    let mut app = loaded(200, 50, &text, many.clone());
    key(&mut app, "]");
    group.bench_function("frame_with_1000_findings_200x50", |b| {
        b.iter(|| {
            terminal.draw(|f| view::render(&app, f)).unwrap();
        })
    });
    group.finish();
}

criterion_group!(benches, bench_diff);
criterion_main!(benches);
