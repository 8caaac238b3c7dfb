//! Held deliveries (SPEC §18): a paste lands only on a ready, empty input box. Before
//! every paste into a harness whose screen the-loop knows, a fresh look at the pane and
//! the harness's reported state decide: paste, or **hold** with a reason — a permission
//! dialog is up (Enter would answer it), the operator has a draft in the box (it would be
//! submitted with the paste), or the harness has not drawn its box yet.
//!
//! What waits is kept in the session's record ([`Hold`]), so every process sees it
//! (`sessions list`, a viewer's screen) and a restart loses nothing:
//! - an event keeps its place in the session's lane and stays pending in the poll ledger
//!   (`events` says why, since when, how many wait);
//! - an operator reply is queued in the record (`replies`) and delivered by whoever
//!   looks next — the supervisor's release loop, or the `reply` command waiting for it;
//! - a paste that a dialog interrupted between the paste and its Enter is left in the
//!   box (`unsubmitted` names it): when the dialog is answered it is submitted, never
//!   pasted again.

use super::screen::{Dialog, InputBox, Look};
pub use super::witnesses::Disagreement;
use crate::session::hooks::{Reported, ReportedState};
use serde::{Deserialize, Serialize};
use std::time::Duration;
use time::OffsetDateTime;

/// Why a delivery waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HoldReason {
    /// A permission or approval dialog is on screen, or the harness reported
    /// `awaiting-permission`.
    PermissionDialog,
    /// The input box holds text the-loop did not put there.
    OperatorDraft,
    /// The harness has not drawn its input box (booting, a trust or login screen).
    NotReady,
    /// The session's cost, or every session's today, reached its budget (SPEC §20.4).
    OverBudget,
    /// The session runs a release of its client nobody recorded, and its two witnesses
    /// — the hooks and the screen read by structure — do not agree that it takes a
    /// paste (issue 40; `witnesses`): nothing is pasted on one witness's word. It goes
    /// out by itself once they agree; the operator may release one by hand.
    /// (`screen-unknown` in records of before: every such delivery was held then.)
    #[serde(alias = "screen-unknown")]
    ScreenUnread,
    /// A turn runs, on a release nobody recorded: its deliveries wait for the turn's end
    /// (a recorded release takes a paste mid-turn; this one is not trusted to).
    TurnRunning,
    /// The session's host cannot be reached (issue 32): nothing is known of its
    /// screen; the delivery goes out once the host answers again.
    HostUnreachable,
    /// The session's turns fail on a limit (issue 43: a usage limit, a rate limit, the
    /// API overloaded): it waits for the reset the client printed or the back-off, then
    /// one delivery tries and the rest follow once its turn ends well.
    Limit,
    /// The session's login expired or its key was refused (issue 43): nothing goes out
    /// until a turn succeeds.
    Login,
    /// The client's own menu on a limit is up (Claude Code 2.1.197's
    /// `/rate-limit-options`, issue 43): it waits for an answer in the pane, which
    /// the-loop does not give (its options wait, or upgrade the plan).
    LimitMenu,
}

