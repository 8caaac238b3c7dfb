//! Which work items an event concerns (SPEC §5.2). Pure, total functions over the raw
//! payload: any JSON value is accepted and the worst outcome is an empty list.
//!
//! For a pull request the order is: the issues its body closes, the issue named by its
//! head branch, the PR itself. Links are followed only on a trusted author's word
//! ([`Links`], SPEC §14.3), and the dispatcher prefers the session of the item an event
//! was written on over a linked item's.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::work_item::{DEFAULT_HOST, WorkItemRef, valid_host, valid_segment};

/// Closing references kept from one PR body. A real PR closes a handful of issues; the cap
/// keeps a hostile body (thousands of `fixes #N`) from fanning one event out.
pub const MAX_CLOSING_REFS: usize = 50;

/// `close/closes/closed/fix/fixes/fixed/resolve/resolves/resolved`, an optional colon,
/// blanks, then `#N`, `owner/repo#N`, `GH-N` or an issue URL; word-bounded on both sides
/// so `prefix #1`, `fixesx #1` and `#1abc` do not count.
static CLOSING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?xi)
        \b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?) :? [\ \t]+
        (?:
            \#(?P<num>[0-9]+)
          | (?P<owner>[a-z0-9][a-z0-9-]*)/(?P<repo>[a-z0-9._-]+)\#(?P<qnum>[0-9]+)
          | gh-(?P<ghnum>[0-9]+)
          | https?://(?P<host>[a-z0-9.-]+)(?::[0-9]+)?
                /(?P<uowner>[a-z0-9][a-z0-9-]*)/(?P<urepo>[a-z0-9._-]+)/issues/(?P<unum>[0-9]+)
        )\b",
    )
    .expect("the closing-keyword pattern is valid")
});

/// `issue-N` or `issue/N` as its own component of a branch name (`issue-15-backoff`,
/// `feature/issue/7`), not `tissue-5` or `issue-15x`; and `the-loop/pr-N`, the branch
/// the-loop checks a fork's pull request out on (SPEC §16.2).
static BRANCH_ISSUE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:^|[^a-z0-9])(?:issue[-/]|the-loop/pr-)([0-9]+)(?:$|[^a-z0-9])")
        .expect("the branch pattern is valid")
});

/// The repository an event belongs to: `repository.full_name`, on the host its
/// `html_url`s name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RepoId<'a> {
    pub host: &'a str,
    pub owner: &'a str,
    pub name: &'a str,
}

impl<'a> RepoId<'a> {
    pub fn new(host: &'a str, owner: &'a str, name: &'a str) -> Self {
        Self { host, owner, name }
    }

    fn item(&self, number: u64) -> WorkItemRef {
        WorkItemRef::on_host(self.host, self.owner, self.name, number)
    }

    /// Reads the event's repository; `None` when `repository.full_name` is missing or not a
    /// valid `owner/name`. The host is taken from the first `html_url` that names one
    /// (GitHub Enterprise), else `github.com`.
    pub fn of_payload(payload: &'a Value) -> Option<Self> {
        let (owner, name) = payload["repository"]["full_name"]
            .as_str()?
            .split_once('/')?;
        if !valid_segment(owner) || !valid_segment(name) {
            return None;
        }
        let host = [
            &payload["repository"]["html_url"],
            &payload["issue"]["html_url"],
            &payload["pull_request"]["html_url"],
            &payload["comment"]["html_url"],
            &payload["review"]["html_url"],
        ]
        .into_iter()
        .find_map(|url| url.as_str().and_then(url_host))
        .unwrap_or(DEFAULT_HOST);
        Some(Self { host, owner, name })
    }
}

/// The host of an `http(s)://` URL, without port or credentials; `None` when it is not a
/// host a ref can carry.
fn url_host(url: &str) -> Option<&str> {
    let scheme_len = if url
        .get(..8)
        .is_some_and(|s| s.eq_ignore_ascii_case("https://"))
    {
        8
    } else if url
        .get(..7)
        .is_some_and(|s| s.eq_ignore_ascii_case("http://"))
    {
        7
    } else {
        return None;
    };
    let rest = &url[scheme_len..];
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let host_port = authority.rsplit('@').next().unwrap_or(authority);
    let host = host_port.split(':').next().unwrap_or(host_port);
    valid_host(host).then_some(host)
}

fn positive(digits: &str) -> Option<u64> {
    digits.parse().ok().filter(|n| *n > 0)
}

fn number(v: &Value) -> Option<u64> {
    v.as_u64().filter(|n| *n > 0)
}

