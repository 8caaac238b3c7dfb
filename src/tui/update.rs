//! The one place state changes: `update(&mut App, Action) -> Vec<Effect>`. Data from the
//! backend lands here; keys are resolved through the keymap and carried out in
//! [`super::commands`]. Every change that shows on screen sets `dirty`, and nothing
//! else does, so an idle screen is never redrawn.

use super::action::{Action, Effect, Notification, Request};
use super::app::{App, Message, MessageLevel, Mode};
use super::backend::{ActionError, SessionView, Snapshot};
use super::commands;
use super::event_rows::{self, EventRow, RowKind};
use super::keymap::{Command, Group};
use super::text::{age, clock, short_ref, truncate};
use crate::config::NotifyMode;
use crate::events::Event;
use crate::work_item::WorkItemRef;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::layout::Rect;
use std::hash::{DefaultHasher, Hash, Hasher};
use time::OffsetDateTime;

/// How many of the history's last events are remembered to drop their live duplicates
/// (an event appended between the history read and the subscription comes twice).
const HISTORY_OVERLAP: usize = 64;

pub fn update(app: &mut App, action: Action) -> Vec<Effect> {
    let mut fx = Vec::new();
    match action {
        Action::Key(key) => {
            if key.kind != KeyEventKind::Release {
                on_key(app, key, &mut fx);
            }
        }
        Action::Paste(text) => on_paste(app, &text),
        Action::Mouse { event, at } => super::mouse::on_mouse(app, event, at, &mut fx),
        Action::Resize { width, height } => {
            app.area = Rect::new(0, 0, width, height);
            app.dirty = true;
        }
        Action::Tick(now) => {
            let before = clock_face(app);
            app.now = now;
            if clock_face(app) != before {
                app.dirty = true;
            }
            notify_long_holds(app, false, &mut fx);
        }
        Action::Spin => {
            if app.critic_running() {
                app.spinner = app.spinner.wrapping_add(1);
                app.dirty = true;
            }
        }
        Action::PreviewDue => request_capture(app, &mut fx),
        Action::RefreshDue => request_refresh(app, &mut fx),
        Action::Snapshot(snapshot) => on_snapshot(app, *snapshot, &mut fx),
        Action::History(events) => on_history(app, events),
        Action::Events(events) => on_events(app, events, &mut fx),
        Action::EventsLagged(n) => {
            note(
                app,
                "…",
                RowKind::Failed,
                format!("{n} events skipped: the screen fell behind (the log has them all)"),
                None,
            );
            request_refresh(app, &mut fx);
        }
        Action::Captured { work_item, result } => on_capture(app, work_item, result),
        Action::DiffLoaded {
            work_item,
            result,
            review,
        } => super::review::loaded(app, work_item, result, review),
        Action::ShipPreviewed { work_item, result } => {
            super::ship::previewed(app, work_item, result)
        }
        Action::Done { request, result } => on_done(app, request, result, &mut fx),
        Action::Attached { work_item, result } => {
            match result {
                Ok(()) => say(
                    app,
                    MessageLevel::Info,
                    format!("Back from {}", short_ref(&work_item)),
                ),
                Err(e) => {
                    let text = format!("Could not attach to {}: {e}", short_ref(&work_item));
                    note(app, "✗", RowKind::Failed, text.clone(), None);
                    say(app, MessageLevel::Error, text);
                }
            }
            request_refresh(app, &mut fx);
        }
    }
    fx
}

/// Everything time-dependent that is on screen; a tick that leaves it unchanged leaves
/// the screen unchanged and is not drawn.
fn clock_face(app: &App) -> u64 {
    let mut h = DefaultHasher::new();
    let since = |t: OffsetDateTime| (app.now - t).whole_seconds();
    if let Some(poll) = &app.status.last_poll {
        age(since(poll.at)).hash(&mut h);
    }
    for q in &app.questions {
        age(since(q.asked_at)).hash(&mut h);
    }
    for p in &app.permissions {
        age(since(p.requested_at)).hash(&mut h);
    }
    for s in &app.ships {
        age(since(s.requested_at)).hash(&mut h);
    }
    for held in app.sessions.iter().filter_map(|s| s.held.as_ref()) {
        super::held::since(held).map(|t| age(since(t))).hash(&mut h);
    }
    for run in app.runs.iter().filter(|r| r.is_running()) {
        clock((app.now - run.started_at).as_seconds_f64()).hash(&mut h);
    }
    app.message_visible().hash(&mut h);
    h.finish()
}

