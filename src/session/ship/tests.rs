//! The ship engine over real git (an operator's clone and its bare origin, a worktree
//! the-loop made) and a local HTTP stand-in for GitHub's pull request API.

use super::*;
use crate::session::test_support::{Fixture, item};
use crate::session::{Origin, PromptInputs};
use crate::tmux::fake::Call;
use crate::workspace::test_repo::{TestRepo, git};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

struct World {
    repo: TestRepo,
    f: Fixture,
    github: MockServer,
}

async fn world() -> World {
    let repo = TestRepo::new();
    let clone = repo.clone.clone();
    let f = Fixture::with_config(tempfile::tempdir().unwrap(), |config| {
        config.repos[0].path = Some(clone.display().to_string());
    });
    let inputs = PromptInputs::manual(&item(7), "test");
    f.sessions
        .start(&item(7), &inputs, &Origin::cli())
        .await
        .unwrap();
    World {
        repo,
        f,
        github: MockServer::start().await,
    }
}

impl World {
    fn shipper(&self) -> Shipper {
        let client = Client::builder(&self.github.uri())
            .token(Some("ghp_shiptesttoken_0123456789"))
            .retry_policy(crate::github::RetryPolicy::none())
            .build()
            .unwrap();
        Shipper::new(Arc::clone(&self.f.sessions), Arc::new(client))
    }

    fn worktree(&self) -> PathBuf {
        self.f
            .sessions
            .workspaces()
            .record(&item(7))
            .unwrap()
            .expect("a worktree")
            .dir
    }

    /// A commit of `file` in the agent's worktree; its sha.
    fn commit(&self, file: &str, text: &str) -> String {
        let dir = self.worktree();
        std::fs::write(dir.join(file), text).unwrap();
        git(&dir, &["add", file]);
        git(&dir, &["commit", "-q", "-m", file]);
        git(&dir, &["rev-parse", "HEAD"]).trim().to_string()
    }

    fn on_origin(&self, branch: &str) -> Option<String> {
        let out = crate::workspace::test_repo::git_output(
            &self.repo.origin,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("refs/heads/{branch}"),
            ],
        );
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    fn record(&self) -> SessionRecord {
        self.f.sessions.registry().get(&item(7)).unwrap().unwrap()
    }

