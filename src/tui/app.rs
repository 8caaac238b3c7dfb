//! The screen's state. It changes only in [`super::update::update`]; render functions
//! read it by reference.

use super::backend::{
    CriticRunView, CriticSpecView, PermissionView, QuestionView, SessionView, ShipView, StatusView,
};
use super::event_rows::Feed;
use super::keymap::{Group, Keymap};
use super::layout::{self, Layout};
use super::theme::Theme;
use crate::config::NotifyMode;
use crate::events::Event;
use crate::work_item::WorkItemRef;
use ratatui::layout::Rect;
use ratatui::text::Text;
use ratatui_textarea::TextArea;
use std::collections::HashSet;
use time::{OffsetDateTime, UtcOffset};

/// The panes, in focus order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Focus {
    Sessions,
    Pane,
    Questions,
    Events,
    Critics,
}

impl Focus {
    pub const ORDER: [Focus; 5] = [
        Focus::Sessions,
        Focus::Pane,
        Focus::Questions,
        Focus::Events,
        Focus::Critics,
    ];

    pub fn group(self) -> Group {
        match self {
            Focus::Sessions => Group::Sessions,
            Focus::Pane => Group::Pane,
            Focus::Questions => Group::Questions,
            Focus::Events => Group::Events,
            Focus::Critics => Group::Critics,
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Focus::Sessions => "Sessions",
            Focus::Pane => "Pane",
            Focus::Questions => "Questions",
            Focus::Events => "Events",
            Focus::Critics => "Critics",
        }
    }

    pub fn step(self, forward: bool) -> Focus {
        let i = Self::ORDER.iter().position(|f| *f == self).unwrap_or(0);
        let n = Self::ORDER.len();
        Self::ORDER[if forward {
            (i + 1) % n
        } else {
            (i + n - 1) % n
        }]
    }
}

/// What has the keyboard.
#[derive(Debug, Clone)]
pub enum Mode {
    Normal,
    Help {
        scroll: u16,
    },
    Picker {
        work_item: WorkItemRef,
        index: usize,
    },
    Output {
        run: super::backend::RunId,
        scroll: u16,
    },
    /// The session's worktree diff (SPEC §16.4); the text is in [`App::diff`].
    Diff {
        work_item: WorkItemRef,
        scroll: u16,
    },
    Confirm(Confirm),
    Reply(Box<ReplyBox>),
    /// Writing a comment on a line of the open diff (SPEC §21.2).
    Comment(Box<CommentBox>),
    Filter {
        draft: String,
    },
}

impl Mode {
    pub fn group(&self) -> Option<Group> {
        match self {
            Mode::Normal => None,
            Mode::Help { .. } => Some(Group::Help),
            Mode::Picker { .. } => Some(Group::Picker),
            Mode::Output { .. } => Some(Group::Output),
            Mode::Diff { .. } => Some(Group::Diff),
            Mode::Confirm(_) => Some(Group::Confirm),
            Mode::Reply(_) => Some(Group::Reply),
            Mode::Comment(_) => Some(Group::Comment),
            Mode::Filter { .. } => Some(Group::Filter),
        }
    }
}

/// A yes/no question before something that cannot be undone.
#[derive(Debug, Clone)]
pub struct Confirm {
    pub prompt: String,
    pub detail: String,
    pub request: super::action::Request,
    /// Where either answer returns (the reply box, the diff view); `None`: the screen.
    pub back: Option<Box<Mode>>,
}

/// The inline reply (SPEC §11.2).
#[derive(Debug, Clone)]
pub struct ReplyBox {
    pub work_item: WorkItemRef,
    /// The question being answered, when replying from one.
    pub question: Option<String>,
    pub textarea: TextArea<'static>,
    /// Sent and waiting for the result; the text is kept until it succeeds.
    pub sending: bool,
    /// Why the last attempt failed, shown in the box.
    pub error: Option<String>,
}

/// The comment box over the diff view: the line it is about and the text so far.
#[derive(Debug, Clone)]
pub struct CommentBox {
    pub work_item: WorkItemRef,
    /// The diff view's scroll, to come back to.
    pub scroll: u16,
    pub anchor: crate::session::review::Anchor,
    pub textarea: TextArea<'static>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageLevel {
    Info,
    Ok,
    Warn,
    Error,
}

/// A transient line in the footer: the result of the last action.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub text: String,
    pub level: MessageLevel,
    pub at: OffsetDateTime,
}

/// How long a message stays in the footer.
pub const MESSAGE_SECS: i64 = 8;

/// The Pane preview's last capture.
#[derive(Debug, Clone, Default)]
pub struct Preview {
    pub work_item: Option<WorkItemRef>,
    pub text: Option<Text<'static>>,
    pub error: Option<String>,
    /// Hash of the raw capture, to skip re-parsing (and redrawing) an unchanged pane.
    pub raw_hash: u64,
    pub in_flight: bool,
}

