//! Pull requests (SPEC §19.4 step 3): the client's `open_pull_for_head` and
//! `create_pull` against the simulated GitHub and against wiremock (the exact request
//! shapes), and the simulator's pull requests as the poller sees them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::poller::{Harness, REPO, seeded_sim};
use serde_json::{Value, json};
use std::time::Duration;
use the_loop::github::models;
use the_loop::github::sim::{ReviewState, SimGithub, SimHandle};
use the_loop::github::{Client, Error, NewPull, PullSummary, RetryPolicy};
use the_loop::guard::{ATTRIBUTION, MARKER};
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

const TOKEN: &str = "ghp_pullstesttoken_0123456789abcdef";
const BRANCH: &str = "the-loop/issue-15";

fn client(api_url: &str) -> Client {
    Client::builder(api_url)
        .token(Some(TOKEN))
        .retry_policy(RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_secs(2),
            max_total_delay: Duration::from_secs(5),
        })
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap()
}

fn new_pull(head: &str) -> NewPull {
    NewPull {
        head: head.into(),
        base: "main".into(),
        title: "Make backoff deterministic".into(),
        body: "Seeds the jitter.\n\nCloses #15".into(),
        draft: true,
    }
}

async fn sim() -> SimHandle {
    let sim = seeded_sim().await;
    sim.set_bot_login("loop-operator");
    sim.require_token(Some(TOKEN));
    sim
}

/// The body ends with the attribution and the marker, and holds the marker once.
fn assert_stamped_once(body: &str) {
    assert_eq!(body.matches(MARKER).count(), 1, "{body}");
    assert!(
        body.trim_end()
            .ends_with(&format!("{ATTRIBUTION}\n{MARKER}")),
        "{body}"
    );
}

#[tokio::test]
async fn a_created_pull_request_is_the_bots_marked_draft_and_found_by_its_head() {
    let sim = sim().await;
    let c = client(&sim.base_url());
    assert_eq!(
        c.open_pull_for_head(REPO, "octo", BRANCH).await.unwrap(),
        None
    );

    let before = c.counters().requests;
    let created = c.create_pull(REPO, &new_pull(BRANCH)).await.unwrap();
    assert_eq!(c.counters().requests, before + 1, "one request, counted");
    // #15–#17 exist: the shared issue/PR numbering goes on at 18.
    assert_eq!(
        created,
        PullSummary {
            number: 18,
            html_url: "https://github.com/octo/repo/pull/18".into(),
            draft: true,
        }
    );
    let pulls = sim.pulls(REPO);
    let pull = pulls.iter().find(|p| p.number == 18).unwrap();
    assert_eq!(
        (pull.head.as_str(), pull.base.as_str(), pull.user.as_str()),
        (BRANCH, "main", "loop-operator")
    );
    assert_eq!(pull.title, "Make backoff deterministic");
    assert!(pull.draft && pull.open && !pull.head_sha.is_empty());
    assert!(pull.body.starts_with("Seeds the jitter.\n\nCloses #15"));
    assert_stamped_once(&pull.body);

    // Found by its head, and only by its own.
    assert_eq!(
        c.open_pull_for_head(REPO, "octo", BRANCH).await.unwrap(),
        Some(created.clone())
    );
    assert_eq!(
        c.open_pull_for_head(REPO, "octo", "the-loop/issue-99")
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        c.open_pull_for_head(REPO, "octo", "issue-15-backoff")
            .await
            .unwrap()
            .map(|p| p.number),
        Some(16),
        "the seeded PR, by its head"
    );
}

#[tokio::test]
async fn the_lookup_is_always_fresh() {
    let sim = sim().await;
    let c = client(&sim.base_url());
    for _ in 0..2 {
        assert_eq!(
            c.open_pull_for_head(REPO, "octo", BRANCH).await.unwrap(),
            None
        );
    }
    c.create_pull(REPO, &new_pull(BRANCH)).await.unwrap();
    assert!(
        c.open_pull_for_head(REPO, "octo", BRANCH)
            .await
            .unwrap()
            .is_some()
    );
    let lookups: Vec<_> = sim
        .requests()
        .into_iter()
        .filter(|r| r.method == "GET" && r.path == "/repos/octo/repo/pulls")
        .collect();
    assert_eq!(lookups.len(), 3);
    for r in &lookups {
        assert!(!r.conditional && !r.not_modified, "{r:?}");
        assert!(r.had_token, "{r:?}");
        let query = r.query.as_deref().unwrap();
        assert!(
            query.contains("head=octo%3Athe-loop%2Fissue-15") && query.contains("state=open"),
            "{query}"
        );
    }
}