/// The issues a PR body closes, in order of appearance, at most [`MAX_CLOSING_REFS`]
/// (duplicates not yet merged). Each keyword closes the one reference right after it, as
/// on GitHub: in `fixes #1, #2` only #1 is closed. URLs on another host are not closing
/// references (GitHub cannot close an issue on another instance).
pub fn closing_refs(body: &str, repo: RepoId<'_>) -> Vec<WorkItemRef> {
    let mut out = Vec::new();
    for caps in CLOSING.captures_iter(body) {
        if out.len() >= MAX_CLOSING_REFS {
            break;
        }
        let found = if let Some(n) = caps.name("num").or(caps.name("ghnum")) {
            positive(n.as_str()).map(|n| repo.item(n))
        } else if let (Some(owner), Some(name), Some(n)) =
            (caps.name("owner"), caps.name("repo"), caps.name("qnum"))
        {
            qualified(repo.host, owner.as_str(), name.as_str(), n.as_str())
        } else if let (Some(host), Some(owner), Some(name), Some(n)) = (
            caps.name("host"),
            caps.name("uowner"),
            caps.name("urepo"),
            caps.name("unum"),
        ) {
            if host.as_str().eq_ignore_ascii_case(repo.host) {
                qualified(repo.host, owner.as_str(), name.as_str(), n.as_str())
            } else {
                None
            }
        } else {
            None
        };
        out.extend(found);
    }
    out
}

fn qualified(host: &str, owner: &str, name: &str, digits: &str) -> Option<WorkItemRef> {
    if !valid_segment(owner) || !valid_segment(name) {
        return None;
    }
    positive(digits).map(|n| WorkItemRef::on_host(host, owner, name, n))
}

/// The item number named by `issue-N` / `issue/N` (or `the-loop/pr-N`) in a branch name
/// (the first one).
pub fn branch_issue(branch: &str) -> Option<u64> {
    BRANCH_ISSUE
        .captures_iter(branch)
        .find_map(|caps| caps.get(1).and_then(|n| positive(n.as_str())))
}

/// True for an `issue_comment` whose issue is a pull request (GitHub marks those with a
/// `pull_request` key on the issue).
pub fn is_comment_on_pr(gh_event: &str, payload: &Value) -> bool {
    gh_event == "issue_comment" && !payload["issue"]["pull_request"].is_null()
}

fn is_pr_event(gh_event: &str, payload: &Value) -> bool {
    gh_event.starts_with("pull_request") || is_comment_on_pr(gh_event, payload)
}

/// The issue or PR the event happened on (the commented issue, the reviewed PR, the
/// labeled issue); `None` for CI and unknown events.
pub fn subject(gh_event: &str, payload: &Value) -> Option<WorkItemRef> {
    let repo = RepoId::of_payload(payload)?;
    subject_number(gh_event, payload).map(|n| repo.item(n))
}

fn subject_number(gh_event: &str, payload: &Value) -> Option<u64> {
    match gh_event {
        "issues" | "issue_comment" => number(&payload["issue"]["number"]),
        _ if gh_event.starts_with("pull_request") => {
            number(&payload["pull_request"]["number"]).or_else(|| number(&payload["number"]))
        }
        _ => None,
    }
}

/// Whether the links a pull request writes — the issues its body closes, the issue its
/// head branch names (SPEC §5.2 steps 1–2) — are followed. They are only when the PR's
/// author is trusted (SPEC §14.3: authorized, or the token's own login): otherwise a
/// stranger's `Fixes #1` would choose which session hears about their PR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    Follow,
    Ignore,
}

/// The work items an event concerns (SPEC §5.2), following a PR's links as if its author
/// were trusted; see [`work_items_with`].
pub fn work_items(gh_event: &str, payload: &Value) -> Vec<WorkItemRef> {
    work_items_with(gh_event, payload, Links::Follow)
}

