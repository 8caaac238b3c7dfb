//! `update` driven by key sequences with the shipped keymap and with a user override:
//! keys → effects (what the backend is asked to do) and state.

use crate::support::tui_app::*;
use the_loop::config::NotifyMode;
use the_loop::tui::action::{Action, Effect, Notification, Request};
use the_loop::tui::app::{App, AppSettings, Focus, MessageLevel, Mode};
use the_loop::tui::backend::{ActionError, QuestionView, RunId, SessionState};
use the_loop::tui::run::RunOptions;
use the_loop::tui::sample;
use the_loop::work_item::WorkItemRef;
use time::Duration;

fn item(repo: &str, n: u64) -> WorkItemRef {
    sample::item(repo, n)
}

fn requests(fx: &[Effect]) -> Vec<Request> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Request(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

fn message(app: &App) -> String {
    app.message
        .as_ref()
        .map(|m| m.text.clone())
        .unwrap_or_default()
}

fn reply_text(app: &App) -> Option<String> {
    match &app.mode {
        Mode::Reply(r) => Some(r.textarea.lines().join("\n")),
        _ => None,
    }
}

#[test]
fn moving_selects_sessions_and_tab_cycles_panes() {
    let mut app = sample_app(120, 32);
    assert_eq!(
        app.selected_session().unwrap().work_item,
        item("octo/repo", 15)
    );
    keys(&mut app, &["j", "j"]);
    assert_eq!(
        app.selected_session().unwrap().work_item,
        item("octo/web", 3)
    );
    keys(&mut app, &["G"]);
    assert_eq!(
        app.selected_session().unwrap().work_item,
        item("octo/web", 11)
    );
    keys(&mut app, &["j"]);
    assert_eq!(app.session_index, 4, "stays on the last row");
    keys(&mut app, &["g", "k"]);
    assert_eq!(app.session_index, 0);
    for expected in [
        Focus::Pane,
        Focus::Questions,
        Focus::Events,
        Focus::Critics,
        Focus::Sessions,
    ] {
        keys(&mut app, &["tab"]);
        assert_eq!(app.focus, expected);
    }
    keys(&mut app, &["backtab"]);
    assert_eq!(app.focus, Focus::Critics);
    keys(&mut app, &["3"]);
    assert_eq!(app.focus, Focus::Questions);
}

#[test]
fn moving_to_another_session_captures_it_at_once() {
    let mut app = sample_app(120, 32);
    let fx = keys(&mut app, &["j"]);
    assert!(
        fx.contains(&Effect::Capture(item("octo/repo", 18))),
        "{fx:?}"
    );
    assert!(
        app.preview.text.is_none(),
        "the old capture is not shown for the new session"
    );
    // A capture that arrives for a session no longer selected is dropped.
    send(
        &mut app,
        Action::Captured {
            work_item: item("octo/repo", 15),
            result: Ok("old".into()),
        },
    );
    assert!(app.preview.text.is_none());
    send(
        &mut app,
        Action::Captured {
            work_item: item("octo/repo", 18),
            result: Ok("new".into()),
        },
    );
    assert!(app.preview.text.is_some());
    // The same capture again changes nothing on screen.
    app.dirty = false;
    send(
        &mut app,
        Action::Captured {
            work_item: item("octo/repo", 18),
            result: Ok("new".into()),
        },
    );
    assert!(!app.dirty);
}

#[test]
fn reply_from_a_question_sends_multiline_text_with_paste() {
    let mut app = sample_app(120, 32);
    keys(&mut app, &["3", "r"]);
    let Mode::Reply(reply) = &app.mode else {
        panic!("{:?}", app.mode)
    };
    assert_eq!(reply.work_item, item("octo/repo", 18));
    assert_eq!(
        reply.question.as_deref(),
        Some("Should the retry cap be per repo or global?")
    );
    type_text(&mut app, "Per repo.\n");
    send(
        &mut app,
        Action::Paste("Keep the default\r\nat 3.\u{1b}[201~ done".into()),
    );
    assert_eq!(
        reply_text(&app).unwrap(),
        "Per repo.\nKeep the default\nat 3.[201~ done"
    );
    let fx = keys(&mut app, &["ctrl-s"]);
    assert_eq!(
        requests(&fx),
        [Request::Reply {
            work_item: item("octo/repo", 18),
            text: "Per repo.\nKeep the default\nat 3.[201~ done".into(),
            over_budget: false,
        }]
    );
    let Mode::Reply(reply) = &app.mode else {
        panic!()
    };
    assert!(reply.sending);
    // Keys and pastes while sending change nothing; a second send is not made.
    type_text(&mut app, "x");
    assert!(requests(&keys(&mut app, &["ctrl-s"])).is_empty());
    assert!(reply_text(&app).unwrap().ends_with("done"));

    let request = requests(&fx).remove(0);
    send(
        &mut app,
        Action::Done {
            request,
            result: Ok("Reply delivered to octo/repo#18".into()),
        },
    );
    assert!(matches!(app.mode, Mode::Normal));
    assert_eq!(message(&app), "Reply delivered to octo/repo#18");
    assert_eq!(app.message.as_ref().unwrap().level, MessageLevel::Ok);
    let newest = app.feed.newest_first("").next().unwrap();
    assert_eq!(newest.verb, "Reply delivered to octo/repo#18");
}

#[test]
fn alt_enter_sends_and_enter_is_a_new_line() {
    let mut app = sample_app(120, 32);
    keys(&mut app, &["r"]);
    type_text(&mut app, "a\nb");
    assert_eq!(reply_text(&app).unwrap(), "a\nb");
    let fx = keys(&mut app, &["alt-enter"]);
    assert_eq!(requests(&fx).len(), 1);
}

#[test]
fn empty_text_never_sends() {
    let mut app = sample_app(120, 32);
    keys(&mut app, &["r"]);
    assert!(requests(&keys(&mut app, &["ctrl-s"])).is_empty());
    type_text(&mut app, "  \n\n   ");
    send(&mut app, Action::Paste("\n\t\n".into()));
    assert!(requests(&keys(&mut app, &["ctrl-s"])).is_empty());
    let Mode::Reply(reply) = &app.mode else {
        panic!()
    };
    assert!(!reply.sending);
    assert_eq!(
        reply.error.as_deref(),
        Some("Nothing to send: type a reply first")
    );
}

#[test]
fn cancel_keeps_nothing() {
    let mut app = sample_app(120, 32);
    keys(&mut app, &["r"]);
    type_text(&mut app, "draft I changed my mind about");
    let fx = keys(&mut app, &["esc"]);
    assert!(fx.is_empty());
    assert!(matches!(app.mode, Mode::Normal));
    keys(&mut app, &["r"]);
    assert_eq!(reply_text(&app).unwrap(), "", "a new box starts empty");
}

#[test]
fn a_refused_reply_keeps_the_box_and_the_text() {
    let mut app = sample_app(120, 32);
    keys(&mut app, &["r"]);
    type_text(&mut app, "hello");
    let request = requests(&keys(&mut app, &["ctrl-s"])).remove(0);
    send(
        &mut app,
        Action::Done {
            request,
            result: Err(ActionError::Refused("no live pane".into())),
        },
    );
    let Mode::Reply(reply) = &app.mode else {
        panic!("{:?}", app.mode)
    };
    assert!(!reply.sending);
    assert_eq!(reply.error.as_deref(), Some("no live pane"));
    assert_eq!(reply_text(&app).unwrap(), "hello");
    assert_eq!(app.message.as_ref().unwrap().level, MessageLevel::Warn);
    // Typing clears the error; sending again is possible.
    type_text(&mut app, "!");
    assert_eq!(requests(&keys(&mut app, &["ctrl-s"])).len(), 1);
}

#[test]
fn no_reply_box_for_an_item_without_a_session() {
    let mut app = sample_app(120, 32);
    keys(&mut app, &["G", "r"]);
    assert!(matches!(app.mode, Mode::Normal));
    assert!(
        message(&app).contains("octo/web#11 has no session yet: press s"),
        "{}",
        message(&app)
    );
}

#[test]
fn paste_outside_the_reply_box_only_explains() {
    let mut app = sample_app(120, 32);
    let fx = send(&mut app, Action::Paste("rm -rf /".into()));
    assert!(fx.is_empty());
    assert!(matches!(app.mode, Mode::Normal));
    assert_eq!(
        message(&app),
        "To paste a reply, open the reply box first (r)"
    );
}

#[test]
fn session_actions_go_to_the_selected_item() {
    let mut app = sample_app(120, 32);
    // start: only on an item without a session
    assert!(requests(&keys(&mut app, &["s"])).is_empty());
    assert_eq!(message(&app), "octo/repo#15 already has a session");
    assert_eq!(
        requests(&keys(&mut app, &["G", "s"])),
        [Request::Start(item("octo/web", 11))]
    );
    // pause toggles
    assert_eq!(
        requests(&keys(&mut app, &["g", "p"])),
        [Request::Pause(item("octo/repo", 15))]
    );
    assert_eq!(
        requests(&keys(&mut app, &["j", "j", "p"])),
        [Request::Resume(item("octo/web", 3))]
    );
    // open the URL
    assert_eq!(
        requests(&keys(&mut app, &["o"])),
        [Request::OpenUrl(
            "https://github.com/octo/web/issues/3".into()
        )]
    );
    // attach, read-only, and refused without a session
    assert_eq!(
        keys(&mut app, &["a"]),
        [Effect::Attach {
            work_item: item("octo/web", 3),
            read_only: false
        }]
    );
    assert_eq!(
        keys(&mut app, &["A"]),
        [Effect::Attach {
            work_item: item("octo/web", 3),
            read_only: true
        }]
    );
    assert!(
        keys(&mut app, &["G", "a"])
            .iter()
            .all(|e| !matches!(e, Effect::Attach { .. }))
    );
}

#[test]
fn stop_asks_first() {
    let mut app = sample_app(120, 32);
    assert!(keys(&mut app, &["x"]).is_empty());
    assert!(matches!(app.mode, Mode::Confirm(_)));
    assert!(keys(&mut app, &["n"]).is_empty());
    assert!(matches!(app.mode, Mode::Normal));
    keys(&mut app, &["x"]);
    assert_eq!(
        requests(&keys(&mut app, &["y"])),
        [Request::Stop(item("octo/repo", 15))]
    );
    assert!(matches!(app.mode, Mode::Normal));
}

#[test]
fn the_critic_picker_runs_a_critic_and_explains_a_broken_one() {
    let mut app = sample_app(120, 32);
    keys(&mut app, &["j", "c"]);
    let Mode::Picker { work_item, index } = &app.mode else {
        panic!("{:?}", app.mode)
    };
    assert_eq!((work_item.clone(), *index), (item("octo/repo", 18), 0));
    // The broken entry says why and stays open.
    assert!(requests(&keys(&mut app, &["j", "j", "enter"])).is_empty());
    assert!(matches!(app.mode, Mode::Picker { .. }));
    assert!(message(&app).starts_with("strict cannot run: `command` contains whitespace"));
    let fx = keys(&mut app, &["k", "enter"]);
    assert_eq!(
        requests(&fx),
        [Request::RunCritic {
            critic: "cursor-gpt".into(),
            work_item: item("octo/repo", 18)
        }]
    );
    assert!(matches!(app.mode, Mode::Normal));
    // esc closes without running
    keys(&mut app, &["c"]);
    assert!(requests(&keys(&mut app, &["esc"])).is_empty());
    assert!(matches!(app.mode, Mode::Normal));
}

#[test]
fn without_critics_the_critic_key_says_how_to_add_one() {
    let mut snapshot = sample::snapshot(NOW);
    snapshot.critics.clear();
    let mut app = app_with(snapshot, 120, 32);
    keys(&mut app, &["c"]);
    assert!(matches!(app.mode, Mode::Normal));
    assert!(message(&app).contains("No critics configured"));
}

#[test]
fn critic_output_opens_scrolls_and_posts() {
    let mut app = sample_app(100, 30);
    keys(&mut app, &["5"]);
    // The running one cannot be opened or posted yet.
    assert!(requests(&keys(&mut app, &["enter", "P"])).is_empty());
    assert_eq!(message(&app), "cursor-gpt is still running");
    keys(&mut app, &["j", "enter"]);
    let Mode::Output { run, scroll } = &app.mode else {
        panic!("{:?}", app.mode)
    };
    assert_eq!((run.clone(), *scroll), (RunId("run-1".into()), 0));
    keys(&mut app, &["j", "j", "pgdn"]);
    let Mode::Output { scroll, .. } = &app.mode else {
        panic!()
    };
    assert!(*scroll > 2, "{scroll}");
    keys(&mut app, &["G"]);
    let Mode::Output { scroll: end, .. } = app.mode.clone() else {
        panic!()
    };
    keys(&mut app, &["j"]);
    assert!(
        matches!(app.mode, Mode::Output { scroll, .. } if scroll == end),
        "stops at the end"
    );
    assert_eq!(
        requests(&keys(&mut app, &["P"])),
        [Request::PostCritic(RunId("run-1".into()))]
    );
    keys(&mut app, &["esc"]);
    assert!(matches!(app.mode, Mode::Normal));
}

#[test]
fn dismissing_a_question() {
    let mut app = sample_app(120, 32);
    assert!(
        requests(&keys(&mut app, &["d"])).is_empty(),
        "d in Sessions is the diff view, never a dismissal"
    );
    keys(&mut app, &["esc"]);
    assert!(matches!(app.mode, Mode::Normal));
    assert_eq!(
        requests(&keys(&mut app, &["3", "d"])),
        [Request::Dismiss(item("octo/repo", 18))]
    );
}

#[test]
fn the_events_filter_applies_as_typed() {
    let mut app = sample_app(120, 32);
    keys(&mut app, &["/"]);
    assert_eq!(app.focus, Focus::Events);
    type_text(&mut app, "MALL");
    assert_eq!(app.filter, "MALL");
    assert_eq!(app.feed.count_matching(&app.filter.to_lowercase()), 1);
    keys(&mut app, &["backspace", "enter"]);
    assert_eq!(app.filter, "MAL");
    assert!(matches!(app.mode, Mode::Normal));
    keys(&mut app, &["esc"]);
    assert_eq!(app.filter, "", "esc in Events clears the filter");
    keys(&mut app, &["/"]);
    type_text(&mut app, "x");
    keys(&mut app, &["esc"]);
    assert_eq!(app.filter, "");
}

#[test]
fn help_toggles_and_q_quits() {
    let mut app = sample_app(120, 32);
    keys(&mut app, &["?"]);
    assert!(matches!(app.mode, Mode::Help { .. }));
    // q closes the help rather than quitting.
    assert!(keys(&mut app, &["q"]).is_empty());
    assert!(matches!(app.mode, Mode::Normal));
    assert_eq!(keys(&mut app, &["q"]), [Effect::Quit]);
    assert!(app.quit);
}

#[test]
fn a_user_keymap_rebinds_keys_and_the_help_follows() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("keymap.yaml"),
        "sessions:\n  - { on: [R], run: reply, desc: \"Answer the agent\", hint: answer }\n  - { on: [r], run: noop }\nreply:\n  - { on: [ctrl-d], run: send, hint: go }\n",
    )
    .unwrap();
    let mut options = RunOptions::new(Default::default());
    options.config_dir = Some(dir.path().to_path_buf());
    let app = options.app(NOW);
    assert!(app.warnings.is_empty(), "{:?}", app.warnings);
    let mut app = app_from(
        AppSettings {
            keymap: app.keymap,
            ..settings()
        },
        sample::snapshot(NOW),
        120,
        32,
    );
    keys(&mut app, &["r"]);
    assert!(matches!(app.mode, Mode::Normal), "r was unbound");
    keys(&mut app, &["R"]);
    assert!(matches!(app.mode, Mode::Reply(_)));
    type_text(&mut app, "hi");
    assert_eq!(requests(&keys(&mut app, &["ctrl-d"])).len(), 1);
    // ctrl-s still sends too: the override added a key, it did not take ctrl-s away.
    let mut app2 = app_from(
        AppSettings {
            keymap: app.keymap.clone(),
            ..settings()
        },
        sample::snapshot(NOW),
        120,
        32,
    );
    keys(&mut app2, &["R"]);
    type_text(&mut app2, "hi");
    assert_eq!(requests(&keys(&mut app2, &["ctrl-s"])).len(), 1);
    // Footer and help read the live keymap.
    keys(&mut app2, &["esc"]);
    send(
        &mut app2,
        Action::Resize {
            width: 200,
            height: 32,
        },
    );
    send(&mut app2, Action::Tick(NOW + Duration::seconds(30)));
    let shown = screen(&app2);
    assert!(shown.contains("R answer"), "{shown}");
    keys(&mut app2, &["?"]);
    let help = screen(&app2);
    assert!(help.contains("Answer the agent"), "{help}");
}

