//! Findings anchored to lines (SPEC §21.3) and a round posted to a pull request as one
//! review with line comments (SPEC §21.4), through the binary: `tests/critics/findings.sh`
//! names good and bad places in a real directory, the simulated GitHub takes the review.

use super::post::{ITEM, REPO, run, sim};
use super::{Home, code, envelope, script, stderr};
use serde_json::Value;
use std::path::{Path, PathBuf};
use the_loop::config::RoutingConfig;
use the_loop::github::sim::{PullSpec, SimHandle};
use the_loop::guard::MARKER;
use the_loop::routing::{
    DeliveryDedupe, DropReason, EnabledEvents, Inbound, Outcome, RouterConfig, route,
};

fn home() -> Home {
    let critic = |name: &str, style: &str, format: &str| {
        format!(
            "  - {{name: {name}, command: {}, args: [{style}, '{{prompt}}'], outputFormat: {format}, harness: reviewer, model: m1}}\n",
            script("findings.sh")
        )
    };
    Home::new(&format!(
        "{}{}{}",
        critic("text-findings", "text", "text"),
        critic("json-findings", "json", "json"),
        critic("flood", "flood", "text")
    ))
}

/// A worktree: `src/lib.rs` (5 lines), `README.md` (2), and `out.txt`, a symlink to a
/// file beside the worktree.
fn worktree(home: &Home) -> PathBuf {
    let root = home.scratch("wt");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "a\nb\nc\nd\ne\n").unwrap();
    std::fs::write(root.join("README.md"), "# r\ntext\n").unwrap();
    let outside = home.dir.path().join("outside.txt");
    std::fs::write(&outside, "secret\n").unwrap();
    std::os::unix::fs::symlink(&outside, root.join("out.txt")).unwrap();
    root
}

