//! opencode's events as the record's `reported` state (SPEC §17.3), the way hooks move
//! it for the other harnesses: `working` while its session is busy, `awaiting-permission`
//! from `permission.asked` until `permission.replied` (by the-loop's answer, or the
//! operator's in the TUI: then recorded with the decision given there), `idle` — and a
//! turn ended — when the session goes idle. Pure: [`step`] takes the stored report and
//! one event of the session's own opencode session.

use crate::channel::opencode::{Event, Permission, Reply, Status};
use crate::session::hooks::state::{Decision, Outcome, PermissionRequest, one_line};
use crate::session::hooks::{Reported, ReportedState};

/// How the record names the reporter.
pub const REPORTER: &str = "opencode";

/// The next report after `event` at `now`, and what the log should say; `None` when the
/// event changes nothing.
pub fn step(
    previous: Option<&Reported>,
    event: &Event,
    now: &str,
) -> Option<(Reported, Vec<Outcome>)> {
    let mut next = previous.cloned().unwrap_or_else(|| Reported {
        harness: REPORTER.to_string(),
        state: ReportedState::Idle,
        at: now.to_string(),
        event: String::new(),
        permission: None,
        last_tool: None,
        conversation: None,
        model: None,
        prompts: 0,
    });
    let mut out = Vec::new();
    let (name, state) = match event {
        Event::Status {
            status: Status::Busy | Status::Retry { .. },
            ..
        } => {
            if next.state == ReportedState::Working || next.permission.is_some() {
                return None;
            }
            next.prompts += 1;
            ("session.status busy", ReportedState::Working)
        }
        Event::Status {
            status: Status::Idle,
            ..
        } => {
            let was = previous.map(|p| p.state);
            if was == Some(ReportedState::Idle) && next.permission.is_none() {
                return None;
            }
            resolve(&mut next, None, &mut out);
            if matches!(
                was,
                Some(ReportedState::Working | ReportedState::AwaitingPermission)
            ) {
                out.push(Outcome::TurnEnded);
            }
            ("session.status idle", ReportedState::Idle)
        }
        Event::PermissionAsked(asked) => {
            if next.permission.as_ref().is_some_and(|p| p.id == asked.id) {
                return None;
            }
            resolve(&mut next, None, &mut out);
            let request = request_of(asked, now);
            out.push(Outcome::PermissionRequested(request.clone()));
            next.permission = Some(request);
            ("permission.asked", ReportedState::AwaitingPermission)
        }
        Event::PermissionReplied { request, reply, .. } => {
            if next.permission.as_ref().is_none_or(|p| &p.id != request) {
                return None;
            }
            resolve(&mut next, *reply, &mut out);
            ("permission.replied", ReportedState::Working)
        }
        Event::AssistantUpdated(message) => {
            if message.model.is_empty() || next.model.as_deref() == Some(&message.model) {
                return None;
            }
            next.model = Some(message.model.clone());
            ("message.updated", next.state)
        }
        Event::Other(_) => return None,
    };
    next.harness = REPORTER.to_string();
    next.at = now.to_string();
    next.event = name.to_string();
    next.state = if next.permission.is_some() {
        ReportedState::AwaitingPermission
    } else {
        state
    };
    Some((next, out))
}

/// The report of a session whose server just took a prompt (its boot prompt): working,
/// so its going idle — perhaps before anyone follows its events — ends a turn.
pub fn prompted(session: &str, now: &str) -> Reported {
    Reported {
        harness: REPORTER.to_string(),
        state: ReportedState::Working,
        at: now.to_string(),
        event: "prompt_async".to_string(),
        permission: None,
        last_tool: None,
        conversation: Some(session.to_string()),
        model: None,
        prompts: 1,
    }
}

/// The record's request for `asked`: opencode's id, the kind asked (`bash`, `edit`,
/// `external_directory`) as the tool, the exact patterns as the summary.
pub fn request_of(asked: &Permission, now: &str) -> PermissionRequest {
    PermissionRequest {
        id: asked.id.clone(),
        tool: asked.permission.clone(),
        summary: one_line(&asked.patterns.join(" ")),
        requested_at: now.to_string(),
        answering: None,
    }
}

/// The open request is over: by the answer the-loop is sending, else by `reply` given
/// elsewhere (the TUI), else it went away (the turn ended, the server restarted).
fn resolve(next: &mut Reported, reply: Option<Reply>, out: &mut Vec<Outcome>) {
    let Some(request) = next.permission.take() else {
        return;
    };
    let (decision, actor) = match (&request.answering, reply) {
        (Some(answer), _) => (answer.decision, answer.actor.clone()),
        (None, Some(Reply::Once | Reply::Always)) => (Decision::Approved, None),
        (None, Some(Reply::Reject)) => (Decision::Denied, None),
        (None, None) => (Decision::Elsewhere, None),
    };
    out.push(Outcome::PermissionResolved {
        request,
        decision,
        actor,
    });
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
