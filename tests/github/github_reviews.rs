//! Reviews the tool writes (SPEC §21.4): the lines of a pull request's diff from
//! `GET …/pulls/{n}/files` (every page), and `create_review` against the simulated
//! GitHub (a line off the diff refuses the whole review, as GitHub does) and against
//! wiremock (the exact request shape).

use serde_json::{Value, json};
use std::time::Duration;
use the_loop::github::sim::{PullSpec, SimGithub, SimHandle};
use the_loop::github::{Client, LineComment, RetryPolicy};
use the_loop::guard::MARKER;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const TOKEN: &str = "ghp_reviewstesttoken_0123456789abcdef";
const REPO: &str = "octo/repo";

fn client(api_url: &str) -> Client {
    Client::builder(api_url)
        .token(Some(TOKEN))
        .retry_policy(RetryPolicy::none())
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap()
}

/// PR #16 with `files` as its diff.
async fn sim(files: &[(&str, Option<&str>)]) -> SimHandle {
    let sim = SimGithub::start().await.unwrap();
    sim.add_pull(REPO, PullSpec::new("Loop", "issue-15-loop").number(16))
        .unwrap();
    sim.set_pull_files(REPO, 16, files).unwrap();
    sim.require_token(Some(TOKEN));
    sim
}

/// A `lint` critic's successful round with `findings`.
fn lint(findings: Vec<the_loop::critic::Finding>) -> the_loop::critic::Envelope {
    the_loop::critic::Envelope {
        critic: "lint".into(),
        harness: None,
        model: None,
        attribution: "[lint/default]".into(),
        ok: true,
        exit_code: 0,
        duration_seconds: 1.0,
        output: "review".into(),
        error: None,
        usage: the_loop::critic::Usage::default(),
        findings,
    }
}

fn comment(path: &str, line: u32, body: &str) -> LineComment {
    LineComment {
        path: path.into(),
        line,
        start_line: None,
        body: body.into(),
    }
}

#[tokio::test]
async fn diff_lines_come_from_every_page_of_the_files() {
    let names: Vec<String> = (1..=250).map(|i| format!("src/f{i}.rs")).collect();
    let patches: Vec<String> = (1..=250)
        .map(|i| format!("@@ -{i},1 +{i},2 @@\n x\n+y"))
        .collect();
    let mut files: Vec<(&str, Option<&str>)> = names
        .iter()
        .zip(&patches)
        .map(|(n, p)| (n.as_str(), Some(p.as_str())))
        .collect();
    files.push(("logo.png", None));
    let sim = sim(&files).await;
    let lines = client(&sim.base_url())
        .pull_diff_lines(REPO, 16)
        .await
        .unwrap();
    for i in [1u32, 100, 101, 250] {
        let name = format!("src/f{i}.rs");
        assert!(
            lines.contains(&name, i) && lines.contains(&name, i + 1),
            "{name}"
        );
        assert!(!lines.contains(&name, i + 2), "{name}");
    }
    assert!(!lines.contains("logo.png", 1));
    let pages = sim
        .requests()
        .iter()
        .filter(|r| r.path == "/repos/octo/repo/pulls/16/files")
        .count();
    assert_eq!(pages, 3);
}

#[tokio::test]
async fn a_review_is_stamped_and_a_line_off_the_diff_refuses_it_whole() {
    let sim = sim(&[("src/lib.rs", Some("@@ -1,3 +1,4 @@\n a\n+b\n c\n d"))]).await;
    let client = client(&sim.base_url());
    let err = client
        .create_review(
            REPO,
            16,
            "body",
            &[
                comment("src/lib.rs", 2, "on"),
                comment("src/lib.rs", 9, "off"),
            ],
        )
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(422), "{err}");
    assert!(
        sim.reviews_on(REPO, 16).is_empty(),
        "nothing of it was made"
    );
    for off in [comment("other.rs", 1, "x"), comment("src/lib.rs", 0, "x")] {
        let err = client
            .create_review(REPO, 16, "b", &[off])
            .await
            .unwrap_err();
        assert_eq!(err.status(), Some(422), "{err}");
    }

    let hostile = format!("see {MARKER} here");
    let made = client
        .create_review(REPO, 16, &hostile, &[comment("src/lib.rs", 4, &hostile)])
        .await
        .unwrap();
    let reviews = sim.reviews_on(REPO, 16);
    assert_eq!(reviews.len(), 1);
    assert_eq!(reviews[0].id, made.id);
    assert!(
        made.html_url
            .ends_with(&format!("#pullrequestreview-{}", made.id))
    );
    for body in [&reviews[0].body, &reviews[0].comments[0].body] {
        assert_eq!(body.matches(MARKER).count(), 1, "{body}");
        assert!(body.trim_end().ends_with(MARKER), "{body}");
    }
    assert_eq!(reviews[0].comments[0].line, 4);
}

