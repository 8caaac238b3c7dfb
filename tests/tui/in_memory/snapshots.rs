//! Every pane and popup in realistic states, wide and narrow, down to 20×5.

use crate::support::tui_app::*;
use the_loop::tui::action::Action;
use the_loop::tui::app::AppSettings;
use the_loop::tui::backend::{
    ActionError, CriticResult, CriticRunState, CriticRunView, QuestionView, Role, RunId,
    SessionState, Snapshot, WebhookState,
};
use the_loop::tui::sample;
use the_loop::work_item::WorkItemRef;
use time::Duration;

#[test]
fn wide_layout_shows_the_sketch() {
    snap("wide_120x32", screen(&sample_app(120, 32)));
}

#[test]
fn narrow_terminals_stack_the_panes() {
    snap("stacked_80x40", screen(&sample_app(80, 40)));
}

#[test]
fn short_terminals_show_the_focused_pane_alone() {
    let mut app = sample_app(60, 12);
    snap("single_60x12_sessions", screen(&app));
    keys(&mut app, &["tab", "tab"]);
    snap("single_60x12_questions", screen(&app));
}

#[test]
fn a_tiny_terminal_still_says_something_useful() {
    snap("tiny_20x5", screen(&sample_app(20, 5)));
    snap("tiny_40x3", screen(&sample_app(40, 3)));
}

#[test]
fn before_the_first_snapshot_panes_say_loading() {
    let mut app = the_loop::tui::app::App::new(settings(), NOW);
    send(
        &mut app,
        Action::Resize {
            width: 100,
            height: 24,
        },
    );
    snap("loading_100x24", screen(&app));
}

#[test]
fn empty_states_say_what_will_appear() {
    let mut empty = Snapshot {
        status: sample::status(NOW),
        ..Snapshot::default()
    };
    empty.status.last_poll = None;
    let mut app = the_loop::tui::app::App::new(settings(), NOW);
    send(
        &mut app,
        Action::Resize {
            width: 100,
            height: 24,
        },
    );
    send(&mut app, Action::Snapshot(Box::new(empty)));
    snap("empty_100x24", screen(&app));
}

fn long_and_unicode() -> Snapshot {
    let mut s = sample::snapshot(NOW);
    let ghe = WorkItemRef::on_host(
        "git.example-enterprise.com",
        "platform-infrastructure",
        "deployment-orchestrator",
        12345,
    );
    let mut long = sample::session("x/y", 1, "claude-opus", SessionState::Working, 5);
    long.work_item = ghe.clone();
    long.title = Some("Déploiement: gérer les délais d'attente 🚀 とタイムアウト".into());
    s.sessions.push(long);
    s.questions.push(QuestionView {
        work_item: ghe,
        question: "日本語の質問です：リトライの上限はリポジトリごとですか、それともグローバルですか？ 🤔 A very long tail follows so the text must wrap over several lines and finally be cut with an ellipsis at the end of the last visible line."
            .into(),
        asked_at: NOW - Duration::hours(2),
        comment_url: None,
    });
    s
}

#[test]
fn long_refs_and_unicode_are_cut_cleanly() {
    let mut app = app_with(long_and_unicode(), 120, 32);
    keys(&mut app, &["g"]); // select the long ref
    snap("long_unicode_120x32", screen(&app));
    let mut app = app_with(long_and_unicode(), 56, 40);
    keys(&mut app, &["3", "j"]);
    snap("long_unicode_56x40", screen(&app));
}

#[test]
fn the_status_bar_shows_viewers_and_warnings() {
    let mut s = sample::snapshot(NOW);
    s.status.role = Role::Viewer { pid: Some(4242) };
    s.status.allowlist_empty = true;
    s.status.reload_error =
        Some("config.yaml:3:5: routing.spawn: unknown variant `sometimes`".into());
    s.status.webhook = WebhookState::Listening {
        listen: "127.0.0.1:8787".into(),
        signed: false,
    };
    s.status.rate = Some(the_loop::tui::backend::RateLimit {
        remaining: 212,
        limit: Some(5000),
    });
    if let Some(p) = s.status.last_poll.as_mut() {
        p.errors = 2;
    }
    let settings = AppSettings {
        warnings: vec!["keymap.yaml: sessions[0].on: unknown key `hyper-x` — keeping the previous key bindings".into()],
        ..settings()
    };
    let app = app_from(settings.clone(), s.clone(), 200, 8);
    snap("status_warnings_200x8", screen(&app));
    let app = app_from(settings.clone(), s.clone(), 90, 8);
    snap("status_warnings_90x8", screen(&app));
    // With room, warnings get a line of their own under the health line.
    let app = app_from(settings, s, 120, 16);
    snap("status_warnings_120x16", screen(&app));
}

