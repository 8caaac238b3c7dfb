//! The operator's actions, each through the module every other entry point uses, with
//! its outcome worded for the footer: refusals (nothing to do, not allowed in this
//! state) as [`ActionError::Refused`], failures (tmux, GitHub, a process) as
//! [`ActionError::Failed`].

use super::LiveBackend;
use crate::critic;
use crate::events::Source;
use crate::session::hooks::{self, Answered, Decision};
use crate::session::reply::Report;
use crate::session::{
    Origin, PromptInputs, ReplyError, ReplyRequest, SessionError, SessionRecord, StartOutcome,
    Toggle, Via, questions,
};
use crate::tui::backend::{ActionError, ActionResult, AttachPlan};
use crate::tui::text::short_ref;
use crate::work_item::WorkItemRef;
use std::path::PathBuf;
use std::sync::Arc;

fn refused(message: impl Into<String>) -> ActionError {
    ActionError::Refused(message.into())
}

fn session_error(error: SessionError) -> ActionError {
    match error {
        SessionError::NoSession(_) | SessionError::Closed(_) => refused(error.to_string()),
        // A configuration problem (harness, working directory) or an operational one.
        _ => ActionError::Failed(error.to_string()),
    }
}

/// Where an item's work is reviewed: the directory, the base of its diff, the git that
/// reads it, and the host it is on (`None`: here).
pub struct Place {
    pub cwd: PathBuf,
    pub base: Option<String>,
    pub git: crate::workspace::Git,
    pub host: Option<Arc<crate::tmux::RemoteHost>>,
}

impl LiveBackend {
    /// The session's permission dialog answered through `session::hooks` (SPEC §17.4).
    pub(super) async fn answer(&self, item: &WorkItemRef, id: &str, approve: bool) -> ActionResult {
        let decision = if approve {
            Decision::Approved
        } else {
            Decision::Denied
        };
        let actor = Some(crate::session::ask::local_user());
        match hooks::answer(&self.sessions, item, decision, Some(id), actor, Source::Tui).await {
            Ok(Answered::Sent { decision, request }) => Ok(format!(
                "{} {} `{}` on {}",
                if decision == Decision::Approved {
                    "Approved"
                } else {
                    "Denied"
                },
                request.tool,
                crate::tui::text::truncate(&request.summary, 60),
                short_ref(item)
            )),
            Ok(Answered::Elsewhere(request)) => Err(refused(format!(
                "the dialog for {} on {} is no longer on screen (answered in the pane); nothing was sent",
                request.tool,
                short_ref(item)
            ))),
            Err(e) if e.is_refusal() => Err(refused(e.to_string())),
            Err(e) => Err(ActionError::Failed(e.to_string())),
        }
    }

    fn record(&self, item: &WorkItemRef) -> Result<Option<SessionRecord>, ActionError> {
        self.sessions
            .registry()
            .get(item)
            .map_err(|e| ActionError::Failed(e.to_string()))
    }

    /// Where a session's work is, and what its diff is against (`Sessions::work_place`,
    /// the one rule): the same for the diff view and for critics (SPEC §11.4, §16.4).
    pub(super) fn review_place(&self, item: &WorkItemRef) -> Result<Place, ActionError> {
        let place = self
            .sessions
            .work_place(item)
            .map_err(|e| ActionError::Failed(e.to_string()))?
            .ok_or_else(|| {
                refused(format!(
                    "{} has no session and its repo has no `path`: nowhere to review",
                    short_ref(item)
                ))
            })?;
        // On another host: its directory and git are there.
        if let Some(name) = &place.host {
            let host = self.sessions.hosts().get(name).cloned().ok_or_else(|| {
                refused(format!(
                    "host `{name}` of {} is not in the config",
                    short_ref(item)
                ))
            })?;
            return Ok(Place {
                cwd: place.cwd,
                base: place.base,
                git: crate::workspace::Git::default().on(Arc::clone(&host.transport)),
                host: Some(host),
            });
        }
        if !place.cwd.is_dir() {
            return Err(refused(format!(
                "the working directory {} of {} does not exist",
                place.cwd.display(),
                short_ref(item)
            )));
        }
        Ok(Place {
            cwd: place.cwd,
            base: place.base,
            git: crate::workspace::Git::default(),
            host: None,
        })
    }