pub(super) fn say(app: &mut App, level: MessageLevel, text: impl Into<String>) {
    app.message = Some(Message {
        text: text.into(),
        level,
        at: app.now,
    });
    app.dirty = true;
}

/// A row in the Events pane for something this screen did.
pub(super) fn note(
    app: &mut App,
    glyph: &'static str,
    kind: RowKind,
    text: String,
    item: Option<WorkItemRef>,
) {
    let t = app.now.to_offset(app.utc_offset);
    let time = format!("{:02}:{:02}:{:02}", t.hour(), t.minute(), t.second());
    push_row(app, EventRow::new(time, glyph, kind, text, item, ""));
}

fn push_row(app: &mut App, row: EventRow) {
    if app.events_scroll > 0 && row.matches(&app.filter.to_lowercase()) {
        // Scrolled back: keep the same rows in view as new ones arrive.
        app.events_scroll += 1;
    }
    app.feed.push(row);
    app.dirty = true;
}

pub(super) fn request_refresh(app: &mut App, fx: &mut Vec<Effect>) {
    if !app.snapshot_pending {
        app.snapshot_pending = true;
        fx.push(Effect::Refresh);
    }
}

pub(super) fn request_capture(app: &mut App, fx: &mut Vec<Effect>) {
    if app.preview.in_flight || !app.wants_preview() {
        return;
    }
    if let Some(target) = app.preview_target().map(|s| s.work_item.clone()) {
        app.preview.in_flight = true;
        fx.push(Effect::Capture(target));
    }
}

pub(super) fn on_key(app: &mut App, key: KeyEvent, fx: &mut Vec<Effect>) {
    let group = app.key_group();
    let command = app.keymap.lookup(group, &key);
    match &mut app.mode {
        Mode::Reply(reply) => {
            match command {
                Some(Command::Send) => commands::send_reply(app, fx),
                Some(Command::Cancel) => {
                    app.mode = Mode::Normal;
                    say(app, MessageLevel::Info, "Reply cancelled; nothing was sent");
                }
                _ if !reply.sending => {
                    reply.error = None;
                    reply.textarea.input(key);
                    app.dirty = true;
                }
                _ => {}
            }
            return;
        }
        Mode::Comment(cbox) => {
            match command {
                Some(Command::Send) => super::review::keep_comment(app, fx),
                Some(Command::Cancel) => super::review::cancel_comment(app),
                _ => {
                    cbox.error = None;
                    cbox.textarea.input(key);
                    app.dirty = true;
                }
            }
            return;
        }
        Mode::Filter { draft } => {
            match command {
                Some(Command::Apply) => app.mode = Mode::Normal,
                Some(Command::Cancel) => {
                    app.filter.clear();
                    app.mode = Mode::Normal;
                }
                _ => {
                    let plain = !key
                        .modifiers
                        .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
                    match key.code {
                        KeyCode::Char(c) if plain => draft.push(c),
                        KeyCode::Char('u') if key.modifiers == KeyModifiers::CONTROL => {
                            draft.clear()
                        }
                        KeyCode::Backspace => {
                            draft.pop();
                        }
                        _ => return,
                    }
                    // The filter applies as it is typed.
                    app.filter = draft.clone();
                    app.events_scroll = 0;
                }
            }
            app.dirty = true;
            return;
        }
        _ => {}
    }
    let command = match (&app.mode, command) {
        (_, Some(c)) => Some(c),
        (Mode::Normal, None) => app.keymap.lookup(Group::Global, &key),
        _ => None,
    };
    if let Some(command) = command {
        commands::run(app, command, fx);
    }
}