#[test]
fn a_bad_user_keymap_is_reported_and_the_defaults_kept() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("keymap.yaml"),
        "sessions:\n  - { on: [hyper-x], run: reply }\n",
    )
    .unwrap();
    let mut options = RunOptions::new(Default::default());
    options.config_dir = Some(dir.path().to_path_buf());
    let app = options.app(NOW);
    assert_eq!(app.keymap, the_loop::tui::keymap::Keymap::builtin());
    assert_eq!(app.warnings.len(), 1);
    assert!(
        app.warnings[0].contains("keymap.yaml: sessions[0].on: unknown key `hyper-x`"),
        "{}",
        app.warnings[0]
    );
}

fn with_question(app: &mut App, n: u64, asked: Duration) -> Vec<Effect> {
    let mut s = sample::snapshot(NOW);
    s.questions.push(QuestionView {
        work_item: item("octo/web", n),
        question: "Merge now?".into(),
        asked_at: NOW - asked,
        comment_url: None,
    });
    send(app, Action::Snapshot(Box::new(s)))
}

#[test]
fn new_questions_ring_or_notify_per_config() {
    for (mode, expected) in [
        (NotifyMode::Bell, vec![Effect::Bell]),
        (
            NotifyMode::Desktop,
            vec![Effect::Desktop(Notification {
                title: "the-loop: question on octo/web#9".into(),
                body: "Merge now?".into(),
            })],
        ),
        (NotifyMode::None, vec![]),
    ] {
        let mut app = app_from(
            AppSettings {
                notify: mode,
                ..settings()
            },
            sample::snapshot(NOW),
            120,
            32,
        );
        let fx = with_question(&mut app, 9, Duration::seconds(1));
        let notes: Vec<Effect> = fx
            .into_iter()
            .filter(|e| matches!(e, Effect::Bell | Effect::Desktop(_)))
            .collect();
        assert_eq!(notes, expected, "{mode:?}");
        // The same question again is not new.
        let fx = with_question(&mut app, 9, Duration::seconds(1));
        assert!(
            !fx.iter()
                .any(|e| matches!(e, Effect::Bell | Effect::Desktop(_)))
        );
    }
}