    /// The diff view's text: what it is compared against, the file list, untracked
    /// files, the patch.
    pub(super) async fn diff_text(&self, item: &WorkItemRef) -> Result<String, ActionError> {
        let Place { cwd, base, git, .. } = self.review_place(item)?;
        let changes = crate::workspace::status::changes(&git, &cwd, base.as_deref())
            .await
            .map_err(refused)?;
        let or_none = |s: &str| {
            if s.trim().is_empty() {
                "(none)".to_string()
            } else {
                s.trim_end().to_string()
            }
        };
        Ok(format!(
            "{}\nCompared against: {}\n\nChanged files:\n{}\n\nUntracked files:\n{}\n\n{}\n",
            cwd.display(),
            changes.base,
            or_none(&changes.stat),
            or_none(&changes.untracked),
            if changes.diff.trim().is_empty() {
                "(no changes against the base)".to_string()
            } else {
                changes.diff
            }
        ))
    }

    pub(super) async fn capture(&self, item: &WorkItemRef) -> Result<String, ActionError> {
        let record = self.record(item)?;
        let Some(pane) = self.rows.pane_of(item, record.as_ref()) else {
            return Err(refused(format!("{} has no tmux pane", short_ref(item))));
        };
        let tmux = match &record {
            Some(record) => self.sessions.tmux_of(record),
            None => Ok(std::sync::Arc::clone(self.sessions.tmux())),
        };
        tmux.map_err(|e| ActionError::Failed(e.to_string()))?
            .capture_pane(&pane, true)
            .await
            .map_err(|e| ActionError::Failed(e.to_string()))
    }

    pub(super) async fn do_reply(
        &self,
        item: &WorkItemRef,
        text: &str,
        over_budget: bool,
    ) -> ActionResult {
        let request = ReplyRequest {
            work_item: item.to_string(),
            text: text.to_string(),
            actor: None,
            comment: true,
            via: Via::Tui,
            over_budget,
        };
        match self.replier.reply(request).await {
            Ok(replied) => {
                let to = short_ref(&replied.work_item);
                Ok(match replied.report {
                    Report::Posted { url } => {
                        format!("Reply delivered to {to}; delivery report posted: {url}")
                    }
                    Report::Skipped => format!("Reply delivered to {to}"),
                    Report::Failed { error } => {
                        format!(
                            "Reply delivered to {to}, but the delivery report was not posted: {error}"
                        )
                    }
                })
            }
            // Queued, not lost: it goes out once the hold clears (SPEC §18.3).
            Err(ReplyError::Held { reason, .. }) => {
                Ok(crate::tui::held::reply_queued(item, reason))
            }
            Err(
                e @ (ReplyError::BadRef(_)
                | ReplyError::EmptyText
                | ReplyError::NoSession(_)
                | ReplyError::Closed(_)
                | ReplyError::Paused(_)
                | ReplyError::NoLivePane { .. }
                | ReplyError::Busy { .. }),
            ) => Err(refused(e.to_string())),
            Err(e) => Err(ActionError::Failed(e.to_string())),
        }
    }

    pub(super) async fn do_start(&self, item: &WorkItemRef) -> ActionResult {
        let inputs = PromptInputs::manual(item, "the-loop tui");
        match self.sessions.start(item, &inputs, &Origin::tui()).await {
            Ok(StartOutcome::Spawned(record)) => Ok(format!(
                "Started a session on {} (tmux session {}{})",
                short_ref(&record.work_item),
                record.tmux_session,
                record
                    .branch
                    .as_deref()
                    .map(|b| format!(", branch {b}"))
                    .unwrap_or_default()
            )),
            Ok(StartOutcome::AlreadyRunning(record)) => Err(refused(format!(
                "{} already has a running session ({})",
                short_ref(&record.work_item),
                record.tmux_session
            ))),
            Err(e) => Err(session_error(e)),
        }
    }