/// The work items an event concerns (SPEC §5.2, §14.3), in order, duplicates merged
/// (owner and repo compared case-insensitively, first occurrence kept). Never panics.
///
/// A PR's links count only with [`Links::Follow`], and its head branch only when the
/// head repository is the base repository (a fork's `issue-1-please` names nothing
/// here). CI events take an item from a head branch only when it is a branch of the
/// event's repository (see [`ci_parts`]).
///
/// For an `issue_comment` on a PR GitHub's payload carries no head branch; the poller may
/// supply one as `issue.pull_request.head` (read when present).
pub fn work_items_with(gh_event: &str, payload: &Value, links: Links) -> Vec<WorkItemRef> {
    let Some(repo) = RepoId::of_payload(payload) else {
        return Vec::new();
    };
    let mut items = Vec::new();
    if is_pr_event(gh_event, payload) {
        let (body, head) = if gh_event == "issue_comment" {
            let issue = &payload["issue"];
            (&issue["body"], &issue["pull_request"]["head"])
        } else {
            let pr = &payload["pull_request"];
            (&pr["body"], &pr["head"])
        };
        if links == Links::Follow {
            if let Some(body) = body.as_str() {
                items = closing_refs(body, repo);
            }
            if same_repository(&head["repo"], payload) {
                items.extend(
                    head["ref"]
                        .as_str()
                        .and_then(branch_issue)
                        .map(|n| repo.item(n)),
                );
            }
        }
        items.extend(subject_number(gh_event, payload).map(|n| repo.item(n)));
    } else if let Some(n) = subject_number(gh_event, payload) {
        items.push(repo.item(n));
    } else if let Some(ci) = ci_parts(gh_event, payload) {
        if let Some(prs) = ci.run["pull_requests"].as_array() {
            items.extend(
                prs.iter()
                    .filter_map(|pr| number(&pr["number"]))
                    .map(|n| repo.item(n)),
            );
        }
        if ci.own_branches {
            items.extend(
                ci.branches
                    .into_iter()
                    .filter_map(|b| b.as_str().and_then(branch_issue))
                    .map(|n| repo.item(n)),
            );
        }
    }
    merge_duplicates(items)
}

/// The login of the PR an event is about (its author, not the event's actor): the
/// `pull_request.user`, or for a comment on a PR the `issue.user`. `None` when the event
/// is not about a PR or names no author.
pub fn pr_author<'p>(gh_event: &str, payload: &'p Value) -> Option<&'p str> {
    if !is_pr_event(gh_event, payload) {
        return None;
    }
    let container = if gh_event == "issue_comment" {
        "issue"
    } else {
        "pull_request"
    };
    payload[container]["user"]["login"].as_str()
}

/// Whether a head repository object (`{full_name, id, …}`) is the event's repository:
/// the same id when both carry one, else the same full name (case-insensitively). A
/// missing or deleted head repository (`null`) is not.
fn same_repository(head_repo: &Value, payload: &Value) -> bool {
    let base = &payload["repository"];
    if let (Some(a), Some(b)) = (head_repo["id"].as_u64(), base["id"].as_u64()) {
        return a == b;
    }
    match (head_repo["full_name"].as_str(), base["full_name"].as_str()) {
        (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
        _ => false,
    }
}

/// What a CI event links by: the object carrying `pull_requests`, its head branch
/// name(s), and whether those branches are the repository's own.
struct CiParts<'a> {
    run: &'a Value,
    branches: Vec<&'a Value>,
    own_branches: bool,
}

/// For a CI event: see [`CiParts`]. A workflow run names its `head_repository`; its
/// branch counts only when that is the event's repository (a fork's `issue-1-please`
/// would otherwise reach #1's session). A check suite's `head_branch` is `null` when the
/// branch is in a fork (GitHub's Checks API), so it counts unless a `head_repository`
/// says otherwise. A `status` has no pull requests; its `branches[].name` are branches of
/// the repository itself that hold the commit, so they count.
fn ci_parts<'a>(gh_event: &str, payload: &'a Value) -> Option<CiParts<'a>> {
    let own_unless_told =
        |head_repo: &Value| head_repo.is_null() || same_repository(head_repo, payload);
    let (run, branch, own_branches) = match gh_event {
        "workflow_run" => {
            let run = &payload["workflow_run"];
            let own = same_repository(&run["head_repository"], payload);
            (run, &run["head_branch"], own)
        }
        "check_suite" => {
            let suite = &payload["check_suite"];
            let own = own_unless_told(&suite["head_repository"]);
            (suite, &suite["head_branch"], own)
        }
        "check_run" => {
            let suite = &payload["check_run"]["check_suite"];
            let own = own_unless_told(&suite["head_repository"]);
            (&payload["check_run"], &suite["head_branch"], own)
        }
        "status" => {
            let branches = payload["branches"]
                .as_array()
                .map(|bs| bs.iter().map(|b| &b["name"]).collect())
                .unwrap_or_default();
            return Some(CiParts {
                run: &Value::Null,
                branches,
                own_branches: true,
            });
        }
        _ => return None,
    };
    Some(CiParts {
        run,
        branches: vec![branch],
        own_branches,
    })
}

fn merge_duplicates(items: Vec<WorkItemRef>) -> Vec<WorkItemRef> {
    let mut out: Vec<WorkItemRef> = Vec::with_capacity(items.len());
    for item in items {
        if !out
            .iter()
            .any(|seen| seen.number == item.number && seen.same_repo(&item))
        {
            out.push(item);
        }
    }
    out
}

#[cfg(test)]
#[path = "extract_tests.rs"]
mod tests;
