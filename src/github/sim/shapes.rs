//! JSON shaped like GitHub's REST answers (the shapes of `tests/fixtures/rest/*.json`):
//! full user objects, URL fields, reactions blocks — the noise the excerpt's allow-list
//! must ignore. API URLs point at the simulator; web URLs at `html_base`.

use super::state::{
    CheckRun, Comment, Issue, IssueEvent, Repo, Review, ReviewComment, SimState, default_sha,
};
use crate::github::models::format_timestamp;
use serde_json::{Value, json};
use time::OffsetDateTime;

fn ts(t: OffsetDateTime) -> Value {
    Value::String(format_timestamp(t))
}

fn opt_ts(t: Option<OffsetDateTime>) -> Value {
    t.map_or(Value::Null, ts)
}

fn reactions(url: &str) -> Value {
    json!({
        "url": format!("{url}/reactions"), "total_count": 0, "+1": 0, "-1": 0, "laugh": 0,
        "hooray": 0, "confused": 0, "heart": 0, "rocket": 0, "eyes": 0
    })
}

/// A stable id per login (case-insensitive), as GitHub users have: FNV-1a, kept small.
pub(crate) fn user_id(login: &str) -> u64 {
    let hash = login
        .to_ascii_lowercase()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
    hash % 90_000_000 + 1_000
}

pub(crate) fn user(s: &SimState, login: &str) -> Value {
    let id = user_id(login);
    let api = format!("{}/users/{login}", s.api_base);
    let kind = if login.ends_with("[bot]") {
        "Bot"
    } else {
        "User"
    };
    json!({
        "login": login,
        "id": id,
        "node_id": format!("MDQ6VXNlcj{id}"),
        "avatar_url": format!("https://avatars.githubusercontent.com/u/{id}?v=4"),
        "gravatar_id": "",
        "url": api,
        "html_url": format!("{}/{login}", s.html_base),
        "followers_url": format!("{api}/followers"),
        "following_url": format!("{api}/following{{/other_user}}"),
        "gists_url": format!("{api}/gists{{/gist_id}}"),
        "starred_url": format!("{api}/starred{{/owner}}{{/repo}}"),
        "subscriptions_url": format!("{api}/subscriptions"),
        "organizations_url": format!("{api}/orgs"),
        "repos_url": format!("{api}/repos"),
        "events_url": format!("{api}/events{{/privacy}}"),
        "received_events_url": format!("{api}/received_events"),
        "type": kind,
        "site_admin": false
    })
}

fn association(repo: &Repo, login: &str) -> &'static str {
    if repo.owner.eq_ignore_ascii_case(login) {
        "OWNER"
    } else {
        "NONE"
    }
}

fn repo_api(s: &SimState, repo: &Repo) -> String {
    format!("{}/repos/{}", s.api_base, repo.full_name())
}

fn repo_html(s: &SimState, repo: &Repo) -> String {
    format!("{}/{}", s.html_base, repo.full_name())
}

/// The web URL of an item: GitHub uses `/pull/N` for PRs and `/issues/N` for issues.
fn item_html(s: &SimState, repo: &Repo, issue: &Issue) -> String {
    let kind = if issue.pull.is_some() {
        "pull"
    } else {
        "issues"
    };
    format!("{}/{kind}/{}", repo_html(s, repo), issue.number)
}

fn labels(s: &SimState, repo: &Repo, names: &[String]) -> Value {
    let labels: Vec<Value> = names
        .iter()
        .map(|name| {
            let id = 208_045_000 + name.bytes().map(u64::from).sum::<u64>();
            json!({
                "id": id,
                "node_id": format!("LA_kw{id}"),
                "url": format!("{}/labels/{name}", repo_api(s, repo)),
                "name": name,
                "color": "f29513",
                "default": false,
                "description": ""
            })
        })
        .collect();
    Value::Array(labels)
}

pub(crate) fn repository(s: &SimState, repo: &Repo) -> Value {
    let owner = user(s, &repo.owner);
    json!({
        "id": repo.id,
        "node_id": format!("R_kw{}", repo.id),
        "name": repo.name,
        "full_name": repo.full_name(),
        "private": false,
        "owner": owner,
        "html_url": repo_html(s, repo),
        "url": repo_api(s, repo),
        "default_branch": "main"
    })
}