#[tokio::test]
async fn a_second_pull_request_for_the_same_head_is_a_distinguishable_422() {
    let sim = sim().await;
    let c = client(&sim.base_url());
    c.create_pull(REPO, &new_pull(BRANCH)).await.unwrap();
    let err = c.create_pull(REPO, &new_pull(BRANCH)).await.unwrap_err();
    assert_eq!(err.status(), Some(422), "{err}");
    assert!(err.is_pull_request_exists(), "{err}");
    assert!(
        err.to_string()
            .contains("A pull request already exists for octo:the-loop/issue-15."),
        "{err}"
    );
    // `owner:branch` names the same head (the client sends bare branches; GitHub takes both).
    let r = reqwest::Client::new()
        .post(format!("{}/repos/octo/repo/pulls", sim.base_url()))
        .bearer_auth(TOKEN)
        .json(&json!({"title": "t", "head": format!("octo:{BRANCH}"), "base": "main"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v["errors"][0]["message"],
        "A pull request already exists for octo:the-loop/issue-15."
    );
    assert_eq!(sim.pulls(REPO).len(), 2, "#16 and the one created");

    // Once the first is merged (closed), the branch may have a new one.
    sim.merge_pull(REPO, 18).unwrap();
    let again = c.create_pull(REPO, &new_pull(BRANCH)).await.unwrap();
    assert_eq!(again.number, 19);
}

#[tokio::test]
async fn the_simulator_refuses_what_github_refuses() {
    let sim = sim().await;
    let http = reqwest::Client::new();
    let post = |body: Value| {
        http.post(format!("{}/repos/octo/repo/pulls", sim.base_url()))
            .bearer_auth(TOKEN)
            .json(&body)
            .send()
    };
    for (body, field) in [
        (json!({"head": BRANCH, "base": "main"}), "title"),
        (json!({"title": "t", "base": "main"}), "head"),
        (json!({"title": "t", "head": BRANCH, "base": ""}), "base"),
        (
            json!({"title": "t", "head": "mallory:x", "base": "main"}),
            "head",
        ),
    ] {
        let r = post(body.clone()).await.unwrap();
        assert_eq!(r.status(), 422, "{body}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["message"], "Validation Failed");
        assert_eq!(v["errors"][0]["field"], field, "{body}");
    }
    let r = post(json!({"title": "t", "head": BRANCH, "base": "main"}))
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    assert!(r.headers().contains_key("location"));
    // Without the token: 401, and nothing is created.
    let r = http
        .post(format!("{}/repos/octo/repo/pulls", sim.base_url()))
        .json(&json!({"title": "t", "head": "other", "base": "main"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(sim.pulls(REPO).len(), 2);
    // An unknown repository: 404.
    let c = client(&sim.base_url());
    assert!(matches!(
        c.create_pull("octo/nothing", &new_pull(BRANCH)).await,
        Err(Error::NotFound { .. })
    ));
}

#[tokio::test]
async fn known_branches_give_the_head_sha_and_unknown_ones_are_refused() {
    let sim = sim().await;
    sim.resolve_branches(|repo, branch| match (repo, branch) {
        ("octo/repo", "main") => Some("a".repeat(40)),
        ("octo/repo", BRANCH) => Some("b".repeat(40)),
        ("octo/repo", "same-as-main") => Some("a".repeat(40)),
        _ => None,
    });
    let c = client(&sim.base_url());
    let err = c
        .create_pull(REPO, &new_pull("the-loop/issue-404"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(422));
    assert!(
        err.to_string().contains("PullRequest.head invalid"),
        "{err}"
    );
    let err = c
        .create_pull(
            REPO,
            &NewPull {
                base: "nope".into(),
                ..new_pull(BRANCH)
            },
        )
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("PullRequest.base invalid"),
        "{err}"
    );
    let err = c
        .create_pull(REPO, &new_pull("same-as-main"))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("No commits between main and same-as-main"),
        "{err}"
    );
    assert!(!err.is_pull_request_exists());

    let created = c.create_pull(REPO, &new_pull(BRANCH)).await.unwrap();
    assert_eq!(sim.head_sha(REPO, created.number).unwrap(), "b".repeat(40));
    let listed = c.list_open_pulls(REPO).await.unwrap().value.unwrap();
    let pull = listed
        .iter()
        .find(|p| models::number(p) == Some(created.number))
        .unwrap();
    assert_eq!(pull["head"]["sha"], "b".repeat(40));
    assert_eq!(pull["head"]["ref"], BRANCH);
    assert_eq!(pull["base"]["ref"], "main");
    assert_eq!(pull["user"]["login"], "loop-operator");
}

#[tokio::test]
async fn the_poller_sees_the_new_pull_request_and_its_reviews() {
    let sim = SimGithub::start().await.unwrap();
    sim.set_bot_login("loop-operator");
    sim.add_repo(REPO).unwrap();
    let c = client(&sim.base_url());
    let created = c.create_pull(REPO, &new_pull(BRANCH)).await.unwrap();
    assert_eq!(created.number, 1);

    // In the issues listing, as a PR, marked.
    let items = c.list_watched_items(REPO, "").await.unwrap().value.unwrap();
    assert_eq!(items.len(), 1);
    assert!(models::is_pull_request(&items[0]));
    assert_eq!(models::user_login(&items[0]), Some("loop-operator"));
    assert!(the_loop::guard::is_self_authored(models::body(&items[0])));

    // A review on it goes out to the poller like any watched PR's (it carries no label:
    // here the repo watches every open item).
    let mut h = Harness::with_config(sim, |c| c.repos[0].label = String::new()).await;
    h.cycle().await;
    let review = h
        .sim
        .add_review(
            REPO,
            created.number,
            "alice",
            ReviewState::ChangesRequested,
            "Please add a test.",
        )
        .unwrap();
    h.cycle().await;
    let id = format!("poll-review-{review}");
    assert!(h.ingest.fed_ids().contains(&id), "{:?}", h.ingest.fed_ids());
    let event = h.ingest.event(&id);
    assert_eq!(event.payload["pull_request"]["number"], created.number);
    assert_eq!(event.payload["pull_request"]["head"]["ref"], BRANCH);
}

// ---- the request shapes, against wiremock ------------------------------------------

#[tokio::test]
async fn the_requests_are_githubs_shapes_and_the_body_is_stamped_once() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/repos/octo/repo/pulls"))
        .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({
            "number": 42, "html_url": "https://github.com/octo/repo/pull/42", "draft": false,
            "state": "open", "head": {"ref": BRANCH}
        })))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/repos/octo/repo/pulls"))
        .and(query_param("head", format!("octo:{BRANCH}").as_str()))
        .and(query_param("state", "open"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([
            // GitHub ignoring the filter would list others: only the head's counts.
            {"number": 7, "html_url": "https://github.com/octo/repo/pull/7", "draft": false,
             "state": "open", "head": {"ref": "someone-else"}},
            {"number": 42, "html_url": "https://github.com/octo/repo/pull/42", "draft": true,
             "state": "open", "head": {"ref": BRANCH}}
        ])))
        .mount(&server)
        .await;
    let c = client(&server.uri());
    let smuggled = NewPull {
        body: format!("Closes #15\n{MARKER}\nmore"),
        draft: false,
        ..new_pull(BRANCH)
    };
    let created = c.create_pull(REPO, &smuggled).await.unwrap();
    assert_eq!((created.number, created.draft), (42, false));
    let found = c.open_pull_for_head(REPO, "octo", BRANCH).await.unwrap();
    assert_eq!(found.map(|p| (p.number, p.draft)), Some((42, true)));

    let received = server.received_requests().await.unwrap();
    let post = received
        .iter()
        .find(|r| r.method.as_str() == "POST")
        .unwrap();
    let sent: Value = serde_json::from_slice(&post.body).unwrap();
    let mut keys: Vec<_> = sent.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, ["base", "body", "draft", "head", "title"]);
    assert_eq!(
        (&sent["head"], &sent["base"], &sent["draft"]),
        (&json!(BRANCH), &json!("main"), &json!(false))
    );
    let body = sent["body"].as_str().unwrap();
    assert!(body.starts_with("Closes #15\n"), "{body}");
    assert_stamped_once(body);
    let get = received
        .iter()
        .find(|r| r.method.as_str() == "GET")
        .unwrap();
    assert!(!get.headers.contains_key("if-none-match"));
}

#[tokio::test]
async fn githubs_own_422_is_recognized_and_nothing_is_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/repos/octo/repo/pulls"))
        .respond_with(ResponseTemplate::new(422).set_body_json(json!({
            "message": "Validation Failed",
            "errors": [{"resource": "PullRequest", "code": "custom",
                        "message": "A pull request already exists for octo:the-loop/issue-15."}],
            "documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
            "status": "422"
        })))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/repos/octo/other/pulls"))
        .respond_with(ResponseTemplate::new(502))
        .expect(1)
        .mount(&server)
        .await;
    let c = client(&server.uri());
    let err = c.create_pull(REPO, &new_pull(BRANCH)).await.unwrap_err();
    assert!(
        err.is_pull_request_exists() && err.status() == Some(422),
        "{err}"
    );
    // A 5xx after the POST may have landed: not repeated (it could open a second PR).
    let err = c
        .create_pull("octo/other", &new_pull(BRANCH))
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(502));
    assert!(!err.is_pull_request_exists());
    // Refused before any request: bad names, an empty title.
    for bad in [
        new_pull("a b"),
        NewPull {
            title: "  ".into(),
            ..new_pull(BRANCH)
        },
        NewPull {
            base: "-x".into(),
            ..new_pull(BRANCH)
        },
    ] {
        assert!(matches!(
            c.create_pull(REPO, &bad).await,
            Err(Error::InvalidRequest(_))
        ));
    }
    assert!(matches!(
        c.open_pull_for_head(REPO, "o/x", BRANCH).await,
        Err(Error::InvalidRequest(_))
    ));
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
    // No token: a write is refused before it is sent.
    let anon = Client::builder(&server.uri()).token(None).build().unwrap();
    assert!(matches!(
        anon.create_pull(REPO, &new_pull(BRANCH)).await,
        Err(Error::NoToken { .. })
    ));
}
