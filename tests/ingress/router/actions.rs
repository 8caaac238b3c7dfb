//! The action filter (SPEC §5.3–5.4): edits, reviews, CI conclusions, closes, the
//! `labeled` spawn policy and control keywords.

use super::*;

#[test]
fn edits_are_delivered_only_on_request() {
    let mut r = routing(&["alice"]);
    r.deliver_edits = true;
    let edits = RouterConfig::new(&r, EnabledEvents::all()).watching(["octo/repo"]);
    assert_eq!(
        route_fixture("issue_comment.edited", &edits),
        deliver(&[15], Some("alice"))
    );
    let mut deleted = fixture("issue_comment.edited");
    deleted["action"] = json!("deleted");
    assert_eq!(
        route_once("issue_comment", &deleted, &edits),
        deliver(&[15], Some("alice"))
    );
    assert_eq!(
        route_once("issue_comment", &deleted, &config(&["alice"])),
        dropped(DropReason::NotActionable, &[15], Some("alice"))
    );
    // An edited control comment never re-runs the command, nor is it forwarded.
    let mut edited_stop = fixture("issue_comment.edited");
    edited_stop["comment"]["body"] = json!("the-loop stop");
    assert_eq!(
        route_once("issue_comment", &edited_stop, &edits),
        dropped(DropReason::NotActionable, &[15], Some("alice"))
    );
}

#[test]
fn reviews_need_a_submitted_non_empty_body() {
    let alice = config(&["alice"]);
    for (action, body) in [
        ("submitted", json!("")),
        ("submitted", json!("  \n ")),
        ("submitted", json!(null)),
        ("edited", json!("text")),
        ("dismissed", json!("text")),
    ] {
        let mut review = fixture("pull_request_review.submitted");
        review["action"] = json!(action);
        review["review"]["body"] = body.clone();
        assert_eq!(
            route_once("pull_request_review", &review, &alice),
            dropped(DropReason::NotActionable, PR, Some("alice")),
            "{action} {body}"
        );
    }
    let mut marked = fixture("pull_request_review.submitted");
    marked["review"]["body"] = json!(mark_self_authored("LGTM"));
    assert_eq!(
        route_once("pull_request_review", &marked, &alice),
        dropped(DropReason::SelfAuthored, PR, Some("alice"))
    );
    let mut marked = fixture("pull_request_review_comment.created");
    marked["comment"]["body"] = json!(mark_self_authored("nit"));
    assert_eq!(
        route_once("pull_request_review_comment", &marked, &alice),
        dropped(DropReason::SelfAuthored, PR, Some("alice"))
    );
}

#[test]
fn ci_conclusions() {
    let alice = config(&["alice"]);
    for (conclusion, action, delivered) in [
        ("failure", "completed", true),
        ("timed_out", "completed", true),
        ("action_required", "completed", true),
        ("success", "completed", false),
        ("cancelled", "completed", false),
        ("neutral", "completed", false),
        ("skipped", "completed", false),
        ("failure", "created", false),
        ("failure", "rerequested", false),
    ] {
        for name in ["check_run.completed.failure", "workflow_run.completed"] {
            let event = event_of(name);
            let mut payload = fixture(name);
            payload["action"] = json!(action);
            payload[event]["conclusion"] = json!(conclusion);
            let expected = if delivered {
                deliver(CI, None)
            } else {
                dropped(DropReason::NotActionable, CI, None)
            };
            assert_eq!(
                route_once(event, &payload, &alice),
                expected,
                "{name} {conclusion} {action}"
            );
        }
    }
    let suite = json!({
        "action": "completed",
        "check_suite": {"conclusion": "timed_out", "head_branch": "issue-15-x", "pull_requests": [{"number": 16}]},
        "repository": {"full_name": "octo/repo"},
    });
    assert_eq!(route_once("check_suite", &suite, &alice), deliver(CI, None));
    for (state, delivered) in [
        ("failure", true),
        ("error", true),
        ("pending", false),
        ("success", false),
    ] {
        let mut status = fixture("status");
        status["state"] = json!(state);
        let expected = if delivered {
            deliver(&[15], None)
        } else {
            dropped(DropReason::NotActionable, &[15], None)
        };
        assert_eq!(route_once("status", &status, &alice), expected, "{state}");
    }
}

#[test]
fn closes_bypass_the_actor_gate() {
    let alice = config(&["alice"]);
    let mut by_mallory = fixture("pull_request.closed.merged");
    by_mallory["sender"] = json!({"login": "mallory"});
    by_mallory["pull_request"]["merged"] = json!(false);
    assert_eq!(
        route_once("pull_request", &by_mallory, &alice),
        Outcome::Close {
            item: item(16),
            linked: vec![item(15)],
            merged: false,
            actor: Some("mallory".into()),
        }
    );
    let mut issue_closed = fixture("issues.labeled");
    issue_closed["action"] = json!("closed");
    issue_closed.as_object_mut().unwrap().remove("sender");
    assert_eq!(
        route_once("issues", &issue_closed, &alice),
        Outcome::Close {
            item: item(15),
            linked: vec![],
            merged: false,
            actor: None
        }
    );
    // Any other lifecycle action still needs a known, authorized sender.
    let mut reopened = issue_closed.clone();
    reopened["action"] = json!("reopened");
    assert_eq!(
        route_once("issues", &reopened, &alice),
        dropped(DropReason::UnknownActor, &[15], None)
    );
    let mut opened_pr = fixture("pull_request.closed.merged");
    opened_pr["action"] = json!("opened");
    assert_eq!(
        route_once("pull_request", &opened_pr, &alice),
        dropped(DropReason::NotActionable, PR, Some("alice"))
    );
}

