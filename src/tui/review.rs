//! The diff view as a workplace (SPEC §21.2, §21.3), called only from
//! [`super::update`] and [`super::commands`]: a selected line, `o` to write a comment on
//! it, `S` to send the pending review, `X` to discard it (asks), `]` / `[` between the
//! findings of the latest critic round, `f` to take a finding over as a comment. The
//! pending review lives in the backend's store; this screen keeps a copy for drawing
//! and sends the comments it shows, so what the agent gets is what the operator saw.

use super::action::{Effect, Request};
use super::app::{App, CommentBox, Confirm, MessageLevel, Mode};
use super::backend::ActionResult;
use super::diff_view::{DiffView, ReviewMaterial};
use super::keymap::Command;
use super::text::short_ref;
use super::update::say;
use crate::session::review::ReviewComment;
use crate::work_item::WorkItemRef;
use ratatui::style::Style;
use ratatui_textarea::TextArea;

/// Opens the diff view of `item`; with `at` (`path`, new-side line) that line is
/// selected once the diff has loaded — the Critics pane opens a finding so.
pub fn open_at(app: &mut App, item: WorkItemRef, at: Option<(String, u32)>, fx: &mut Vec<Effect>) {
    app.diff = None;
    app.diff_target = at;
    app.mode = Mode::Diff {
        work_item: item.clone(),
        scroll: 0,
    };
    app.dirty = true;
    fx.push(Effect::LoadDiff(item));
}

/// The diff and its review material arrived.
pub(super) fn loaded(
    app: &mut App,
    item: WorkItemRef,
    result: Result<String, String>,
    material: ReviewMaterial,
) {
    if !matches!(&app.mode, Mode::Diff { work_item: open, .. } if *open == item) {
        return;
    }
    let target = app.diff_target.take();
    app.diff = Some(result.map(|text| {
        let mut view = DiffView::new(&text, material);
        if let Some((path, line)) = target
            && !view.select_place(&path, line)
        {
            say(
                app,
                MessageLevel::Info,
                format!("{path} is not in the diff (unchanged, or changed since)"),
            );
        }
        view
    }));
    let unreadable = match &app.diff {
        Some(Ok(view)) => view.pending_error.clone(),
        _ => None,
    };
    if let Some(why) = unreadable {
        say(
            app,
            MessageLevel::Warn,
            format!("The pending review could not be read: {why}"),
        );
    }
    follow_cursor(app);
    app.dirty = true;
}

/// The open view, when loaded.
fn view_mut(app: &mut App) -> Option<&mut DiffView> {
    match &mut app.diff {
        Some(Ok(view)) => Some(view),
        _ => None,
    }
}

fn open_item(app: &App) -> Option<(WorkItemRef, u16)> {
    match &app.mode {
        Mode::Diff { work_item, scroll } => Some((work_item.clone(), *scroll)),
        _ => None,
    }
}

/// Rows of diff the view shows at its size.
pub fn view_height(app: &App) -> usize {
    super::panes::diff::body_height(app.area)
}

/// Scrolls so the selected line is in view.
fn follow_cursor(app: &mut App) {
    let height = view_height(app);
    let Some(Ok(view)) = &app.diff else {
        return;
    };
    if let Mode::Diff { scroll, .. } = &mut app.mode {
        let to = view.scroll_for(*scroll as usize, height);
        *scroll = u16::try_from(to).unwrap_or(u16::MAX);
    }
}

/// Up, down, a page, the ends: the selection moves and the view follows it.
pub(super) fn move_by(app: &mut App, delta: isize) {
    if let Some(view) = view_mut(app) {
        view.move_by(delta);
        follow_cursor(app);
    }
}

/// The wheel: the view scrolls by `delta` rows; the selection stays on its line.
pub fn scroll_by(app: &mut App, delta: isize) {
    let rows = match &app.diff {
        Some(Ok(view)) => view.rows.len(),
        _ => return,
    };
    if let Mode::Diff { scroll, .. } = &mut app.mode {
        let to = (*scroll as usize)
            .saturating_add_signed(delta)
            .min(rows.saturating_sub(1));
        *scroll = u16::try_from(to).unwrap_or(u16::MAX);
        app.dirty = true;
    }
}

