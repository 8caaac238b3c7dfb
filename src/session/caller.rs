//! Which session a local process runs in (SPEC §19.2, §19.5: an agent comments, and
//! proposes, only on its own work item). `$THE_LOOP_WORK_ITEM` names the item, but an
//! agent led by a hostile comment can set it to another session's item; the process
//! tree cannot be set so: a process in a session's pane descends from the pane's first
//! process (tmux's `#{pane_pid}`). A caller found in one session's pane may act only on
//! that session's item.
//!
//! A process outside every pane (the operator's shell, a test) is not anyone's session
//! and is let through, as `the-loop reply` is; so is a process that left its pane's tree
//! (a double fork reparents it): the check stops an agent that is told to use another
//! item, not one that works to escape its pane.

use super::Sessions;
use super::registry::same_item;
use super::sessions::PaneState;
use crate::work_item::WorkItemRef;

/// How far up the process tree to look (a pane's shell, the harness, its tool's shell
/// and the command are a handful of levels).
const MAX_DEPTH: usize = 64;

/// `pid` and its ancestors, nearest first, from `/proc/<pid>/stat` (empty where there
/// is no `/proc`).
pub fn ancestors(pid: u32) -> Vec<u32> {
    let mut chain = Vec::new();
    let mut next = Some(pid);
    while let Some(pid) = next.filter(|p| *p > 1 && chain.len() < MAX_DEPTH) {
        chain.push(pid);
        next = parent_of(pid);
    }
    chain
}

/// The parent pid in `/proc/<pid>/stat`: the fourth field, counted after the command
/// name's closing parenthesis (the name itself may hold spaces and parentheses).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// The open session whose pane `pid` runs in, if any.
pub async fn session_of(sessions: &Sessions, pid: u32) -> Option<WorkItemRef> {
    let chain = ancestors(pid);
    let records = sessions.registry().list().ok()?;
    for record in records.into_iter().filter(|r| r.status.is_open()) {
        let PaneState::Live(pane) = sessions.locate(&record).await else {
            continue;
        };
        // Another host's pids are not this machine's: its panes hold no local caller.
        if record.host.is_some() {
            continue;
        }
        if let Ok(first) = sessions.tmux().pane_pid(&pane).await
            && chain.contains(&first)
        {
            return Some(record.work_item);
        }
        // Codex's app server and opencode's server run the agent's commands, in a
        // window of their own.
        if let Some(server) = record.channel.as_ref().and_then(|c| c.server_pane())
            && let Ok(server) = crate::tmux::PaneId::parse(server)
            && let Ok(first) = sessions.tmux().pane_pid(&server).await
            && chain.contains(&first)
        {
            return Some(record.work_item);
        }
    }
    None
}

/// `Err(own item)` when `pid` runs in the pane of a session other than `claimed`'s.
pub async fn check(
    sessions: &Sessions,
    claimed: &WorkItemRef,
    pid: u32,
) -> Result<(), WorkItemRef> {
    match session_of(sessions, pid).await {
        Some(own) if !same_item(&own, claimed) => Err(own),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_climbs_to_the_test_runner() {
        let me = std::process::id();
        let chain = ancestors(me);
        assert_eq!(chain.first(), Some(&me));
        let parent = nix::unistd::getppid().as_raw() as u32;
        if parent > 1 {
            assert_eq!(chain.get(1), Some(&parent));
        }
        assert!(ancestors(0).is_empty());
        assert!(
            ancestors(u32::MAX).len() <= 1,
            "a pid that does not exist ends the chain"
        );
    }
}
