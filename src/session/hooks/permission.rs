//! The operator answers a harness's permission dialog from the-loop (SPEC §17.4):
//! `the-loop sessions approve|deny REF` and the TUI's keys call [`answer`].
//!
//! A key is sent only while a fresh `capture-pane` shows the dialog
//! ([`delivery::dialog_shown`]): Enter chooses the selected "1. Yes", Escape denies.
//! These are fixed keystrokes ([`delivery::press_on_dialog`]), never text from anywhere.
//! The answer names the request it is for, so it never lands on a newer dialog, and it
//! is sent under the session's paste lock, so it never submits a paste in progress. A request whose dialog is gone was
//! answered in the pane: it resolves as `elsewhere` — found by [`answer`], or by
//! [`reconcile`] whenever a screen or `sessions list` looks at the sessions.

use super::report::outcome_event;
use super::state::{self, Answer, Decision, PermissionRequest};
use crate::channel::{ChannelRecord, codex};
use crate::events::Source;
use crate::harness::{Harness, ScreenKind};
use crate::session::activity::SessionActivity;
use crate::session::delivery::{self, ChannelApproval, Key, Screen, ScreenReader, Sight};
use crate::session::registry::{RegistryError, SessionRecord};
use crate::session::{PaneState, Sessions, Timings};
use crate::tmux::{self, Liveness};
use crate::work_item::WorkItemRef;
use std::time::Duration;

/// A request younger than this may not be drawn yet: it is not taken for answered.
pub const DRAW_GRACE: Duration = Duration::from_secs(3);

/// How long an answer waits for a paste in progress to the same session.
const PASTE_WAIT: Duration = Duration::from_secs(10);

/// At most this many presses of the answer's key on one dialog ([`press_until_taken`]).
const PRESSES: u32 = 3;

/// What an answer did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answered {
    /// The key was sent.
    Sent {
        decision: Decision,
        request: PermissionRequest,
    },
    /// The dialog was no longer there (answered in the pane, or the harness is gone):
    /// resolved as `elsewhere`, nothing sent.
    Elsewhere(PermissionRequest),
}

#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    /// (The work item, as written.)
    #[error("no session for {0}")]
    NoSession(String),
    #[error("nothing is waiting for permission on {0}")]
    NothingWaiting(String),
    #[error(
        "the permission request on {item} changed since you looked (now: {tool} `{summary}`); look again"
    )]
    Changed {
        item: String,
        tool: String,
        summary: String,
    },
    #[error("could not reach {item}'s pane: {error}; nothing was sent")]
    Tmux {
        item: String,
        error: Box<tmux::Error>,
    },
    #[error("{0}; nothing was sent")]
    Busy(String),
    #[error("could not reach {item}'s app server: {error}; nothing was sent")]
    Channel { item: String, error: String },
    /// A release nobody recorded whose screen does not read as the pending request's
    /// dialog: a key now could land anywhere.
    #[error(
        "the screen of {item} ({client}, a release the-loop has not recorded) does not read as the permission dialog its hooks report; nothing was sent: answer it in the pane (`the-loop sessions attach {item}`)"
    )]
    Unread { item: String, client: String },
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

impl AnswerError {
    /// Refusals (the request is not there) rather than failures.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            Self::NoSession(_)
                | Self::NothingWaiting(_)
                | Self::Changed { .. }
                | Self::Unread { .. }
        )
    }
}