#[test]
fn questions_open_at_start_do_not_ring() {
    let mut app = App::new(settings(), NOW);
    let fx = send(&mut app, Action::Snapshot(Box::new(sample::snapshot(NOW))));
    assert!(!fx.contains(&Effect::Bell));
}

#[test]
fn selection_follows_the_item_when_the_list_changes() {
    let mut app = sample_app(120, 32);
    keys(&mut app, &["j", "j"]);
    let mut s = sample::snapshot(NOW);
    s.sessions.insert(
        0,
        sample::session("octo/api", 1, "claude", SessionState::Idle, 0),
    );
    send(&mut app, Action::Snapshot(Box::new(s)));
    assert_eq!(
        app.selected_session().unwrap().work_item,
        item("octo/web", 3)
    );
}

#[test]
fn ticks_redraw_only_when_a_shown_time_changes() {
    let mut app = sample_app(120, 32);
    app.dirty = false;
    // "poll 4s ago" becomes "poll 5s ago": shown, so redrawn.
    send(&mut app, Action::Tick(NOW + Duration::seconds(1)));
    assert!(app.dirty);

    let mut quiet = sample::snapshot(NOW);
    quiet.status.last_poll = None;
    quiet.questions.clear();
    quiet.runs.retain(|r| !r.is_running());
    let mut app = app_with(quiet, 120, 32);
    app.dirty = false;
    for s in 1..120 {
        send(&mut app, Action::Tick(NOW + Duration::seconds(s)));
        assert!(!app.dirty, "tick {s} changed nothing shown");
    }
    // Spinner frames do nothing when no critic runs.
    send(&mut app, Action::Spin);
    assert!(!app.dirty);
}

