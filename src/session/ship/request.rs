//! The agent's side (SPEC §19.3): a request recorded from `the-loop propose`, and what
//! the worktree holds now — branch, head, commits ahead, diffstat, dirt — as a ship
//! shows it before anything goes out.

use super::refusal::{MAX_BODY_CHARS, MAX_TITLE_CHARS, Refusal};
use super::text::{one_line, plural, short};
use crate::events::{Event, EventType, Source};
use crate::session::Sessions;
use crate::session::records::{LinkedPull, ShipRequest};
use crate::session::registry::SessionRecord;
use crate::work_item::WorkItemRef;
use crate::workspace::status::numstat;
use crate::workspace::{Git, Kind, WorkspaceRecord};

/// What the agent asks for (`the-loop propose`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposal {
    pub title: String,
    pub body: String,
    pub draft: Option<bool>,
}

/// What would go out, as the operator is shown it before confirming.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preview {
    pub work_item: WorkItemRef,
    pub branch: String,
    /// The branch's tip now.
    pub head: String,
    /// The base the branch is measured against, e.g. `origin/main`.
    pub base: String,
    pub ahead: usize,
    pub files: usize,
    pub insertions: usize,
    pub deletions: usize,
    /// Uncommitted or untracked files (a ship refuses while any).
    pub dirty: usize,
    /// The agent's request, when there is one.
    pub request: Option<ShipRequest>,
    /// The latest critic round on `head`: `review: ok`, or why there is none.
    pub verdict: String,
    /// The pull request the branch already has.
    pub pull: Option<LinkedPull>,
}

impl Preview {
    /// `3 commits · 4 files +120 −8` for the popup and the CLI.
    pub fn summary(&self) -> String {
        format!(
            "{} commit{} · {} file{} +{} −{}",
            self.ahead,
            plural(self.ahead),
            self.files,
            plural(self.files),
            self.insertions,
            self.deletions
        )
    }
}

/// What `the-loop propose` prints of a recorded request, whether it was recorded here
/// or by the supervisor for a session on another host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposed {
    pub id: String,
    pub branch: String,
    pub head: String,
    /// [`Preview::summary`].
    pub summary: String,
}

impl Proposed {
    pub fn new(request: &ShipRequest, shown: &Preview) -> Self {
        Self {
            id: request.id.clone(),
            branch: request.branch.clone(),
            head: request.head.clone(),
            summary: shown.summary(),
        }
    }
}

/// Records `proposal` as `item`'s ship request (replacing any), `ship.requested`. Only
/// the process of `item`'s own session may (its pane's process tree).
pub async fn propose(
    sessions: &Sessions,
    item: &WorkItemRef,
    proposal: &Proposal,
    source: Source,
) -> Result<(ShipRequest, Preview), Refusal> {
    record_proposal(sessions, item, proposal, source, Some(std::process::id())).await
}

/// [`propose`] for a session on another host, asked over that host's forwarded socket:
/// the caller (`operator::api`) has checked that `item`'s open session is on that host,
/// which is all a forward can tell of who asked.
pub async fn propose_from_host(
    sessions: &Sessions,
    item: &WorkItemRef,
    proposal: &Proposal,
    source: Source,
) -> Result<(ShipRequest, Preview), Refusal> {
    record_proposal(sessions, item, proposal, source, None).await
}

/// `caller`: the process whose session must be `item`'s; `None` when the host was
/// checked instead.
async fn record_proposal(
    sessions: &Sessions,
    item: &WorkItemRef,
    proposal: &Proposal,
    source: Source,
    caller: Option<u32>,
) -> Result<(ShipRequest, Preview), Refusal> {
    let title = one_line(&crate::guard::sanitize(&proposal.title));
    let chars = title.chars().count();
    if chars == 0 {
        return Err(Refusal::NoTitle);
    }
    if chars > MAX_TITLE_CHARS {
        return Err(Refusal::TitleTooLong { chars });
    }
    let body = crate::guard::sanitize(&proposal.body).trim().to_string();
    let chars = body.chars().count();
    if chars > MAX_BODY_CHARS {
        return Err(Refusal::BodyTooLong { chars });
    }
    // An agent proposes only its own work, whatever `$THE_LOOP_WORK_ITEM` says.
    if let Some(pid) = caller
        && let Err(own) = crate::session::caller::check(sessions, item, pid).await
    {
        return Err(Refusal::OtherSession {
            own: own.to_string(),
            item: item.to_string(),
        });
    }
    let (record, workspace) = worktree_of(sessions, item)?;
    let git = git_of(sessions, &workspace)?;
    let shown = preview(&git, sessions.events().path(), &record, &workspace).await?;
    let request = ShipRequest {
        id: uuid::Uuid::new_v4().simple().to_string()[..12].to_string(),
        title,
        body,
        draft: proposal.draft,
        branch: shown.branch.clone(),
        head: shown.head.clone(),
        requested_at: crate::time::now_ts(),
    };
    let stored = request.clone();
    match sessions
        .registry()
        .update_async(item, move |r| r.ship_request = Some(stored))
        .await
    {
        Ok(Some(())) => {}
        Ok(None) => return Err(Refusal::NoSession(item.clone())),
        Err(error) => return Err(Refusal::Record(error.to_string())),
    }
    sessions.emit(
        Event::new(source, EventType::ShipRequested)
            .with("work_item", record.work_item.to_string())
            .with("request_id", request.id.as_str())
            .with("title", request.title.as_str())
            .with("branch", request.branch.as_str())
            .with("head", request.head.as_str())
            .with("commits", shown.ahead)
            .with("files", shown.files)
            .with("insertions", shown.insertions)
            .with("deletions", shown.deletions),
    );
    let shown = Preview {
        request: Some(request.clone()),
        ..shown
    };
    Ok((request, shown))
}

