//! No size is too small: every screen state draws at every size from 1×1 up, with no
//! panic and nothing drawn outside the buffer.

use crate::support::tui_app::*;
use the_loop::tui::action::Action;
use the_loop::tui::app::App;
use the_loop::tui::sample;

fn states() -> Vec<(&'static str, App)> {
    let base = || sample_app(120, 40);
    let with = |keys_: &[&str]| {
        let mut app = base();
        keys(&mut app, keys_);
        app
    };
    let mut reply = with(&["3", "r"]);
    type_text(
        &mut reply,
        "a reply\nover two lines with 日本語 and a very long line that goes on and on",
    );
    let mut filter = with(&["/"]);
    type_text(&mut filter, "deliv");
    let empty = App::new(settings(), NOW);
    vec![
        ("normal", base()),
        ("reply", reply),
        ("help", with(&["?"])),
        ("picker", with(&["c"])),
        ("output", with(&["5", "j", "enter"])),
        ("confirm", with(&["x"])),
        ("filter", filter),
        ("zoom", with(&["2", "z"])),
        ("loading", empty),
        ("held", app_with(sample::snapshot_with_holds(NOW), 120, 40)),
    ]
}

#[test]
fn every_state_draws_at_every_small_size() {
    for (name, mut app) in states() {
        for w in 1..=64u16 {
            for h in 1..=26u16 {
                send(
                    &mut app,
                    Action::Resize {
                        width: w,
                        height: h,
                    },
                );
                let result =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| screen(&app)));
                assert!(result.is_ok(), "{name} panicked at {w}×{h}");
            }
        }
    }
}

#[test]
fn large_and_odd_sizes_draw_too() {
    for (name, mut app) in states() {
        for (w, h) in [
            (1, 1),
            (20, 5),
            (5, 20),
            (300, 3),
            (3, 300),
            (250, 80),
            (99, 11),
            (100, 12),
        ] {
            send(
                &mut app,
                Action::Resize {
                    width: w,
                    height: h,
                },
            );
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| screen(&app)));
            assert!(result.is_ok(), "{name} panicked at {w}×{h}");
        }
    }
}

#[test]
fn keys_at_a_tiny_size_do_not_panic_either() {
    let mut app = sample_app(20, 5);
    for k in [
        "tab", "j", "k", "pgdn", "pgup", "G", "g", "z", "?", "j", "esc", "c", "j", "enter", "5",
        "enter", "j", "G", "esc", "3", "r", "ctrl-s", "esc", "/", "x", "esc", "x", "n", "1", "1",
    ] {
        keys(&mut app, &[k]);
        let _ = screen(&app);
    }
    send(&mut app, Action::Snapshot(Box::new(sample::snapshot(NOW))));
    let _ = screen(&app);
}