#[test]
fn a_message_expires_with_a_redraw() {
    let mut app = sample_app(120, 32);
    let mut quiet = sample::snapshot(NOW);
    quiet.status.last_poll = None;
    quiet.questions.clear();
    quiet.runs.clear();
    send(&mut app, Action::Snapshot(Box::new(quiet)));
    keys(&mut app, &["s"]); // "already has a session"
    assert!(app.message_visible());
    app.dirty = false;
    send(&mut app, Action::Tick(NOW + Duration::seconds(3)));
    assert!(!app.dirty);
    send(&mut app, Action::Tick(NOW + Duration::seconds(9)));
    assert!(app.dirty && !app.message_visible());
}

#[test]
fn an_unchanged_snapshot_is_not_redrawn() {
    let mut app = sample_app(120, 32);
    app.dirty = false;
    send(&mut app, Action::Snapshot(Box::new(sample::snapshot(NOW))));
    assert!(!app.dirty);
    // An idle time that moves within its label ("3m") is not a change either.
    let mut s = sample::snapshot(NOW);
    s.sessions[1].idle_secs = Some(185);
    send(&mut app, Action::Snapshot(Box::new(s.clone())));
    assert!(!app.dirty);
    s.sessions[1].idle_secs = Some(245);
    send(&mut app, Action::Snapshot(Box::new(s)));
    assert!(app.dirty);
}

