//! A realistic screenful — the SPEC §11.1 sketch as data — for snapshot tests, the
//! render benchmark, and trying the screen without a supervisor. Times are relative to
//! the `now` given, so snapshots are stable.

use super::backend::{
    CriticResult, CriticRunState, CriticRunView, CriticSpecView, PermissionView, PollSummary,
    Preview, QuestionView, RateLimit, Role, RunId, SessionState, SessionView, ShipView, Snapshot,
    StatusView, WebhookState,
};
use crate::events::{Event, EventType, Level, Source};
use crate::session::delivery::{HeldSummary, HoldReason};
use crate::session::ship::ShipRequest;
use crate::work_item::WorkItemRef;
use std::path::PathBuf;
use time::{Duration, OffsetDateTime};

pub fn item(repo: &str, number: u64) -> WorkItemRef {
    let (owner, name) = repo.split_once('/').unwrap_or(("octo", repo));
    WorkItemRef::new(owner, name, number)
}

pub fn session(
    repo: &str,
    number: u64,
    harness: &str,
    state: SessionState,
    idle: u64,
) -> SessionView {
    let work_item = item(repo, number);
    if state == SessionState::NoSession {
        return SessionView::watched(work_item);
    }
    SessionView {
        url: work_item.html_url(),
        tmux_name: Some(work_item.tmux_session_name()),
        work_item,
        title: None,
        harness: Some(harness.into()),
        status: Some(
            if state == SessionState::Paused {
                "paused"
            } else {
                "active"
            }
            .into(),
        ),
        state,
        guessed: false,
        idle_secs: Some(idle),
        pane: Some(format!("%{number}")),
        cwd: Some(PathBuf::from(format!("/src/{repo}"))),
        workspace: None,
        held: None,
        pull_request: None,
        usage: None,
        mode: None,
        client: None,
        policy: None,
        opencode: None,
    }
}

pub fn status(now: OffsetDateTime) -> StatusView {
    StatusView {
        role: Role::Supervisor,
        repos: vec!["octo/repo".into(), "octo/web".into()],
        polling_enabled: true,
        last_poll: Some(PollSummary {
            at: now - Duration::seconds(4),
            items: 5,
            requests: 3,
            not_modified: 3,
            delivered: 0,
            dropped: 0,
            errors: 0,
            rate_remaining: Some(4993),
            duration_ms: 412,
        }),
        rate: Some(RateLimit {
            remaining: 4993,
            limit: Some(5000),
        }),
        webhook: WebhookState::Off,
        config_warnings: Vec::new(),
        reload_error: None,
        allowlist_empty: false,
        hosts: Vec::new(),
        limit: None,
    }
}

pub fn critics() -> Vec<CriticSpecView> {
    vec![
        CriticSpecView {
            name: "codex-rev".into(),
            harness: Some("codex".into()),
            model: None,
            problem: None,
        },
        CriticSpecView {
            name: "cursor-gpt".into(),
            harness: Some("cursor".into()),
            model: Some("gpt-5".into()),
            problem: None,
        },
        CriticSpecView {
            name: "strict".into(),
            harness: None,
            model: None,
            problem: Some("`command` contains whitespace: a command is one executable; put its arguments in args".into()),
        },
    ]
}

pub const REVIEW: &str = "Findings on the retry change:\n\n1. `max_retries` is read per cycle but the counter is stored per comment, so a config reload mid-retry changes the cap for comments already in flight. Probably fine, but worth a note in the docs.\n2. The give-up notice quotes the comment URL but not the attempt count; operators will want both.\n\n    if attempts >= cfg.max_retries {\n        give_up(&comment, attempts)?;\n    }\n\nNo blocking issues. Tests cover the happy path and one failure; a test for the reload case would close the gap.";

pub fn runs(now: OffsetDateTime) -> Vec<CriticRunView> {
    vec![
        CriticRunView {
            id: RunId("run-2".into()),
            critic: "cursor-gpt".into(),
            work_item: Some(item("octo/repo", 15)),
            started_at: now - Duration::seconds(41),
            state: CriticRunState::Running,
            posted: None,
        },
        CriticRunView {
            id: RunId("run-1".into()),
            critic: "codex-rev".into(),
            work_item: Some(item("octo/repo", 18)),
            started_at: now - Duration::minutes(9),
            state: CriticRunState::Finished(CriticResult {
                ok: true,
                exit_code: 0,
                duration_secs: 72.4,
                cost_usd: Some(0.0),
                attribution: "[codex/default]".into(),
                output: REVIEW.into(),
                error: None,
                findings: Vec::new(),
            }),
            posted: None,
        },
    ]
}

pub fn question(now: OffsetDateTime) -> QuestionView {
    QuestionView {
        work_item: item("octo/repo", 18),
        question: "Should the retry cap be per repo or global?".into(),
        asked_at: now - Duration::minutes(3),
        comment_url: Some("https://github.com/octo/repo/issues/18#issuecomment-99".into()),
    }
}