impl HoldReason {
    /// As in events and `sessions list --json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PermissionDialog => "permission-dialog",
            Self::OperatorDraft => "operator-draft",
            Self::NotReady => "not-ready",
            Self::OverBudget => "over-budget",
            Self::ScreenUnread => "screen-unread",
            Self::TurnRunning => "turn-running",
            Self::HostUnreachable => "host-unreachable",
            Self::Limit => "limit",
            Self::Login => "login",
            Self::LimitMenu => "limit-menu",
        }
    }

    /// For people: `⏸ 2 held: permission dialog`.
    pub fn describe(self) -> &'static str {
        match self {
            Self::PermissionDialog => "permission dialog",
            Self::OperatorDraft => "operator's draft",
            Self::NotReady => "harness not ready",
            Self::OverBudget => "over budget",
            Self::ScreenUnread => "screen unread",
            Self::TurnRunning => "turn running",
            Self::HostUnreachable => "host unreachable",
            Self::Limit => "limit",
            Self::Login => "login expired",
            Self::LimitMenu => "limit menu",
        }
    }

    /// `a permission dialog`, for "#12 waits on …".
    pub fn describe_waiting(self) -> &'static str {
        match self {
            Self::PermissionDialog => "a permission dialog",
            Self::OperatorDraft => "the operator's draft in its input box",
            Self::NotReady => "its harness, which has not drawn its input box yet",
            Self::OverBudget => "its budget, which it has reached",
            Self::ScreenUnread => {
                "you: its hooks and its screen, from a release the-loop has not recorded, disagree"
            }
            Self::TurnRunning => "its agent's turn to end",
            Self::HostUnreachable => "its host, which does not answer over SSH",
            Self::Limit => "its limit to reset",
            Self::Login => "a login: its harness's was refused",
            Self::LimitMenu => {
                "its client's limit menu (`/rate-limit-options`), which waits for an answer"
            }
        }
    }

    /// What the operator can do about it.
    pub fn advice(self) -> &'static str {
        match self {
            Self::PermissionDialog => "answer it first",
            Self::OperatorDraft => "send or clear the draft in the pane first",
            Self::NotReady => "it goes out once the harness shows its input box",
            Self::OverBudget => {
                "raise sessions.budgetUsd or budgets.dailyUsd in the config, or deliver it anyway with confirmation"
            }
            Self::ScreenUnread => {
                "look at the pane: it goes out by itself once the hooks and the screen agree, or deliver one by hand once its turn has ended (`the-loop sessions deliver REF`, D); the screen was kept under the state root's clients/screens"
            }
            Self::TurnRunning => "it goes out once the turn ends",
            Self::HostUnreachable => {
                "it goes out, once and in order, when the host answers again (`the-loop hosts check NAME` says why it does not)"
            }
            Self::Limit => "it goes out, once and in order, after the reset or the back-off",
            Self::Login => {
                "log in again in the pane (`the-loop sessions attach REF`); it goes out once a turn succeeds"
            }
            Self::LimitMenu => {
                "answer it in the pane (`the-loop sessions attach REF`): `1. Stop and wait for limit to reset` waits, and what is held goes out once, in order, after the reset"
            }
        }
    }
}

impl std::str::FromStr for HoldReason {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        [
            Self::PermissionDialog,
            Self::OperatorDraft,
            Self::NotReady,
            Self::OverBudget,
            Self::ScreenUnread,
            Self::TurnRunning,
            Self::HostUnreachable,
            Self::Limit,
            Self::Login,
            Self::LimitMenu,
        ]
        .into_iter()
        .find(|r| r.as_str() == s)
        .or((s == "screen-unknown").then_some(Self::ScreenUnread))
        .ok_or(())
    }
}

/// Whether a paste may land now: `None` to paste, else why not. The screen decides
/// first; a reported `awaiting-permission` holds too, even before the dialog is drawn.
pub fn decide(look: &Look, reported: Option<&Reported>) -> Option<HoldReason> {
    dialog(look, reported).or(match &look.input {
        InputBox::Empty => None,
        InputBox::Holds(_) => Some(HoldReason::OperatorDraft),
        InputBox::NotDrawn => Some(HoldReason::NotReady),
    })
}

/// Whether a dialog stands in the way, whatever the box holds: the Enter after a
/// paste asks only this (the box then holds the paste).
pub fn dialog(look: &Look, reported: Option<&Reported>) -> Option<HoldReason> {
    let awaiting = reported.is_some_and(|r| r.state == ReportedState::AwaitingPermission);
    match look.dialog {
        Some(Dialog::Permission) => Some(HoldReason::PermissionDialog),
        _ if awaiting => Some(HoldReason::PermissionDialog),
        // The trust screen, a menu, a question the model asks: the harness is not at
        // its input box (Enter would choose an option).
        Some(Dialog::Other) => Some(HoldReason::NotReady),
        // Claude Code's menu on a usage limit: it stays until someone answers it.
        Some(Dialog::LimitMenu) => Some(HoldReason::LimitMenu),
        None => None,
    }
}

/// How much longer a paste waits for the harness to finish ending its turn: `Some`
/// while the report of the turn's end (`idle`) is younger than `settle`. Claude Code
/// runs its `Stop` hooks then, and an Enter that lands meanwhile is taken while the
/// paste stays in the box (decision `2026-12-02-submit-check`).
pub fn settling(reported: &Reported, settle: Duration, now: OffsetDateTime) -> Option<Duration> {
    if reported.state != ReportedState::Idle {
        return None;
    }
    let at = crate::time::parse_ts(&reported.at)?;
    let age = Duration::try_from(now - at).unwrap_or(Duration::ZERO);
    settle.checked_sub(age).filter(|left| !left.is_zero())
}

/// A delivery the session held back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    pub reason: HoldReason,
    /// The text is in the box, its Enter stopped by a dialog: the next try submits it
    /// (the record's `hold.unsubmitted` names it) instead of pasting it again.
    pub pasted: bool,
}