fn on_paste(app: &mut App, text: &str) {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let text: String = text
        .chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .collect();
    match &mut app.mode {
        Mode::Reply(reply) if !reply.sending => {
            reply.error = None;
            reply.textarea.insert_str(&text);
            app.dirty = true;
        }
        Mode::Comment(cbox) => {
            cbox.error = None;
            cbox.textarea.insert_str(&text);
            app.dirty = true;
        }
        Mode::Filter { draft } => {
            draft.push_str(text.lines().next().unwrap_or(""));
            app.filter = draft.clone();
            app.dirty = true;
        }
        Mode::Normal => {
            let key = app
                .keymap
                .key_label(app.focus.group(), Command::Reply)
                .unwrap_or_else(|| "the reply key".into());
            say(
                app,
                MessageLevel::Info,
                format!("To paste a reply, open the reply box first ({key})"),
            );
        }
        _ => {}
    }
}

fn sort_snapshot(s: &mut Snapshot) {
    s.sessions.sort_by(|a, b| {
        (!a.state.has_session(), &a.work_item).cmp(&(!b.state.has_session(), &b.work_item))
    });
    s.questions.sort_by_key(|q| q.asked_at);
    s.permissions.sort_by_key(|p| p.requested_at);
    s.ships.sort_by_key(|p| p.requested_at);
    s.runs.sort_by(|a, b| {
        (!a.is_running(), std::cmp::Reverse(a.started_at))
            .cmp(&(!b.is_running(), std::cmp::Reverse(b.started_at)))
    });
}

/// Sessions compared as displayed: idle times only by their label.
fn same_sessions(a: &[SessionView], b: &[SessionView]) -> bool {
    let label = |s: &SessionView| s.idle_secs.map(|x| age(x as i64));
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            label(x) == label(y)
                && SessionView {
                    idle_secs: None,
                    ..x.clone()
                } == SessionView {
                    idle_secs: None,
                    ..y.clone()
                }
        })
}

fn on_snapshot(app: &mut App, mut s: Snapshot, fx: &mut Vec<Effect>) {
    sort_snapshot(&mut s);
    app.snapshot_pending = false;
    let first = app.loading;
    let changed = first
        || !same_sessions(&app.sessions, &s.sessions)
        || app.questions != s.questions
        || app.permissions != s.permissions
        || app.ships != s.ships
        || app.status != s.status
        || app.critics != s.critics
        || app.runs != s.runs;
    if !changed {
        return;
    }
    let selected = app.selected_session().map(|x| x.work_item.clone());
    let question = app
        .selected_question()
        .map(|q| (q.work_item.clone(), q.asked_at));
    let permission = app.selected_permission().map(|p| p.request_id.clone());
    let ship = app.selected_ship().map(|s| s.request_id.clone());
    let run = app.selected_run().map(|r| r.id.clone());

    for q in &s.questions {
        let key = (q.work_item.clone(), q.asked_at.unix_timestamp_nanos());
        if app.seen_questions.insert(key) && !first {
            let title = format!("the-loop: question on {}", short_ref(&q.work_item));
            notify(app, title, &q.question, fx);
        }
    }
    // A permission dialog needs the operator as much as a question (SPEC §17.4).
    for p in &s.permissions {
        if app.seen_permissions.insert(p.request_id.clone()) && !first {
            let title = format!("the-loop: {} needs permission", short_ref(&p.work_item));
            notify(app, title, &format!("{}: {}", p.tool, p.summary), fx);
        }
    }
    // So does an agent's request to ship its work (SPEC §19.3).
    for r in &s.ships {
        if app.seen_ships.insert(r.request_id.clone()) && !first {
            let title = format!("the-loop: {} asks to ship", short_ref(&r.work_item));
            notify(app, title, &r.title, fx);
        }
    }

    app.sessions = s.sessions;
    notify_long_holds(app, first, fx);
    notify_budgets(app, first, fx);
    app.questions = s.questions;
    app.permissions = s.permissions;
    app.ships = s.ships;
    app.status = s.status;
    app.critics = s.critics;
    app.runs = s.runs;
    app.loading = false;
    app.dirty = true;

    app.session_index = selected
        .and_then(|w| app.sessions.iter().position(|x| x.work_item == w))
        .unwrap_or(app.session_index)
        .min(app.sessions.len().saturating_sub(1));
    let offset = app.permissions.len() + app.ships.len();
    app.question_index = permission
        .and_then(|id| app.permissions.iter().position(|p| p.request_id == id))
        .or_else(|| {
            let i = app
                .ships
                .iter()
                .position(|s| Some(&s.request_id) == ship.as_ref())?;
            Some(i + app.permissions.len())
        })
        .or_else(|| {
            let (w, t) = question?;
            app.questions
                .iter()
                .position(|q| q.work_item == w && q.asked_at == t)
                .map(|i| i + offset)
        })
        .unwrap_or(app.question_index)
        .min(app.waiting_len().saturating_sub(1));
    app.run_index = run
        .as_ref()
        .and_then(|id| app.runs.iter().position(|r| &r.id == id))
        .unwrap_or(app.run_index)
        .min(app.runs.len().saturating_sub(1));
    let same_run = app.selected_run().map(|r| &r.id) == run.as_ref();
    let findings = app
        .selected_run()
        .and_then(|r| r.result())
        .map_or(0, |r| r.findings.len());
    app.finding_index = app.finding_index.filter(|i| same_run && *i < findings);
    if let Mode::Picker { index, .. } = &mut app.mode {
        *index = (*index).min(app.critics.len().saturating_sub(1));
    }

    if let Some(wanted) = app.pending_focus.take() {
        focus_on(app, &wanted);
    }
    commands::selection_changed(app, fx);
}