#[test]
fn live_events_already_in_the_history_are_not_shown_twice() {
    let mut app = App::new(settings(), NOW);
    let history = sample::history(NOW);
    let shown = history
        .iter()
        .filter(|e| the_loop::tui::event_rows::shown(e))
        .count();
    send(&mut app, Action::History(history.clone()));
    let fresh = the_loop::events::Event::new(
        the_loop::events::Source::Poll,
        the_loop::events::EventType::SessionReset,
    )
    .with("work_item", "github:octo/web#9");
    let fx = send(&mut app, Action::Events(vec![history[10].clone(), fresh]));
    assert_eq!(app.feed.len(), shown + 1);
    assert!(fx.contains(&Effect::Refresh), "events refresh the snapshot");
    // One refresh at a time.
    let fx = send(&mut app, Action::Events(vec![]));
    assert!(!fx.contains(&Effect::Refresh));
}

#[test]
fn attach_focus_selects_the_named_session() {
    for (wanted, index) in [
        ("octo/web#9", Some(3)),
        ("github:octo/repo#18", Some(1)),
        ("loop-github-octo-web-3", Some(2)),
        ("octo/nope#1", None),
    ] {
        let settings = AppSettings {
            focus: Some(wanted.into()),
            ..settings()
        };
        let app = app_from(settings, sample::snapshot(NOW), 120, 32);
        match index {
            Some(i) => assert_eq!(app.session_index, i, "{wanted}"),
            None => {
                assert!(message(&app).contains("No session or watched item matches `octo/nope#1`"))
            }
        }
    }
}