/// The sketch's screen: five items in every state, a question, two critic runs.
pub fn snapshot(now: OffsetDateTime) -> Snapshot {
    let mut sessions = vec![
        session("octo/repo", 15, "claude", SessionState::Working, 12),
        session("octo/repo", 18, "claude", SessionState::AwaitingInput, 180),
        session("octo/web", 3, "codex", SessionState::Paused, 3600),
        session("octo/web", 9, "claude", SessionState::Dead, 7200),
        session("octo/web", 11, "", SessionState::NoSession, 0),
    ];
    sessions[0].title = Some("Retry cap for failed deliveries".into());
    Snapshot {
        sessions,
        questions: vec![question(now)],
        permissions: Vec::new(),
        ships: Vec::new(),
        status: status(now),
        critics: critics(),
        runs: runs(now),
    }
}

/// A Bash command waiting for the operator's permission on `octo/repo#15`.
pub fn permission(now: OffsetDateTime) -> PermissionView {
    PermissionView {
        work_item: item("octo/repo", 15),
        request_id: "toolu_01".into(),
        tool: "Bash".into(),
        summary: "cargo test --workspace && git push origin the-loop/issue-15".into(),
        requested_at: now - Duration::seconds(40),
    }
}

/// The sketch, with #15 waiting on a permission dialog: listed in Questions.
pub fn snapshot_with_permission(now: OffsetDateTime) -> Snapshot {
    let mut s = snapshot(now);
    s.sessions[0].state = SessionState::AwaitingPermission;
    // A harness that does not report itself: its state is the screen's guess.
    s.sessions[2].state = SessionState::Idle;
    s.sessions[2].guessed = true;
    s.permissions = vec![permission(now)];
    s
}

/// What shipping `octo/repo#15` would push: three commits, the request made at this
/// head, the critic's verdict.
pub fn ship_preview(now: OffsetDateTime) -> Preview {
    let head = "3f2a9c1d0e4b5a6978877665544332211aabbccd".to_string();
    Preview {
        work_item: item("octo/repo", 15),
        branch: "the-loop/issue-15".into(),
        head: head.clone(),
        base: "origin/main".into(),
        ahead: 3,
        files: 4,
        insertions: 120,
        deletions: 8,
        dirty: 0,
        request: Some(ShipRequest {
            id: "ship-01".into(),
            title: "Cap delivery retries per repo".into(),
            body: "Adds a per-repo cap.".into(),
            draft: None,
            branch: "the-loop/issue-15".into(),
            head,
            requested_at: crate::time::format_ts(now - Duration::minutes(2)),
        }),
        verdict: "review: ok".into(),
        pull: None,
    }
}

/// The sketch, with #15's agent asking to ship its work (SPEC §19.3).
pub fn snapshot_with_ship(now: OffsetDateTime) -> Snapshot {
    let mut s = snapshot(now);
    let preview = ship_preview(now);
    s.ships = vec![ShipView {
        work_item: preview.work_item.clone(),
        request_id: "ship-01".into(),
        title: "Cap delivery retries per repo".into(),
        branch: preview.branch.clone(),
        requested_at: now - Duration::minutes(2),
        preview: Some(Ok(preview)),
    }];
    s
}

/// `count` deliveries held on a session for `secs` (SPEC §18.3).
pub fn held(now: OffsetDateTime, count: usize, reason: HoldReason, secs: i64) -> HeldSummary {
    HeldSummary {
        count,
        reason,
        since: crate::time::format_ts(now - Duration::seconds(secs)),
        client: None,
        witnesses: None,
        limit: None,
        limit_since: None,
    }
}

/// The permission sketch with deliveries held: two behind #15's dialog, and a reply
/// waiting on the operator's draft in #18's input box.
pub fn snapshot_with_holds(now: OffsetDateTime) -> Snapshot {
    let mut s = snapshot_with_permission(now);
    s.sessions[0].held = Some(held(now, 2, HoldReason::PermissionDialog, 35));
    s.sessions[1].held = Some(held(now, 1, HoldReason::OperatorDraft, 75));
    s
}

/// Sessions with usage (SPEC §20.3): priced, a model without a price, one over its
/// budget with a delivery held, one whose harness reports nothing.
pub fn snapshot_with_usage(now: OffsetDateTime) -> Snapshot {
    use crate::tui::backend::UsageView;
    let mut s = snapshot(now);
    let usage = |label: &str, today_usd: Option<f64>, over: bool| UsageView {
        label: label.into(),
        over_budget: over,
        budget_warning: over,
        today_tokens: 400_000,
        today_usd,
    };
    s.sessions[0].usage = Some(usage("1.2M $3.41", Some(1.25), false));
    s.sessions[1].usage = Some(usage("340.0k $?", None, false));
    s.sessions[2].usage = Some(usage("2.5M $12.80", Some(4.0), true));
    s.sessions[2].held = Some(held(now, 1, HoldReason::OverBudget, 20));
    s
}