    pub(super) fn toggle(&self, item: &WorkItemRef, pause: bool) -> ActionResult {
        let origin = Origin::tui();
        let outcome = if pause {
            self.sessions.pause(item, &origin)
        } else {
            self.sessions.resume(item, &origin)
        };
        let done = if pause { "paused" } else { "resumed" };
        match outcome.map_err(session_error)? {
            Toggle::Changed => Ok(format!(
                "{} {}",
                if pause { "Paused" } else { "Resumed" },
                short_ref(item)
            )),
            Toggle::Unchanged => Err(refused(format!("{} was already {done}", short_ref(item)))),
        }
    }

    pub(super) async fn do_stop(&self, item: &WorkItemRef) -> ActionResult {
        let ended = self
            .sessions
            .stop(item, &Origin::tui())
            .await
            .map_err(session_error)?;
        let item = short_ref(&ended.record.work_item);
        let said = if ended.already_closed {
            format!("{item} was already stopped")
        } else if ended.was_running {
            format!(
                "Stopped {item}; its tmux session {} is kept to read",
                ended.record.tmux_session
            )
        } else {
            format!("Stopped {item} (its agent had already exited)")
        };
        Ok(match &ended.workspace {
            crate::workspace::Finished::NoWorkspace => said,
            crate::workspace::Finished::Removed { .. } => format!("{said}; worktree removed"),
            crate::workspace::Finished::Kept { reason, .. } => {
                format!("{said}; worktree kept ({reason})")
            }
        })
    }

    pub(super) fn dismiss(&self, item: &WorkItemRef) -> ActionResult {
        let actor = crate::session::ask::local_user();
        questions::dismiss(&self.events, Source::Tui, item, None, Some(&actor))
            .map_err(|e| ActionError::Failed(format!("the dismissal was not recorded: {e}")))?;
        Ok(format!("Dismissed the question on {}", short_ref(item)))
    }

    /// Starts a round in the session's working directory (the repo's, for a watched
    /// item without a session).
    pub(super) fn start_critic(&self, name: &str, item: &WorkItemRef) -> ActionResult {
        let loaded = self.loaded();
        let entries = critic::entries(&loaded.config);
        let spec = critic::find(&entries, name).map_err(|e| refused(e.to_string()))?;
        if !spec.enabled {
            return Err(refused(format!(
                "{name} is disabled: set `enabled: true` on its entry to run it"
            )));
        }
        let place = self.review_place(item)?;
        self.runs.start(
            spec.clone(),
            item.clone(),
            place,
            self.critic_runner.clone(),
            self.loaded().config.child_env(),
        );
        Ok(format!("{name} is reviewing {}", short_ref(item)))
    }

    pub(super) fn attach_plan(
        &self,
        item: &WorkItemRef,
        read_only: bool,
    ) -> Result<AttachPlan, ActionError> {
        let Some(record) = self.record(item)? else {
            return Err(refused(format!(
                "{} has no session to attach to",
                short_ref(item)
            )));
        };
        if let Some(name) = &record.host {
            let host = self.sessions.hosts().get(name).ok_or_else(|| {
                refused(format!(
                    "host `{name}` of {} is not in the config's hosts: add it back to attach",
                    short_ref(item)
                ))
            })?;
            return super::attach::remote_plan(host, &record.tmux_session, read_only);
        }
        let tmux_env = std::env::var("TMUX").ok();
        Ok(super::attach::plan(
            &self.socket,
            &record.tmux_session,
            read_only,
            tmux_env.as_deref(),
        ))
    }
}