/// Answers `item`'s open permission request with `decision` (approved or denied),
/// when it is the request `expected` (when given) and its dialog is on screen.
pub async fn answer(
    sessions: &Sessions,
    item: &WorkItemRef,
    decision: Decision,
    expected: Option<&str>,
    actor: Option<String>,
    source: Source,
) -> Result<Answered, AnswerError> {
    let record = sessions
        .registry()
        .get(item)?
        .ok_or_else(|| AnswerError::NoSession(item.to_string()))?;
    let item = record.work_item.clone();
    let request = pending(&record).ok_or_else(|| AnswerError::NothingWaiting(item.to_string()))?;
    let changed = |now: &PermissionRequest| AnswerError::Changed {
        item: item.to_string(),
        tool: now.tool.clone(),
        summary: now.summary.clone(),
    };
    let unreachable = |error: tmux::Error| AnswerError::Tmux {
        item: item.to_string(),
        error: Box::new(error),
    };
    if expected.is_some_and(|id| id != request.id) {
        return Err(changed(&request));
    }
    let _lock = delivery::lock_session(sessions.registry().dir(), &item, PASTE_WAIT)
        .await
        .map_err(|e| AnswerError::Busy(e.to_string()))?;
    if let Some(channel) = &record.channel {
        let asked = Asked {
            request,
            decision,
            actor,
            source,
        };
        return match channel {
            // opencode (issue 44): answered through its server.
            ChannelRecord::OpencodeServer { .. } => {
                answer_by_opencode(sessions, &item, channel, asked).await
            }
            ChannelRecord::CodexAppServer { .. } => {
                by_channel(sessions, channel, &record, asked).await
            }
        };
    }
    let pane = match sessions.locate(&record).await {
        PaneState::Live(pane) => pane,
        PaneState::Dead(_) | PaneState::Absent => {
            return gone(sessions, &item, request, source);
        }
        PaneState::Unknown(error) => return Err(unreachable(error)),
    };
    let tmux = sessions.tmux_of(&record).map_err(unreachable)?;
    let client = sessions.client_screen(&record).await;
    let dialog = Dialog {
        tmux: tmux.as_ref(),
        pane: &pane,
        screen: screen_of(sessions, &record),
        timings: sessions.settings().timings,
    };
    if !dialog.stands(&request).await.map_err(unreachable)? {
        // On a release nobody recorded, a dialog the screen does not read may be one
        // whose wording moved: the hooks' word stands, nothing is settled.
        if let Screen::Unrecorded(_) = client {
            return Err(AnswerError::Unread {
                item: item.to_string(),
                client: record.client_release(),
            });
        }
        return gone(sessions, &item, request, source);
    }
    // Both witnesses read the request's dialog: seen live of that release.
    if let (Screen::Unrecorded(Some(version)), Some(reader)) =
        (&client, ScreenReader::of(dialog.screen))
    {
        let (releases, version) = (sessions.client_releases(), version.clone());
        let _ = tokio::task::spawn_blocking(move || {
            releases.mark(reader, &version, Sight::Dialog);
        })
        .await;
    }
    // Claim the request for this answer before the key goes out: the tool it approves
    // may report back before the key's sender does.
    if !claim(sessions, &item, &request, decision, &actor, source)? {
        return Err(changed(&request));
    }
    let key = match decision {
        Decision::Approved => Key::Enter,
        Decision::Denied | Decision::Elsewhere => Key::Escape,
    };
    let pressed = dialog
        .press_until_taken(sessions, &item, &request, key)
        .await;
    if let Err(error) = pressed {
        unclaim(sessions, &item, &request);
        return Err(unreachable(error));
    }
    settle(sessions, &item, &request.id, decision, actor, source)?;
    Ok(Answered::Sent { decision, request })
}

/// An answer the operator gave, on its way.
struct Asked {
    request: PermissionRequest,
    decision: Decision,
    actor: Option<String>,
    source: Source,
}

/// [`answer`] through the session's channel (`Sessions::channel_approval`): the request
/// found on the protocol and answered there, no key; none pending on the thread was
/// answered elsewhere.
async fn by_channel(
    sessions: &Sessions,
    channel: &ChannelRecord,
    record: &SessionRecord,
    asked: Asked,
) -> Result<Answered, AnswerError> {
    let item = &record.work_item;
    let Asked {
        request,
        decision,
        actor,
        source,
    } = asked;
    let unreachable = |error: codex::Error| AnswerError::Channel {
        item: item.to_string(),
        error: error.to_string(),
    };
    let found = match sessions
        .channel_approval(channel, record, &request.tool, &request.summary)
        .await
    {
        Ok(found) => found,
        Err(error) => {
            // Its server gone with the session: nothing waits any more.
            if matches!(
                sessions.locate(record).await,
                PaneState::Dead(_) | PaneState::Absent
            ) {
                return gone(sessions, item, request, source);
            }
            return Err(unreachable(error));
        }
    };
    let pending = match found {
        ChannelApproval::Pending(pending) => pending,
        ChannelApproval::None => return gone(sessions, item, request, source),
        ChannelApproval::Other { command } => {
            return Err(AnswerError::Changed {
                item: item.to_string(),
                tool: request.tool.clone(),
                summary: command,
            });
        }
    };
    if !claim(sessions, item, &request, decision, &actor, source)? {
        return Err(AnswerError::Changed {
            item: item.to_string(),
            tool: request.tool.clone(),
            summary: request.summary.clone(),
        });
    }
    let answer = match decision {
        Decision::Approved => codex::Decision::Accept,
        Decision::Denied | Decision::Elsewhere => codex::Decision::Decline,
    };
    if let Err(error) = pending.answer(answer).await {
        unclaim(sessions, item, &request);
        return Err(unreachable(error));
    }
    settle(sessions, item, &request.id, decision, actor, source)?;
    Ok(Answered::Sent { decision, request })
}

