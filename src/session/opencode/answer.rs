//! `sessions approve|deny` (and the TUI's keys) for an opencode session: the answer goes
//! to its server as `POST /permission/{id}/reply` — `once` or `reject`, never `always`
//! — no key in the pane. The request is claimed in the record first (`answering`), so
//! the server's `permission.replied` that may come back before this returns resolves it
//! as this answer. A request the server no longer has was answered elsewhere (in the
//! TUI, or it went away): settled as `elsewhere`, not an error.

use super::server_of;
use crate::channel::ChannelRecord;
use crate::channel::opencode::{Error, Reply};
use crate::events::Source;
use crate::session::Sessions;
use crate::session::hooks::permission::{AnswerError, Answered, pending, settle};
use crate::session::hooks::state::{Answer, Decision, PermissionRequest};
use crate::session::registry::SessionRecord;

/// Answers `request` of `record`'s session, whose channel is an opencode server.
pub async fn answer(
    sessions: &Sessions,
    record: &SessionRecord,
    channel: &ChannelRecord,
    request: PermissionRequest,
    decision: Decision,
    actor: Option<String>,
    source: Source,
) -> Result<Answered, AnswerError> {
    let item = record.work_item.clone();
    let refused = |what: String| AnswerError::Busy(format!("opencode's server for {item}: {what}"));
    let (server, _) = server_of(channel).map_err(&refused)?;
    let claimed = sessions.registry().update(&item, |r| {
        let p = r.reported.as_mut()?.permission.as_mut()?;
        (p.id == request.id && p.answering.is_none()).then(|| {
            p.answering = Some(Answer {
                decision,
                actor: actor.clone(),
                source: Some(source),
            });
        })
    })?;
    if claimed.flatten().is_none() {
        let now = sessions.registry().get(&item)?.as_ref().and_then(pending);
        return Err(match now {
            Some(now) => AnswerError::Changed {
                item: item.to_string(),
                tool: now.tool,
                summary: now.summary,
            },
            None => AnswerError::NothingWaiting(item.to_string()),
        });
    }
    let reply = match decision {
        Decision::Approved => Reply::Once,
        Decision::Denied | Decision::Elsewhere => Reply::Reject,
    };
    match server.reply(&request.id, reply).await {
        Ok(()) => {
            settle(sessions, &item, &request.id, decision, actor, source)?;
            Ok(Answered::Sent { decision, request })
        }
        Err(error) if error.is_not_found() => {
            // Answered in the TUI (its `permission.replied` may not be here yet), or gone.
            unclaim(sessions, record, &request.id);
            settle(sessions, &item, &request.id, Decision::Elsewhere, None, source)?;
            Ok(Answered::Elsewhere(request))
        }
        Err(error) => {
            // `NoAnswer`: it may have been taken; the server's event settles it if so.
            if matches!(error, Error::Unreachable { .. } | Error::Refused { .. }) {
                unclaim(sessions, record, &request.id);
            }
            Err(refused(error.to_string()))
        }
    }
}

/// The claim is dropped: the answer was not given.
fn unclaim(sessions: &Sessions, record: &SessionRecord, id: &str) {
    let _ = sessions.registry().update(&record.work_item, |r| {
        if let Some(p) = r.reported.as_mut().and_then(|s| s.permission.as_mut())
            && p.id == id
        {
            p.answering = None;
        }
    });
}

/// Settles `request` of `record` as `elsewhere` when its server no longer has it
/// pending (`reconcile`, where no supervisor follows the server's events). A server
/// that does not answer settles nothing.
pub async fn reconcile(
    sessions: &Sessions,
    record: &SessionRecord,
    channel: &ChannelRecord,
    request: &PermissionRequest,
    source: Source,
) {
    let Ok((server, own)) = server_of(channel) else {
        return;
    };
    let Ok(standing) = server.permissions(&own).await else {
        return;
    };
    if standing.iter().any(|p| p.id == request.id) {
        return;
    }
    if let Err(error) = settle(
        sessions,
        &record.work_item,
        &request.id,
        Decision::Elsewhere,
        None,
        source,
    ) {
        tracing::warn!(work_item = %record.work_item, "permission request not settled: {error}");
    }
}