/// `--attach X`: select the session named by a ref or a tmux session name; a bare
/// `--attach` (empty) selects the first row that has a session.
fn focus_on(app: &mut App, wanted: &str) {
    if wanted.trim().is_empty() {
        match app.sessions.iter().position(|s| s.state.has_session()) {
            Some(i) => {
                app.session_index = i;
                app.focus = super::app::Focus::Sessions;
            }
            None => say(app, MessageLevel::Info, "No session to focus yet"),
        }
        return;
    }
    let wanted_ref = wanted
        .parse::<WorkItemRef>()
        .or_else(|_| format!("github:{wanted}").parse::<WorkItemRef>())
        .ok();
    let found = app.sessions.iter().position(|s| {
        Some(&s.work_item) == wanted_ref.as_ref() || s.tmux_name.as_deref() == Some(wanted)
    });
    match found {
        Some(i) => {
            app.session_index = i;
            app.focus = super::app::Focus::Sessions;
        }
        None => say(
            app,
            MessageLevel::Warn,
            format!("No session or watched item matches `{wanted}`"),
        ),
    }
}

/// A delivery held past `sessions.holdNotifySeconds` needs the operator like a question
/// (SPEC §18.3). Holds already that old in the first snapshot are on screen as it opens,
/// and stay quiet like the questions there.
fn notify_long_holds(app: &mut App, quiet: bool, fx: &mut Vec<Effect>) {
    let due = super::held::due_notices(
        &app.sessions,
        app.now,
        app.hold_notify_secs,
        &mut app.notified_holds,
    );
    for (title, body) in due.into_iter().filter(|_| !quiet) {
        notify(app, title, &body, fx);
    }
}

/// A session reaching 80 % of a budget, then its budget, notifies once each (SPEC
/// §20.4); its row is marked either way. What the first snapshot already shows is not
/// news; a mark that goes away (the budget was raised) lets a later crossing notify.
fn notify_budgets(app: &mut App, first: bool, fx: &mut Vec<Effect>) {
    let mut due = Vec::new();
    for s in &app.sessions {
        let (label, marks) = match &s.usage {
            Some(u) => (u.label.clone(), [u.budget_warning, u.over_budget]),
            None => (String::new(), [false, false]),
        };
        for (over, reached) in [(false, marks[0]), (true, marks[1])] {
            let key = (s.work_item.clone(), over);
            if !reached {
                app.notified_budgets.remove(&key);
            } else if app.notified_budgets.insert(key) && !first {
                due.push((short_ref(&s.work_item), over, label.clone()));
            }
        }
    }
    for (item, over, label) in due {
        let (title, body) = match over {
            true => (
                format!("the-loop: {item} is over budget"),
                format!("{label}: deliveries are held until the budget is raised"),
            ),
            false => (
                format!("the-loop: {item} nears its budget"),
                format!("{label}: 80 % of its budget"),
            ),
        };
        notify(app, title, &body, fx);
    }
}

