//! The fake's way to a session's terminal: a local attach plan, and the hosts' health
//! the status bar shows, as a test sets it.

use super::{Call, FakeBackend};
use crate::tui::backend::{ActionError, AttachPlan, HostView};
use crate::work_item::WorkItemRef;

impl FakeBackend {
    /// What `hosts()` answers from now on (none by default: no hosts configured).
    pub fn set_hosts(&self, hosts: Vec<HostView>) {
        self.lock().hosts = hosts;
    }

    pub(super) fn host_views(&self) -> Vec<HostView> {
        self.lock().hosts.clone()
    }

    pub(super) fn attach_plan(
        &self,
        work_item: &WorkItemRef,
        read_only: bool,
    ) -> Result<AttachPlan, ActionError> {
        if let Some(e) = self.record(Call::Attach {
            work_item: work_item.clone(),
            read_only,
        }) {
            return Err(e);
        }
        let mut argv: Vec<String> = vec!["tmux".into(), "attach-session".into()];
        if read_only {
            argv.push("-r".into());
        }
        argv.extend(["-t".into(), work_item.tmux_session_name()]);
        Ok(AttachPlan::Foreground(argv))
    }
}