#[derive(Debug)]
pub struct App {
    pub keymap: Keymap,
    pub theme: Theme,
    pub notify: NotifyMode,
    /// `sessions.holdNotifySeconds`: a hold this long notifies; 0 never.
    pub hold_notify_secs: u64,
    pub utc_offset: UtcOffset,
    pub now: OffsetDateTime,
    pub area: Rect,
    pub focus: Focus,
    pub zoom: bool,
    pub mode: Mode,
    /// Set until the first snapshot arrives, so panes say "loading" rather than "none".
    pub loading: bool,

    pub sessions: Vec<SessionView>,
    pub session_index: usize,
    pub questions: Vec<QuestionView>,
    /// Open permission dialogs, listed in Questions before the questions.
    pub permissions: Vec<PermissionView>,
    /// Agents' requests to ship, listed after the permissions.
    pub ships: Vec<ShipView>,
    /// The selected row of the Questions pane: permissions, ship requests, questions.
    pub question_index: usize,
    pub status: StatusView,
    pub critics: Vec<CriticSpecView>,
    pub runs: Vec<CriticRunView>,
    pub run_index: usize,
    /// The selected finding of the selected run, listed under it (SPEC §21.3); `None`
    /// when the run's own row is selected.
    pub finding_index: Option<usize>,

    pub feed: Feed,
    /// The applied filter, as typed (matching lowercases it).
    pub filter: String,
    /// Rows scrolled up from the newest; 0 follows new events.
    pub events_scroll: usize,

    pub preview: Preview,
    /// The open diff view, once loaded (`Err`: why there is none).
    pub diff: Option<Result<super::diff_view::DiffView, String>>,
    /// Where the diff view opens (`path`, new-side line), when opened at a place.
    pub diff_target: Option<(String, u32)>,
    /// The ship confirmation the diff view was opened from: closing the diff returns
    /// to it, unchanged (the head it shows is still the one that ships).
    pub diff_return: Option<Confirm>,
    /// The session whose ship preview is being looked at, for its confirmation.
    pub pending_ship: Option<WorkItemRef>,
    pub message: Option<Message>,
    /// Keymap and theme problems found at start, shown in the status bar.
    pub warnings: Vec<String>,
    pub spinner: usize,

    /// Something visible changed since the last draw.
    pub dirty: bool,
    pub quit: bool,
    pub snapshot_pending: bool,
    /// The questions already seen, so only new ones notify.
    pub(super) seen_questions: HashSet<(WorkItemRef, i128)>,
    /// The permission requests already seen (by request id), so only new ones notify.
    pub(super) seen_permissions: HashSet<String>,
    /// The ship requests already seen (by request id), so only new ones notify.
    pub(super) seen_ships: HashSet<String>,
    /// The holds that have notified, so each does once.
    pub(super) notified_holds: HashSet<super::held::HoldKey>,
    /// Sessions already notified as near (`false`) or over (`true`) a budget.
    pub(super) notified_budgets: HashSet<(crate::work_item::WorkItemRef, bool)>,
    /// The end of the initial history, to skip live events it already holds.
    pub(super) history_tail: Vec<Event>,
    /// `--attach X`: select X when the first snapshot has it.
    pub(super) pending_focus: Option<String>,
    /// `tui.mouse`: mouse input is acted on (SPEC §21.1).
    pub mouse: bool,
    /// The last click, to tell a double click.
    pub(super) last_click: Option<super::mouse::Click>,
}

/// What the app needs that does not come from the backend.
#[derive(Debug, Clone)]
pub struct AppSettings {
    pub keymap: Keymap,
    pub theme: Theme,
    pub notify: NotifyMode,
    /// `sessions.holdNotifySeconds`.
    pub hold_notify_secs: u64,
    pub utc_offset: UtcOffset,
    pub warnings: Vec<String>,
    /// `--attach X`: a ref (`github:o/r#1`, `o/r#1`) or a tmux session name.
    pub focus: Option<String>,
    /// `tui.mouse`.
    pub mouse: bool,
}

impl AppSettings {
    /// The shipped keymap and default theme, bell notifications (holds after the
    /// default time), times in UTC.
    pub fn builtin() -> Self {
        Self {
            keymap: Keymap::builtin(),
            theme: Theme::builtin("default")
                .unwrap_or_else(|| Theme::load("default", None, false).0),
            notify: NotifyMode::Bell,
            hold_notify_secs: crate::config::DEFAULT_HOLD_NOTIFY_SECONDS,
            utc_offset: UtcOffset::UTC,
            warnings: Vec::new(),
            focus: None,
            mouse: true,
        }
    }
}