#[test]
fn help_lists_the_live_bindings() {
    let mut app = sample_app(100, 30);
    keys(&mut app, &["?"]);
    snap("help_100x30", screen(&app));
    keys(&mut app, &["pgdn", "pgdn"]);
    snap("help_scrolled_100x30", screen(&app));
}

#[test]
fn the_picker_lists_critics_and_why_one_cannot_run() {
    let mut app = sample_app(100, 30);
    keys(&mut app, &["c", "j", "j"]);
    snap("picker_100x30", screen(&app));
}

#[test]
fn critic_output_is_framed_and_scrolls() {
    let mut app = sample_app(100, 30);
    keys(&mut app, &["5", "j", "enter"]);
    snap("output_100x30", screen(&app));
    keys(&mut app, &["j", "j", "j", "j", "j"]);
    snap("output_scrolled_100x30", screen(&app));
}

#[test]
fn critic_rows_show_running_ok_failed_and_posted() {
    let mut s = sample::snapshot(NOW);
    s.runs.push(CriticRunView {
        id: RunId("run-0".into()),
        critic: "strict-gemini".into(),
        work_item: Some(sample::item("octo/web", 9)),
        started_at: NOW - Duration::minutes(30),
        state: CriticRunState::Finished(CriticResult {
            ok: false,
            exit_code: -1,
            duration_secs: 3.2,
            cost_usd: None,
            attribution: "[gemini/default]".into(),
            output: String::new(),
            error: Some("`gemini` was not found on PATH".into()),
            findings: Vec::new(),
        }),
        posted: None,
    });
    if let CriticRunState::Finished(r) = &mut s.runs[1].state {
        r.cost_usd = Some(0.1234);
    }
    s.runs[1].posted = Some("https://github.com/octo/repo/issues/18#issuecomment-5".into());
    let mut app = app_with(s, 120, 32);
    keys(&mut app, &["5", "j", "j"]);
    snap("critics_states_120x32", screen(&app));
    keys(&mut app, &["enter"]);
    snap("output_failed_120x32", screen(&app));
}

#[test]
fn the_reply_box_shows_the_question_text_and_its_keys() {
    let mut app = sample_app(100, 30);
    keys(&mut app, &["3", "r"]);
    snap("reply_empty_100x30", screen(&app));
    type_text(&mut app, "Per repo, please.\nKeep the global default at 3.");
    snap("reply_typed_100x30", screen(&app));
    keys(&mut app, &["ctrl-s"]);
    snap("reply_sending_100x30", screen(&app));
}

#[test]
fn a_refused_reply_keeps_the_text_and_says_why() {
    let mut app = sample_app(100, 30);
    keys(&mut app, &["3", "r"]);
    type_text(&mut app, "Per repo.");
    let fx = keys(&mut app, &["ctrl-s"]);
    let the_loop::tui::action::Effect::Request(request) = fx[0].clone() else {
        panic!("{fx:?}");
    };
    send(
        &mut app,
        Action::Done {
            request,
            result: Err(ActionError::Refused(
                "octo/repo#18 is paused: resume it first".into(),
            )),
        },
    );
    snap("reply_refused_100x30", screen(&app));
}

#[test]
fn the_reply_box_takes_a_small_terminal_whole() {
    let mut app = sample_app(40, 9);
    keys(&mut app, &["r"]);
    type_text(&mut app, "ok");
    snap("reply_small_40x9", screen(&app));
}

#[test]
fn stopping_asks_first() {
    let mut app = sample_app(100, 30);
    keys(&mut app, &["x"]);
    snap("confirm_stop_100x30", screen(&app));
}

#[test]
fn the_events_filter_narrows_and_scrolling_holds_the_view() {
    let mut app = sample_app(100, 30);
    keys(&mut app, &["/"]);
    type_text(&mut app, "octo/repo#15");
    snap("filter_typing_100x30", screen(&app));
    keys(&mut app, &["enter"]);
    snap("filter_applied_100x30", screen(&app));
    let more: Vec<_> = (0..30)
        .map(|i| {
            the_loop::events::Event::new(
                the_loop::events::Source::Dispatch,
                the_loop::events::EventType::DispatchSucceeded,
            )
            .with("work_item", format!("github:octo/web#{}", 100 + i))
        })
        .map(|mut e| {
            e.ts = "2026-01-31T12:04:30.000Z".into();
            e
        })
        .collect();
    send(&mut app, Action::Events(more));
    keys(&mut app, &["esc", "k", "k", "k"]);
    snap("events_scrolled_100x30", screen(&app));
    type_text(&mut app, "/zzz");
    snap("filter_no_match_100x30", screen(&app));
}