/// Marks `request` as being answered with `decision`; false when it is no longer the
/// open request or another answer claimed it first.
fn claim(
    sessions: &Sessions,
    item: &WorkItemRef,
    request: &PermissionRequest,
    decision: Decision,
    actor: &Option<String>,
    source: Source,
) -> Result<bool, RegistryError> {
    let claimed = sessions.registry().update(item, |r| {
        let p = r.reported.as_mut()?.permission.as_mut()?;
        (p.id == request.id && p.answering.is_none()).then(|| {
            p.answering = Some(Answer {
                decision,
                actor: actor.clone(),
                source: Some(source),
            });
        })
    })?;
    Ok(claimed.flatten().is_some())
}

/// Takes back a claim whose answer did not go out.
fn unclaim(sessions: &Sessions, item: &WorkItemRef, request: &PermissionRequest) {
    let _ = sessions.registry().update(item, |r| {
        if let Some(p) = r.reported.as_mut().and_then(|s| s.permission.as_mut())
            && p.id == request.id
        {
            p.answering = None;
        }
    });
}

/// [`answer`] for an opencode session (issue 44): claimed, then sent to its server
/// (`session::opencode::answer`). A request the server no longer has was answered in
/// the TUI (its `permission.replied` settles it with the decision given there) or went
/// away: settled as `elsewhere` unless that already happened — never an error.
async fn answer_by_opencode(
    sessions: &Sessions,
    item: &WorkItemRef,
    channel: &ChannelRecord,
    asked: Asked,
) -> Result<Answered, AnswerError> {
    use crate::session::opencode::answer::{Replied, reply};
    let Asked {
        request,
        decision,
        actor,
        source,
    } = asked;
    if !claim(sessions, item, &request, decision, &actor, source)? {
        let now = sessions.registry().get(item)?.as_ref().and_then(pending);
        return Err(match now {
            Some(now) => AnswerError::Changed {
                item: item.to_string(),
                tool: now.tool,
                summary: now.summary,
            },
            None => AnswerError::NothingWaiting(item.to_string()),
        });
    }
    match reply(channel, &request.id, decision == Decision::Approved).await {
        Ok(Replied::Taken) => {
            settle(sessions, item, &request.id, decision, actor, source)?;
            Ok(Answered::Sent { decision, request })
        }
        Ok(Replied::NotThere) => {
            unclaim(sessions, item, &request);
            gone(sessions, item, request, source)
        }
        Err(not_sent) => {
            if !not_sent.in_doubt {
                unclaim(sessions, item, &request);
            }
            Err(AnswerError::Busy(format!("{item}: {}", not_sent.reason)))
        }
    }
}

/// A session's pane, looked at for its harness's permission dialog.
struct Dialog<'a> {
    tmux: &'a dyn tmux::Tmux,
    pane: &'a tmux::PaneId,
    screen: ScreenKind,
    timings: Timings,
}

impl Dialog<'_> {
    async fn shown(&self) -> Result<bool, tmux::Error> {
        delivery::dialog_shown(self.tmux, self.pane, self.screen).await
    }

    /// Whether the request's dialog is on screen and has stood there long enough to
    /// take a key. Claude Code ignores keys for a moment after it draws a dialog (2.1.332
    /// dropped an Enter ~100 ms after the dialog appeared and took one ~270 ms after; on
    /// a loaded machine the dialog is drawn well after the hook reported it), so the key
    /// goes out only after two looks `Timings::settle` apart both show it — unless the
    /// request is already [`DRAW_GRACE`] old. A younger request whose dialog is not
    /// drawn yet is waited for.
    async fn stands(&self, request: &PermissionRequest) -> Result<bool, tmux::Error> {
        let age = crate::time::parse_ts(&request.requested_at)
            .and_then(|at| Duration::try_from(time::OffsetDateTime::now_utc() - at).ok());
        let left = age.map_or(Duration::ZERO, |age| DRAW_GRACE.saturating_sub(age));
        let deadline = tokio::time::Instant::now() + left;
        while !self.shown().await? {
            if tokio::time::Instant::now() >= deadline {
                return Ok(false);
            }
            tokio::time::sleep(self.timings.poll).await;
        }
        if left.is_zero() {
            // Reported DRAW_GRACE ago and on screen now: drawn long enough (a key it
            // still drops is pressed again, `press_until_taken`).
            return Ok(true);
        }
        tokio::time::sleep(self.timings.settle).await;
        self.shown().await
    }

    /// Presses `key` on the request's dialog and, when `Timings::dialog_confirm` is
    /// set, watches the dialog go. A dialog still there that long after the key, with no
    /// newer request reported, did not take it: the key goes again, at most [`PRESSES`]
    /// times in all (a fixed keystroke on the same dialog; a newer dialog is never
    /// pressed, since its hook reports it before it is drawn).
    async fn press_until_taken(
        &self,
        sessions: &Sessions,
        item: &WorkItemRef,
        request: &PermissionRequest,
        key: Key,
    ) -> Result<(), tmux::Error> {
        let confirm = self.timings.dialog_confirm;
        for press in 1..=PRESSES {
            delivery::press_on_dialog(self.tmux, self.pane, key).await?;
            if confirm.is_zero() || press == PRESSES {
                return Ok(());
            }
            let deadline = tokio::time::Instant::now() + confirm;
            loop {
                tokio::time::sleep(self.timings.poll).await;
                if !self.shown().await? {
                    return Ok(());
                }
                if tokio::time::Instant::now() >= deadline {
                    break;
                }
            }
            let same = sessions
                .registry()
                .get(item)
                .ok()
                .flatten()
                .and_then(|r| pending(&r))
                .is_some_and(|p| p.id == request.id);
            if !same {
                return Ok(());
            }
            tracing::warn!(
                work_item = %item,
                request = %request.id,
                "the permission dialog is still there {confirm:?} after the key: pressing it again"
            );
        }
        Ok(())
    }
}