#[test]
fn a_bare_attach_focuses_the_first_session() {
    let settings = AppSettings {
        focus: Some(String::new()),
        ..settings()
    };
    let mut snapshot = sample::snapshot(NOW);
    // Rows with a session sort first, whatever order the backend sent.
    snapshot.sessions.rotate_right(1);
    assert!(!snapshot.sessions[0].state.has_session());
    let app = app_from(settings.clone(), snapshot.clone(), 120, 32);
    assert_eq!(app.session_index, 0);
    assert!(app.sessions[0].state.has_session());
    assert_eq!(message(&app), "", "no complaint about an empty name");
    snapshot.sessions.truncate(1);
    let app = app_from(settings, snapshot, 120, 32);
    assert!(message(&app).contains("No session to focus yet"));
}

#[test]
fn the_preview_is_wanted_only_when_visible_with_something_to_show() {
    let mut app = sample_app(120, 32);
    assert!(app.wants_preview());
    keys(&mut app, &["?"]);
    assert!(!app.wants_preview(), "covered by the help");
    keys(&mut app, &["esc", "G"]);
    assert!(!app.wants_preview(), "no session to capture");
    keys(&mut app, &["g", "z"]);
    assert!(
        !app.wants_preview(),
        "zoomed on Sessions: the pane is not on screen"
    );
    let mut app = sample_app(60, 10);
    assert!(!app.wants_preview(), "single-pane layout showing Sessions");
    let fx = keys(&mut app, &["2"]);
    assert!(app.wants_preview());
    assert!(fx.contains(&Effect::Capture(item("octo/repo", 15))));
    let empty = App::new(settings(), NOW);
    assert!(!empty.wants_preview());
}

