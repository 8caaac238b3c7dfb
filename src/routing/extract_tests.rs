use super::*;
use serde_json::json;

fn octo() -> RepoId<'static> {
    RepoId::new(DEFAULT_HOST, "octo", "repo")
}

fn refs(items: &[WorkItemRef]) -> Vec<String> {
    items.iter().map(ToString::to_string).collect()
}

fn closing(body: &str) -> Vec<String> {
    refs(&closing_refs(body, octo()))
}

#[test]
fn every_closing_keyword_and_form() {
    for kw in [
        "close", "closes", "closed", "fix", "fixes", "fixed", "resolve", "resolves", "resolved",
    ] {
        for kw in [kw.to_string(), kw.to_uppercase(), capitalize(kw)] {
            for (form, expected) in [
                ("#15", "github:octo/repo#15"),
                ("octo/repo#15", "github:octo/repo#15"),
                ("other/lib#3", "github:other/lib#3"),
                ("GH-15", "github:octo/repo#15"),
                ("gh-15", "github:octo/repo#15"),
                (
                    "https://github.com/octo/repo/issues/15",
                    "github:octo/repo#15",
                ),
                ("http://github.com/other/lib/issues/3", "github:other/lib#3"),
            ] {
                for sep in [" ", ": ", "  ", "\t", ":\t"] {
                    let body = format!("{kw}{sep}{form}");
                    assert_eq!(closing(&body), vec![expected], "{body:?}");
                }
            }
        }
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

#[test]
fn closing_keyword_non_matches() {
    for body in [
        "",
        "prefix #1",
        "suffixes #2",
        "unresolved #3",
        "fixesx #4",
        "fixing #5",
        "closing #6",
        "fixes 15",
        "fixes issue 15",
        "fixes #",
        "fixes #0",
        "fixes #15abc",
        "fixes GH15",
        "fixes gh-",
        "fixes owner/#3",
        "fixes /repo#3",
        "fixes octo/repo 15",
        "fixes\n#15",
        "fixes:#15",
        "fixes #99999999999999999999999",
        "fixes https://github.com/octo/repo/pull/15",
        "fixes https://github.com/octo/repo/issues/",
        "fixes https://github.com/octo/issues/15",
        "fixes https://ghe.example.com/octo/repo/issues/15",
        "fixes ftp://github.com/octo/repo/issues/15",
        "fixes octo/..#3",
        "_fixes #3",
        "See #15, it fixes nothing",
    ] {
        assert_eq!(closing(body), Vec::<String>::new(), "{body:?}");
    }
}

#[test]
fn each_keyword_closes_one_reference() {
    assert_eq!(closing("Fixes #1, #2"), vec!["github:octo/repo#1"]);
    assert_eq!(
        closing("Fixes #1, fixes #2\nResolves: other/lib#9 and closes GH-4."),
        vec![
            "github:octo/repo#1",
            "github:octo/repo#2",
            "github:other/lib#9",
            "github:octo/repo#4"
        ]
    );
    assert_eq!(closing("fixes fixes #7"), vec!["github:octo/repo#7"]);
    assert_eq!(closing("(fixes #7)."), vec!["github:octo/repo#7"]);
    assert_eq!(closing("-fixes #7"), vec!["github:octo/repo#7"]);
}

#[test]
fn url_references_follow_the_instance() {
    let ghe = RepoId::new("ghe.example.com", "octo", "repo");
    let found = |body: &str| refs(&closing_refs(body, ghe));
    assert_eq!(
        found("Closes https://ghe.example.com/octo/repo/issues/15"),
        vec!["github:ghe.example.com/octo/repo#15"]
    );
    assert_eq!(
        found("Closes https://GHE.example.com:8443/team/lib/issues/2#issuecomment-1"),
        vec!["github:ghe.example.com/team/lib#2"]
    );
    assert_eq!(
        found("Closes #4"),
        vec!["github:ghe.example.com/octo/repo#4"]
    );
    assert_eq!(found("Closes a/b#4"), vec!["github:ghe.example.com/a/b#4"]);
    assert!(found("Closes https://github.com/octo/repo/issues/15").is_empty());
}

#[test]
fn closing_references_are_capped() {
    let body: String = (1..=500).map(|n| format!("fixes #{n}\n")).collect();
    let found = closing_refs(&body, octo());
    assert_eq!(found.len(), MAX_CLOSING_REFS);
    assert_eq!(found[0].number, 1);
}

#[test]
fn branch_names() {
    let cases = [
        ("issue-15-backoff", Some(15)),
        ("issue/7", Some(7)),
        ("feature/issue-7", Some(7)),
        ("fix_issue-8", Some(8)),
        ("Issue-9", Some(9)),
        ("issue-0-then-issue-3", Some(3)),
        ("tissue-5", None),
        ("issue-15x", None),
        ("issues-5", None),
        ("issue-", None),
        ("issue15", None),
        ("main", None),
        ("", None),
        ("the-loop/issue-15", Some(15)),
        ("the-loop/pr-7", Some(7)),
        ("the-loop/pr-7x", None),
        ("other/pr-7", None),
    ];
    for (branch, expected) in cases {
        assert_eq!(branch_issue(branch), expected, "{branch:?}");
    }
}

#[test]
fn hosts_come_from_html_urls() {
    let cases = [
        ("https://github.com/octo/repo", "github.com"),
        ("https://ghe.example.com/octo/repo", "ghe.example.com"),
        ("HTTPS://GHE.Example.com:8443/octo/repo", "GHE.Example.com"),
        ("http://user@ghe.example.com/x", "ghe.example.com"),
        ("https://localhost/x", "localhost"),
    ];
    for (url, host) in cases {
        assert_eq!(url_host(url), Some(host), "{url}");
    }
    for bad in [
        "",
        "github.com/octo",
        "ftp://ghe.example.com/x",
        "https://",
        "https://nohost/x",
        "https://é.com/",
    ] {
        assert_eq!(url_host(bad), None, "{bad}");
    }
    let ghe = json!({
        "repository": {"full_name": "octo/repo", "html_url": "https://ghe.example.com/octo/repo"},
        "issue": {"number": 3},
    });
    assert_eq!(
        refs(&work_items("issues", &ghe)),
        vec!["github:ghe.example.com/octo/repo#3"]
    );
    let fallback = json!({
        "repository": {"full_name": "octo/repo"},
        "issue": {"number": 3, "html_url": "https://ghe.example.com/octo/repo/issues/3"},
    });
    assert_eq!(
        refs(&work_items("issue_comment", &fallback)),
        vec!["github:ghe.example.com/octo/repo#3"]
    );
    let none = json!({"repository": {"full_name": "octo/repo"}, "issue": {"number": 3}});
    assert_eq!(
        refs(&work_items("issues", &none)),
        vec!["github:octo/repo#3"]
    );
}

fn fixture(name: &str) -> Value {
    let text = match name {
        "issue_comment.created" => {
            include_str!("../../tests/fixtures/webhook/issue_comment.created.json")
        }
        "issue_comment.created.on_pr" => {
            include_str!("../../tests/fixtures/webhook/issue_comment.created.on_pr.json")
        }
        "issues.labeled" => include_str!("../../tests/fixtures/webhook/issues.labeled.json"),
        "pull_request.closed.merged" => {
            include_str!("../../tests/fixtures/webhook/pull_request.closed.merged.json")
        }
        "pull_request_review.submitted" => {
            include_str!("../../tests/fixtures/webhook/pull_request_review.submitted.json")
        }
        "pull_request_review_comment.created" => {
            include_str!("../../tests/fixtures/webhook/pull_request_review_comment.created.json")
        }
        "check_run.completed.failure" => {
            include_str!("../../tests/fixtures/webhook/check_run.completed.failure.json")
        }
        "workflow_run.completed" => {
            include_str!("../../tests/fixtures/webhook/workflow_run.completed.json")
        }
        "status" => include_str!("../../tests/fixtures/webhook/status.json"),
        other => panic!("no fixture {other}"),
    };
    serde_json::from_str(text).unwrap()
}

#[test]
fn fixtures_concern_the_expected_items() {
    let pr_then_issue = vec!["github:octo/repo#15", "github:octo/repo#16"];
    let ci = vec!["github:octo/repo#16", "github:octo/repo#15"];
    let cases: Vec<(&str, &str, Vec<&str>)> = vec![
        (
            "issue_comment",
            "issue_comment.created",
            vec!["github:octo/repo#15"],
        ),
        (
            "issue_comment",
            "issue_comment.created.on_pr",
            pr_then_issue.clone(),
        ),
        ("issues", "issues.labeled", vec!["github:octo/repo#15"]),
        (
            "pull_request",
            "pull_request.closed.merged",
            pr_then_issue.clone(),
        ),
        (
            "pull_request_review",
            "pull_request_review.submitted",
            pr_then_issue.clone(),
        ),
        (
            "pull_request_review_comment",
            "pull_request_review_comment.created",
            pr_then_issue,
        ),
        ("check_run", "check_run.completed.failure", ci.clone()),
        ("workflow_run", "workflow_run.completed", ci),
        ("status", "status", vec!["github:octo/repo#15"]),
    ];
    for (event, name, expected) in cases {
        assert_eq!(refs(&work_items(event, &fixture(name))), expected, "{name}");
    }
}

/// PR #16 in octo/repo with this body and head branch (in octo/repo itself).
fn pr_payload(body: &str, branch: &str) -> Value {
    json!({
        "repository": {"full_name": "octo/repo"},
        "pull_request": {
            "number": 16, "body": body,
            "head": {"ref": branch, "repo": {"full_name": "octo/repo"}},
        },
    })
}

#[test]
fn a_pr_links_only_on_a_trusted_word_and_from_its_own_repository() {
    let payload = pr_payload("Fixes #3", "issue-5-work");
    assert_eq!(
        refs(&work_items_with("pull_request", &payload, Links::Ignore)),
        vec!["github:octo/repo#16"],
        "an untrusted author's PR concerns only itself"
    );
    assert_eq!(pr_author("pull_request", &payload), None);
    let mut fork = payload.clone();
    fork["pull_request"]["head"]["repo"] = json!({"full_name": "mallory/repo"});
    assert_eq!(
        refs(&work_items("pull_request", &fork)),
        vec!["github:octo/repo#3", "github:octo/repo#16"],
        "a fork's branch names no issue here"
    );
    for head_repo in [
        json!(null),
        json!({}),
        json!({"id": 9, "full_name": "octo/repo"}),
    ] {
        let mut odd = payload.clone();
        odd["repository"]["id"] = json!(1);
        odd["pull_request"]["head"]["repo"] = head_repo.clone();
        assert_eq!(
            refs(&work_items("pull_request", &odd)),
            vec!["github:octo/repo#3", "github:octo/repo#16"],
            "{head_repo}"
        );
    }
    let comment = json!({
        "repository": {"full_name": "octo/repo"},
        "issue": {"number": 16, "body": "fixes #2", "user": {"login": "mallory"},
                  "pull_request": {"url": "x", "head": {"ref": "issue-9"}}},
    });
    assert_eq!(pr_author("issue_comment", &comment), Some("mallory"));
    assert_eq!(
        refs(&work_items("issue_comment", &comment)),
        vec!["github:octo/repo#2", "github:octo/repo#16"],
        "a head branch of no known repository names nothing"
    );
}

#[test]
fn ci_takes_a_head_branch_only_from_its_own_repository() {
    let run = |head_repository: Value| {
        json!({
            "repository": {"id": 1, "full_name": "octo/repo"},
            "workflow_run": {"id": 7, "head_branch": "issue-1-please", "pull_requests": [],
                             "head_repository": head_repository},
        })
    };
    let own = run(json!({"id": 1, "full_name": "octo/repo"}));
    assert_eq!(
        refs(&work_items("workflow_run", &own)),
        vec!["github:octo/repo#1"]
    );
    for stranger in [
        json!({"id": 2, "full_name": "mallory/repo"}),
        json!({"id": 2, "full_name": "octo/repo"}),
        json!(null),
    ] {
        assert!(
            work_items("workflow_run", &run(stranger.clone())).is_empty(),
            "{stranger}"
        );
    }
}

#[test]
fn pr_order_closing_then_branch_then_pr() {
    let payload = pr_payload(
        "Fixes #3 and resolves other/lib#4. Also closes #16.",
        "issue-5-work",
    );
    assert_eq!(
        refs(&work_items("pull_request", &payload)),
        vec![
            "github:octo/repo#3",
            "github:other/lib#4",
            "github:octo/repo#16",
            "github:octo/repo#5"
        ]
    );
}

#[test]
fn duplicates_merge_case_insensitively_keeping_the_first() {
    let payload = pr_payload(
        "Fixes #15, fixes Octo/Repo#15, fixes GH-15, fixes https://github.com/octo/repo/issues/15",
        "issue-15",
    );
    assert_eq!(
        refs(&work_items("pull_request_review_thread", &payload)),
        vec!["github:octo/repo#15", "github:octo/repo#16"]
    );
}

#[test]
fn issue_comment_on_pr_reads_issue_body_and_optional_branch() {
    let payload = json!({
        "repository": {"full_name": "octo/repo"},
        "issue": {
            "number": 16,
            "body": "fixes #2",
            "pull_request": {"url": "x", "head": {"ref": "issue/9", "repo": {"full_name": "octo/repo"}}},
        },
        "pull_request": {"body": "fixes #3"},
    });
    assert_eq!(
        refs(&work_items("issue_comment", &payload)),
        vec![
            "github:octo/repo#2",
            "github:octo/repo#9",
            "github:octo/repo#16"
        ]
    );
    // Without the `pull_request` key the issue is an issue: its body is not scanned.
    let issue = json!({
        "repository": {"full_name": "octo/repo"},
        "issue": {"number": 15, "body": "fixes #2", "pull_request": null},
    });
    assert_eq!(
        refs(&work_items("issue_comment", &issue)),
        vec!["github:octo/repo#15"]
    );
}

#[test]
fn pull_request_event_falls_back_to_top_level_number() {
    let payload =
        json!({"repository": {"full_name": "octo/repo"}, "number": 4, "pull_request": {}});
    assert_eq!(
        refs(&work_items("pull_request", &payload)),
        vec!["github:octo/repo#4"]
    );
}

#[test]
fn ci_events_read_their_own_objects() {
    let suite = json!({
        "repository": {"full_name": "octo/repo"},
        "check_suite": {"head_branch": "issue-3", "head_repository": {"full_name": "octo/repo"},
                        "pull_requests": [{"number": 8}, {"number": 9}, {"number": 8}]},
    });
    assert_eq!(
        refs(&work_items("check_suite", &suite)),
        vec![
            "github:octo/repo#8",
            "github:octo/repo#9",
            "github:octo/repo#3"
        ]
    );
    let push_run = json!({
        "repository": {"full_name": "octo/repo"},
        "workflow_run": {"head_branch": "main", "pull_requests": []},
    });
    assert!(work_items("workflow_run", &push_run).is_empty());
}

#[test]
fn anything_else_concerns_nothing() {
    let cases = [
        (
            "push",
            json!({"repository": {"full_name": "octo/repo"}, "ref": "refs/heads/issue-4"}),
        ),
        ("ping", json!({"zen": "x"})),
        ("issues", json!({"issue": {"number": 1}})),
        (
            "issues",
            json!({"repository": {"full_name": "octo"}, "issue": {"number": 1}}),
        ),
        (
            "issues",
            json!({"repository": {"full_name": "octo/re po"}, "issue": {"number": 1}}),
        ),
        (
            "issues",
            json!({"repository": {"full_name": "a/b/c"}, "issue": {"number": 1}}),
        ),
        (
            "issues",
            json!({"repository": {"full_name": "octo/repo"}, "issue": {"number": 0}}),
        ),
        (
            "issues",
            json!({"repository": {"full_name": "octo/repo"}, "issue": {"number": -3}}),
        ),
        (
            "issues",
            json!({"repository": {"full_name": "octo/repo"}, "issue": {"number": "15"}}),
        ),
        (
            "issues",
            json!({"repository": {"full_name": "octo/repo"}, "issue": {"number": 1.5}}),
        ),
        ("issue_comment", json!("a string")),
        ("check_run", json!(null)),
    ];
    for (event, payload) in cases {
        assert!(work_items(event, &payload).is_empty(), "{event} {payload}");
    }
}

#[test]
fn subjects() {
    assert_eq!(
        subject("issue_comment", &fixture("issue_comment.created.on_pr")).map(|r| r.to_string()),
        Some("github:octo/repo#16".into())
    );
    assert_eq!(
        subject(
            "pull_request_review",
            &fixture("pull_request_review.submitted")
        )
        .map(|r| r.number),
        Some(16)
    );
    assert_eq!(
        subject("issues", &fixture("issues.labeled")).map(|r| r.number),
        Some(15)
    );
    assert_eq!(
        subject("check_run", &fixture("check_run.completed.failure")),
        None
    );
}

#[test]
fn extracted_refs_parse_back() {
    for (event, name) in [
        ("issue_comment", "issue_comment.created.on_pr"),
        ("check_run", "check_run.completed.failure"),
    ] {
        for item in work_items(event, &fixture(name)) {
            assert_eq!(item.to_string().parse::<WorkItemRef>().unwrap(), item);
        }
    }
}