fn at(now: OffsetDateTime, secs_ago: i64, source: Source, t: EventType) -> Event {
    let mut e = Event::new(source, t);
    e.ts = crate::time::format_ts(now - Duration::seconds(secs_ago));
    e
}

/// A few minutes of history: routing, a refusal, deliveries, a question, critics.
pub fn history(now: OffsetDateTime) -> Vec<Event> {
    use EventType as T;
    use Source as S;
    vec![
        at(now, 600, S::Tui, T::SupervisorStarted).with("mode", "tui"),
        at(now, 545, S::Critic, T::CriticStarted)
            .with("critic", "codex-rev")
            .with("work_item", "github:octo/repo#18"),
        at(now, 473, S::Critic, T::CriticFinished)
            .with("critic", "codex-rev")
            .with("work_item", "github:octo/repo#18")
            .with("ok", true)
            .with("exit_code", 0)
            .with("duration_seconds", 72.4)
            .with("cost_usd", 0.0),
        at(now, 200, S::Cli, T::SessionAwaitingInput)
            .with("work_item", "github:octo/repo#18")
            .with("question", "Should the retry cap be per repo or global?"),
        at(now, 95, S::Poll, T::RoutingRouted)
            .with("delivery_id", "poll-comment-1001")
            .with("gh_event", "issue_comment")
            .with("actor", "alice")
            .with("work_item", "github:octo/repo#15")
            .with("outcome", "deliver"),
        at(now, 94, S::Dispatch, T::DispatchSucceeded)
            .with("work_item", "github:octo/repo#15")
            .with("actor", "alice")
            .with("delivery_id", "poll-comment-1001"),
        at(now, 93, S::Poll, T::RoutingDropped)
            .with("reason", "unauthorized-actor")
            .with("actor", "mallory")
            .with("gh_event", "issue_comment")
            .with("work_items", vec!["github:octo/repo#15"]),
        at(now, 92, S::Poll, T::RoutingDropped)
            .with("reason", "self-authored")
            .with("gh_event", "issue_comment")
            .with("work_items", vec!["github:octo/web#3"]),
        at(now, 60, S::Dispatch, T::DispatchDropped)
            .with("work_item", "github:octo/web#11")
            .with("reason", "no-session"),
        at(now, 45, S::Dispatch, T::DispatchFailed)
            .level(Level::Warning)
            .with("work_item", "github:octo/web#9")
            .with("error", "pane %9 has exited")
            .with("retryable", true),
        at(now, 41, S::Critic, T::CriticStarted)
            .with("critic", "cursor-gpt")
            .with("work_item", "github:octo/repo#15"),
        at(now, 4, S::Poll, T::PollCycle).with("requests", 3),
    ]
}

/// What an agent's pane looks like, in color.
pub fn capture() -> String {
    [
        "\u{1b}[1;36m╭─ claude ───────────────────────────────╮\u{1b}[0m",
        "\u{1b}[1;36m│\u{1b}[0m Reading src/ingress/poll.rs            \u{1b}[1;36m│\u{1b}[0m",
        "\u{1b}[1;36m╰────────────────────────────────────────╯\u{1b}[0m",
        "",
        "\u{1b}[32m●\u{1b}[0m Update(src/ingress/poll.rs)",
        "  \u{1b}[2m⎿  Updated with 4 additions and 1 removal\u{1b}[0m",
        "\u{1b}[32m●\u{1b}[0m Bash(cargo test --lib poll)",
        "  \u{1b}[2m⎿  test result: \u{1b}[0m\u{1b}[32mok\u{1b}[0m\u{1b}[2m. 14 passed; 0 failed\u{1b}[0m",
        "",
        "\u{1b}[33m✻ Thinking…\u{1b}[0m",
        "",
        "",
    ]
    .join("\n")
}

/// A worktree diff as the diff view shows it (SPEC §16.4).
pub fn diff() -> String {
    [
        "/home/me/.local/state/the-loop/worktrees/octo-repo/15",
        "Compared against: origin/main (merge base 1a2b3c4d5e6f)",
        "",
        "Changed files:",
        " src/retry.rs | 4 ++--",
        " 1 file changed, 2 insertions(+), 2 deletions(-)",
        "",
        "Untracked files:",
        "notes.md",
        "",
        "diff --git a/src/retry.rs b/src/retry.rs",
        "index 3b18e51..a9c4d0e 100644",
        "--- a/src/retry.rs",
        "+++ b/src/retry.rs",
        "@@ -1,3 +1,3 @@",
        "-/// The delay before retry number `attempt` (0-based): doubles each time.",
        "-pub fn backoff_ms(attempt: u32, base_ms: u64) -> u64 {",
        "+/// The delay before retry number `attempt` (0-based): doubles each time, up to `cap_ms`.",
        "+pub fn backoff_ms(attempt: u32, base_ms: u64, cap_ms: u64) -> u64 {",
        "     base_ms.saturating_mul(1 << attempt.min(20))",
        "",
    ]
    .join("\n")
}
