//! A permission request answered through the session's channel (issue 41): on codex's
//! app server the approval is a request of the protocol, with the exact command, and
//! takes a JSON answer (`accept` / `decline`) — no key reaches the pane, and the TUI
//! there closes its overlay on the server's word. Whether one is pending is the
//! thread's status (`waitingOnApproval`), not the screen.

use crate::channel::ChannelRecord;
use crate::channel::codex::{Approval, ApprovalKind, Client, Decision, Error};
use crate::session::hooks::state::one_line;
use crate::session::registry::SessionRecord;
use crate::session::sessions::Sessions;
use std::time::Duration;

/// How the-loop names itself to the app server.
pub(super) const CLIENT_NAME: &str = "the-loop";

/// The tool codex's hooks name a command by.
const BASH: &str = "Bash";

/// How long codex has to send a pending approval again once subscribed.
const RESENT_WITHIN: Duration = Duration::from_secs(5);

/// An approval pending on the session's thread, on the connection that must answer it
/// (a server request's id is the connection's own).
pub struct PendingApproval {
    client: Client,
    pub approval: Approval,
}

impl PendingApproval {
    /// Answers it: the first answer from any client wins.
    pub async fn answer(self, decision: Decision) -> Result<(), Error> {
        self.client.answer(&self.approval, decision).await
    }
}

/// What the channel says of a request the hooks reported.
pub enum ChannelApproval {
    /// It waits, and this is it.
    Pending(Box<PendingApproval>),
    /// Nothing waits on the thread: it was answered elsewhere (the TUI), or withdrawn.
    None,
    /// Approvals wait, none of them the reported one.
    Other { command: String },
}

impl Sessions {
    /// The approval on `record`'s thread that the hooks reported as `tool` `summary`:
    /// a command's must be that command (summarized as the hooks' is); a file change is
    /// taken only as the one file change pending for a request not of a command. Never
    /// another one: the operator answers what they saw.
    pub async fn channel_approval(
        &self,
        channel: &ChannelRecord,
        record: &SessionRecord,
        tool: &str,
        summary: &str,
    ) -> Result<ChannelApproval, Error> {
        // opencode's requests are answered by `session::opencode::answer` (issue 44).
        let ChannelRecord::CodexAppServer { socket, .. } = channel else {
            return Err(Error::Unreachable {
                path: String::new(),
                reason: "not codex's app server".into(),
            });
        };
        let mut client = Client::connect(socket, CLIENT_NAME).await?;
        let Some(thread) = client.session_thread(&record.cwd).await? else {
            return Ok(ChannelApproval::None);
        };
        if !thread.awaits_approval {
            return Ok(ChannelApproval::None);
        }
        let mut pending = client.pending_approvals(&thread.id, RESENT_WITHIN).await?;
        let files = pending
            .iter()
            .filter(|a| a.kind == ApprovalKind::FileChange)
            .count();
        let at = pending.iter().position(|a| match (a.kind, &a.command) {
            (ApprovalKind::Command, Some(command)) => runs(command, summary),
            (ApprovalKind::FileChange, _) => tool != BASH && files == 1,
            (ApprovalKind::Command, None) => false,
        });
        let found = at.map(|at| pending.swap_remove(at));
        Ok(match found {
            Some(approval) => {
                ChannelApproval::Pending(Box::new(PendingApproval { client, approval }))
            }
            None => match pending.first() {
                Some(other) => ChannelApproval::Other {
                    command: other.command.clone().unwrap_or_default(),
                },
                None => ChannelApproval::None,
            },
        })
    }

    /// Whether `request` still stands on `record`'s channel: codex's thread's status
    /// (`waitingOnApproval`), opencode's pending requests; `None` when the channel
    /// cannot tell (unreachable, or the thread not made yet).
    pub async fn channel_request_stands(
        &self,
        channel: &ChannelRecord,
        record: &SessionRecord,
        request: &str,
    ) -> Option<bool> {
        let ChannelRecord::CodexAppServer { socket, .. } = channel else {
            return crate::session::opencode::answer::stands(channel, request).await;
        };
        let client = Client::connect(socket, CLIENT_NAME).await.ok()?;
        let thread = client.session_thread(&record.cwd).await.ok()??;
        Some(thread.awaits_approval)
    }
}

/// Whether the protocol's `command` is the one the hooks summarized as `summary`: the
/// same words, or them as its shell runs them (codex 0.171.0 sends `/bin/bash -lc
/// 'touch ran.txt'` where its hook says `touch ran.txt`).
fn runs(command: &str, summary: &str) -> bool {
    if one_line(command) == summary {
        return true;
    }
    match shlex::split(command).as_deref() {
        Some([shell, flag, inner]) => {
            shell.ends_with("sh")
                && matches!(flag.as_str(), "-c" | "-lc")
                && one_line(inner) == summary
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::runs;

    #[test]
    fn a_command_matches_its_words_or_them_through_a_shell_only() {
        assert!(runs("touch ran.txt", "touch ran.txt"));
        assert!(runs("/bin/bash -lc 'touch ran.txt'", "touch ran.txt"));
        assert!(runs("/bin/zsh -c 'a && b'", "a && b"));
        assert!(!runs("/bin/bash -lc 'rm -rf /'", "touch ran.txt"));
        assert!(!runs(
            "/bin/bash -lc 'touch ran.txt' extra",
            "touch ran.txt"
        ));
        assert!(!runs("python -c 'touch ran.txt'", "touch ran.txt"));
        assert!(!runs("touch ran.txt; rm -rf /", "touch ran.txt"));
    }
}