/// Resolves the request as `elsewhere`: its dialog is not on screen.
fn gone(
    sessions: &Sessions,
    item: &WorkItemRef,
    request: PermissionRequest,
    source: Source,
) -> Result<Answered, AnswerError> {
    settle(
        sessions,
        item,
        &request.id,
        Decision::Elsewhere,
        None,
        source,
    )?;
    Ok(Answered::Elsewhere(request))
}

/// Resolves request `id` in the record and logs it — unless a report already did.
fn settle(
    sessions: &Sessions,
    item: &WorkItemRef,
    id: &str,
    decision: Decision,
    actor: Option<String>,
    source: Source,
) -> Result<(), RegistryError> {
    let now = crate::time::now_ts();
    let outcome = sessions.registry().update(item, |r| {
        state::answered(r.reported.as_mut()?, id, decision, actor, &now)
    })?;
    if let Some(outcome) = outcome.flatten() {
        sessions.emit(outcome_event(source, item, &outcome));
    }
    Ok(())
}

/// The record's open permission request.
pub fn pending(record: &SessionRecord) -> Option<PermissionRequest> {
    record.reported.as_ref()?.permission.clone()
}

/// Resolves as `elsewhere` every open request (older than [`DRAW_GRACE`], not being
/// answered) whose dialog is gone: the harness exited, or its screen no longer shows
/// it. `seen`: the activity pass that just looked at `records`.
pub async fn reconcile(
    sessions: &Sessions,
    records: &[SessionRecord],
    seen: &[SessionActivity],
    source: Source,
) {
    let now = time::OffsetDateTime::now_utc();
    for (record, activity) in records.iter().zip(seen) {
        let Some(request) = pending(record).filter(|r| r.answering.is_none()) else {
            continue;
        };
        let old_enough = crate::time::parse_ts(&request.requested_at)
            .is_none_or(|at| (now - at).unsigned_abs() >= DRAW_GRACE);
        if !old_enough {
            continue;
        }
        let answered = match (activity.liveness, &activity.pane) {
            (Liveness::Dead | Liveness::Absent, _) => true,
            // A channel tells it (codex's thread's status, opencode's pending
            // requests), not the screen.
            (Liveness::Live, _) if let Some(channel) = &record.channel => {
                sessions
                    .channel_request_stands(channel, record, &request.id)
                    .await
                    == Some(false)
            }
            // A release nobody recorded: a dialog its screen does not read is not taken
            // for answered (its hooks settle it).
            (Liveness::Live, Some(_))
                if matches!(sessions.client_screen(record).await, Screen::Unrecorded(_)) =>
            {
                false
            }
            (Liveness::Live, Some(pane)) => {
                let Ok(tmux) = sessions.tmux_of(record) else {
                    continue;
                };
                match delivery::dialog_shown(tmux.as_ref(), pane, screen_of(sessions, record)).await
                {
                    Ok(shown) => !shown,
                    Err(tmux::Error::PaneDead { .. } | tmux::Error::SessionMissing { .. }) => true,
                    Err(error) => {
                        tracing::debug!(work_item = %record.work_item, "dialog not checked: {error}");
                        false
                    }
                }
            }
            _ => false,
        };
        if answered {
            let settled = settle(
                sessions,
                &record.work_item,
                &request.id,
                Decision::Elsewhere,
                None,
                source,
            );
            if let Err(error) = settled {
                tracing::warn!(work_item = %record.work_item, "permission request not settled: {error}");
            }
        }
    }
}

/// Whose screen the session's harness draws: the dialog is looked for in its shape.
fn screen_of(sessions: &Sessions, record: &SessionRecord) -> ScreenKind {
    Harness::resolve(&record.harness, &sessions.settings().sessions)
        .map_or(ScreenKind::Unknown, |h| h.screen())
}

#[cfg(test)]
#[path = "permission_tests.rs"]
mod tests;