/// An entry of `GET /repos/{o}/{r}/issues` (PRs carry a `pull_request` block).
pub(crate) fn issue(s: &SimState, repo: &Repo, issue: &Issue, comments: usize) -> Value {
    let api = format!("{}/issues/{}", repo_api(s, repo), issue.number);
    let mut v = json!({
        "url": api,
        "repository_url": repo_api(s, repo),
        "labels_url": format!("{api}/labels{{/name}}"),
        "comments_url": format!("{api}/comments"),
        "events_url": format!("{api}/events"),
        "html_url": item_html(s, repo, issue),
        "id": issue.id,
        "node_id": format!("I_kw{}", issue.id),
        "number": issue.number,
        "title": issue.title,
        "user": user(s, &issue.author),
        "labels": labels(s, repo, &issue.labels),
        "state": if issue.open { "open" } else { "closed" },
        "locked": false,
        "assignee": null,
        "assignees": [],
        "milestone": null,
        "comments": comments,
        "created_at": ts(issue.created_at),
        "updated_at": ts(issue.updated_at),
        "closed_at": opt_ts(issue.closed_at),
        "author_association": association(repo, &issue.author),
        "body": issue.body,
        "reactions": reactions(&api),
        "timeline_url": format!("{api}/timeline")
    });
    if let Some(pull) = &issue.pull {
        let pull_api = format!("{}/pulls/{}", repo_api(s, repo), issue.number);
        let html = item_html(s, repo, issue);
        v["draft"] = json!(pull.draft);
        v["pull_request"] = json!({
            "url": pull_api,
            "html_url": html,
            "diff_url": format!("{html}.diff"),
            "patch_url": format!("{html}.patch"),
            "merged_at": opt_ts(pull.merged_at)
        });
    }
    v
}

/// A PR as `GET /repos/{o}/{r}/pulls[/{n}]` returns it; `single` adds the fields only
/// the single-PR endpoint has (`merged`).
pub(crate) fn pull(s: &SimState, repo: &Repo, issue: &Issue, single: bool) -> Value {
    let Some(info) = &issue.pull else {
        return Value::Null;
    };
    let api = format!("{}/pulls/{}", repo_api(s, repo), issue.number);
    let html = item_html(s, repo, issue);
    let repo_json = repository(s, repo);
    let sha = if info.head_sha.is_empty() {
        default_sha(issue.id)
    } else {
        info.head_sha.clone()
    };
    let mut v = json!({
        "url": api,
        "id": issue.id + 4000,
        "node_id": format!("PR_kw{}", issue.number),
        "html_url": html,
        "diff_url": format!("{html}.diff"),
        "patch_url": format!("{html}.patch"),
        "issue_url": format!("{}/issues/{}", repo_api(s, repo), issue.number),
        "number": issue.number,
        "state": if issue.open { "open" } else { "closed" },
        "locked": false,
        "title": issue.title,
        "user": user(s, &issue.author),
        "body": issue.body,
        "labels": labels(s, repo, &issue.labels),
        "milestone": null,
        "draft": info.draft,
        "created_at": ts(issue.created_at),
        "updated_at": ts(issue.updated_at),
        "closed_at": opt_ts(issue.closed_at),
        "merged_at": opt_ts(info.merged_at),
        "merge_commit_sha": null,
        "head": {
            "label": format!("{}:{}", repo.owner, info.head_ref),
            "ref": info.head_ref,
            "sha": sha,
            "user": user(s, &repo.owner),
            "repo": repo_json.clone()
        },
        "base": {
            "label": format!("{}:{}", repo.owner, info.base_ref),
            "ref": info.base_ref,
            "sha": format!("{:040x}", repo.id),
            "user": user(s, &repo.owner),
            "repo": repo_json
        },
        "author_association": association(repo, &issue.author),
        "commits_url": format!("{api}/commits"),
        "review_comments_url": format!("{api}/comments"),
        "comments_url": format!("{}/issues/{}/comments", repo_api(s, repo), issue.number)
    });
    if single {
        v["merged"] = json!(info.merged_at.is_some());
    }
    v
}

pub(crate) fn comment(s: &SimState, repo: &Repo, c: &Comment) -> Value {
    let item_html = repo
        .issues
        .get(&c.number)
        .map(|i| item_html(s, repo, i))
        .unwrap_or_else(|| format!("{}/issues/{}", repo_html(s, repo), c.number));
    let api = format!("{}/issues/comments/{}", repo_api(s, repo), c.id);
    json!({
        "url": api,
        "html_url": format!("{item_html}#issuecomment-{}", c.id),
        "issue_url": format!("{}/issues/{}", repo_api(s, repo), c.number),
        "id": c.id,
        "node_id": format!("IC_kw{}", c.id),
        "user": user(s, &c.login),
        "created_at": ts(c.created_at),
        "updated_at": ts(c.updated_at),
        "author_association": association(repo, &c.login),
        "body": c.body,
        "reactions": reactions(&api),
        "performed_via_github_app": null
    })
}

