//! SPEC §14.3: strangers do not choose where things go.

use super::*;

/// PR #12 by `author`, body `Fixes #1`, from branch `issue-1-please` of `head_repo`.
fn pr_comment(author: &str, head_repo: &str, body: &str) -> Value {
    json!({
        "action": "created",
        "comment": {"id": 501, "body": body, "user": {"login": "alice"}},
        "issue": {
            "number": 12, "body": "Fixes #1", "user": {"login": author},
            "pull_request": {"url": "x", "head": {"ref": "issue-1-please", "repo": {"full_name": head_repo}}},
        },
        "repository": {"full_name": "octo/repo"},
        "sender": {"login": "alice"},
    })
}

#[test]
fn a_strangers_pr_concerns_only_itself() {
    let alice = config(&["alice"]);
    let stranger = pr_comment("mallory", "octo/repo", "looks fine");
    assert_eq!(
        route_once("issue_comment", &stranger, &alice),
        deliver(&[12], Some("alice"))
    );
    let stop = pr_comment("mallory", "octo/repo", "the-loop stop");
    match route_once("issue_comment", &stop, &alice) {
        Outcome::Control {
            command: ControlCommand::Stop,
            item: on,
            work_items,
            ..
        } => {
            assert_eq!(on, item(12));
            assert_eq!(work_items, vec![item(12)], "#1 is not reachable");
        }
        other => panic!("{other:?}"),
    }
    // An authorized author's PR links both; a fork's branch still names nothing.
    let trusted = pr_comment("alice", "octo/repo", "looks fine");
    assert_eq!(
        route_once("issue_comment", &trusted, &alice),
        deliver(&[1, 12], Some("alice"))
    );
    let fork = pr_comment("alice", "mallory/repo", "looks fine");
    let mut no_body = fork.clone();
    no_body["issue"]["body"] = json!("");
    assert_eq!(
        route_once("issue_comment", &no_body, &alice),
        deliver(&[12], Some("alice"))
    );
    // The token's own login is trusted as an author.
    let bot = pr_comment("the-loop-bot", "octo/repo", "looks fine");
    assert_eq!(
        route_once("issue_comment", &bot, &alice),
        deliver(&[12], Some("alice"))
    );
    let own = alice.clone().with_own_login(Some("The-Loop-Bot"));
    assert_eq!(
        route_once("issue_comment", &bot, &own),
        deliver(&[1, 12], Some("alice"))
    );
}

#[test]
fn a_forks_workflow_run_names_no_issue() {
    let alice = config(&["alice"]);
    let mut run = fixture("workflow_run.completed");
    run["workflow_run"]["pull_requests"] = json!([]);
    run["workflow_run"]["head_branch"] = json!("issue-1-please");
    assert_eq!(
        route_once("workflow_run", &run, &alice),
        deliver(&[1], None)
    );
    run["workflow_run"]["head_repository"] = json!({"id": 666, "full_name": "mallory/repo"});
    assert_eq!(
        route_once("workflow_run", &run, &alice),
        dropped(DropReason::NoWorkItem, &[], None)
    );
}

#[test]
fn one_ci_result_is_delivered_once_whatever_its_delivery_ids() {
    let alice = config(&["alice"]);
    let mut dedupe = DeliveryDedupe::new();
    for name in ["workflow_run.completed", "check_run.completed.failure"] {
        let payload = fixture(name);
        let event = event_of(name);
        let outcomes: Vec<Outcome> = ["gh-1", "gh-2", "poll-check-run-4"]
            .iter()
            .map(|id| {
                let id = format!("{event}-{id}");
                route(
                    &Inbound::from_webhook(event, &id, &payload),
                    &alice,
                    &mut dedupe,
                )
            })
            .collect();
        assert!(matches!(outcomes[0], Outcome::Deliver { .. }), "{name}");
        for later in &outcomes[1..] {
            assert!(
                matches!(
                    later,
                    Outcome::Dropped {
                        reason: DropReason::DuplicateDelivery,
                        ..
                    }
                ),
                "{name}: {later:?}"
            );
        }
        // Another conclusion of the same run, or a re-run, is news.
        let mut rerun = payload.clone();
        rerun[event]["conclusion"] = json!("timed_out");
        let id = format!("{event}-gh-3");
        let outcome = route(
            &Inbound::from_webhook(event, &id, &rerun),
            &alice,
            &mut dedupe,
        );
        assert!(
            matches!(outcome, Outcome::Deliver { .. }),
            "{name}: {outcome:?}"
        );
    }
    let mut attempt = fixture("workflow_run.completed");
    attempt["workflow_run"]["run_attempt"] = json!(2);
    let outcome = route(
        &Inbound::from_webhook("workflow_run", "gh-9", &attempt),
        &alice,
        &mut dedupe,
    );
    assert!(matches!(outcome, Outcome::Deliver { .. }), "{outcome:?}");
}

#[test]
fn events_about_unwatched_repositories_are_dropped() {
    let alice = config(&["alice"]);
    for name in [
        "issue_comment.created",
        "issue_comment.created.on_pr",
        "check_run.completed.failure",
        "pull_request.closed.merged",
        "status",
    ] {
        let mut payload = fixture(name);
        payload["repository"]["full_name"] = json!("evil/other");
        let outcome = route_once(event_of(name), &payload, &alice);
        assert!(
            matches!(
                outcome,
                Outcome::Dropped {
                    reason: DropReason::UnwatchedRepo,
                    ..
                }
            ),
            "{name}: {outcome:?}"
        );
    }
    let mut start = with_comment("issue_comment.created", "the-loop start");
    start["repository"]["full_name"] = json!("Evil/Other");
    assert!(matches!(
        route_once("issue_comment", &start, &alice),
        Outcome::Dropped {
            reason: DropReason::UnwatchedRepo,
            ..
        }
    ));
    let nothing = RouterConfig::new(&routing(&["alice"]), EnabledEvents::all());
    assert!(
        matches!(
            route_fixture("issue_comment.created", &nothing),
            Outcome::Dropped {
                reason: DropReason::UnwatchedRepo,
                ..
            }
        ),
        "no repos[]: nothing is watched"
    );
    // A watched PR closing an issue elsewhere links only what is watched.
    let mut pr = fixture("pull_request_review.submitted");
    pr["pull_request"]["body"] = json!("Fixes evil/other#7 and #15");
    assert_eq!(
        route_once("pull_request_review", &pr, &alice),
        deliver(&[15, 16], Some("alice"))
    );
    // Case does not matter.
    let shouting =
        RouterConfig::new(&routing(&["alice"]), EnabledEvents::all()).watching(["OCTO/Repo"]);
    assert!(matches!(
        route_fixture("issue_comment.created", &shouting),
        Outcome::Deliver { .. }
    ));
}

#[test]
fn a_quoted_or_code_keyword_is_a_comment_not_a_command() {
    let alice = config(&["alice"]);
    for body in [
        "> the-loop stop\n\nWhy did you stop?",
        "Type `the-loop stop` to end it.",
        "```\nthe-loop stop\n```",
    ] {
        let payload = with_comment("issue_comment.created", body);
        assert_eq!(
            route_once("issue_comment", &payload, &alice),
            deliver(&[15], Some("alice")),
            "{body:?}"
        );
    }
    let real = with_comment("issue_comment.created", "> quoting you\n\nthe-loop stop");
    assert!(matches!(
        route_once("issue_comment", &real, &alice),
        Outcome::Control {
            command: ControlCommand::Stop,
            ..
        }
    ));
}
