//! What each keymap command does to the state, called only from [`super::update`].

use super::action::{Effect, Request};
use super::app::{App, Confirm, Focus, MessageLevel, Mode, ReplyBox};
use super::backend::{SessionState, SessionView};
use super::keymap::Command;
use super::text::short_ref;
use super::update::{request_capture, say};
use crate::work_item::WorkItemRef;
use ratatui::style::Style;
use ratatui_textarea::TextArea;

pub(super) fn run(app: &mut App, command: Command, fx: &mut Vec<Effect>) {
    app.dirty = true;
    match command {
        Command::Quit => {
            app.quit = true;
            fx.push(Effect::Quit);
        }
        Command::Help => {
            app.mode = match app.mode {
                Mode::Help { .. } => Mode::Normal,
                _ => Mode::Help { scroll: 0 },
            }
        }
        Command::Close => {
            if let Mode::Confirm(c) = &mut app.mode
                && let Some(back) = c.back.take()
            {
                app.mode = *back;
                return;
            }
            // The diff opened from a ship confirmation returns to it.
            let back = match app.mode {
                Mode::Diff { .. } => app.diff_return.take(),
                _ => None,
            };
            app.diff_return = None;
            app.mode = back.map_or(Mode::Normal, Mode::Confirm);
        }
        Command::FocusNext | Command::FocusPrev => {
            app.focus = app.focus.step(command == Command::FocusNext);
            selection_changed(app, fx);
        }
        Command::FocusSessions => focus(app, Focus::Sessions, fx),
        Command::FocusPane => focus(app, Focus::Pane, fx),
        Command::FocusQuestions => focus(app, Focus::Questions, fx),
        Command::FocusEvents => focus(app, Focus::Events, fx),
        Command::FocusCritics => focus(app, Focus::Critics, fx),
        Command::Zoom => {
            app.zoom = !app.zoom;
            selection_changed(app, fx);
        }
        Command::Up => move_by(app, -1, fx),
        Command::Down => move_by(app, 1, fx),
        Command::PageUp => {
            let page = page(app);
            move_by(app, -page, fx)
        }
        Command::PageDown => {
            let page = page(app);
            move_by(app, page, fx)
        }
        Command::Top => move_by(app, isize::MIN / 2, fx),
        Command::Bottom => move_by(app, isize::MAX / 2, fx),
        Command::Reply | Command::Open if app.focus != Focus::Critics => open_reply(app),
        Command::Reply => open_reply(app),
        Command::Open if app.finding_index.is_some() => open_finding(app, fx),
        Command::Open => open_output(app),
        Command::Attach | Command::AttachReadOnly => {
            if let Some(s) = target_session(app, "attach to") {
                fx.push(Effect::Attach {
                    work_item: s.work_item.clone(),
                    read_only: command == Command::AttachReadOnly,
                });
            }
        }
        Command::Critic => open_picker(app),
        Command::Start => {
            if let Some(item) = target_item(app) {
                match app.session_for(&item).map(|s| s.state) {
                    Some(SessionState::NoSession) | None => {
                        say(
                            app,
                            MessageLevel::Info,
                            format!("Starting a session on {}…", short_ref(&item)),
                        );
                        fx.push(Effect::Request(Request::Start(item)));
                    }
                    Some(_) => say(
                        app,
                        MessageLevel::Warn,
                        format!("{} already has a session", short_ref(&item)),
                    ),
                }
            }
        }
        Command::Pause | Command::Resume | Command::TogglePause => {
            if let Some(s) = target_session(app, "pause") {
                let item = s.work_item.clone();
                let resume = match command {
                    Command::Resume => true,
                    Command::Pause => false,
                    _ => s.state == SessionState::Paused,
                };
                fx.push(Effect::Request(if resume {
                    Request::Resume(item)
                } else {
                    Request::Pause(item)
                }));
            }
        }
        Command::Stop => {
            if let Some(s) = target_session(app, "stop") {
                let item = s.work_item.clone();
                app.mode = Mode::Confirm(Confirm {
                    prompt: format!("Stop the session on {}?", short_ref(&item)),
                    detail: "The agent is ended (SIGTERM, then SIGKILL after a grace period)."
                        .into(),
                    request: Request::Stop(item),
                    back: None,
                });
            }
        }
        Command::OpenUrl => open_url(app, fx),
        Command::Approve if app.focus == Focus::Questions && app.selected_ship().is_some() => {
            if let Some(item) = app.selected_ship().map(|s| s.work_item.clone()) {
                super::ship::open(app, item, fx);
            }
        }
        Command::Approve | Command::Deny => answer_permission(app, command == Command::Approve, fx),
        Command::DeliverHeld => {
            if let Some(s) = target_session(app, "deliver") {
                fx.push(Effect::Request(Request::DeliverHeld(s.work_item)));
            }
        }
        Command::Ship => {
            if let Some(s) = target_session(app, "ship") {
                super::ship::open(app, s.work_item, fx);
            }
        }
        Command::Dismiss => match app.selected_question() {
            Some(q) if app.focus == Focus::Questions => {
                fx.push(Effect::Request(Request::Dismiss(q.work_item.clone())))
            }
            _ => say(app, MessageLevel::Info, "Select a question to dismiss"),
        },
        Command::Filter => {
            app.mode = Mode::Filter {
                draft: app.filter.clone(),
            };
            app.focus = Focus::Events;
        }
        Command::ClearFilter => {
            app.filter.clear();
            app.events_scroll = 0;
        }
        Command::PostCritic => post_critic(app, fx),
        Command::Diff if matches!(app.mode, Mode::Confirm(_)) => {
            super::ship::diff_from_confirm(app, fx);
        }
        Command::Diff => open_diff(app, fx),
        Command::Select => select_critic(app, fx),
        Command::Confirm => {
            if let Mode::Confirm(c) = std::mem::replace(&mut app.mode, Mode::Normal) {
                if let Some(back) = c.back {
                    app.mode = *back;
                }
                // Back in the reply box, it waits for the answer as a sent reply does.
                if let Mode::Reply(reply) = &mut app.mode {
                    reply.sending = true;
                    reply.error = None;
                }
                super::review::discarded(app, &c.request);
                fx.push(Effect::Request(c.request));
            }
        }
        Command::Comment
        | Command::SendReview
        | Command::DiscardReview
        | Command::NextFinding
        | Command::PrevFinding
        | Command::TakeFinding => {
            super::review::run(app, command, fx);
        }
        // Handled by the modes that own them; bound elsewhere they do nothing.
        Command::Send | Command::Cancel | Command::Apply | Command::Noop => {}
    }
}