/// SPEC §18.4: the routed row of an event that lost hidden text says so, first, in the
/// narrow pane and zoomed.
#[test]
fn a_routed_row_warns_of_hidden_text() {
    let mut app = sample_app(100, 30);
    let mut routed = the_loop::events::Event::new(
        the_loop::events::Source::Webhook,
        the_loop::events::EventType::RoutingRouted,
    )
    .with("work_items", vec!["github:octo/repo#15"])
    .with("actor", "alice")
    .with("gh_event", "issue_comment")
    .with("outcome", "deliver")
    .with("hidden_removed", 43);
    routed.ts = "2026-01-31T12:04:58.000Z".into();
    send(&mut app, Action::Events(vec![routed]));
    snap("events_hidden_removed_100x30", screen(&app));
    keys(&mut app, &["4", "z"]);
    snap("events_hidden_removed_zoomed_100x30", screen(&app));
}

#[test]
fn zoom_maximizes_the_focused_pane() {
    let mut app = sample_app(100, 30);
    keys(&mut app, &["2", "z"]);
    snap("zoom_pane_100x30", screen(&app));
}

#[test]
fn a_watched_item_without_session_invites_a_start() {
    let mut app = sample_app(100, 24);
    keys(&mut app, &["G"]);
    snap("no_session_selected_100x24", screen(&app));
}

#[test]
fn capture_errors_and_dead_panes_are_explained() {
    let mut app = sample_app(100, 24);
    keys(&mut app, &["j", "j", "j"]); // octo/web#9, dead
    send(
        &mut app,
        Action::Captured {
            work_item: sample::item("octo/web", 9),
            result: Err("no tmux pane for octo/web#9".into()),
        },
    );
    snap("capture_error_100x24", screen(&app));
}

#[test]
fn messages_show_in_the_footer_and_as_event_rows() {
    let mut app = sample_app(100, 24);
    let fx = keys(&mut app, &["p"]);
    let the_loop::tui::action::Effect::Request(request) = fx[0].clone() else {
        panic!("{fx:?}");
    };
    send(
        &mut app,
        Action::Done {
            request,
            result: Ok("Paused octo/repo#15".into()),
        },
    );
    snap("message_ok_100x24", screen(&app));
    send(&mut app, Action::Tick(NOW + Duration::seconds(20)));
    snap("message_expired_100x24", screen(&app));
}

/// The sample with worktrees (SPEC §16.4): a working session with changes, a clean one,
/// and an ended session whose worktree was kept.
fn with_worktrees() -> Snapshot {
    use the_loop::tui::backend::WorkspaceView;
    let mut s = sample::snapshot(NOW);
    let view = |branch: &str, changed, ahead, kept: Option<&str>| WorkspaceView {
        branch: branch.into(),
        base: "origin/main".into(),
        changed_files: Some(changed),
        ahead: Some(ahead),
        kept: kept.map(String::from),
    };
    s.sessions[0].workspace = Some(view("the-loop/issue-15", 3, 2, None));
    s.sessions[1].workspace = Some(view("the-loop/issue-18", 0, 0, None));
    let mut kept = sample::session("octo/web", 21, "claude", SessionState::NoSession, 0);
    kept.workspace = Some(view(
        "the-loop/issue-21",
        1,
        1,
        Some("1 changed file, 1 unpushed commit"),
    ));
    s.sessions.push(kept);
    s
}

#[test]
fn worktree_sessions_show_changes_commits_ahead_and_kept() {
    let mut app = app_with(with_worktrees(), 100, 30);
    capture(&mut app);
    let screen_text = screen(&app);
    assert!(
        screen_text.contains("octo/web#21         kept"),
        "{screen_text}"
    );
    assert!(screen_text.contains("⎇ the-loop/issue-15"), "{screen_text}");
    snap("worktrees_100x30", screen_text);
    let mut wide = app_with(with_worktrees(), 200, 30);
    capture(&mut wide);
    let wide = screen(&wide);
    assert!(wide.contains("~3 ↑2"), "{wide}");
    assert!(wide.contains("clean"), "{wide}");
    assert!(
        wide.contains("⎇ the-loop/issue-15 · 3 changed · 2 ahead · d diff"),
        "{wide}"
    );
}

#[test]
fn the_diff_view_is_coloured_and_scrolls() {
    let mut app = app_with(with_worktrees(), 100, 30);
    keys(&mut app, &["d"]);
    let item = sample::item("octo/repo", 15);
    send(
        &mut app,
        Action::DiffLoaded {
            work_item: item,
            result: Ok(sample::diff()),
            review: Default::default(),
        },
    );
    snap("diff_100x30", screen(&app));
}