pub(crate) fn review_comment(s: &SimState, repo: &Repo, c: &ReviewComment) -> Value {
    let api = format!("{}/pulls/comments/{}", repo_api(s, repo), c.id);
    let pull_api = format!("{}/pulls/{}", repo_api(s, repo), c.number);
    let html = format!("{}/pull/{}", repo_html(s, repo), c.number);
    let mut value = json!({
        "url": api,
        "pull_request_review_id": c.review_id,
        "id": c.id,
        "node_id": format!("PRRC_kw{}", c.id),
        "diff_hunk": format!("@@ -{0},3 +{0},4 @@\n+ changed line", c.line),
        "path": c.path,
        "position": 1,
        "original_position": 1,
        "commit_id": format!("{:040x}", c.number),
        "original_commit_id": format!("{:040x}", c.number),
        "user": user(s, &c.login),
        "body": c.body,
        "created_at": ts(c.created_at),
        "updated_at": ts(c.updated_at),
        "html_url": format!("{html}#discussion_r{}", c.id),
        "pull_request_url": pull_api,
        "author_association": association(repo, &c.login),
        "_links": {
            "self": {"href": api},
            "html": {"href": format!("{html}#discussion_r{}", c.id)},
            "pull_request": {"href": pull_api}
        },
        "line": c.line,
        "original_line": c.line,
        "side": "RIGHT",
        "start_line": c.start_line,
        "original_start_line": c.start_line,
        "start_side": c.start_line.map(|_| "RIGHT"),
        "reactions": reactions(&api)
    });
    // GitHub sends `in_reply_to_id` only on a reply.
    if let Some(parent) = c.in_reply_to {
        value["in_reply_to_id"] = json!(parent);
    }
    value
}

pub(crate) fn review(s: &SimState, repo: &Repo, r: &Review) -> Value {
    json!({
        "id": r.id,
        "node_id": format!("PRR_kw{}", r.id),
        "user": user(s, &r.login),
        "body": r.body,
        "state": r.state,
        "html_url": format!("{}/pull/{}#pullrequestreview-{}", repo_html(s, repo), r.number, r.id),
        "pull_request_url": format!("{}/pulls/{}", repo_api(s, repo), r.number),
        "submitted_at": opt_ts(r.submitted_at),
        "commit_id": format!("{:040x}", r.number),
        "author_association": association(repo, &r.login)
    })
}

/// An entry of `GET /repos/{o}/{r}/issues/{n}/events`.
pub(crate) fn issue_event(s: &SimState, repo: &Repo, e: &IssueEvent) -> Value {
    let mut v = json!({
        "id": e.id,
        "node_id": format!("LE_kw{}", e.id),
        "url": format!("{}/issues/events/{}", repo_api(s, repo), e.id),
        "actor": user(s, &e.actor),
        "event": e.event,
        "commit_id": null,
        "commit_url": null,
        "created_at": ts(e.created_at),
        "performed_via_github_app": null
    });
    if let Some(label) = &e.label {
        v["label"] = json!({"name": label, "color": "f29513"});
    }
    v
}

/// A check run as `GET /repos/{o}/{r}/commits/{sha}/check-runs` lists it. The REST
/// shape names the PRs whose head is the commit; `check_suite` carries only its id.
pub(crate) fn check_run(s: &SimState, repo: &Repo, run: &CheckRun) -> Value {
    let api = format!("{}/check-runs/{}", repo_api(s, repo), run.id);
    let prs: Vec<Value> = repo
        .issues
        .values()
        .filter(|i| i.open)
        .filter(|i| {
            i.pull.as_ref().is_some_and(|p| {
                let head = if p.head_sha.is_empty() {
                    default_sha(i.id)
                } else {
                    p.head_sha.clone()
                };
                head == run.head_sha
            })
        })
        .map(|i| {
            let repo_ref = json!({"id": repo.id, "url": repo_api(s, repo), "name": repo.name});
            json!({
                "url": format!("{}/pulls/{}", repo_api(s, repo), i.number),
                "id": i.id + 4000,
                "number": i.number,
                "head": {"ref": i.pull.as_ref().map(|p| p.head_ref.clone()), "sha": run.head_sha, "repo": repo_ref},
                "base": {"ref": i.pull.as_ref().map(|p| p.base_ref.clone()), "sha": format!("{:040x}", repo.id), "repo": repo_ref}
            })
        })
        .collect();
    json!({
        "id": run.id,
        "head_sha": run.head_sha,
        "node_id": format!("CR_kw{}", run.id),
        "external_id": "",
        "url": api,
        "html_url": format!("{}/runs/{}", repo_html(s, repo), run.id),
        "details_url": format!("{}/actions/runs/{}", repo_html(s, repo), run.id),
        "status": run.status,
        "conclusion": run.conclusion,
        "started_at": ts(run.started_at),
        "completed_at": opt_ts(run.completed_at),
        "output": {
            "title": run.conclusion.as_ref().map(|c| format!("{}: {c}", run.name)),
            "summary": run.summary,
            "text": null,
            "annotations_count": 0,
            "annotations_url": format!("{api}/annotations")
        },
        "name": run.name,
        "check_suite": {"id": run.id + 7000},
        "app": {"id": 15368, "slug": "github-actions", "name": "GitHub Actions"},
        "pull_requests": prs
    })
}

/// GitHub's error body.
pub(crate) fn error(message: &str) -> Value {
    json!({
        "message": message,
        "documentation_url": "https://docs.github.com/rest"
    })
}