pub(super) fn focus(app: &mut App, to: Focus, fx: &mut Vec<Effect>) {
    app.focus = to;
    selection_changed(app, fx);
}

/// After the selection or the layout changed: reset the preview if it now shows another
/// session, and capture right away rather than on the next timer.
pub(super) fn selection_changed(app: &mut App, fx: &mut Vec<Effect>) {
    let target = app.preview_target().map(|s| s.work_item.clone());
    if app.preview.work_item != target {
        app.preview.text = None;
        app.preview.error = None;
        app.preview.raw_hash = 0;
        app.preview.work_item = None;
    }
    request_capture(app, fx);
}

fn page(app: &App) -> isize {
    if matches!(app.mode, Mode::Diff { .. }) {
        return super::review::view_height(app).saturating_sub(1).max(1) as isize;
    }
    let rows = app
        .layout()
        .rect(app.focus)
        .map(|r| r.height.saturating_sub(3))
        .unwrap_or(5);
    rows.max(1) as isize
}

fn step(index: usize, delta: isize, len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    index.saturating_add_signed(delta).min(len - 1)
}

fn move_by(app: &mut App, delta: isize, fx: &mut Vec<Effect>) {
    let to_u16 = |n: usize| u16::try_from(n).unwrap_or(u16::MAX);
    match app.mode {
        Mode::Help { scroll } => {
            let len = super::panes::help::line_count(app);
            app.mode = Mode::Help {
                scroll: to_u16(step(scroll as usize, delta, len)),
            };
        }
        Mode::Output { .. } => {
            let len = super::panes::critics::output_line_count(app);
            if let Mode::Output { scroll, .. } = &mut app.mode {
                *scroll = to_u16(step(*scroll as usize, delta, len));
            }
        }
        Mode::Diff { .. } => super::review::move_by(app, delta),
        Mode::Picker { ref mut index, .. } => *index = step(*index, delta, app.critics.len()),
        _ => move_in(app, app.focus, delta, fx),
    }
}

/// Moves the selection (or the scroll, in Events) of one pane, focused or not.
pub(super) fn move_in(app: &mut App, pane: Focus, delta: isize, fx: &mut Vec<Effect>) {
    match pane {
        Focus::Sessions => {
            let to = step(app.session_index, delta, app.sessions.len());
            // At the end of the list (the wheel keeps turning) nothing changes.
            if to != app.session_index {
                app.session_index = to;
                selection_changed(app, fx);
            }
        }
        Focus::Questions => {
            app.question_index = step(app.question_index, delta, app.waiting_len());
        }
        Focus::Critics => {
            // Runs, and the selected run's findings under it: one list.
            let rows = super::panes::critics::rows(app);
            let at = super::panes::critics::selected_row(app, &rows);
            if let Some(to) = rows.get(step(at, delta, rows.len())) {
                app.run_index = to.run;
                app.finding_index = to.finding;
            }
        }
        Focus::Events => {
            // Up goes back in time; the newest row is at the bottom.
            let len = app.feed.count_matching(&app.filter.to_lowercase());
            let rows = app
                .layout()
                .events
                .map(|r| r.height.saturating_sub(2) as usize)
                .unwrap_or(1);
            let max = len.saturating_sub(rows);
            app.events_scroll = step(app.events_scroll, -delta, max + 1);
        }
        Focus::Pane => {}
    }
}