#[tokio::test]
async fn the_review_request_has_githubs_shape() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/repos/octo/repo/pulls/16/reviews"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": 80,
            "html_url": "https://github.com/octo/repo/pull/16#pullrequestreview-80",
            "state": "COMMENTED"
        })))
        .expect(1)
        .mount(&server)
        .await;
    let made = client(&server.uri())
        .create_review(REPO, 16, "the body", &[comment("src/a.rs", 7, "nit")])
        .await
        .unwrap();
    assert_eq!(made.id, 80);
    let requests = server.received_requests().await.unwrap();
    let sent: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(sent["event"], "COMMENT");
    assert!(sent["body"].as_str().unwrap().starts_with("the body\n\n"));
    let comments = sent["comments"].as_array().unwrap();
    assert_eq!(comments.len(), 1);
    assert_eq!(
        (
            &comments[0]["path"],
            &comments[0]["line"],
            &comments[0]["side"]
        ),
        (&json!("src/a.rs"), &json!(7), &json!("RIGHT"))
    );
    assert!(
        comments[0]["body"]
            .as_str()
            .unwrap()
            .ends_with(&format!("{MARKER}\n"))
    );
}

#[tokio::test]
async fn a_review_refused_for_its_lines_is_posted_again_with_the_findings_in_its_body() {
    use the_loop::critic::{Finding, Severity, post};
    use the_loop::work_item::WorkItemRef;
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/repos/octo/repo/issues/16"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "number": 16, "state": "open",
            "pull_request": {"url": "https://api.github.com/repos/octo/repo/pulls/16"}
        })))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/repos/octo/repo/pulls/16/files"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([
            {"filename": "src/a.rs", "patch": "@@ -1,2 +1,3 @@\n a\n+b\n c"}
        ])))
        .mount(&server)
        .await;
    // The diff moved after it was read: GitHub refuses the line, then takes the rest.
    Mock::given(method("POST"))
        .and(path("/repos/octo/repo/pulls/16/reviews"))
        .respond_with(ResponseTemplate::new(422).set_body_json(json!({
            "message": "Unprocessable Entity",
            "errors": ["Line could not be resolved"]
        })))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/repos/octo/repo/pulls/16/reviews"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": 81,
            "html_url": "https://github.com/octo/repo/pull/16#pullrequestreview-81"
        })))
        .mount(&server)
        .await;
    let envelope = lint(vec![Finding::new("src/a.rs", 2, Severity::Error, "moved")]);
    let client = client(&server.uri());
    let item = WorkItemRef::new("octo", "repo", 16);
    let posted = post::post(&client, &envelope, &item, None).await.unwrap();
    assert_eq!((posted.review, posted.comments), (true, 0));
    let sent: Vec<Value> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|r| r.method.as_str() == "POST")
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0]["comments"].as_array().unwrap().len(), 1);
    assert!(sent[1]["comments"].as_array().unwrap().is_empty());
    let body = sent[1]["body"].as_str().unwrap();
    assert!(body.contains("- `src/a.rs:2` error: moved"), "{body}");
}

#[tokio::test]
async fn a_finding_on_several_lines_of_one_hunk_is_one_comment_on_them_all() {
    use the_loop::critic::{Finding, Severity, post};
    use the_loop::work_item::WorkItemRef;
    // Two hunks: new lines 1–4 and 20–22.
    let patch = "@@ -1,2 +1,4 @@\n a\n+b\n+c\n d\n@@ -18,2 +20,3 @@\n x\n+y\n z";
    let sim = sim(&[("src/a.rs", Some(patch))]).await;
    let ranged = |line: u32, end: u32, message: &str| Finding {
        end_line: Some(end),
        ..Finding::new("src/a.rs", line, Severity::Warning, message)
    };
    let envelope = lint(vec![
        ranged(2, 3, "inside one hunk"),
        ranged(3, 21, "across two hunks"),
        Finding::new("src/a.rs", 21, Severity::Note, "one line"),
    ]);
    let client = client(&sim.base_url());
    let item = WorkItemRef::new("octo", "repo", 16);
    let posted = post::post(&client, &envelope, &item, None).await.unwrap();
    assert_eq!((posted.review, posted.comments), (true, 3));
    let reviews = sim.reviews_on(REPO, 16);
    let placed: Vec<(Option<u64>, u64)> = reviews[0]
        .comments
        .iter()
        .map(|c| (c.start_line, c.line))
        .collect();
    // Across two hunks GitHub would refuse the range: the comment takes its first line.
    assert_eq!(placed, [(Some(2), 3), (None, 3), (None, 21)]);
    // The simulator refuses what GitHub refuses: a range leaving its hunk.
    let mut across = comment("src/a.rs", 21, "no");
    across.start_line = Some(3);
    let refused = client.create_review(REPO, 16, "body", &[across]).await;
    assert_eq!(refused.err().and_then(|e| e.status()), Some(422));
    // A start that does not come before the line is not sent: one line.
    let mut backwards = comment("src/a.rs", 2, "one line");
    backwards.start_line = Some(3);
    client
        .create_review(REPO, 16, "body", &[backwards])
        .await
        .unwrap();
    let last = sim.reviews_on(REPO, 16).pop().unwrap();
    assert_eq!(
        (last.comments[0].start_line, last.comments[0].line),
        (None, 2)
    );
}