/// What waits on a session, in its record (`hold`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hold {
    /// The session's event lane is held (its first event waits; the rest queue behind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<HeldEvents>,
    /// Operator replies waiting, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replies: Vec<HeldReply>,
    /// The key of a delivery pasted into the box whose Enter a dialog stopped: it is
    /// submitted when the dialog is answered, never pasted again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsubmitted: Option<String>,
    /// The buffer, loaded on the session's host, that settles the `unsubmitted` paste
    /// a dropped connection left in doubt (`delivery::in_doubt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_doubt: Option<String>,
    /// The operator asked for one delivery held `screen-unread` to go out (`sessions
    /// deliver`), at this time: the next try takes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_one: Option<String>,
    /// What the witnesses said when they last disagreed (`screen-unread`), and where
    /// that screen was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unread: Option<UnreadScreen>,
}

/// A screen the hooks disagreed with, on a release nobody recorded (issue 40).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnreadScreen {
    #[serde(flatten)]
    pub said: Disagreement,
    /// The screen as kept under the state root (`clients/screens/…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<std::path::PathBuf>,
    /// A hash of that screen: the same screen is not kept twice.
    pub screen_hash: String,
    /// When the witnesses first said this (RFC 3339): it is announced once it lasts.
    pub since: String,
}

impl Hold {
    pub fn is_empty(&self) -> bool {
        self.events.is_none()
            && self.replies.is_empty()
            && self.unsubmitted.is_none()
            && self.in_doubt.is_none()
            && self.release_one.is_none()
            && self.unread.is_none()
    }

    /// What waits, for people and `sessions list --json` (`held`): `None` when nothing.
    pub fn summary(&self) -> Option<HeldSummary> {
        let (reason, since) = match (&self.events, self.replies.first()) {
            (Some(e), Some(r)) if r.since < e.since => (r.reason, r.since.clone()),
            (Some(e), _) => (e.reason, e.since.clone()),
            (None, Some(r)) => (r.reason, r.since.clone()),
            (None, None) => return None,
        };
        let count = self.events.as_ref().map_or(0, |e| e.waiting) + self.replies.len();
        let witnesses = self
            .unread
            .as_ref()
            .filter(|_| reason == HoldReason::ScreenUnread)
            .map(|u| u.said.clone());
        Some(HeldSummary {
            count,
            reason,
            since,
            client: None,
            witnesses,
            limit: None,
            limit_since: None,
        })
    }
}

/// The held event lane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HeldEvents {
    pub reason: HoldReason,
    /// When the hold began (RFC 3339).
    pub since: String,
    /// Events waiting: the held one and those queued behind it.
    pub waiting: usize,
}

/// An operator reply waiting for its session's hold to clear.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HeldReply {
    /// Names it while it waits (`reply --wait` watches for it to go).
    pub id: String,
    /// The framed text, as it will be pasted.
    pub text: String,
    /// The text as the operator wrote it, for the delivery report.
    pub reply: String,
    pub actor: String,
    /// `tui`, `cli` or `api`.
    pub via: String,
    /// Post the delivery report once delivered.
    pub comment: bool,
    pub reason: HoldReason,
    pub since: String,
    /// The operator confirmed it for a session over its budget (SPEC §20.4): held for
    /// another reason, it still goes out over budget once that reason clears.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub over_budget: bool,
    /// Set when this is the operator's review of the diff (SPEC §21.2), not a reply:
    /// its release is recorded as `session.review_sent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<HeldReview>,
}

/// What a held review records when it goes out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HeldReview {
    pub comments: usize,
    pub sha: String,
}

/// What waits on a session, summed up (`⏸ 2 held: permission dialog`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HeldSummary {
    pub count: usize,
    pub reason: HoldReason,
    pub since: String,
    /// The client release the witnesses disagreed on (`Claude Code 2.1.400`), for
    /// `screen-unread`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// What each witness said, for `screen-unread`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub witnesses: Option<Disagreement>,
    /// The limit, for `limit` and `login`: `usage limit · resets 14:00`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
    /// When that limit was hit: the holds it makes are one (they notify once).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit_since: Option<String>,
}

impl HeldSummary {
    /// `⏸ 2 held: permission dialog`, `⏸ 1 held: screen unread (Claude Code 2.1.400)`.
    pub fn label(&self) -> String {
        format!("⏸ {} held: {}", self.count, self.reason_text())
    }

    /// The reason for people, with the client when the screen is unread.
    pub fn reason_text(&self) -> String {
        match self.client.as_ref().or(self.limit.as_ref()) {
            Some(about) => format!("{} ({about})", self.reason.describe()),
            None => self.reason.describe().to_string(),
        }
    }
}

#[cfg(test)]
#[path = "hold_tests.rs"]
mod tests;
