//! Posting findings against the simulated GitHub (SPEC §9.6): the comment carries the
//! attribution, ends with the marker, and the loop ignores it when it comes back.

use super::{Home, code, envelope, script, stderr};
use serde_json::Value;
use std::process::Output;
use the_loop::config::RoutingConfig;
use the_loop::github::sim::{IssueSpec, SimGithub, SimHandle};
use the_loop::guard::MARKER;
use the_loop::routing::{
    DeliveryDedupe, DropReason, EnabledEvents, Inbound, Outcome, RouterConfig, route,
};

pub(super) const TOKEN: &str = "ghp_critictesttoken_0123456789abcdef";
pub(super) const REPO: &str = "octo/repo";
pub(super) const ITEM: &str = "github:octo/repo#15";

pub(super) async fn sim() -> SimHandle {
    let sim = SimGithub::start().await.unwrap();
    sim.add_issue(REPO, IssueSpec::new("Review me").number(15).author("carol"))
        .unwrap();
    sim.set_bot_login("alice");
    sim.require_token(Some(TOKEN));
    sim
}

fn home() -> Home {
    Home::new(&format!(
        "  - {{name: snake, command: {0}, args: [snake, '{{prompt}}'], outputFormat: json, harness: reviewer, model: m1}}\n  - {{name: failing, command: {1}, args: ['{{prompt}}']}}\n",
        script("json.sh"),
        script("fail.sh")
    ))
}

/// Runs the binary off the runtime's threads so the simulator keeps serving.
pub(super) async fn run(home: &Home, sim: &SimHandle, args: &[&str]) -> Output {
    run_against(home, &sim.base_url(), args).await
}

async fn run_against(home: &Home, api_url: &str, args: &[&str]) -> Output {
    let mut cmd = home.cmd();
    cmd.env("THE_LOOP_GITHUB_API_URL", api_url)
        .env("GH_TOKEN", TOKEN)
        .args(args);
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

/// The comment as the poller would hand it to the router: an `issue_comment` by the
/// operator's own (authorized) account.
fn route_back(body: &str) -> Outcome {
    let path = format!(
        "{}/tests/fixtures/webhook/issue_comment.created.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut payload: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    payload["comment"]["body"] = Value::from(body);
    payload["comment"]["user"]["login"] = Value::from("alice");
    payload["sender"]["login"] = Value::from("alice");
    let routing = RoutingConfig {
        authorized_users: vec!["alice".into()],
        ..RoutingConfig::default()
    };
    let config = RouterConfig::new(&routing, EnabledEvents::all()).watching(["octo/repo"]);
    route(
        &Inbound::from_webhook("issue_comment", "d-1", &payload),
        &config,
        &mut DeliveryDedupe::new(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_to_puts_marked_findings_on_the_item() {
    let sim = sim().await;
    let home = home();
    let out = run(
        &home,
        &sim,
        &[
            "critic",
            "run",
            "snake",
            "--prompt",
            "x",
            "--post-to",
            ITEM,
            "--work-item",
            ITEM,
        ],
    )
    .await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(envelope(&out)["ok"], true);

    let comments = sim.comments_on(REPO, 15);
    assert_eq!(comments.len(), 1);
    let body = &comments[0].body;
    assert!(
        body.starts_with("[reviewer/m1] critic review · `snake` · ok · "),
        "{body}"
    );
    assert!(body.contains("\n\nsnake review\n"), "{body}");
    assert!(
        body.trim_end().ends_with(MARKER),
        "the marker comes last: {body}"
    );
    assert_eq!(body.matches(MARKER).count(), 1, "stamped once: {body}");
    assert!(
        matches!(
            route_back(body),
            Outcome::Dropped {
                reason: DropReason::SelfAuthored,
                ..
            }
        ),
        "the loop must ignore its own critic post"
    );

    let posted: Vec<Value> = home
        .events()
        .into_iter()
        .filter(|e| e["event"] == "critic.posted")
        .collect();
    assert_eq!(posted.len(), 1);
    assert_eq!(posted[0]["critic"], "snake");
    assert_eq!(posted[0]["work_item"], ITEM);
    assert!(
        posted[0]["comment_url"]
            .as_str()
            .unwrap()
            .contains("octo/repo")
    );
    assert!(posted[0]["path"].as_str().unwrap().ends_with("-snake.json"));
    assert!(
        !std::fs::read_to_string(home.state().join("events.jsonl"))
            .unwrap()
            .contains(TOKEN)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_round_posts_nothing_unless_asked() {
    let sim = sim().await;
    let home = home();
    let out = run(
        &home,
        &sim,
        &[
            "critic",
            "run",
            "failing",
            "--prompt",
            "x",
            "--post-to",
            ITEM,
        ],
    )
    .await;
    assert_eq!(code(&out), 1);
    assert_eq!(envelope(&out)["ok"], false);
    assert!(stderr(&out).contains("nothing posted"), "{}", stderr(&out));
    assert!(sim.comments_on(REPO, 15).is_empty());

    let out = run(
        &home,
        &sim,
        &[
            "critic",
            "run",
            "failing",
            "--prompt",
            "x",
            "--post-to",
            ITEM,
            "--post-failures",
        ],
    )
    .await;
    assert_eq!(code(&out), 1, "the round still failed");
    let comments = sim.comments_on(REPO, 15);
    assert_eq!(comments.len(), 1);
    assert!(
        comments[0].body.contains("· failed ·"),
        "{}",
        comments[0].body
    );
    assert!(
        comments[0].body.contains("exited with status 3"),
        "{}",
        comments[0].body
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn critic_post_posts_a_saved_envelope() {
    let sim = sim().await;
    let home = home();
    let saved = home.dir.path().join("envelope.json");
    let out = run(
        &home,
        &sim,
        &[
            "critic",
            "run",
            "snake",
            "--prompt",
            "x",
            "--output-file",
            saved.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        sim.comments_on(REPO, 15).is_empty(),
        "run alone never posts"
    );

    let out = run(
        &home,
        &sim,
        &["critic", "post", saved.to_str().unwrap(), "--to", ITEM],
    )
    .await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let url = String::from_utf8(out.stdout).unwrap();
    let comments = sim.comments_on(REPO, 15);
    assert_eq!(comments.len(), 1);
    assert!(url.trim().ends_with(&comments[0].id.to_string()), "{url}");
    assert!(comments[0].body.starts_with("[reviewer/m1] critic review"));
    assert!(comments[0].body.trim_end().ends_with(MARKER));

    // A failed envelope needs --post-failures; a file that is no envelope is refused.
    let failed = home.dir.path().join("failed.json");
    let failed_run = ["critic", "run", "failing", "--prompt", "x", "--output-file"];
    home.cmd().args(failed_run).arg(&failed).output().unwrap();
    let junk = home.dir.path().join("junk.json");
    std::fs::write(&junk, "{\"not\": \"an envelope\"}").unwrap();
    let refusals = [
        (&failed, "--post-failures"),
        (&junk, "is not a critic envelope"),
    ];
    for (file, needle) in refusals {
        let args = ["critic", "post", file.to_str().unwrap(), "--to", ITEM];
        let out = run(&home, &sim, &args).await;
        assert_eq!(code(&out), 2);
        assert!(stderr(&out).contains(needle), "{}", stderr(&out));
    }
    assert_eq!(sim.comments_on(REPO, 15).len(), 1);

    // GitHub unreachable: exit 1.
    let args = ["critic", "post", saved.to_str().unwrap(), "--to", ITEM];
    let out = run_against(&home, "http://127.0.0.1:9", &args).await;
    assert_eq!(code(&out), 1, "{}", stderr(&out));
}
