//! Delivering to an opencode session through its server (issue 44): the text goes to
//! the session's own opencode session by `POST /session/{id}/prompt_async` — a user
//! message of its own, queued by opencode while a turn runs — never through the TUI's
//! prompt routes, which would take the operator's draft with it. As for codex's app
//! server, the paste path decides everything around it (the lock, the gate, the record,
//! the events) and no look at the screen is taken: a permission request does not hold
//! it (the words answer nothing) nor does the operator's draft (never touched).
//!
//! Nothing sent (the server refused the connection, or refused the request): held
//! `not-ready`, tried again. A server that is gone (its process dead — also one that
//! died with the request, its answer lost): the session's tmux session is ended and the
//! delivery respawns it (server and TUI again, on the same opencode session), this text
//! its first prompt unless the session's data shows the dead server took it —
//! delivered once. Sent but unanswered by a live server: taken as delivered, with a
//! warning — trying again could make it twice.

use super::channel::not_ready;
use super::paste::{Delivered, Stopped};
use crate::channel::ChannelRecord;
use crate::channel::opencode::{Error, Server};
use crate::session::opencode::server_of;
use crate::session::registry::SessionRecord;
use crate::session::sessions::Sessions;
use crate::tmux::{self, PaneId};
use std::time::Duration;

/// How long a server that does not answer may take to be seen alive or gone.
const DYING: Duration = Duration::from_secs(5);

impl Sessions {
    /// Sends `text` (sanitized, not empty) to `record`'s opencode session through its
    /// server (`channel`); `pane` is the TUI's, recorded as for a paste.
    pub(super) async fn send_by_opencode(
        &self,
        channel: &ChannelRecord,
        pane: &PaneId,
        text: &str,
        record: &SessionRecord,
    ) -> Result<Delivered, Stopped> {
        let held = |what: &str, error: &dyn std::fmt::Display| not_ready(record, what, error);
        let (server, session) = server_of(channel).map_err(|e| held("opencode's server", &e))?;
        match server.prompt(&session, text).await {
            Ok(()) => {}
            Err(e @ Error::Unreachable { .. }) => {
                if self.dead_server(record, channel, &server).await {
                    tracing::warn!(
                        work_item = %record.work_item,
                        "opencode's server is gone ({e}); starting it again"
                    );
                    return Err(Stopped::Gone);
                }
                return Err(held("opencode's server", &e));
            }
            Err(e @ Error::Refused { .. }) => return Err(held("prompt_async", &e)),
            Err(e) => {
                // The server died with the request: the respawn looks in the session's
                // data for the text before it sends it again.
                if self.dead_server(record, channel, &server).await {
                    tracing::warn!(
                        work_item = %record.work_item,
                        "opencode's server died with the prompt ({e}); starting it again"
                    );
                    return Err(Stopped::Gone);
                }
                tracing::warn!(
                    work_item = %record.work_item,
                    "prompt_async sent, its answer lost ({e}); taken as delivered, not sent again"
                );
            }
        }
        Ok(Delivered {
            pane: pane.clone(),
            bytes: text.len(),
            respawned: None,
            channel: Some(channel.name()),
        })
    }

    /// Whether the server is gone (its process dead): then the session's tmux session
    /// is ended (its TUI attached to nothing), so the delivery respawns both. A server
    /// killed a moment ago may still hold its port while it exits: until it answers
    /// healthy or its process is gone (at most [`DYING`]), it is looked at again.
    async fn dead_server(
        &self,
        record: &SessionRecord,
        channel: &ChannelRecord,
        server: &Server,
    ) -> bool {
        let Some(server_pane) = channel.server_pane() else {
            return false;
        };
        let Ok(tmux) = self.tmux_of(record) else {
            return false;
        };
        let pane = PaneId::parse(server_pane).ok();
        let deadline = tokio::time::Instant::now() + DYING;
        loop {
            let alive = match &pane {
                Some(pane) => match tmux.pane_pid(pane).await {
                    Ok(pid) => process_alive(pid),
                    Err(tmux::Error::PaneDead { .. } | tmux::Error::SessionMissing { .. }) => false,
                    Err(_) => return false,
                },
                None => false,
            };
            if !alive {
                break;
            }
            if server.health().await.is_ok() || tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let _ = tmux.kill_session(&record.tmux_session).await;
        true
    }
}

/// Whether process `pid` runs here (not a zombie: a pane's dead first process may wait
/// for tmux to reap it).
fn process_alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), None).is_ok();
    };
    !stat
        .rsplit(')')
        .next()
        .is_some_and(|s| s.trim_start().starts_with('Z'))
}