fn round(home: &Home, critic: &str, cwd: &Path) -> Value {
    let out = home.run(&[
        "critic",
        "run",
        critic,
        "--prompt",
        "x",
        "--cwd",
        cwd.to_str().unwrap(),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    envelope(&out)
}

/// `(path, line, severity)` of each finding.
fn places(env: &Value) -> Vec<(String, u64, String)> {
    env["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["line"].as_u64().unwrap(),
                f["severity"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The places of `findings.sh` that are in the worktree, as the envelope keeps them.
fn good_places() -> Vec<(String, u64, String)> {
    owned(&[
        ("src/lib.rs", 2, "warning"),
        ("src/lib.rs", 4, "error"),
        ("README.md", 1, "note"),
    ])
}

fn owned(list: &[(&str, u64, &str)]) -> Vec<(String, u64, String)> {
    list.iter()
        .map(|(p, l, s)| (p.to_string(), *l, s.to_string()))
        .collect()
}

#[test]
fn text_findings_land_in_the_envelope_and_bad_places_stay_in_the_output() {
    let home = home();
    let root = worktree(&home);
    let env = round(&home, "text-findings", &root);
    assert_eq!(places(&env), good_places());
    assert_eq!(env["findings"][1]["column"], 3);
    let message = env["findings"][1]["message"].as_str().unwrap();
    assert!(!message.contains('\u{1b}'), "inert: {message:?}");
    assert!(message.ends_with("screen cleared"), "{message:?}");
    // The refused places are still in the general output, as the critic wrote them.
    let output = env["output"].as_str().unwrap();
    for place in [
        "../../etc/passwd:1:",
        "/etc/passwd:1:",
        "out.txt:1:",
        "src/lib.rs:99:",
    ] {
        assert!(output.contains(place), "{place} in {output}");
    }
}

#[test]
fn json_findings_land_in_the_envelope_and_the_refused_are_listed_in_the_output() {
    let home = home();
    let root = worktree(&home);
    let env = round(&home, "json-findings", &root);
    assert_eq!(places(&env), good_places());
    assert_eq!(env["findings"][0]["endLine"], 3);
    assert!(
        !env["findings"][1]["message"]
            .as_str()
            .unwrap()
            .contains('\u{1b}')
    );
    let output = env["output"].as_str().unwrap();
    assert!(output.starts_with("json review"), "{output}");
    for place in [
        "../../etc/passwd:1: climbs out",
        "out.txt:1: a symlink out",
        "src/lib.rs:99: past the end",
    ] {
        assert!(output.contains(place), "{place} in {output}");
    }
}

#[test]
fn ten_thousand_findings_are_capped_and_the_rest_noted() {
    let home = home();
    let root = worktree(&home);
    let env = round(&home, "flood", &root);
    assert_eq!(env["findings"].as_array().unwrap().len(), 200);
    let output = env["output"].as_str().unwrap();
    assert!(
        output.contains("[the-loop: 9800 more findings were not kept: at most 200 per round]"),
        "{}",
        &output[output.len().saturating_sub(300)..]
    );
}

/// `critic run --work-item` from a shell elsewhere runs where the item's session works
/// (SPEC §9.3), as the TUI's rounds do: the places it names are found in the session's
/// worktree, not in the shell's directory. `--cwd` still wins.
#[test]
fn a_round_for_a_work_item_runs_in_its_sessions_directory() {
    use the_loop::events::{EventLog, Source};
    use the_loop::paths::StatePaths;
    use the_loop::session::{Registry, SessionRecord};
    let home = home();
    let root = worktree(&home);
    let item: the_loop::work_item::WorkItemRef = ITEM.parse().unwrap();
    let paths = StatePaths::new(home.state());
    Registry::new(&paths, EventLog::open(&paths), Source::Cli)
        .put(&SessionRecord::new(&item, "claude", root.clone()))
        .unwrap();
    let elsewhere = home.scratch("elsewhere");
    let run = |extra: &[&str]| {
        let out = home
            .cmd()
            .current_dir(&elsewhere)
            .args(["critic", "run", "text-findings", "--prompt", "x"])
            .args(["--work-item", ITEM])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        envelope(&out)
    };
    let env = run(&[]);
    assert!(env["findings"].is_array(), "no findings: {env}");
    assert_eq!(places(&env), good_places(), "{env}");
    let env = run(&["--cwd", elsewhere.to_str().unwrap()]);
    assert!(
        env["findings"].as_array().is_none_or(Vec::is_empty),
        "nothing there: {env}"
    );

    let help = home.run(&["critic", "run", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("where that work item's session works"),
        "{help}"
    );
}

/// PR #16 of the simulated repository, whose diff touches lines 1–4 of `src/lib.rs`
/// (and a binary file without a patch).
async fn pull_sim() -> SimHandle {
    let sim = sim().await;
    sim.add_pull(REPO, PullSpec::new("Loop", "issue-15-loop").number(16))
        .unwrap();
    sim.set_pull_files(
        REPO,
        16,
        &[
            ("src/lib.rs", Some("@@ -1,3 +1,4 @@\n a\n+b\n c\n d")),
            ("logo.png", None),
        ],
    )
    .unwrap();
    sim
}

/// What the router makes of `body` arriving as `event` (a fixture's shape), written by
/// the operator's own account.
fn route_back(event: &str, fixture: &str, key: &str, body: &str) -> Outcome {
    let path = format!(
        "{}/tests/fixtures/webhook/{fixture}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut payload: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    payload[key]["body"] = Value::from(body);
    payload[key]["user"]["login"] = Value::from("alice");
    payload["sender"]["login"] = Value::from("alice");
    let routing = RoutingConfig {
        authorized_users: vec!["alice".into()],
        ..RoutingConfig::default()
    };
    let config = RouterConfig::new(&routing, EnabledEvents::all()).watching([REPO]);
    route(
        &Inbound::from_webhook(event, "d-1", &payload),
        &config,
        &mut DeliveryDedupe::new(),
    )
}

fn self_authored(outcome: &Outcome) -> bool {
    matches!(
        outcome,
        Outcome::Dropped {
            reason: DropReason::SelfAuthored,
            ..
        }
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_posted_to_a_pull_request_is_one_review_with_line_comments() {
    let sim = pull_sim().await;
    let home = home();
    let root = worktree(&home);
    let pr = "github:octo/repo#16";
    let args = [
        "critic",
        "run",
        "text-findings",
        "--prompt",
        "x",
        "--cwd",
        root.to_str().unwrap(),
        "--post-to",
        pr,
        "--work-item",
        pr,
    ];
    let out = run(&home, &sim, &args).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        sim.comments_on(REPO, 16).is_empty(),
        "a review, not a comment"
    );

    let reviews = sim.reviews_on(REPO, 16);
    assert_eq!(reviews.len(), 1);
    let review = &reviews[0];
    assert_eq!(
        (review.login.as_str(), review.state.as_str()),
        ("alice", "COMMENTED")
    );
    assert!(
        review
            .body
            .starts_with("[reviewer/m1] critic review · `text-findings` · ok"),
        "{}",
        review.body
    );
    assert!(
        review.body.contains("Review of the change."),
        "{}",
        review.body
    );
    // Off the diff: listed in the body.
    assert!(
        review
            .body
            .contains("- `README.md:1` note: a note off the diff"),
        "{}",
        review.body
    );
    assert!(!review.body.contains("- `src/lib.rs:2`"), "{}", review.body);
    assert!(review.body.trim_end().ends_with(MARKER));
    assert_eq!(review.body.matches(MARKER).count(), 1);
    assert!(!review.body.contains('\u{1b}'), "{:?}", review.body);
    // On the diff: one line comment each, stamped, inert.
    let lines: Vec<(&str, u64)> = review
        .comments
        .iter()
        .map(|c| (c.path.as_str(), c.line))
        .collect();
    assert_eq!(lines, [("src/lib.rs", 2), ("src/lib.rs", 4)]);
    for c in &review.comments {
        assert!(
            c.body.starts_with("[reviewer/m1] critic `text-findings`"),
            "{}",
            c.body
        );
        assert!(c.body.trim_end().ends_with(MARKER), "{}", c.body);
        assert_eq!(c.body.matches(MARKER).count(), 1);
        assert!(!c.body.contains('\u{1b}'), "{:?}", c.body);
    }
    assert!(review.comments[1].body.contains("screen cleared"));
    // Nothing of it comes back into the loop.
    let submitted = "pull_request_review.submitted";
    assert!(self_authored(&route_back(
        "pull_request_review",
        submitted,
        "review",
        &review.body
    )));
    for c in &review.comments {
        let fixture = "pull_request_review_comment.created";
        let outcome = route_back("pull_request_review_comment", fixture, "comment", &c.body);
        assert!(self_authored(&outcome), "{outcome:?}");
    }

    let posted: Vec<Value> = home
        .events()
        .into_iter()
        .filter(|e| e["event"] == "critic.posted")
        .collect();
    assert_eq!(posted.len(), 1);
    assert_eq!(
        (&posted[0]["review"], &posted[0]["comments"]),
        (&Value::from(true), &Value::from(2))
    );
    assert!(
        posted[0]["comment_url"]
            .as_str()
            .unwrap()
            .contains(&format!("#pullrequestreview-{}", review.id))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issue_target_keeps_one_comment_with_the_findings_listed() {
    let sim = sim().await;
    let home = home();
    let root = worktree(&home);
    let args = [
        "critic",
        "run",
        "json-findings",
        "--prompt",
        "x",
        "--cwd",
        root.to_str().unwrap(),
        "--post-to",
        ITEM,
    ];
    let out = run(&home, &sim, &args).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let comments = sim.comments_on(REPO, 15);
    assert_eq!(comments.len(), 1);
    let body = &comments[0].body;
    assert!(
        body.contains("- `src/lib.rs:2-3` warning: the loop never ends"),
        "{body}"
    );
    assert!(
        body.contains("- `README.md:1` note: a note off the diff"),
        "{body}"
    );
    assert!(!body.contains('\u{1b}'), "{body:?}");
    assert!(body.trim_end().ends_with(MARKER));
    let posted: Vec<Value> = home
        .events()
        .into_iter()
        .filter(|e| e["event"] == "critic.posted")
        .collect();
    assert_eq!(
        (&posted[0]["review"], &posted[0]["comments"]),
        (&Value::from(false), &Value::from(0))
    );
}