fn spawn_config(users: &[&str], spawn: SpawnPolicy) -> RouterConfig {
    let mut r = routing(users);
    r.spawn = spawn;
    RouterConfig::new(&r, EnabledEvents::all()).watching(["octo/repo"])
}

#[test]
fn labeled_spawn_policy_needs_an_authorized_author() {
    // The fixture: carol's issue #15, labeled `the-loop` by alice.
    let both = spawn_config(&["alice", "carol"], SpawnPolicy::Labeled);
    assert_eq!(
        route_fixture("issues.labeled", &both),
        Outcome::SpawnCandidate {
            item: item(15),
            author: "carol".into(),
            actor: "alice".into(),
            label: Some("the-loop".into()),
        }
    );
    let mut opened = fixture("issues.labeled");
    opened["action"] = json!("opened");
    opened.as_object_mut().unwrap().remove("label");
    assert!(matches!(
        route_once("issues", &opened, &both),
        Outcome::SpawnCandidate { label: None, .. }
    ));
    let not_author = spawn_config(&["alice"], SpawnPolicy::Labeled);
    assert_eq!(
        route_fixture("issues.labeled", &not_author),
        dropped(DropReason::NotActionable, &[15], Some("alice"))
    );
    let not_sender = spawn_config(&["carol"], SpawnPolicy::Labeled);
    assert_eq!(
        route_fixture("issues.labeled", &not_sender),
        dropped(DropReason::UnauthorizedActor, &[15], Some("alice"))
    );
    for policy in [SpawnPolicy::Command, SpawnPolicy::Never] {
        assert_eq!(
            route_fixture("issues.labeled", &spawn_config(&["alice", "carol"], policy)),
            dropped(DropReason::NotActionable, &[15], Some("alice")),
            "{policy:?}"
        );
    }
}

#[test]
fn control_keywords() {
    let alice = config(&["alice"]);
    let control = |command, on: u64, items: &[u64]| Outcome::Control {
        command,
        item: item(on),
        work_items: items.iter().map(|n| item(*n)).collect(),
        actor: "alice".into(),
    };
    let cases = [
        (
            "issue_comment.created",
            "the-loop start",
            control(ControlCommand::Start, 15, &[15]),
        ),
        (
            "issue_comment.created",
            "Please: THE-LOOP PAUSE.",
            control(ControlCommand::Pause, 15, &[15]),
        ),
        (
            "issue_comment.created",
            "the-loop stop\nthe-loop stop",
            control(ControlCommand::Stop, 15, &[15]),
        ),
        (
            "issue_comment.created.on_pr",
            "the-loop resume",
            control(ControlCommand::Resume, 16, PR),
        ),
        (
            "pull_request_review_comment.created",
            "the-loop stop",
            control(ControlCommand::Stop, 16, PR),
        ),
        (
            "issue_comment.created",
            "the-loop start or the-loop stop?",
            Outcome::Ambiguous {
                commands: vec![ControlCommand::Start, ControlCommand::Stop],
                work_items: vec![item(15)],
                actor: "alice".into(),
            },
        ),
        (
            "issue_comment.created",
            "xthe-loop start",
            deliver(&[15], Some("alice")),
        ),
        (
            "issue_comment.created",
            "the-loop startx",
            deliver(&[15], Some("alice")),
        ),
    ];
    for (name, body, expected) in cases {
        assert_eq!(
            route_once(event_of(name), &with_comment(name, body), &alice),
            expected,
            "{name} {body:?}"
        );
    }
    let mut review = fixture("pull_request_review.submitted");
    review["review"]["body"] = json!("the-loop pause");
    assert_eq!(
        route_once("pull_request_review", &review, &alice),
        control(ControlCommand::Pause, 16, PR)
    );
    // Guards come first: a stranger's or a marked keyword is not a command.
    assert_eq!(
        route_once(
            "issue_comment",
            &with_comment("issue_comment.created.unauthorized", "the-loop stop"),
            &alice
        ),
        dropped(DropReason::UnauthorizedActor, &[15], Some("mallory"))
    );
    assert_eq!(
        route_once(
            "issue_comment",
            &with_comment(
                "issue_comment.created",
                &mark_self_authored("the-loop stop")
            ),
            &alice
        ),
        dropped(DropReason::SelfAuthored, &[15], Some("alice"))
    );
}

#[test]
fn custom_keywords_come_from_config() {
    let mut r = routing(&["alice"]);
    r.keywords = Keywords {
        start: "@bot go".into(),
        ..Keywords::default()
    };
    let custom = RouterConfig::new(&r, EnabledEvents::all()).watching(["octo/repo"]);
    let go = route_once(
        "issue_comment",
        &with_comment("issue_comment.created", "@Bot Go"),
        &custom,
    );
    assert!(
        matches!(
            go,
            Outcome::Control {
                command: ControlCommand::Start,
                ..
            }
        ),
        "{go:?}"
    );
    let old = route_once(
        "issue_comment",
        &with_comment("issue_comment.created", "the-loop start"),
        &custom,
    );
    assert!(matches!(old, Outcome::Deliver { .. }), "{old:?}");
}
