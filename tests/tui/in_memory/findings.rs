//! A round's findings in the Critics pane (SPEC §21.3): listed under the selected round
//! as `path:line message`, selectable with the run rows, inert on screen, and enter on
//! one opens the diff of the round's work item.

use crate::support::tui_app::*;
use crossterm::event::{KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ratatui::widgets::Block;
use std::time::{Duration, Instant};
use the_loop::critic::{Finding, Severity};
use the_loop::tui::action::{Action, Effect};
use the_loop::tui::app::{App, Mode};
use the_loop::tui::backend::{CriticRunState, Snapshot};
use the_loop::tui::diff_view::ReviewMaterial;
use the_loop::tui::sample;

fn finding(path: &str, line: u32, severity: Severity, message: &str) -> Finding {
    Finding::new(path, line, severity, message)
}

/// The sample, with findings on the finished `codex-rev` round (the second run): one of
/// them carries raw escape sequences, as if they had slipped past the parser.
fn with_findings() -> Snapshot {
    let mut s = sample::snapshot(NOW);
    if let CriticRunState::Finished(r) = &mut s.runs[1].state {
        r.findings = vec![
            finding(
                "src/retry.rs",
                2,
                Severity::Warning,
                "the counter is never reset",
            ),
            finding(
                "src/retry.rs",
                3,
                Severity::Error,
                "\u{1b}[2J\u{1b}]0;pwned\u{7}overflow",
            ),
            finding("docs/retry.md", 3, Severity::Note, "mention the cap"),
        ];
    }
    s
}

#[test]
fn findings_are_listed_under_the_selected_round_and_inert() {
    let mut app = app_with(with_findings(), 120, 32);
    keys(&mut app, &["5"]);
    let first = screen(&app);
    assert!(
        !first.contains("src/retry.rs:2"),
        "only the selected round's: {first}"
    );
    keys(&mut app, &["j"]);
    snap("critics_findings_120x32", screen(&app));
    let shown = screen(&app);
    assert!(shown.contains("● src/retry.rs:2 the counter is"), "{shown}");
    assert!(shown.contains("● src/retry.rs:3 [2J]0;pwnedove"), "{shown}");
    assert!(!shown.contains('\u{1b}') && !shown.contains('\u{7}'));
    // j walks into the findings, then past them; k walks back.
    keys(&mut app, &["j", "j"]);
    assert_eq!((app.run_index, app.finding_index), (1, Some(1)));
    assert_eq!(app.selected_finding().unwrap().line, 3);
    keys(&mut app, &["j", "j"]);
    assert_eq!(
        (app.run_index, app.finding_index),
        (1, Some(2)),
        "the last row"
    );
    keys(&mut app, &["k", "k", "k", "k"]);
    assert_eq!((app.run_index, app.finding_index), (0, None));
}

#[test]
fn enter_on_a_finding_opens_the_diff_at_its_line_and_on_a_round_its_output() {
    let mut app = app_with(with_findings(), 120, 32);
    keys(&mut app, &["5", "j"]);
    keys(&mut app, &["enter"]);
    assert!(matches!(app.mode, Mode::Output { .. }), "{:?}", app.mode);
    keys(&mut app, &["esc", "j", "j"]);
    let fx = keys(&mut app, &["enter"]);
    let item = sample::item("octo/repo", 18);
    assert!(
        matches!(&app.mode, Mode::Diff { work_item, .. } if *work_item == item),
        "{:?}",
        app.mode
    );
    assert!(fx.contains(&Effect::LoadDiff(item.clone())), "{fx:?}");
    // Once the diff arrives, the finding's line is the selected one.
    send(
        &mut app,
        Action::DiffLoaded {
            work_item: item,
            result: Ok(sample::diff()),
            review: ReviewMaterial {
                pending: Ok(Vec::new()),
                findings: Vec::new(),
            },
        },
    );
    let view = app.diff.as_ref().unwrap().as_ref().unwrap();
    let anchor = view.anchor().expect("a line is selected");
    assert_eq!((anchor.path.as_str(), anchor.line), ("src/retry.rs", 3));
    assert!(
        anchor.line_text.contains("saturating_mul"),
        "{}",
        anchor.line_text
    );
}

#[test]
fn a_finding_on_a_file_the_diff_does_not_show_opens_the_diff_and_says_so() {
    let mut app = app_with(with_findings(), 120, 32);
    keys(&mut app, &["5", "j", "j", "j", "j"]);
    assert_eq!(app.selected_finding().unwrap().path, "docs/retry.md");
    keys(&mut app, &["enter"]);
    let item = sample::item("octo/repo", 18);
    send(
        &mut app,
        Action::DiffLoaded {
            work_item: item,
            result: Ok(sample::diff()),
            review: ReviewMaterial {
                pending: Ok(Vec::new()),
                findings: Vec::new(),
            },
        },
    );
    assert!(matches!(app.mode, Mode::Diff { .. }), "{:?}", app.mode);
    let said = app.message.as_ref().map(|m| m.text.clone());
    assert_eq!(
        said.as_deref(),
        Some("docs/retry.md is not in the diff (unchanged, or changed since)")
    );
}

#[test]
fn a_new_snapshot_keeps_the_finding_only_on_the_same_round() {
    let mut app = app_with(with_findings(), 120, 32);
    keys(&mut app, &["5", "j", "j", "j"]);
    assert_eq!(app.finding_index, Some(1));
    // The same round, fewer findings: the selection is clamped away.
    let mut fewer = with_findings();
    if let CriticRunState::Finished(r) = &mut fewer.runs[1].state {
        r.findings.truncate(1);
    }
    send(
        &mut app,
        the_loop::tui::action::Action::Snapshot(Box::new(fewer)),
    );
    assert_eq!((app.run_index, app.finding_index), (1, None));
    assert!(app.selected_finding().is_none());
}

/// A press and its release at `(x, y)`, as a terminal reports one click.
fn click(app: &mut App, (x, y): (u16, u16), at: Instant) -> Vec<Effect> {
    let mut fx = Vec::new();
    for kind in [
        MouseEventKind::Down(MouseButton::Left),
        MouseEventKind::Up(MouseButton::Left),
    ] {
        let event = MouseEvent {
            kind,
            column: x,
            row: y,
            modifiers: KeyModifiers::NONE,
        };
        fx.extend(send(app, Action::Mouse { event, at }));
    }
    fx
}

#[test]
fn a_click_selects_a_finding_and_a_double_click_opens_the_diff() {
    let mut app = app_with(with_findings(), 120, 32);
    keys(&mut app, &["5", "j"]);
    let critics = Block::bordered().inner(app.layout().critics.unwrap());
    // Rows: the running round, the finished one, then its three findings.
    let at = (critics.x + 4, critics.y + 3);
    let t0 = Instant::now();
    click(&mut app, at, t0);
    assert_eq!((app.run_index, app.finding_index), (1, Some(1)));
    let fx = click(&mut app, at, t0 + Duration::from_millis(50));
    let item = sample::item("octo/repo", 18);
    assert!(
        matches!(&app.mode, Mode::Diff { work_item, .. } if *work_item == item),
        "{:?}",
        app.mode
    );
    assert!(fx.contains(&Effect::LoadDiff(item)), "{fx:?}");
    // A click on the run's own row selects the run again.
    keys(&mut app, &["esc"]);
    click(
        &mut app,
        (critics.x + 4, critics.y + 1),
        t0 + Duration::from_secs(5),
    );
    assert_eq!((app.run_index, app.finding_index), (1, None));
}