/// Selects the line shown at `row` rows below the view's first row (a click: the
/// mouse calls this). A finding's or comment's row selects the line it is under.
pub fn select_row(app: &mut App, row: u16) {
    let Some((_, scroll)) = open_item(app) else {
        return;
    };
    if let Some(view) = view_mut(app) {
        view.select_row(scroll as usize + row as usize);
        app.dirty = true;
    }
}

/// The diff view's own commands; `false` when `command` is not one of them.
pub(super) fn run(app: &mut App, command: Command, fx: &mut Vec<Effect>) -> bool {
    match command {
        Command::Comment => open_box(app),
        Command::SendReview => send(app, fx),
        Command::DiscardReview => discard(app),
        Command::NextFinding | Command::PrevFinding => {
            let forward = command == Command::NextFinding;
            let jumped = view_mut(app).map(|v| v.jump_finding(forward));
            match jumped {
                Some(true) => follow_cursor(app),
                Some(false) => {
                    let none = app
                        .diff
                        .as_ref()
                        .and_then(|d| d.as_ref().ok())
                        .is_some_and(|v| v.findings.is_empty());
                    let text = if none {
                        "No findings: the latest critic round named no lines"
                    } else if forward {
                        "No finding below this line"
                    } else {
                        "No finding above this line"
                    };
                    say(app, MessageLevel::Info, text);
                }
                None => {}
            }
        }
        Command::TakeFinding => take_finding(app, fx),
        _ => return false,
    }
    true
}

fn open_box(app: &mut App) {
    let Some((work_item, scroll)) = open_item(app) else {
        return;
    };
    let Some(anchor) = view_mut(app).and_then(|v| v.anchor()) else {
        say(
            app,
            MessageLevel::Info,
            "Select a line of a file's patch to comment on (+, - or context)",
        );
        return;
    };
    let mut textarea = TextArea::default();
    textarea.set_placeholder_text("Your comment for the agent. Enter adds a line.");
    textarea.set_placeholder_style(app.theme.dim);
    textarea.set_cursor_line_style(Style::default());
    textarea.set_style(app.theme.input);
    app.mode = Mode::Comment(Box::new(CommentBox {
        work_item,
        scroll,
        anchor,
        textarea,
        error: None,
    }));
}

/// `ctrl-s` in the comment box: the comment joins the pending review; the diff is back.
pub(super) fn keep_comment(app: &mut App, fx: &mut Vec<Effect>) {
    let Mode::Comment(cbox) = &mut app.mode else {
        return;
    };
    let text = cbox.textarea.lines().join("\n");
    if text.trim().is_empty() {
        cbox.error = Some("Nothing to keep: write the comment first".into());
        app.dirty = true;
        return;
    }
    let comment = ReviewComment::new(cbox.anchor.clone(), &text);
    let (work_item, scroll) = (cbox.work_item.clone(), cbox.scroll);
    app.mode = Mode::Diff {
        work_item: work_item.clone(),
        scroll,
    };
    add(app, work_item, comment, fx);
}

/// Cancel in the comment box: back to the diff, nothing kept.
pub(super) fn cancel_comment(app: &mut App) {
    if let Mode::Comment(cbox) = &app.mode {
        app.mode = Mode::Diff {
            work_item: cbox.work_item.clone(),
            scroll: cbox.scroll,
        };
        say(
            app,
            MessageLevel::Info,
            "Comment cancelled; nothing was kept",
        );
    }
}

fn add(app: &mut App, work_item: WorkItemRef, comment: ReviewComment, fx: &mut Vec<Effect>) {
    if let Some(view) = view_mut(app) {
        view.pending.push(comment.clone());
        view.relayout();
    }
    follow_cursor(app);
    app.dirty = true;
    fx.push(Effect::Request(Request::SaveComment {
        work_item,
        comment: Box::new(comment),
    }));
}