impl App {
    pub fn new(settings: AppSettings, now: OffsetDateTime) -> Self {
        Self {
            keymap: settings.keymap,
            theme: settings.theme,
            notify: settings.notify,
            hold_notify_secs: settings.hold_notify_secs,
            utc_offset: settings.utc_offset,
            now,
            area: Rect::new(0, 0, 80, 24),
            focus: Focus::Sessions,
            zoom: false,
            mode: Mode::Normal,
            loading: true,
            sessions: Vec::new(),
            session_index: 0,
            questions: Vec::new(),
            permissions: Vec::new(),
            ships: Vec::new(),
            question_index: 0,
            status: StatusView::default(),
            critics: Vec::new(),
            runs: Vec::new(),
            run_index: 0,
            finding_index: None,
            feed: Feed::default(),
            filter: String::new(),
            events_scroll: 0,
            preview: Preview::default(),
            diff: None,
            diff_target: None,
            diff_return: None,
            pending_ship: None,
            message: None,
            warnings: settings.warnings,
            spinner: 0,
            dirty: true,
            quit: false,
            snapshot_pending: false,
            seen_questions: HashSet::new(),
            seen_permissions: HashSet::new(),
            seen_ships: HashSet::new(),
            notified_holds: HashSet::new(),
            notified_budgets: HashSet::new(),
            history_tail: Vec::new(),
            pending_focus: settings.focus,
            mouse: settings.mouse,
            last_click: None,
        }
    }

    pub fn layout(&self) -> Layout {
        layout::compute(self, self.area)
    }

    pub fn selected_session(&self) -> Option<&SessionView> {
        self.sessions.get(self.session_index)
    }

    /// The selected question, when the Questions pane's selection is one.
    pub fn selected_question(&self) -> Option<&QuestionView> {
        self.question_index
            .checked_sub(self.permissions.len() + self.ships.len())
            .and_then(|i| self.questions.get(i))
    }

    /// The selected ship request, when the Questions pane's selection is one.
    pub fn selected_ship(&self) -> Option<&ShipView> {
        self.question_index
            .checked_sub(self.permissions.len())
            .and_then(|i| self.ships.get(i))
    }

    /// The selected permission request, when the Questions pane's selection is one.
    pub fn selected_permission(&self) -> Option<&PermissionView> {
        self.permissions.get(self.question_index)
    }

    /// The rows of the Questions pane: permission requests, ship requests, questions.
    pub fn waiting_len(&self) -> usize {
        self.permissions.len() + self.ships.len() + self.questions.len()
    }

    pub fn permission_for(&self, work_item: &WorkItemRef) -> Option<&PermissionView> {
        self.permissions.iter().find(|p| &p.work_item == work_item)
    }

    pub fn selected_run(&self) -> Option<&CriticRunView> {
        self.runs.get(self.run_index)
    }

    /// The finding selected in the Critics pane, if a finding row is.
    pub fn selected_finding(&self) -> Option<&crate::critic::Finding> {
        let findings = &self.selected_run()?.result()?.findings;
        findings.get(self.finding_index?)
    }

    pub fn session_for(&self, work_item: &WorkItemRef) -> Option<&SessionView> {
        self.sessions.iter().find(|s| &s.work_item == work_item)
    }

    pub fn question_for(&self, work_item: &WorkItemRef) -> Option<&QuestionView> {
        self.questions.iter().find(|q| &q.work_item == work_item)
    }

    /// `#N` refs in dense rows when one repository is supervised.
    pub fn single_repo(&self) -> bool {
        self.status.repos.len() == 1
    }

    pub fn critic_running(&self) -> bool {
        self.runs.iter().any(CriticRunView::is_running)
    }

    /// The session the Pane previews: the selected one, when it has a session.
    pub fn preview_target(&self) -> Option<&SessionView> {
        self.selected_session().filter(|s| s.state.has_session())
    }

    /// The preview is refreshed only while it is on screen and has something to show.
    pub fn wants_preview(&self) -> bool {
        self.preview_target().is_some()
            && !matches!(
                self.mode,
                Mode::Help { .. } | Mode::Output { .. } | Mode::Diff { .. } | Mode::Comment(_)
            )
            && self
                .layout()
                .pane
                .is_some_and(|r| r.width > 2 && r.height > 2)
    }

    /// Whether the live message is still shown at `now`.
    pub fn message_visible(&self) -> bool {
        self.message
            .as_ref()
            .is_some_and(|m| (self.now - m.at).whole_seconds() < MESSAGE_SECS)
    }

    /// The keymap group keys go to first.
    pub fn key_group(&self) -> Group {
        self.mode.group().unwrap_or(self.focus.group())
    }
}