/// The permission request the focused pane points at: the selected one in Questions,
/// else the one the selected session waits on.
fn answer_permission(app: &mut App, approve: bool, fx: &mut Vec<Effect>) {
    let request = match app.focus {
        Focus::Questions => app.selected_permission(),
        _ => target_item(app).and_then(|item| app.permission_for(&item)),
    };
    let Some(p) = request.cloned() else {
        let what = if approve { "approve" } else { "deny" };
        say(
            app,
            MessageLevel::Info,
            format!("Nothing selected is waiting for permission to {what}"),
        );
        return;
    };
    say(
        app,
        MessageLevel::Info,
        format!(
            "{} {} on {}…",
            if approve { "Approving" } else { "Denying" },
            p.tool,
            short_ref(&p.work_item)
        ),
    );
    fx.push(Effect::Request(Request::Permission {
        work_item: p.work_item,
        request_id: p.request_id,
        approve,
    }));
}

/// The session the focused pane points at.
fn target_item(app: &App) -> Option<WorkItemRef> {
    match app.focus {
        Focus::Questions => app
            .selected_permission()
            .map(|p| p.work_item.clone())
            .or_else(|| app.selected_question().map(|q| q.work_item.clone())),
        Focus::Critics => app.selected_run().and_then(|r| r.work_item.clone()),
        _ => app.selected_session().map(|s| s.work_item.clone()),
    }
}

/// The target's session, or a message saying why there is none.
fn target_session(app: &mut App, verb: &str) -> Option<SessionView> {
    let Some(item) = target_item(app) else {
        say(
            app,
            MessageLevel::Info,
            format!("Select a session to {verb}"),
        );
        return None;
    };
    match app.session_for(&item) {
        Some(s) if s.state.has_session() => Some(s.clone()),
        _ => {
            let start = app
                .keymap
                .key_label(super::keymap::Group::Sessions, Command::Start)
                .map(|k| format!(": press {k} in Sessions to start one"))
                .unwrap_or_default();
            say(
                app,
                MessageLevel::Warn,
                format!("{} has no session yet{start}", short_ref(&item)),
            );
            None
        }
    }
}

fn open_reply(app: &mut App) {
    let (item, question) = match app.focus {
        Focus::Questions => match app.selected_question() {
            Some(q) => (q.work_item.clone(), Some(q.question.clone())),
            None => {
                say(app, MessageLevel::Info, "No open question to answer");
                return;
            }
        },
        _ => match target_session(app, "reply to") {
            Some(s) => {
                let q = app.question_for(&s.work_item).map(|q| q.question.clone());
                (s.work_item, q)
            }
            None => return,
        },
    };
    let mut textarea = TextArea::default();
    textarea.set_placeholder_text("Type your reply. Enter adds a line; pasting works.");
    textarea.set_placeholder_style(app.theme.dim);
    textarea.set_cursor_line_style(Style::default());
    textarea.set_style(app.theme.input);
    app.mode = Mode::Reply(Box::new(ReplyBox {
        work_item: item,
        question,
        textarea,
        sending: false,
        error: None,
    }));
}

pub(super) fn send_reply(app: &mut App, fx: &mut Vec<Effect>) {
    let over = match &app.mode {
        Mode::Reply(reply) => over_budget(app, &reply.work_item),
        _ => false,
    };
    let Mode::Reply(reply) = &mut app.mode else {
        return;
    };
    if reply.sending {
        return;
    }
    let text = reply.textarea.lines().join("\n");
    if text.trim().is_empty() {
        reply.error = Some("Nothing to send: type a reply first".into());
    } else if over {
        // Its deliveries wait for the budget (SPEC §20.4): this one only if meant. Either
        // answer returns to the box, the text in it.
        let item = reply.work_item.clone();
        let back = Some(Box::new(app.mode.clone()));
        app.mode = Mode::Confirm(Confirm {
            prompt: format!(
                "{} is over its budget. Deliver this reply anyway?",
                short_ref(&item)
            ),
            detail: "Its other deliveries stay held until the budget is raised.".into(),
            request: Request::Reply {
                work_item: item,
                text,
                over_budget: true,
            },
            back,
        });
    } else {
        reply.sending = true;
        reply.error = None;
        fx.push(Effect::Request(Request::Reply {
            work_item: reply.work_item.clone(),
            text,
            over_budget: false,
        }));
    }
    app.dirty = true;
}

