//! The diff view as a workplace (SPEC §21.2, §21.3): a selected line, the comment box,
//! pending comments in the gutter, findings under their lines, `]`/`[`, `f`, `S` and
//! `X` — by keys against the update function, and through the event loop against the
//! in-memory backend; snapshots of the gutter, the finding rows and the comment box.

use super::event_loop::{Rig, drive, wait};
use crate::support::tui_app::*;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use the_loop::critic::findings::{Finding, Severity};
use the_loop::tui::action::{Action, Effect, Request};
use the_loop::tui::app::{App, Mode};
use the_loop::tui::diff_view::ReviewMaterial;
use the_loop::tui::sample;

fn finding(line: u32, severity: Severity, message: &str) -> Finding {
    Finding::new("src/retry.rs", line, severity, message)
}

fn findings() -> Vec<Finding> {
    vec![
        finding(
            1,
            Severity::Warning,
            "the doc says up to cap_ms; say what happens at 0",
        ),
        finding(
            2,
            Severity::Error,
            "cap_ms is never used: the delay is still uncapped",
        ),
        finding(0, Severity::Note, "line zero is no line"),
        finding(9_999, Severity::Note, "past the end"),
    ]
}

fn requests(fx: &[Effect]) -> Vec<Request> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Request(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

/// The sample app with the diff view of #15 open, loaded with `material`.
fn diff_app(w: u16, h: u16, material: ReviewMaterial) -> App {
    let mut app = sample_app(w, h);
    keys(&mut app, &["d"]);
    let Mode::Diff { work_item, .. } = &app.mode else {
        panic!("{:?}", app.mode)
    };
    let work_item = work_item.clone();
    send(
        &mut app,
        Action::DiffLoaded {
            work_item,
            result: Ok(sample::diff()),
            review: material,
        },
    );
    app
}

fn with_findings() -> ReviewMaterial {
    ReviewMaterial {
        pending: Ok(Vec::new()),
        findings: findings(),
    }
}

fn cursor_text(app: &App) -> String {
    let view = app.diff.as_ref().unwrap().as_ref().unwrap();
    view.model.lines[view.cursor].text.clone()
}

#[test]
fn findings_are_marked_in_the_gutter_and_shown_under_their_lines() {
    let app = diff_app(110, 34, with_findings());
    let text = screen(&app);
    assert!(
        text.contains("▲ warning: the doc says up to cap_ms"),
        "{text}"
    );
    assert!(text.contains("▲ error: cap_ms is never used"), "{text}");
    assert!(
        text.contains("▲ note: src/retry.rs:0 (not in the diff) line zero is no line"),
        "{text}"
    );
    assert!(
        text.contains("src/retry.rs:9999 (not in the diff) past the end"),
        "{text}"
    );
    snap("diff_findings_110x34", text);
    // The gutter mark takes the finding's colour.
    let buf = buffer(&app);
    let (x, y) = find(&buf, "2 +pub fn backoff_ms").unwrap();
    let mark = &buf[(x - 6, y)];
    assert_eq!(mark.symbol(), "▲");
    assert_eq!(mark.style().fg, app.theme.error.fg);
}

#[test]
fn a_comment_is_written_on_the_selected_line_and_kept_in_the_gutter() {
    let mut app = diff_app(110, 34, ReviewMaterial::default());
    assert_eq!(
        cursor_text(&app),
        "-/// The delay before retry number `attempt` (0-based): doubles each time."
    );
    keys(&mut app, &["j", "j", "j"]);
    assert!(cursor_text(&app).starts_with("+pub fn backoff_ms"));
    keys(&mut app, &["o"]);
    assert!(matches!(app.mode, Mode::Comment(_)), "{:?}", app.mode);
    type_text(&mut app, "Cap it at 30s by default, HERON.");
    snap("diff_comment_box_110x34", screen(&app));
    let fx = keys(&mut app, &["ctrl-s"]);
    let saved = requests(&fx);
    let [Request::SaveComment { comment, .. }] = saved.as_slice() else {
        panic!("{saved:?}")
    };
    assert_eq!(comment.anchor.path, "src/retry.rs");
    assert_eq!(comment.anchor.line, 2);
    assert_eq!(comment.text, "Cap it at 30s by default, HERON.");
    assert!(matches!(app.mode, Mode::Diff { .. }), "back to the diff");
    let text = screen(&app);
    assert!(text.contains("● 1 pending"), "{text}");
    assert!(text.contains("●    2 +pub fn backoff_ms"), "{text}");
    assert!(
        text.contains("● you: Cap it at 30s by default, HERON."),
        "{text}"
    );
    snap("diff_pending_comment_110x34", text);

    // S sends what the view shows, as one request.
    let fx = keys(&mut app, &["S"]);
    assert_eq!(
        requests(&fx),
        [Request::SendReview {
            work_item: sample::item("octo/repo", 15),
            comments: vec![(**comment).clone()],
            over_budget: false,
        }]
    );
}

#[test]
fn o_off_a_code_line_and_an_empty_comment_keep_nothing() {
    let mut app = diff_app(110, 34, ReviewMaterial::default());
    keys(&mut app, &["g", "o"]);
    assert!(matches!(app.mode, Mode::Diff { .. }));
    assert!(
        app.message
            .as_ref()
            .unwrap()
            .text
            .contains("Select a line of a file's patch")
    );
    keys(&mut app, &["G", "k", "o"]);
    assert!(matches!(app.mode, Mode::Comment(_)));
    let fx = keys(&mut app, &["ctrl-s"]);
    assert!(requests(&fx).is_empty());
    assert!(screen(&app).contains("Nothing to keep"));
    keys(&mut app, &["esc"]);
    assert!(matches!(app.mode, Mode::Diff { .. }));
    assert!(
        requests(&keys(&mut app, &["S"])).is_empty(),
        "nothing pending, nothing sent"
    );
}

/// `]` in a short view brings the finding's line into view *with* what is shown under
/// it — its findings and the operator's comments — not as the pane's last row with its
/// findings below the edge.
#[test]
fn a_jump_shows_the_line_with_its_findings_and_comments() {
    let model = the_loop::workspace::diff_model::DiffModel::parse(&sample::diff());
    let line = model.find_new("src/retry.rs", 2).unwrap();
    let anchor = the_loop::session::review::Anchor::at(&model, line).unwrap();
    let comment = the_loop::session::review::ReviewComment::new(anchor, "Cap it, HERON.");
    let material = ReviewMaterial {
        pending: Ok(vec![comment]),
        findings: findings(),
    };
    let mut app = diff_app(110, 14, material);
    keys(&mut app, &["g", "]", "]"]);
    assert!(cursor_text(&app).starts_with("+/// The delay"));
    let text = screen(&app);
    assert!(
        text.contains("▲ warning: the doc says up to cap_ms"),
        "the finding under the line is in view: {text}"
    );
    snap("diff_jump_finding_110x14", text);
    keys(&mut app, &["]"]);
    assert!(cursor_text(&app).starts_with("+pub fn backoff_ms"));
    let text = screen(&app);
    assert!(text.contains("▲ error: cap_ms is never used"), "{text}");
    assert!(text.contains("● you: Cap it, HERON."), "{text}");
    assert!(text.contains("2 +pub fn backoff_ms"), "{text}");
    // Back up: the line and what is under it, from the top.
    keys(&mut app, &["["]);
    let text = screen(&app);
    assert!(text.contains("1 +/// The delay"), "{text}");
    assert!(
        text.contains("▲ warning: the doc says up to cap_ms"),
        "{text}"
    );
}

#[test]
fn brackets_jump_between_findings_and_f_takes_one_over() {
    let mut app = diff_app(110, 34, with_findings());
    keys(&mut app, &["g"]);
    keys(&mut app, &["]"]);
    // The off-diff findings sit under the file's first line.
    assert!(
        cursor_text(&app).starts_with("diff --git"),
        "{}",
        cursor_text(&app)
    );
    keys(&mut app, &["]"]);
    assert!(
        cursor_text(&app).starts_with("+/// The delay"),
        "{}",
        cursor_text(&app)
    );
    keys(&mut app, &["]"]);
    assert!(cursor_text(&app).starts_with("+pub fn backoff_ms"));
    keys(&mut app, &["]"]);
    assert!(
        app.message
            .as_ref()
            .unwrap()
            .text
            .contains("No finding below")
    );
    let fx = keys(&mut app, &["f"]);
    let taken = requests(&fx);
    let [Request::SaveComment { comment, .. }] = taken.as_slice() else {
        panic!("{fx:?}")
    };
    assert!(comment.text.contains("(error)"), "{}", comment.text);
    assert!(
        comment.text.contains("cap_ms is never used"),
        "{}",
        comment.text
    );
    keys(&mut app, &["["]);
    assert!(cursor_text(&app).starts_with("+/// The delay"));
}

#[test]
fn x_asks_then_discards_and_no_keeps_them() {
    let mut app = diff_app(110, 34, ReviewMaterial::default());
    keys(&mut app, &["j", "j", "j", "o"]);
    type_text(&mut app, "one");
    keys(&mut app, &["ctrl-s"]);
    keys(&mut app, &["X"]);
    assert!(matches!(app.mode, Mode::Confirm(_)));
    assert!(screen(&app).contains("Discard the 1 pending comment on octo/repo#15?"));
    let fx = keys(&mut app, &["n"]);
    assert!(requests(&fx).is_empty());
    assert!(matches!(app.mode, Mode::Diff { .. }), "back to the diff");
    assert!(screen(&app).contains("● 1 pending"));
    keys(&mut app, &["X"]);
    let fx = keys(&mut app, &["y"]);
    assert!(matches!(
        requests(&fx).as_slice(),
        [Request::DiscardReview { ids, .. }] if ids.len() == 1
    ));
    assert!(matches!(app.mode, Mode::Diff { .. }));
    assert!(!screen(&app).contains("pending"));
}

#[test]
fn escapes_in_findings_and_comments_are_inert_on_screen() {
    let evil = ReviewMaterial {
        pending: Ok(Vec::new()),
        findings: vec![finding(
            2,
            Severity::Error,
            "bad \u{1b}]0;pwned\u{7}\u{1b}[2J\u{1b}[31mred\u{9b}1m",
        )],
    };
    let mut app = diff_app(110, 34, evil);
    keys(&mut app, &["j", "j", "j", "o"]);
    send(&mut app, Action::Paste("hi \u{1b}[2Jthere\u{7}".into()));
    keys(&mut app, &["ctrl-s"]);
    let buf = buffer(&app);
    for cell in buf.content() {
        assert!(
            !cell.symbol().chars().any(|c| c.is_control()),
            "a control character reached the screen: {:?}",
            cell.symbol()
        );
    }
    let text = screen(&app);
    assert!(text.contains("bad ]0;pwned[2J[31mred1m"), "{text}");
}

#[test]
fn the_view_opens_at_a_place_and_a_click_row_selects_a_line() {
    let mut app = sample_app(110, 34);
    let mut fx = Vec::new();
    the_loop::tui::review::open_at(
        &mut app,
        sample::item("octo/repo", 15),
        Some(("src/retry.rs".into(), 2)),
        &mut fx,
    );
    assert_eq!(fx, [Effect::LoadDiff(sample::item("octo/repo", 15))]);
    send(
        &mut app,
        Action::DiffLoaded {
            work_item: sample::item("octo/repo", 15),
            result: Ok(sample::diff()),
            review: ReviewMaterial::default(),
        },
    );
    assert!(cursor_text(&app).starts_with("+pub fn backoff_ms"));
    the_loop::tui::review::select_row(&mut app, 0);
    assert!(cursor_text(&app).starts_with("/home/me"));
    the_loop::tui::review::select_row(&mut app, 500);
    assert_eq!(cursor_text(&app), "", "past the end: the last line");
}

#[tokio::test(start_paused = true)]
async fn through_the_loop_comments_are_kept_sent_as_one_note_and_leave_the_gutter() {
    let (rig, mut console) = Rig::new(sample::snapshot(NOW));
    let item = sample::item("octo/repo", 15);
    rig.backend.set_diff(&item, &sample::diff());
    let mut app = App::new(settings(), NOW);
    app.area = ratatui::layout::Rect::new(0, 0, 110, 34);
    let mut terminal = Terminal::new(TestBackend::new(110, 34)).unwrap();
    drive(&rig, &mut console, &mut app, &mut terminal, async {
        wait(1_000).await;
        rig.press("d");
        wait(500).await;
        for k in ["j", "j", "j", "o"] {
            rig.press(k);
        }
        rig.paste("Cap it, HERON.");
        rig.press("ctrl-s");
        wait(500).await;
        rig.press("S");
        wait(1_000).await;
        rig.press("esc");
        wait(200).await;
        rig.press("q");
    })
    .await
    .unwrap();
    let notes = rig.backend.review_notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    let note = &notes[0].1;
    assert!(note.contains("1. src/retry.rs line 2 (new side)"), "{note}");
    assert!(note.contains("@@ -1,3 +1,3 @@"), "{note}");
    assert!(note.contains("Comment: Cap it, HERON."), "{note}");
    assert!(
        rig.backend.pending_review(&item).is_empty(),
        "sent: none pending"
    );
    let shown = terminal.backend().to_string();
    assert!(shown.contains("Review sent to octo/repo#15"), "{shown}");
}

fn mouse(app: &mut App, kind: crossterm::event::MouseEventKind, (x, y): (u16, u16)) {
    send(
        app,
        Action::Mouse {
            event: crossterm::event::MouseEvent {
                kind,
                column: x,
                row: y,
                modifiers: crossterm::event::KeyModifiers::NONE,
            },
            at: std::time::Instant::now(),
        },
    );
}

#[test]
fn a_click_selects_the_line_under_it_and_the_wheel_scrolls_under_the_selection() {
    use crossterm::event::{MouseButton, MouseEventKind};
    let mut app = diff_app(110, 34, with_findings());
    let (x, y) = find(&buffer(&app), "+pub fn backoff_ms").unwrap();
    mouse(&mut app, MouseEventKind::Down(MouseButton::Left), (x, y));
    assert!(
        cursor_text(&app).starts_with("+pub fn backoff_ms"),
        "{}",
        cursor_text(&app)
    );
    // A click on the finding's row under it selects that same line.
    keys(&mut app, &["g"]);
    mouse(
        &mut app,
        MouseEventKind::Down(MouseButton::Left),
        (x, y + 1),
    );
    assert!(cursor_text(&app).starts_with("+pub fn backoff_ms"));
    let selected = app.diff.as_ref().unwrap().as_ref().unwrap().cursor;
    mouse(&mut app, MouseEventKind::ScrollDown, (x, y));
    assert!(
        matches!(app.mode, Mode::Diff { scroll: 3, .. }),
        "{:?}",
        app.mode
    );
    assert_eq!(
        app.diff.as_ref().unwrap().as_ref().unwrap().cursor,
        selected
    );
    mouse(&mut app, MouseEventKind::ScrollUp, (x, y));
    assert!(
        matches!(app.mode, Mode::Diff { scroll: 0, .. }),
        "{:?}",
        app.mode
    );
}