fn take_finding(app: &mut App, fx: &mut Vec<Effect>) {
    let Some((work_item, _)) = open_item(app) else {
        return;
    };
    let taken = view_mut(app).and_then(|v| {
        let finding = (*v.findings_here().first()?).clone();
        let anchor = v.anchor()?;
        Some(ReviewComment::from_finding(
            anchor,
            finding.severity.as_str(),
            &finding.message,
        ))
    });
    match taken {
        Some(comment) => add(app, work_item, comment, fx),
        None => say(
            app,
            MessageLevel::Info,
            "No finding on this line to take over (] goes to the next one)",
        ),
    }
}

fn pending(app: &App) -> Vec<ReviewComment> {
    match &app.diff {
        Some(Ok(view)) => view.pending.clone(),
        _ => Vec::new(),
    }
}

fn send(app: &mut App, fx: &mut Vec<Effect>) {
    let Some((work_item, _)) = open_item(app) else {
        return;
    };
    let comments = pending(app);
    if comments.is_empty() {
        let key = app
            .keymap
            .key_label(super::keymap::Group::Diff, Command::Comment)
            .unwrap_or_else(|| "the comment key".into());
        say(
            app,
            MessageLevel::Info,
            format!("No pending comments to send: {key} on a line writes one"),
        );
        return;
    }
    let what = crate::tui::text::counted(comments.len(), "comment");
    if super::commands::over_budget(app, &work_item) {
        // Like a reply, a review to a session over budget goes only if meant (§20.4).
        let back = Some(Box::new(app.mode.clone()));
        app.mode = Mode::Confirm(Confirm {
            prompt: format!(
                "{} is over its budget. Send this review ({what}) anyway?",
                short_ref(&work_item)
            ),
            detail: "Its other deliveries stay held until the budget is raised.".into(),
            request: Request::SendReview {
                work_item,
                comments,
                over_budget: true,
            },
            back,
        });
        return;
    }
    say(
        app,
        MessageLevel::Info,
        format!("Sending {what} to {}…", short_ref(&work_item)),
    );
    fx.push(Effect::Request(Request::SendReview {
        work_item,
        comments,
        over_budget: false,
    }));
}

fn discard(app: &mut App) {
    let Some((work_item, scroll)) = open_item(app) else {
        return;
    };
    let comments = pending(app);
    if comments.is_empty() {
        say(app, MessageLevel::Info, "No pending comments to discard");
        return;
    }
    app.mode = Mode::Confirm(Confirm {
        prompt: format!(
            "Discard the {} on {}?",
            crate::tui::text::counted(comments.len(), "pending comment"),
            short_ref(&work_item)
        ),
        detail: "They are dropped unsent; the agent never sees them.".into(),
        request: Request::DiscardReview {
            work_item: work_item.clone(),
            ids: comments.into_iter().map(|c| c.id).collect(),
        },
        back: Some(Box::new(Mode::Diff { work_item, scroll })),
    });
}

/// The confirmation of a discard was answered: back to the diff, and on yes the
/// comments leave the view (the backend drops them from the store).
pub(super) fn discarded(app: &mut App, request: &Request) {
    let Request::DiscardReview { ids, .. } = request else {
        return;
    };
    if let Some(view) = view_mut(app) {
        view.pending.retain(|c| !ids.contains(&c.id));
        view.relayout();
    }
    follow_cursor(app);
}

/// A review request finished: sent comments leave the view (they left the store).
pub(super) fn done(app: &mut App, request: &Request, result: &ActionResult) {
    let (
        Request::SendReview {
            work_item,
            comments,
            ..
        },
        Ok(_),
    ) = (request, result)
    else {
        return;
    };
    let open = matches!(&app.mode, Mode::Diff { work_item: w, .. } if w == work_item);
    if !open {
        return;
    }
    if let Some(view) = view_mut(app) {
        view.pending
            .retain(|c| !comments.iter().any(|s| s.id == c.id));
        view.relayout();
    }
}
