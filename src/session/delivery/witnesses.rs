//! Two witnesses for a client release nobody recorded (issue 40). Claude Code ships a
//! release every few days; a list of recorded releases is stale within days, yet the
//! screen of a new release usually reads exactly as the last recorded one. So a paste
//! into such a session needs two independent witnesses to agree, whatever the release:
//!
//! 1. the **hooks** (a documented interface, stable across releases): the turn ended and
//!    no permission request is pending;
//! 2. the **screen**, read by structure with the newest recorded release's rules: an
//!    idle input box, empty, with no dialog below it, its footer naming the mode the
//!    session was started in (for a client whose footer names one).
//!
//! Agreement pastes exactly as on a recorded release. Where both say the same other
//! thing (a dialog while a request is pending, a draft, a turn running) the delivery
//! waits with that reason and goes out by itself once it clears. Where they disagree —
//! the hooks say idle and the screen reads something else or nothing, the screen reads
//! idle while a permission is pending, or a witness is silent — it is held
//! `screen-unread`, naming what each said ([`Verdict::Unread`]): never pasted on one
//! witness's word. Pure functions; the paste path asks [`judge`].

use super::hold::HoldReason;
use super::screen::{Dialog, InputBox, Look, Reader};
use crate::config::PermissionMode;
use crate::session::hooks::{Reported, ReportedState};
use serde::{Deserialize, Serialize};

/// What a paste into a release nobody recorded hears: the capture, what the reader
/// made of it, and the hooks' last report.
pub struct Witnessed<'a> {
    pub reader: Reader,
    /// The release, when its binary named one.
    pub version: Option<&'a str>,
    /// The `capture-pane -e` capture.
    pub screen: &'a str,
    pub look: &'a Look,
    pub reported: Option<&'a Reported>,
}

/// What the hooks said, reduced to what a paste asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HooksSay {
    /// The turn ended (or the session started and none ran yet); nothing pending.
    Idle,
    /// A permission request is open.
    PermissionPending,
    /// A turn runs.
    Working,
    /// The harness said its session ended.
    Exited,
    /// Nothing reported: the hooks are not wired, or not yet heard from.
    Silent,
}

impl HooksSay {
    pub fn of(reported: Option<&Reported>) -> Self {
        let Some(reported) = reported else {
            return Self::Silent;
        };
        if reported.permission.is_some() {
            return Self::PermissionPending;
        }
        match reported.state {
            ReportedState::Idle => Self::Idle,
            ReportedState::AwaitingPermission => Self::PermissionPending,
            ReportedState::Working => Self::Working,
            ReportedState::Exited => Self::Exited,
        }
    }

    /// For people and the event log: `idle`, `permission pending`, …
    pub fn describe(self) -> &'static str {
        match self {
            Self::Idle => "turn ended, no permission pending",
            Self::PermissionPending => "a permission request pending",
            Self::Working => "a turn running",
            Self::Exited => "the session ended",
            Self::Silent => "nothing reported",
        }
    }
}

/// What the screen read, by structure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScreenSays {
    /// An empty input box, no dialog, its footer (where the client has one) naming the
    /// mode the session was started in.
    Idle,
    /// A permission dialog below the box.
    PermissionDialog,
    /// Another dialog or menu (trust, a model's question, a picker).
    OtherDialog,
    /// The box holds text the-loop did not put there.
    Draft,
    /// An empty box whose footer names another mode than the one started in, or none
    /// the-loop reads: `Some(mode)` the one named.
    Footer(Option<PermissionMode>),
    /// Nothing drawn yet: a blank screen (starting).
    Blank,
    /// Something is drawn, but no input box the-loop reads.
    Unreadable,
}

impl ScreenSays {
    /// Reads `look` (and, for a client whose footer names its mode, what it names next
    /// to the mode `started`); `blank`: the capture held no text at all. Each of the
    /// two reads the capture again, so each is asked only where it decides: `blank` of
    /// a screen without a box, `footer` of an empty box.
    pub fn of(
        look: &Look,
        blank: impl FnOnce() -> bool,
        footer: impl FnOnce() -> Option<PermissionMode>,
        started: Option<PermissionMode>,
    ) -> Self {
        match (look.dialog, &look.input) {
            (Some(Dialog::Permission), _) => Self::PermissionDialog,
            (Some(Dialog::Other | Dialog::LimitMenu), _) => Self::OtherDialog,
            (None, InputBox::Holds(_)) => Self::Draft,
            (None, InputBox::NotDrawn) if blank() => Self::Blank,
            (None, InputBox::NotDrawn) => Self::Unreadable,
            (None, InputBox::Empty) => match (started, started.and_then(|_| footer())) {
                (Some(mode), footer) if footer != Some(mode) => Self::Footer(footer),
                _ => Self::Idle,
            },
        }
    }