#[test]
fn the_diff_key_loads_the_sessions_diff_and_the_selection_moves_through_it() {
    let mut app = sample_app(120, 32);
    let item = app.selected_session().unwrap().work_item.clone();
    let fx = keys(&mut app, &["d"]);
    assert_eq!(fx, [Effect::LoadDiff(item.clone())]);
    assert!(matches!(&app.mode, Mode::Diff { work_item, scroll: 0 } if *work_item == item));
    assert_eq!(app.diff, None, "loading");
    // A late answer for another item is not shown.
    send(
        &mut app,
        Action::DiffLoaded {
            work_item: sample::item("octo/web", 3),
            result: Ok("other".into()),
            review: Default::default(),
        },
    );
    assert_eq!(app.diff, None);
    let long: String = (0..300).map(|i| format!("+line {i}\n")).collect();
    send(
        &mut app,
        Action::DiffLoaded {
            work_item: item.clone(),
            result: Ok(format!("diff --git a/x b/x\n@@ -0,0 +1,300 @@\n{long}")),
            review: Default::default(),
        },
    );
    let view = || app.diff.as_ref().unwrap().as_ref().unwrap();
    assert_eq!(view().model.lines[view().cursor].text, "+line 0");
    keys(&mut app, &["j", "j"]);
    // The selection moves; the view scrolls only when it would leave the screen.
    let view = app.diff.as_ref().unwrap().as_ref().unwrap();
    assert_eq!(view.model.lines[view.cursor].text, "+line 2");
    assert!(matches!(app.mode, Mode::Diff { scroll: 0, .. }));
    keys(&mut app, &["G"]);
    let Mode::Diff { scroll: end, .. } = app.mode else {
        panic!()
    };
    assert!(end > 250, "{end}");
    keys(&mut app, &["d"]);
    assert!(matches!(app.mode, Mode::Normal), "d closes it again");
    // A watched item with neither a session nor a worktree has nothing to diff.
    let watched = app
        .sessions
        .iter()
        .position(|s| !s.state.has_session())
        .unwrap();
    app.session_index = watched;
    assert!(keys(&mut app, &["d"]).is_empty());
    assert!(matches!(app.mode, Mode::Normal));
}