fn notify(app: &mut App, title: String, body: &str, fx: &mut Vec<Effect>) {
    match app.notify {
        NotifyMode::Bell => fx.push(Effect::Bell),
        NotifyMode::Desktop => fx.push(Effect::Desktop(Notification {
            title: super::text::clean_line(&title).into_owned(),
            body: truncate(&super::text::clean_line(body), 200).into_owned(),
        })),
        NotifyMode::None => {}
    }
}

fn on_history(app: &mut App, events: Vec<Event>) {
    let start = events.len().saturating_sub(HISTORY_OVERLAP);
    app.history_tail = events[start..].to_vec();
    for event in events.iter().filter(|e| event_rows::shown(e)) {
        app.feed.push(event_rows::describe(event, app.utc_offset));
    }
    app.dirty = true;
}

fn on_events(app: &mut App, events: Vec<Event>, fx: &mut Vec<Effect>) {
    for event in events {
        if let Some(i) = app.history_tail.iter().position(|e| *e == event) {
            app.history_tail.remove(i);
            continue;
        }
        if event_rows::shown(&event) {
            let row = event_rows::describe(&event, app.utc_offset);
            push_row(app, row);
        }
    }
    // Any event may change sessions, questions, status or critics.
    request_refresh(app, fx);
}

fn on_capture(app: &mut App, work_item: WorkItemRef, result: Result<String, String>) {
    app.preview.in_flight = false;
    if app.preview_target().map(|s| &s.work_item) != Some(&work_item) {
        return; // the selection moved on while capturing
    }
    match result {
        Ok(raw) => {
            let mut h = DefaultHasher::new();
            raw.hash(&mut h);
            let hash = h.finish();
            let same_item = app.preview.work_item.as_ref() == Some(&work_item);
            if same_item && app.preview.raw_hash == hash && app.preview.error.is_none() {
                return;
            }
            app.preview.text = Some(super::panes::preview::parse_capture(
                &raw,
                app.theme.colorless,
            ));
            app.preview.raw_hash = hash;
            app.preview.error = None;
        }
        Err(e) => {
            if app.preview.error.as_deref() == Some(e.as_str()) {
                return;
            }
            app.preview.error = Some(e);
            app.preview.text = None;
            app.preview.raw_hash = 0;
        }
    }
    app.preview.work_item = Some(work_item);
    app.dirty = true;
}

fn on_done(
    app: &mut App,
    request: Request,
    result: super::backend::ActionResult,
    fx: &mut Vec<Effect>,
) {
    match &result {
        Ok(text) => {
            note(app, "»", RowKind::Note, text.clone(), None);
            say(app, MessageLevel::Ok, text.clone());
        }
        Err(e) => {
            let text = format!("Could not {}: {e}", request.describe());
            note(app, "»", RowKind::Failed, text.clone(), None);
            let level = match e {
                ActionError::Refused(_) => MessageLevel::Warn,
                ActionError::Failed(_) => MessageLevel::Error,
            };
            say(app, level, text);
        }
    }
    super::review::done(app, &request, &result);
    if let (Request::Reply { work_item, .. }, Mode::Reply(reply)) = (&request, &mut app.mode)
        && &reply.work_item == work_item
    {
        match result {
            // Delivered: the box closes and the question with it.
            Ok(_) => app.mode = Mode::Normal,
            // Refused or failed: the text stays for another try.
            Err(e) => {
                reply.sending = false;
                reply.error = Some(e.to_string());
            }
        }
    }
    request_refresh(app, fx);
}