    fn events(&self, name: &str) -> Vec<Value> {
        std::fs::read_to_string(self.f.sessions.events().path())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| e["event"] == name)
            .collect()
    }

    fn pasted(&self) -> String {
        self.f
            .tmux
            .fake
            .calls()
            .iter()
            .filter_map(|c| match c {
                Call::PasteText { data, .. } => Some(String::from_utf8_lossy(data).into_owned()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    async fn github_answers(&self, create: ResponseTemplate) {
        Mock::given(method("GET"))
            .and(path("/repos/octo/repo/pulls"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
            .mount(&self.github)
            .await;
        Mock::given(method("POST"))
            .and(path("/repos/octo/repo/pulls"))
            .respond_with(create)
            .mount(&self.github)
            .await;
    }

    async fn posted_pulls(&self) -> Vec<Value> {
        self.github
            .received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .filter(|r| r.method.as_str() == "POST")
            .map(|r| serde_json::from_slice(&r.body).unwrap())
            .collect()
    }
}

fn created(number: u64) -> ResponseTemplate {
    ResponseTemplate::new(201).set_body_json(json!({
        "number": number,
        "html_url": format!("https://github.com/octo/repo/pull/{number}"),
        "draft": true,
    }))
}

fn order(seen: &str) -> Order {
    Order {
        work_item: item(7),
        seen_head: seen.to_string(),
        title: None,
        body: None,
        draft: None,
        source: Source::Cli,
        actor: "operator".into(),
    }
}

fn proposal(title: &str) -> Proposal {
    Proposal {
        title: title.into(),
        body: "Caps retries at 5.".into(),
        draft: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposal_shipped_pushes_the_shown_head_and_opens_one_draft() {
    let w = world().await;
    w.commit("retry.rs", "fn main() {}\n");
    let head = w.commit("cap.rs", "const CAP: u32 = 5;\n");
    let (request, shown) = propose(
        &w.f.sessions,
        &item(7),
        &proposal("Cap retries"),
        Source::Cli,
    )
    .await
    .unwrap();
    assert_eq!(request.head, head);
    assert_eq!(request.branch, "the-loop/issue-7");
    assert_eq!((shown.ahead, shown.files, shown.insertions), (2, 2, 2));
    assert_eq!(w.record().ship_request, Some(request.clone()));
    assert_eq!(w.events("ship.requested").len(), 1);

    w.github_answers(created(42)).await;
    let shipped = w.shipper().ship(&order(&request.head)).await.unwrap();
    assert_eq!(shipped.commits, 2);
    assert!(shipped.pushed_now && shipped.pull_opened);
    assert_eq!(w.on_origin("the-loop/issue-7"), Some(head.clone()));

    let posted = w.posted_pulls().await;
    assert_eq!(posted.len(), 1);
    let pull = &posted[0];
    assert_eq!(pull["head"], "the-loop/issue-7");
    assert_eq!(pull["base"], "main");
    assert_eq!(pull["title"], "Cap retries");
    assert_eq!(pull["draft"], true);
    let body = pull["body"].as_str().unwrap();
    assert!(
        body.starts_with("Caps retries at 5.\n\nCloses #7"),
        "{body}"
    );
    assert_eq!(body.matches(crate::guard::MARKER).count(), 1, "{body}");

    let record = w.record();
    assert_eq!(record.ship_request, None, "the request is answered");
    assert_eq!(record.pull_request.as_ref().map(|p| p.number), Some(42));
    assert_eq!(w.events("ship.pushed")[0]["sha"], head.as_str());
    assert_eq!(w.events("ship.pr_opened")[0]["number"], 42);
    let pasted = w.pasted();
    assert!(
        pasted.contains("Pushed 2 commits to the-loop/issue-7")
            && pasted.contains("pull request #42"),
        "{pasted}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_must_not_go_out_is_refused_with_the_reason() {
    let w = world().await;
    let refused = |e: ShipError| match e {
        ShipError::Refused(r) => r.code(),
        other => panic!("{other:?}"),
    };
    // Nothing ahead of the base.
    let head = w.shipper().preview(&item(7)).await.unwrap().head;
    assert_eq!(
        refused(w.shipper().ship(&order(&head)).await.unwrap_err()),
        "nothing-ahead"
    );

    // Uncommitted work.
    let head = w.commit("a.rs", "a\n");
    std::fs::write(w.worktree().join("b.rs"), "b\n").unwrap();
    let error = w.shipper().ship(&order(&head)).await.unwrap_err();
    assert!(error.to_string().contains("1 uncommitted"), "{error}");
    assert_eq!(refused(error), "uncommitted-changes");
    std::fs::remove_file(w.worktree().join("b.rs")).unwrap();

    // The head moved since the operator saw it.
    let seen = head;
    w.commit("c.rs", "c\n");
    assert_eq!(
        refused(w.shipper().ship(&order(&seen)).await.unwrap_err()),
        "head-moved"
    );

    assert_eq!(w.on_origin("the-loop/issue-7"), None, "nothing was pushed");
    let reasons: Vec<Value> = w
        .events("ship.refused")
        .iter()
        .map(|e| e["reason"].clone())
        .collect();
    assert_eq!(
        reasons,
        ["nothing-ahead", "uncommitted-changes", "head-moved"]
    );
    assert!(
        w.pasted().contains("was refused: the head moved"),
        "{}",
        w.pasted()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_a_failed_pull_request_does_not_push_again() {
    let w = world().await;
    let head = w.commit("a.rs", "a\n");
    w.github_answers(ResponseTemplate::new(502)).await;
    let error = w.shipper().ship(&order(&head)).await.unwrap_err();
    assert!(
        matches!(
            error,
            ShipError::Failed {
                step: Step::PullRequest,
                ..
            }
        ),
        "{error}"
    );
    assert_eq!(w.on_origin("the-loop/issue-7"), Some(head.clone()));
    assert_eq!(w.events("ship.failed")[0]["step"], "pull-request");

    w.github.reset().await;
    w.github_answers(created(43)).await;
    let shipped = w.shipper().ship(&order(&head)).await.unwrap();
    assert!(!shipped.pushed_now, "the push is not repeated");
    assert_eq!(shipped.pull.number, 43);
    assert_eq!(w.events("ship.pushed").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_repositorys_hooks_do_not_run_and_a_url_rewrite_refuses_the_push() {
    let w = world().await;
    let head = w.commit("a.rs", "a\n");
    // A pre-push hook the agent planted in the shared repository.
    let hooks = w.repo.clone.join(".git/hooks");
    let witness = w.repo.dir.path().join("hook-ran");
    std::fs::write(
        hooks.join("pre-push"),
        format!("#!/bin/sh\ntouch {}\nexit 0\n", witness.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        hooks.join("pre-push"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    // And a rewrite of the remote's URL, which would send the push (and a token)
    // elsewhere.
    let origin = w.repo.origin.display().to_string();
    git(
        &w.repo.clone,
        &[
            "config",
            "url./nonexistent/elsewhere.git.pushInsteadOf",
            &origin,
        ],
    );
    w.github_answers(created(44)).await;
    let error = w.shipper().ship(&order(&head)).await.unwrap_err();
    assert!(
        matches!(
            error,
            ShipError::Failed {
                step: Step::Push,
                ..
            }
        ),
        "{error}"
    );
    assert!(error.to_string().contains("pushinsteadof"), "{error}");
    assert_eq!(w.on_origin("the-loop/issue-7"), None);

    git(
        &w.repo.clone,
        &[
            "config",
            "--remove-section",
            "url./nonexistent/elsewhere.git",
        ],
    );
    w.shipper().ship(&order(&head)).await.unwrap();
    assert_eq!(w.on_origin("the-loop/issue-7"), Some(head));
    assert!(!witness.exists(), "the pre-push hook ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposal_is_checked_and_sanitized() {
    let w = world().await;
    w.commit("a.rs", "a\n");
    let propose_with = |title: &str, body: &str| {
        let p = Proposal {
            title: title.into(),
            body: body.into(),
            draft: Some(false),
        };
        let sessions = Arc::clone(&w.f.sessions);
        async move { propose(&sessions, &item(7), &p, Source::Cli).await }
    };
    assert_eq!(propose_with("  ", "").await.unwrap_err(), Refusal::NoTitle);
    let long = "x".repeat(MAX_TITLE_CHARS + 1);
    assert!(matches!(
        propose_with(&long, "").await.unwrap_err(),
        Refusal::TitleTooLong { .. }
    ));
    let body = "y".repeat(MAX_BODY_CHARS + 1);
    assert!(matches!(
        propose_with("ok", &body).await.unwrap_err(),
        Refusal::BodyTooLong { .. }
    ));
    let (request, _) = propose_with("Cap\nretries \u{1b}[31mnow\u{202e}", "b\u{e0041}ody")
        .await
        .unwrap();
    assert_eq!(request.title, "Cap retries [31mnow");
    assert_eq!(request.body, "body");
    assert_eq!(request.draft, Some(false));
    let again = propose_with("Second", "").await.unwrap().0;
    assert_eq!(
        w.record().ship_request,
        Some(again),
        "a new request replaces the old"
    );
    assert_eq!(
        propose(&w.f.sessions, &item(8), &proposal("x"), Source::Cli)
            .await
            .unwrap_err(),
        Refusal::NoSession(item(8))
    );
}

#[test]
fn the_pull_request_body_closes_the_issue() {
    assert_eq!(pull_body("", 7), "Closes #7");
    assert_eq!(pull_body(" Fixes it.\n", 7), "Fixes it.\n\nCloses #7");
    assert_eq!(base_branch("refs/remotes/origin/main"), "main");
    assert_eq!(
        base_branch("refs/remotes/upstream/release/2.0"),
        "release/2.0"
    );
    assert_eq!(base_branch("refs/heads/trunk"), "trunk");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_preview_shows_the_latest_critic_round_on_the_shown_head() {
    let w = world().await;
    let head = w.commit("a.rs", "a\n");
    let round = |sha: &str, ok: bool, code: i64| {
        Event::new(Source::Critic, EventType::CriticFinished)
            .with("critic", "review")
            .with("work_item", item(7).to_string())
            .with("head", sha)
            .with("ok", ok)
            .with("exit_code", code)
    };
    let verdict = || async { w.shipper().preview(&item(7)).await.unwrap().verdict };
    assert_eq!(verdict().await, "no critic round on this commit");
    w.f.sessions.emit(round(&head, false, 1));
    assert_eq!(verdict().await, "review: failed (exit 1)");
    w.f.sessions.emit(round(&head, true, 0));
    w.f.sessions
        .emit(round("0123456789abcdef0123456789abcdef01234567", false, 2));
    assert_eq!(verdict().await, "review: ok", "the latest on this head");
    w.commit("b.rs", "b\n");
    assert_eq!(verdict().await, "no critic round on this commit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_workspace_and_a_forks_branch_are_never_shipped() {
    // A repository path that is not a git repository: the session shares it.
    let f = Fixture::new();
    let inputs = PromptInputs::manual(&item(7), "test");
    f.sessions
        .start(&item(7), &inputs, &Origin::cli())
        .await
        .unwrap();
    let github = MockServer::start().await;
    let client = Client::builder(&github.uri()).build().unwrap();
    let shipper = Shipper::new(Arc::clone(&f.sessions), Arc::new(client));
    let error = shipper.ship(&order("0123")).await.unwrap_err();
    assert_eq!(error, ShipError::Refused(Refusal::Shared(item(7))));
    assert!(
        propose(&f.sessions, &item(7), &proposal("x"), Source::Cli)
            .await
            .is_err()
    );

    // A fork's pull request, checked out as `the-loop/pr-9`.
    let w = world().await;
    w.repo.fork_pull_request(9, "fork.rs", "from a fork\n");
    let inputs = PromptInputs::manual(&item(9), "test");
    w.f.sessions
        .start(&item(9), &inputs, &Origin::cli())
        .await
        .unwrap();
    let error = w.shipper().preview(&item(9)).await.unwrap_err();
    assert_eq!(
        error,
        Refusal::ForkBranch {
            item: item(9),
            branch: "the-loop/pr-9".into()
        }
    );
    assert!(error.to_string().contains("no right to push"), "{error}");
    assert!(
        w.github
            .received_requests()
            .await
            .unwrap_or_default()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_is_never_forced_and_goes_only_to_the_recorded_url() {
    let w = world().await;
    w.github_answers(created(45)).await;
    let first = w.commit("a.rs", "a\n");
    w.shipper().ship(&order(&first)).await.unwrap();

    // Someone else rewrites the branch on the remote: the next push is not a
    // fast-forward, and the-loop does not force it back.
    let other = w.repo.dir.path().join("other");
    git(
        w.repo.dir.path(),
        &[
            "clone",
            "-q",
            w.repo.origin.to_str().unwrap(),
            other.to_str().unwrap(),
        ],
    );
    std::fs::write(other.join("theirs.rs"), "theirs\n").unwrap();
    git(&other, &["add", "-A"]);
    git(&other, &["commit", "-q", "-m", "theirs"]);
    git(
        &other,
        &[
            "push",
            "-q",
            "--force",
            "origin",
            "HEAD:refs/heads/the-loop/issue-7",
        ],
    );
    let theirs = git(&other, &["rev-parse", "HEAD"]).trim().to_string();
    let second = w.commit("b.rs", "b\n");
    let error = w.shipper().ship(&order(&second)).await.unwrap_err();
    assert!(
        matches!(
            error,
            ShipError::Failed {
                step: Step::Push,
                ..
            }
        ),
        "{error}"
    );
    assert_eq!(w.on_origin("the-loop/issue-7"), Some(theirs), "not forced");

    // The remote's URL changed after the worktree was made: refused, nothing sent.
    let elsewhere = w.repo.dir.path().join("elsewhere.git");
    git(
        w.repo.dir.path(),
        &["init", "-q", "--bare", elsewhere.to_str().unwrap()],
    );
    git(
        &w.repo.clone,
        &[
            "remote",
            "set-url",
            "--push",
            "origin",
            elsewhere.to_str().unwrap(),
        ],
    );
    let error = w.shipper().ship(&order(&second)).await.unwrap_err();
    assert!(error.to_string().contains("not `"), "{error}");
    let pushed = crate::workspace::test_repo::git_output(&elsewhere, &["for-each-ref"]);
    assert!(pushed.stdout.is_empty(), "nothing reached the other URL");
}
