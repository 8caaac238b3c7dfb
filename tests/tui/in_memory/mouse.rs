//! The mouse (SPEC §21.1) through `update`: what is under the pointer at several sizes
//! (a map per arrangement, snapshotted), clicks landing on what the frame drew, double
//! clicks told apart on an injected clock, the wheel, footer hints run by their key,
//! `tui.mouse: false`, and hostile positions and buttons doing nothing.

use crate::support::tui_app::*;
use crossterm::event::{KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::Rect;
use ratatui::widgets::Block;
use std::time::{Duration, Instant};
use the_loop::tui::action::{Action, Effect, Request};
use the_loop::tui::app::{App, AppSettings, Focus, Mode};
use the_loop::tui::layout::Arrangement;
use the_loop::tui::mouse::{DOUBLE_CLICK, Target, target_at};
use the_loop::tui::sample;
use the_loop::tui::text::short_ref;

fn event(kind: MouseEventKind, column: u16, row: u16) -> MouseEvent {
    MouseEvent {
        kind,
        column,
        row,
        modifiers: KeyModifiers::NONE,
    }
}

fn mouse(app: &mut App, kind: MouseEventKind, (x, y): (u16, u16), at: Instant) -> Vec<Effect> {
    send(
        app,
        Action::Mouse {
            event: event(kind, x, y),
            at,
        },
    )
}

/// A press and its release, as a terminal reports one click.
fn click(app: &mut App, at_xy: (u16, u16), at: Instant) -> Vec<Effect> {
    let left = MouseButton::Left;
    let mut fx = mouse(app, MouseEventKind::Down(left), at_xy, at);
    fx.extend(mouse(app, MouseEventKind::Up(left), at_xy, at));
    fx
}

fn wheel(app: &mut App, down: bool, at_xy: (u16, u16)) -> Vec<Effect> {
    let kind = if down {
        MouseEventKind::ScrollDown
    } else {
        MouseEventKind::ScrollUp
    };
    mouse(app, kind, at_xy, Instant::now())
}

/// Where `text` is drawn inside `within` (the first match, top to bottom).
fn find_in(app: &App, text: &str, within: Rect) -> (u16, u16) {
    let terminal = draw(app);
    let buf = terminal.backend().buffer();
    for y in within.top()..within.bottom() {
        let row: String = (within.left()..within.right())
            .map(|x| buf[(x, y)].symbol().to_string())
            .collect();
        if let Some(byte) = row.find(text) {
            return (within.x + row[..byte].chars().count() as u16, y);
        }
    }
    panic!("`{text}` is not drawn in {within:?}:\n{}", screen(app));
}

fn footer_hint(app: &App, label: &str) -> (u16, u16) {
    find_in(app, label, app.layout().footer)
}

/// One character per cell saying what a click there hits: a Sessions row `0`–`9`,
/// a Questions row `a`–`j`, a Critics row `k`–`t`, a pane elsewhere by its initial
/// (`S P Q E C`), a footer hint `[==]`, a picker row `*`, nothing `.`.
fn hit_map(app: &App) -> String {
    let mut out = String::new();
    for y in 0..app.area.height {
        let mut line = String::new();
        for x in 0..app.area.width {
            let code = |base: u8, i: usize| (base + (i as u8).min(9)) as char;
            let c = match target_at(app, x, y) {
                Target::Pane { pane, row } => match (pane, row) {
                    (Focus::Sessions, Some(i)) => code(b'0', i),
                    (Focus::Questions, Some(i)) => code(b'a', i),
                    (Focus::Critics, Some(i)) => code(b'k', i),
                    (pane, _) => pane.title().chars().next().unwrap(),
                },
                Target::Hint(_) => {
                    let same = |x: u16| matches!(target_at(app, x, y), Target::Hint(_));
                    match (x > 0 && same(x - 1), same(x + 1)) {
                        (false, _) => '[',
                        (true, false) => ']',
                        (true, true) => '=',
                    }
                }
                Target::Critic(_) => '*',
                Target::Nothing => '.',
            };
            line.push(c);
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

#[test]
fn what_is_under_the_pointer_in_each_arrangement() {
    for (w, h, arrangement, name) in [
        (100, 30, Arrangement::Wide, "mouse_map_wide_100x30"),
        (80, 40, Arrangement::Stacked, "mouse_map_stacked_80x40"),
        (80, 14, Arrangement::Single, "mouse_map_single_80x14"),
    ] {
        let app = sample_app(w, h);
        assert_eq!(app.layout().arrangement, arrangement, "{w}x{h}");
        snap(name, format!("{}\n{}", screen(&app), hit_map(&app)));
    }
}

#[test]
fn a_click_selects_the_row_the_frame_drew_there_at_every_size() {
    for (w, h) in [(160, 48), (100, 30), (80, 40), (80, 14)] {
        let mut app = sample_app(w, h);
        for i in (0..app.sessions.len()).rev() {
            // Each time from another pane, so the click also has to focus.
            keys(&mut app, &["5"]);
            let rect = app.layout().sessions.unwrap_or_else(|| {
                // One pane at a time: Sessions must be the shown one to be clicked.
                keys(&mut app, &["1"]);
                app.layout().sessions.unwrap()
            });
            let shown = short_ref(&app.sessions[i].work_item);
            let at = find_in(&app, &shown, Block::bordered().inner(rect));
            click(&mut app, at, Instant::now());
            assert_eq!(app.focus, Focus::Sessions, "{w}x{h} {shown}");
            assert_eq!(app.session_index, i, "{w}x{h} {shown}");
        }
    }
}

#[test]
fn a_click_on_a_pane_focuses_it_and_on_a_question_selects_it() {
    let mut app = sample_app(160, 48);
    let events = app.layout().events.unwrap();
    click(&mut app, (events.x + 3, events.y + 2), Instant::now());
    assert_eq!(app.focus, Focus::Events);
    let preview = app.layout().pane.unwrap();
    click(&mut app, (preview.x, preview.y), Instant::now());
    assert_eq!(app.focus, Focus::Pane, "the frame counts as the pane");

    let questions = app.layout().questions.unwrap();
    let at = find_in(&app, "retry cap", questions);
    click(&mut app, at, Instant::now());
    assert_eq!(app.focus, Focus::Questions);
    assert!(app.selected_question().is_some());
}

#[test]
fn a_double_click_on_a_session_opens_the_reply_box_within_the_interval_only() {
    let t0 = Instant::now();
    let mut app = sample_app(160, 48);
    let sessions = Block::bordered().inner(app.layout().sessions.unwrap());
    let row15 = find_in(&app, "octo/repo#15", sessions);
    let row18 = find_in(&app, "octo/repo#18", sessions);

    // Two clicks further apart than the interval are two single clicks.
    click(&mut app, row15, t0);
    click(
        &mut app,
        row15,
        t0 + DOUBLE_CLICK + Duration::from_millis(1),
    );
    assert!(matches!(app.mode, Mode::Normal), "{:?}", app.mode);
    // Two quick clicks on different rows are not a double click either.
    click(&mut app, row18, t0 + Duration::from_secs(5));
    click(&mut app, row15, t0 + Duration::from_millis(5100));
    assert!(matches!(app.mode, Mode::Normal), "{:?}", app.mode);
    assert_eq!(app.session_index, 0);

    // Within the interval, on the same row (anywhere on it): the reply box.
    let t1 = t0 + Duration::from_secs(10);
    click(&mut app, row15, t1);
    click(&mut app, (row15.0 + 6, row15.1), t1 + DOUBLE_CLICK);
    let Mode::Reply(reply) = &app.mode else {
        panic!("no reply box: {:?}", app.mode)
    };
    assert_eq!(reply.work_item, sample::item("octo/repo", 15));

    // The double click is used up: a third quick press is a single click.
    keys(&mut app, &["esc"]);
    click(&mut app, row15, t1 + Duration::from_millis(200));
    assert!(matches!(app.mode, Mode::Normal), "{:?}", app.mode);
}

#[test]
fn while_the_reply_box_is_open_a_click_on_a_pane_changes_nothing() {
    let t0 = Instant::now();
    let mut app = sample_app(160, 48);
    keys(&mut app, &["r"]);
    let events = app.layout().events.unwrap();
    click(&mut app, (events.x + 3, events.y + 2), t0);
    assert!(matches!(app.mode, Mode::Reply(_)));
    assert_eq!(app.focus, Focus::Sessions);
    // Its footer hints still work: cancel closes it, as esc does.
    let at = footer_hint(&app, "cancel");
    click(&mut app, at, t0);
    assert!(matches!(app.mode, Mode::Normal), "{:?}", app.mode);
}

#[test]
fn a_click_on_a_footer_hint_does_what_its_key_does() {
    let mut app = sample_app(160, 48);
    {
        let at = footer_hint(&app, "help");
        click(&mut app, at, Instant::now())
    };
    assert!(matches!(app.mode, Mode::Help { .. }), "{:?}", app.mode);
    {
        let at = footer_hint(&app, "close");
        click(&mut app, at, Instant::now())
    };
    assert!(matches!(app.mode, Mode::Normal), "{:?}", app.mode);

    // The key of a hint the footer invents (the way to a waiting question) too.
    keys(&mut app, &["1"]);
    {
        let at = footer_hint(&app, "waiting");
        click(&mut app, at, Instant::now())
    };
    assert_eq!(app.focus, Focus::Questions, "{}", screen(&app));

    // Between hints, on a separator, nothing runs.
    let (x, y) = footer_hint(&app, "·");
    app.dirty = false;
    click(&mut app, (x, y), Instant::now());
    assert!(!app.dirty && matches!(app.mode, Mode::Normal));

    let fx = {
        let at = footer_hint(&app, "quit");
        click(&mut app, at, Instant::now())
    };
    assert!(app.quit && fx.contains(&Effect::Quit));
}

#[test]
fn the_wheel_scrolls_the_list_under_the_pointer_without_taking_focus() {
    let mut app = sample_app(160, 48);
    keys(&mut app, &["3"]);
    let sessions = app.layout().sessions.unwrap();
    let over = (sessions.x + 4, sessions.y + 3);
    wheel(&mut app, true, over);
    wheel(&mut app, true, over);
    assert_eq!(app.session_index, 2);
    assert_eq!(app.focus, Focus::Questions);
    wheel(&mut app, false, over);
    assert_eq!(app.session_index, 1);
    // The preview has no scroll: the wheel there changes nothing and draws nothing.
    let preview = app.layout().pane.unwrap();
    app.dirty = false;
    wheel(&mut app, true, (preview.x + 5, preview.y + 5));
    assert!(!app.dirty);

    // The Events pane scrolls back by three rows a notch, and forward again.
    let small = &mut sample_app(100, 16);
    let events = small.layout().events.unwrap();
    let over = (events.x + 2, events.y + 2);
    wheel(small, false, over);
    assert!(small.events_scroll > 0, "{}", screen(small));
    wheel(small, true, over);
    assert_eq!(small.events_scroll, 0);
}

#[test]
fn the_wheel_scrolls_the_help_and_the_critic_picker_wherever_the_pointer_is() {
    let mut app = sample_app(100, 30);
    keys(&mut app, &["?"]);
    wheel(&mut app, true, (0, 0));
    assert!(
        matches!(app.mode, Mode::Help { scroll: 3 }),
        "{:?}",
        app.mode
    );
    assert!(screen(&app).contains(" 4/"), "{}", screen(&app));
    wheel(&mut app, false, (99, 29));
    assert!(
        matches!(app.mode, Mode::Help { scroll: 0 }),
        "{:?}",
        app.mode
    );
    keys(&mut app, &["esc"]);

    // The picker: the wheel moves the choice, a click picks, a double click runs.
    keys(&mut app, &["c"]);
    let Mode::Picker { index, .. } = app.mode else {
        panic!("{:?}", app.mode)
    };
    wheel(&mut app, true, (1, 1));
    let Mode::Picker { index: moved, .. } = app.mode else {
        panic!()
    };
    assert_eq!(moved, (index + 1).min(app.critics.len() - 1));
    let name = app.critics[0].name.clone();
    let at = find_in(&app, &name, app.area);
    let t0 = Instant::now();
    click(&mut app, at, t0);
    assert!(matches!(app.mode, Mode::Picker { index: 0, .. }));
    let fx = click(&mut app, at, t0 + Duration::from_millis(100));
    let runs: Vec<_> = fx
        .iter()
        .filter(|e| matches!(e, Effect::Request(Request::RunCritic { .. })))
        .collect();
    // The first critic may be one that cannot run; then the picker says why and stays.
    if app.critics[0].problem.is_none() {
        assert_eq!(runs.len(), 1, "{fx:?}");
    } else {
        assert!(runs.is_empty() && matches!(app.mode, Mode::Picker { .. }));
    }
}

#[test]
fn a_double_click_on_a_finished_critic_run_opens_its_output() {
    let mut app = sample_app(160, 48);
    let critics = Block::bordered().inner(app.layout().critics.unwrap());
    let finished = app
        .runs
        .iter()
        .position(|r| !r.is_running())
        .expect("the sample has a finished run");
    let t0 = Instant::now();
    let at = (critics.x + 2, critics.y + finished as u16);
    click(&mut app, at, t0);
    assert_eq!((app.focus, app.run_index), (Focus::Critics, finished));
    click(&mut app, at, t0 + Duration::from_millis(50));
    assert!(matches!(app.mode, Mode::Output { .. }), "{:?}", app.mode);
}

#[test]
fn with_tui_mouse_false_the_mouse_does_nothing_and_help_does_not_offer_it() {
    let settings = AppSettings {
        mouse: false,
        ..settings()
    };
    let mut app = app_from(settings, sample::snapshot(NOW), 160, 48);
    let sessions = app.layout().sessions.unwrap();
    let before = screen(&app);
    app.dirty = false;
    let t0 = Instant::now();
    click(&mut app, (sessions.x + 3, sessions.y + 3), t0);
    click(&mut app, (sessions.x + 3, sessions.y + 3), t0);
    wheel(&mut app, true, (sessions.x + 3, sessions.y + 3));
    let footer = (2, app.area.height - 1);
    click(&mut app, footer, t0);
    assert!(!app.dirty);
    assert_eq!(screen(&app), before);
    assert_eq!(app.session_index, 0);
    // The help's mouse section (a blank line, a heading, four gestures) is left out.
    let mut on = sample_app(160, 48);
    let help_lines = |app: &mut App| {
        keys(app, &["?"]);
        let text = screen(app);
        let total = text.split(" 1/").nth(1).and_then(|t| t.split(' ').next());
        total.unwrap().parse::<usize>().unwrap()
    };
    assert_eq!(help_lines(&mut app) + 6, help_lines(&mut on));
}

#[test]
fn hostile_positions_and_buttons_do_nothing_and_never_panic() {
    let t0 = Instant::now();
    let mut app = sample_app(160, 48);
    let before = screen(&app);
    app.dirty = false;
    let left = MouseButton::Left;
    let nothing = [
        (MouseEventKind::Down(left), u16::MAX, u16::MAX),
        (MouseEventKind::Down(left), 160, 5),
        (MouseEventKind::Down(left), 5, 48),
        (MouseEventKind::ScrollDown, u16::MAX, 0),
        (MouseEventKind::Up(left), 10, 5),
        (MouseEventKind::Drag(left), 10, 5),
        (MouseEventKind::Moved, 10, 5),
        (MouseEventKind::Down(MouseButton::Right), 10, 5),
        (MouseEventKind::Down(MouseButton::Middle), 10, 5),
        (MouseEventKind::ScrollLeft, 10, 5),
        (MouseEventKind::ScrollRight, 10, 5),
    ];
    for (kind, x, y) in nothing {
        let fx = mouse(&mut app, kind, (x, y), t0);
        assert!(fx.is_empty(), "{kind:?} at {x},{y}: {fx:?}");
    }
    assert!(!app.dirty, "nothing to redraw");
    assert_eq!(screen(&app), before);
    assert!(matches!(app.mode, Mode::Normal) && !app.quit);

    // Every cell, every kind, at sizes down to one cell: no panic.
    for (w, h) in [(1, 1), (3, 2), (12, 4), (40, 10), (99, 19)] {
        for kind in [
            MouseEventKind::Down(left),
            MouseEventKind::ScrollUp,
            MouseEventKind::ScrollDown,
        ] {
            let mut app = sample_app(w, h);
            for y in 0..=h {
                for x in 0..=w {
                    if app.quit {
                        app = sample_app(w, h);
                    }
                    mouse(&mut app, kind, (x, y), t0);
                    let _ = target_at(&app, x, y);
                }
            }
            draw(&app);
        }
    }
}

/// Selecting a question gives it more lines, so the rows under a cell can change between
/// the two presses of a double click: the row of the first press is the one meant.
#[test]
fn a_double_click_means_the_row_first_pressed_even_when_the_rows_move() {
    let t0 = Instant::now();
    let fresh = || app_with(sample::snapshot_with_permission(NOW), 100, 30);
    let app = fresh();
    let questions = Block::bordered().inner(app.layout().questions.unwrap());
    // A cell on the question whose row changes once the question is selected.
    let question = app.permissions.len();
    let moving = (questions.top()..questions.bottom())
        .map(|y| (questions.x + 2, y))
        .find(|&(x, y)| {
            let mut app = fresh();
            let before = target_at(&app, x, y);
            click(&mut app, (x, y), t0);
            before
                == Target::Pane {
                    pane: Focus::Questions,
                    row: Some(question),
                }
                && target_at(&app, x, y) != before
        })
        .unwrap_or_else(|| panic!("no row moves under the pointer:\n{}", screen(&app)));

    let mut app = fresh();
    click(&mut app, moving, t0);
    click(&mut app, moving, t0 + Duration::from_millis(150));
    let Mode::Reply(reply) = &app.mode else {
        panic!("no reply box: {:?}\n{}", app.mode, screen(&app))
    };
    assert_eq!(reply.work_item, sample::item("octo/repo", 18));
}
#[test]
fn a_click_or_a_wheel_notch_that_changes_nothing_captures_nothing() {
    let mut app = sample_app(160, 48);
    let sessions = app.layout().sessions.unwrap();
    let first_row = (sessions.x + 4, sessions.y + 1);
    click(&mut app, first_row, Instant::now());
    assert_eq!((app.focus, app.session_index), (Focus::Sessions, 0));
    let shown = app.selected_session().unwrap().work_item.clone();
    let captured = || Action::Captured {
        work_item: shown.clone(),
        result: Ok("$ ".into()),
    };
    send(&mut app, captured()); // no capture in flight any more
    // The same row again, later (not a double click): nothing new to show.
    let later = Instant::now() + DOUBLE_CLICK * 4;
    let fx = click(&mut app, first_row, later);
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::Capture(_))),
        "{fx:?}"
    );
    // The wheel past the top of the list: no capture either.
    send(&mut app, captured());
    let fx = wheel(&mut app, false, first_row);
    assert_eq!(app.session_index, 0);
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::Capture(_))),
        "{fx:?}"
    );
}