    /// For people and the event log.
    pub fn describe(&self, started: Option<PermissionMode>) -> String {
        match self {
            Self::Idle => "an empty input box, no dialog".into(),
            Self::PermissionDialog => "a permission dialog".into(),
            Self::OtherDialog => "a dialog or menu".into(),
            Self::Draft => "text in the input box".into(),
            Self::Footer(named) => {
                let named = named.map_or("no mode it reads", PermissionMode::as_str);
                let started = started.map_or("?", PermissionMode::as_str);
                format!("an empty input box, its footer naming {named} (started in {started})")
            }
            Self::Blank => "nothing drawn yet".into(),
            Self::Unreadable => "no input box it reads".into(),
        }
    }
}

/// What the two witnesses said when they disagreed, as the record, the event log and
/// the screen show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Disagreement {
    /// What the hooks said (`turn ended, no permission pending`).
    pub hooks: String,
    /// What the screen read (`a permission dialog`).
    pub screen: String,
}

impl Disagreement {
    /// `hooks: turn ended, no permission pending; screen: a permission dialog`.
    pub fn describe(&self) -> String {
        format!("hooks: {}; screen: {}", self.hooks, self.screen)
    }
}

/// What the witnesses decide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Both say the session takes a paste now.
    Paste,
    /// Both say it cannot, and why: it goes out by itself once that clears.
    Wait(HoldReason),
    /// They disagree, or one is silent: held `screen-unread`.
    Unread(Disagreement),
}

impl Verdict {
    /// Why the paste waits: `None` to paste.
    pub fn hold(&self) -> Option<HoldReason> {
        match self {
            Self::Paste => None,
            Self::Wait(reason) => Some(*reason),
            Self::Unread(_) => Some(HoldReason::ScreenUnread),
        }
    }
}

