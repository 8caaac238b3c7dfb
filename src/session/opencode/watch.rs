//! Following opencode's servers (issue 44): for every open session whose record names
//! an opencode server, a task subscribed to its events (`GET /event`) moves the record's
//! `reported` state as hooks do for the other harnesses ([`super::state::step`]) and
//! logs the same events (`session.permission_requested`, `…_resolved`, `…turn_ended`,
//! `source: hook` — the harness's own report). On every (re)connection it first reads
//! where things stand (`GET /session/status`, `GET /permission`), so a request asked
//! while nobody listened is not missed. The supervisor runs [`follow_all`].

use super::server_of;
use super::state::step;
use crate::channel::ChannelRecord;
use crate::channel::opencode::{AssistantMessage, Event, Server};
use crate::events::Source;
use crate::session::hooks::report::outcome_event;
use crate::session::sessions::Sessions;
use crate::usage::Tokens;
use crate::work_item::WorkItemRef;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// How often the records are read for opencode sessions to follow.
const SCAN: Duration = Duration::from_secs(2);

/// How long after a lost connection the server is tried again.
const RETRY: Duration = Duration::from_millis(500);

/// Follows every open opencode session's server until `stop` turns true.
pub async fn follow_all(sessions: Arc<Sessions>, mut stop: watch::Receiver<bool>) {
    let mut following: HashMap<WorkItemRef, (ChannelRecord, tokio::task::JoinHandle<()>)> =
        HashMap::new();
    loop {
        let wanted = opencode_sessions(&sessions).await;
        following.retain(|item, (channel, task)| {
            let keep = wanted.get(item) == Some(channel) && !task.is_finished();
            if !keep {
                task.abort();
            }
            keep
        });
        for (item, channel) in wanted {
            if following.contains_key(&item) {
                continue;
            }
            let task = tokio::spawn(follow(Arc::clone(&sessions), item.clone(), channel.clone()));
            following.insert(item, (channel, task));
        }
        tokio::select! {
            changed = stop.changed() => {
                if changed.is_err() || *stop.borrow() {
                    break;
                }
            }
            () = tokio::time::sleep(SCAN) => {}
        }
    }
    for (_, (_, task)) in following {
        task.abort();
    }
}

/// The open sessions whose record names an opencode server.
async fn opencode_sessions(sessions: &Sessions) -> HashMap<WorkItemRef, ChannelRecord> {
    let registry = sessions.registry().clone();
    let listed = tokio::task::spawn_blocking(move || registry.list()).await;
    let Ok(Ok(records)) = listed else {
        return HashMap::new();
    };
    records
        .into_iter()
        .filter(|r| r.status.is_open())
        .filter_map(|r| match r.channel {
            Some(channel @ ChannelRecord::OpencodeServer { .. }) => Some((r.work_item, channel)),
            _ => None,
        })
        .collect()
}

/// Follows `item`'s server: each connection caught up, then its events applied, until
/// the task is aborted (the record changed or closed, the supervisor stops).
pub async fn follow(sessions: Arc<Sessions>, item: WorkItemRef, channel: ChannelRecord) {
    let Ok((server, own)) = server_of(&channel) else {
        tracing::warn!(work_item = %item, "opencode's server not followed: its password is unreadable");
        return;
    };
    loop {
        if let Ok(mut events) = server.events().await {
            catch_up(&sessions, &item, &server, &own).await;
            while let Some(event) = events.next().await {
                if event.session() == Some(own.as_str()) {
                    apply(&sessions, &item, &event);
                }
            }
        }
        tokio::time::sleep(RETRY).await;
    }
}

/// Where no supervisor follows the servers (`sessions list` on its own): reads where
/// every open opencode session stands into its record, each server given
/// [`READ_WITHIN`].
pub async fn read_all(sessions: &Sessions) {
    for (item, channel) in opencode_sessions(sessions).await {
        let Ok((server, own)) = server_of(&channel) else {
            continue;
        };
        let _ = tokio::time::timeout(READ_WITHIN, catch_up(sessions, &item, &server, &own)).await;
    }
}

/// How long [`read_all`] waits for one server.
const READ_WITHIN: Duration = Duration::from_secs(3);

/// Reads where `own` stands now and applies it: its status, then its pending requests.
pub async fn catch_up(sessions: &Sessions, item: &WorkItemRef, server: &Server, own: &str) {
    if let Ok(status) = server.status(own).await {
        apply(
            sessions,
            item,
            &Event::Status {
                session: own.to_string(),
                status,
            },
        );
    }
    if let Ok(pending) = server.permissions(own).await {
        for permission in pending {
            apply(sessions, item, &Event::PermissionAsked(permission));
        }
    }
}

/// Moves `item`'s record by `event` under its lock and logs what it says; a completed
/// answer's tokens are counted (`session::usage`).
pub fn apply(sessions: &Sessions, item: &WorkItemRef, event: &Event) {
    if let Event::AssistantUpdated(message) = event
        && message.completed
    {
        count(sessions, item, message);
    }
    let now = crate::time::now_ts();
    let updated = sessions.registry().update(item, |record| {
        let (next, outcomes) = step(record.reported.as_ref(), event, &now)?;
        record.reported = Some(next);
        Some(outcomes)
    });
    match updated {
        Ok(Some(Some(outcomes))) => {
            for outcome in &outcomes {
                sessions.emit(outcome_event(Source::Hook, item, outcome));
            }
        }
        Ok(_) => {}
        Err(error) => tracing::warn!(work_item = %item, "opencode's report not recorded: {error}"),
    }
}

/// Counts what `message` used, as opencode reported it, under its model.
fn count(sessions: &Sessions, item: &WorkItemRef, message: &AssistantMessage) {
    let tokens = Tokens {
        input: message.input,
        output: message.output + message.reasoning,
        cache_write5m: message.cache_write,
        cache_write1h: 0,
        cache_read: message.cache_read,
    };
    let reported = crate::usage::track::Reported {
        day: crate::usage::today(),
        model: message.model.clone(),
        tokens,
    };
    let counted = crate::session::usage::count_reported(
        sessions.registry(),
        sessions.events(),
        item,
        &message.id,
        reported,
        &sessions.settings().budgets,
    );
    if let Err(error) = counted {
        tracing::warn!(work_item = %item, "opencode's usage not counted: {error}");
    }
}