pub(super) fn worktree_of(
    sessions: &Sessions,
    item: &WorkItemRef,
) -> Result<(SessionRecord, WorkspaceRecord), Refusal> {
    let record = sessions
        .registry()
        .get(item)
        .ok()
        .flatten()
        .filter(|r| r.status.is_open())
        .ok_or_else(|| Refusal::NoSession(item.clone()))?;
    let workspace = sessions
        .workspaces()
        .record(item)
        .ok()
        .flatten()
        .filter(|_| record.workspace.is_some())
        .ok_or_else(|| Refusal::Shared(record.work_item.clone()))?;
    if workspace.kind == Kind::ForkPull {
        return Err(Refusal::ForkBranch {
            item: record.work_item.clone(),
            branch: workspace.branch.clone(),
        });
    }
    Ok((record, workspace))
}

/// The git that reaches `workspace`: this machine's, or its host's over the connection.
pub(super) fn git_of(sessions: &Sessions, workspace: &WorkspaceRecord) -> Result<Git, Refusal> {
    sessions
        .workspaces()
        .reaching(workspace)
        .map(|there| there.git().clone())
        .map_err(|e| Refusal::OnHost {
            host: workspace.host.clone().unwrap_or_default(),
            why: e.to_string(),
        })
}

/// The worktree as it is now: branch, head, ahead, diffstat, dirt, request, verdict.
pub(super) async fn preview(
    git: &Git,
    log: &std::path::Path,
    record: &SessionRecord,
    workspace: &WorkspaceRecord,
) -> Result<Preview, Refusal> {
    let dir = &workspace.dir;
    let fail = |e: crate::workspace::GitError| Refusal::Git(e.to_string());
    let on = git
        .line(dir, &["symbolic-ref", "--quiet", "--short", "HEAD"])
        .await
        .map_err(fail)?;
    let head = git
        .line(dir, &["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])
        .await
        .map_err(fail)?
        .unwrap_or_default();
    if on.as_deref() != Some(workspace.branch.as_str()) {
        return Err(Refusal::OffBranch {
            branch: workspace.branch.clone(),
            head: on.unwrap_or_else(|| format!("detached at {}", short(&head))),
        });
    }
    let status = crate::workspace::status::status(git, workspace)
        .await
        .map_err(Refusal::Git)?;
    let stat = numstat(git, dir, &workspace.base, &head)
        .await
        .map_err(Refusal::Git)?;
    let request = record.ship_request.clone();
    Ok(Preview {
        work_item: record.work_item.clone(),
        branch: workspace.branch.clone(),
        head: head.clone(),
        base: workspace.base_label().to_string(),
        ahead: status.ahead,
        files: stat.files,
        insertions: stat.insertions,
        deletions: stat.deletions,
        dirty: status.changed_files,
        request,
        verdict: verdict_on(log, &record.work_item, &head),
        pull: record.pull_request.clone(),
    })
}

/// The latest recorded round on `item` that reviewed `head`, as the operator reads it
/// before shipping: `review: ok`, `review: failed (exit 1)`, or that there is none.
/// Reads the newest rounds of the log (rotated files too).
fn verdict_on(log: &std::path::Path, item: &crate::work_item::WorkItemRef, head: &str) -> String {
    let filter = crate::events::Filter {
        type_glob: glob::Pattern::new(EventType::CriticFinished.as_str()).ok(),
        work_item: Some(item.clone()),
        ..Default::default()
    };
    let rounds = crate::events::tail_retained(log, 200, &filter)
        .map(|t| t.records)
        .unwrap_or_default();
    let latest = rounds
        .iter()
        .rev()
        .map(|r| &r.event)
        .find(|e| e.str_field("head") == Some(head));
    match latest {
        None => "no critic round on this commit".into(),
        Some(e) => {
            let name = e.str_field("critic").unwrap_or("critic");
            if e.fields.get("ok").and_then(serde_json::Value::as_bool) == Some(true) {
                format!("{name}: ok")
            } else {
                let code = e
                    .fields
                    .get("exit_code")
                    .and_then(serde_json::Value::as_i64);
                format!("{name}: failed (exit {})", code.unwrap_or(-1))
            }
        }
    }
}