/// The verdict of `hooks` and `screen` on a paste into a release nobody recorded.
pub fn judge(hooks: HooksSay, screen: &ScreenSays, started: Option<PermissionMode>) -> Verdict {
    let unread = || {
        Verdict::Unread(Disagreement {
            hooks: hooks.describe().to_string(),
            screen: screen.describe(started),
        })
    };
    match (hooks, screen) {
        (HooksSay::Idle, ScreenSays::Idle) => Verdict::Paste,
        // A draft is no disagreement: the hooks cannot see what the operator typed.
        (HooksSay::Idle | HooksSay::Working, ScreenSays::Draft) => {
            Verdict::Wait(HoldReason::OperatorDraft)
        }
        (HooksSay::PermissionPending, ScreenSays::PermissionDialog) => {
            Verdict::Wait(HoldReason::PermissionDialog)
        }
        // A request pending while the screen reads anything but its dialog: the dialog
        // may look new. Never pasted, never taken for answered.
        (HooksSay::PermissionPending, _) | (HooksSay::Silent, _) => unread(),
        // Starting: nothing drawn yet.
        (_, ScreenSays::Blank) => Verdict::Wait(HoldReason::NotReady),
        // A dialog, a menu or a box the hooks know nothing of.
        (HooksSay::Idle, _) => unread(),
        (HooksSay::Working | HooksSay::Exited, ScreenSays::PermissionDialog) => {
            Verdict::Wait(HoldReason::PermissionDialog)
        }
        (HooksSay::Working, _) => Verdict::Wait(HoldReason::TurnRunning),
        (HooksSay::Exited, _) => Verdict::Wait(HoldReason::NotReady),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn look(dialog: Option<Dialog>, input: InputBox) -> Look {
        Look { dialog, input }
    }

    const DEFAULT: Option<PermissionMode> = Some(PermissionMode::Default);

    #[test]
    fn the_screen_is_read_by_structure_and_footer() {
        let empty = look(None, InputBox::Empty);
        let idle = ScreenSays::of(&empty, || false, || DEFAULT, DEFAULT);
        assert_eq!(idle, ScreenSays::Idle);
        // A footer naming another mode, or none, is not the idle the-loop knows.
        assert_eq!(
            ScreenSays::of(&empty, || false, || Some(PermissionMode::Auto), DEFAULT),
            ScreenSays::Footer(Some(PermissionMode::Auto))
        );
        assert_eq!(
            ScreenSays::of(&empty, || false, || None, DEFAULT),
            ScreenSays::Footer(None)
        );
        // A client whose footer names no mode (codex) is read without it.
        assert_eq!(
            ScreenSays::of(&empty, || false, || None, None),
            ScreenSays::Idle
        );
        let cases = [
            (
                look(Some(Dialog::Permission), InputBox::NotDrawn),
                ScreenSays::PermissionDialog,
            ),
            (
                look(Some(Dialog::Other), InputBox::Empty),
                ScreenSays::OtherDialog,
            ),
            (
                look(None, InputBox::Holds("half a thought".into())),
                ScreenSays::Draft,
            ),
            (look(None, InputBox::NotDrawn), ScreenSays::Unreadable),
        ];
        for (look, want) in cases {
            assert_eq!(ScreenSays::of(&look, || false, || DEFAULT, DEFAULT), want);
        }
        assert_eq!(
            ScreenSays::of(&look(None, InputBox::NotDrawn), || true, || None, DEFAULT),
            ScreenSays::Blank
        );
    }

    #[test]
    fn only_agreement_pastes() {
        use HooksSay as H;
        use ScreenSays as S;
        let screens = [
            S::Idle,
            S::PermissionDialog,
            S::OtherDialog,
            S::Draft,
            S::Footer(Some(PermissionMode::Auto)),
            S::Footer(None),
            S::Blank,
            S::Unreadable,
        ];
        let hooks = [
            H::Idle,
            H::PermissionPending,
            H::Working,
            H::Exited,
            H::Silent,
        ];
        for h in hooks {
            for s in &screens {
                let verdict = judge(h, s, DEFAULT);
                let pastes = verdict == Verdict::Paste;
                assert_eq!(pastes, h == H::Idle && *s == S::Idle, "{h:?} {s:?}");
            }
        }
    }

    #[test]
    fn disagreement_names_both_witnesses() {
        use HooksSay as H;
        use ScreenSays as S;
        let unread = |h, s: S| match judge(h, &s, DEFAULT) {
            Verdict::Unread(d) => Some(d.describe()),
            _ => None,
        };
        // The stand-in whose dialog wording changed: an idle-shaped box while a
        // request is pending.
        assert_eq!(
            unread(H::PermissionPending, S::Idle).as_deref(),
            Some("hooks: a permission request pending; screen: an empty input box, no dialog")
        );
        assert_eq!(
            unread(H::Idle, S::PermissionDialog).as_deref(),
            Some("hooks: turn ended, no permission pending; screen: a permission dialog")
        );
        assert_eq!(
            unread(H::Idle, S::Footer(Some(PermissionMode::Auto))).as_deref(),
            Some(
                "hooks: turn ended, no permission pending; screen: an empty input box, its footer naming auto (started in default)"
            )
        );
        assert!(unread(H::Idle, S::Unreadable).is_some());
        assert!(unread(H::Idle, S::OtherDialog).is_some());
        assert!(unread(H::Silent, S::Idle).is_some());
        assert!(unread(H::PermissionPending, S::Unreadable).is_some());
        // Agreement on something else waits with its own reason.
        let wait = |h, s: S| match judge(h, &s, DEFAULT) {
            Verdict::Wait(reason) => Some(reason),
            _ => None,
        };
        assert_eq!(
            wait(H::PermissionPending, S::PermissionDialog),
            Some(HoldReason::PermissionDialog)
        );
        assert_eq!(wait(H::Idle, S::Draft), Some(HoldReason::OperatorDraft));
        assert_eq!(wait(H::Working, S::Idle), Some(HoldReason::TurnRunning));
        assert_eq!(wait(H::Idle, S::Blank), Some(HoldReason::NotReady));
        assert_eq!(wait(H::Working, S::Blank), Some(HoldReason::NotReady));
    }
}