/// Whether `item`'s session is over a budget.
pub(super) fn over_budget(app: &App, item: &crate::work_item::WorkItemRef) -> bool {
    app.sessions
        .iter()
        .find(|s| &s.work_item == item)
        .and_then(|s| s.usage.as_ref())
        .is_some_and(|u| u.over_budget)
}

fn open_picker(app: &mut App) {
    let Some(item) = target_item(app) else {
        say(
            app,
            MessageLevel::Info,
            "Select a session to run a critic on",
        );
        return;
    };
    if app.critics.is_empty() {
        say(
            app,
            MessageLevel::Warn,
            "No critics configured: add one under `critics:` in the config (SPEC §9)",
        );
        return;
    }
    let index = app
        .critics
        .iter()
        .position(|c| c.problem.is_none())
        .unwrap_or(0);
    app.mode = Mode::Picker {
        work_item: item,
        index,
    };
}

fn select_critic(app: &mut App, fx: &mut Vec<Effect>) {
    let Mode::Picker { work_item, index } = &app.mode else {
        return;
    };
    let Some(critic) = app.critics.get(*index).cloned() else {
        return;
    };
    let work_item = work_item.clone();
    if let Some(problem) = &critic.problem {
        say(
            app,
            MessageLevel::Warn,
            format!("{} cannot run: {problem}", critic.name),
        );
        return;
    }
    app.mode = Mode::Normal;
    say(
        app,
        MessageLevel::Info,
        format!("Starting {} on {}…", critic.name, short_ref(&work_item)),
    );
    fx.push(Effect::Request(Request::RunCritic {
        critic: critic.name,
        work_item,
    }));
}

fn open_output(app: &mut App) {
    match app.selected_run() {
        Some(run) if run.is_running() => say(
            app,
            MessageLevel::Info,
            format!("{} is still running", run.critic),
        ),
        Some(run) => {
            app.mode = Mode::Output {
                run: run.id.clone(),
                scroll: 0,
            }
        }
        None => say(app, MessageLevel::Info, "No critic run to open yet"),
    }
}

/// Enter on a finding (SPEC §21.3): the diff of the run's work item, at its line.
fn open_finding(app: &mut App, fx: &mut Vec<Effect>) {
    if let Some(f) = app.selected_finding() {
        let at = (f.path.clone(), f.line);
        open_diff_at(app, Some(at), fx);
    }
}

fn post_critic(app: &mut App, fx: &mut Vec<Effect>) {
    let run = match &app.mode {
        Mode::Output { run, .. } => app.runs.iter().find(|r| &r.id == run),
        _ if app.focus == Focus::Critics => app.selected_run(),
        _ => None,
    };
    let Some(run) = run.cloned() else {
        say(
            app,
            MessageLevel::Info,
            "Select a finished critic run to post",
        );
        return;
    };
    if run.is_running() {
        say(
            app,
            MessageLevel::Info,
            format!("{} is still running", run.critic),
        );
    } else if let Some(url) = &run.posted {
        say(app, MessageLevel::Warn, format!("Already posted: {url}"));
    } else {
        say(app, MessageLevel::Info, format!("Posting {}…", run.critic));
        fx.push(Effect::Request(Request::PostCritic(run.id)));
    }
}

/// Opens the diff view of the target session's worktree (or working directory) and
/// asks the backend for the text.
fn open_diff(app: &mut App, fx: &mut Vec<Effect>) {
    open_diff_at(app, None, fx);
}

/// [`open_diff`], with `at` (`path`, new-side line) selected once the diff has loaded.
fn open_diff_at(app: &mut App, at: Option<(String, u32)>, fx: &mut Vec<Effect>) {
    let Some(item) = target_item(app) else {
        say(app, MessageLevel::Info, "Select a session to see its diff");
        return;
    };
    let has_tree = app
        .session_for(&item)
        .is_some_and(|s| s.state.has_session() || s.workspace.is_some());
    if !has_tree {
        say(
            app,
            MessageLevel::Warn,
            format!(
                "{} has no session and no worktree to diff",
                short_ref(&item)
            ),
        );
        return;
    }
    super::review::open_at(app, item, at, fx);
}

fn open_url(app: &mut App, fx: &mut Vec<Effect>) {
    let url = match app.focus {
        Focus::Questions => app.selected_question().map(|q| {
            q.comment_url
                .clone()
                .unwrap_or_else(|| q.work_item.html_url())
        }),
        _ => target_item(app).map(|item| {
            app.session_for(&item)
                .map(|s| s.url.clone())
                .unwrap_or_else(|| item.html_url())
        }),
    };
    match url {
        Some(url) => fx.push(Effect::Request(Request::OpenUrl(url))),
        None => say(app, MessageLevel::Info, "Nothing selected to open"),
    }
}
