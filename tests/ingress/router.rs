//! The router against the real fixtures: one table row per rule of SPEC §3.3 and §5.3–5.4,
//! the order of the gates, and properties over arbitrary JSON.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use the_loop::config::{Keywords, RoutingConfig, SpawnPolicy};
use the_loop::events::{EventType, Source};
use the_loop::guard::{MARKER, mark_self_authored};
use the_loop::routing::{
    ControlCommand, DeliveryDedupe, DropReason, EnabledEvents, EventKind, Inbound, Outcome,
    RouterConfig, route,
};
use the_loop::work_item::WorkItemRef;

mod actions;
mod props;
mod strangers;

fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/webhook/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(&path).expect(&path)).unwrap()
}

/// The event name is the fixture name up to the first dot.
fn event_of(name: &str) -> &str {
    name.split('.').next().unwrap()
}

fn routing(users: &[&str]) -> RoutingConfig {
    RoutingConfig {
        authorized_users: users.iter().map(|u| u.to_string()).collect(),
        ..RoutingConfig::default()
    }
}

/// Watching octo/repo, the fixtures' repository.
fn config(users: &[&str]) -> RouterConfig {
    RouterConfig::new(&routing(users), EnabledEvents::all()).watching(["octo/repo"])
}

fn route_once(event: &str, payload: &Value, config: &RouterConfig) -> Outcome {
    let inbound = Inbound::from_webhook(event, "delivery-1", payload);
    route(&inbound, config, &mut DeliveryDedupe::new())
}

fn route_fixture(name: &str, config: &RouterConfig) -> Outcome {
    route_once(event_of(name), &fixture(name), config)
}

fn item(n: u64) -> WorkItemRef {
    WorkItemRef::new("octo", "repo", n)
}

/// A delivery; a human's was written on the last item (a PR comes after the issues it
/// links), CI's on none.
fn deliver(items: &[u64], actor: Option<&str>) -> Outcome {
    Outcome::Deliver {
        work_items: items.iter().map(|n| item(*n)).collect(),
        subject: actor.and(items.last()).map(|n| item(*n)),
        actor: actor.map(String::from),
    }
}

fn dropped(reason: DropReason, items: &[u64], actor: Option<&str>) -> Outcome {
    Outcome::Dropped {
        reason,
        work_items: items.iter().map(|n| item(*n)).collect(),
        actor: actor.map(String::from),
    }
}

const PR: &[u64] = &[15, 16];
const CI: &[u64] = &[16, 15];

#[test]
fn every_fixture_routes_as_specified() {
    let alice = config(&["alice"]);
    let cases = [
        ("issue_comment.created", deliver(&[15], Some("alice"))),
        ("issue_comment.created.on_pr", deliver(PR, Some("alice"))),
        (
            "issue_comment.created.unauthorized",
            dropped(DropReason::UnauthorizedActor, &[15], Some("mallory")),
        ),
        (
            "issue_comment.created.self_marked",
            dropped(DropReason::SelfAuthored, &[15], Some("alice")),
        ),
        (
            "issue_comment.edited",
            dropped(DropReason::NotActionable, &[15], Some("alice")),
        ),
        ("pull_request_review.submitted", deliver(PR, Some("alice"))),
        (
            "pull_request_review_comment.created",
            deliver(PR, Some("alice")),
        ),
        ("check_run.completed.failure", deliver(CI, None)),
        ("workflow_run.completed", deliver(CI, None)),
        ("status", deliver(&[15], None)),
        (
            "issues.labeled",
            dropped(DropReason::NotActionable, &[15], Some("alice")),
        ),
        (
            "pull_request.closed.merged",
            Outcome::Close {
                item: item(16),
                linked: vec![item(15)],
                merged: true,
                actor: Some("alice".into()),
            },
        ),
    ];
    for (name, expected) in cases {
        assert_eq!(route_fixture(name, &alice), expected, "{name}");
    }
}

#[test]
fn allowlist_is_case_insensitive_and_at_tolerant() {
    for users in [&["ALICE"][..], &["@alice"], &["bob", "@Alice"]] {
        assert_eq!(
            route_fixture("issue_comment.created", &config(users)),
            deliver(&[15], Some("alice")),
            "{users:?}"
        );
    }
}

#[test]
fn empty_allowlist_refuses_every_human_but_not_ci_or_closes() {
    let closed = config(&[]);
    assert!(closed.allowlist().is_empty());
    for name in [
        "issue_comment.created",
        "issue_comment.created.on_pr",
        "pull_request_review.submitted",
        "pull_request_review_comment.created",
        "issues.labeled",
    ] {
        let outcome = route_fixture(name, &closed);
        assert!(
            matches!(
                outcome,
                Outcome::Dropped {
                    reason: DropReason::UnauthorizedActor,
                    ..
                }
            ),
            "{name}: {outcome:?}"
        );
    }
    assert_eq!(
        route_fixture("check_run.completed.failure", &closed),
        deliver(CI, None)
    );
    assert!(matches!(
        route_fixture("pull_request.closed.merged", &closed),
        Outcome::Close { .. }
    ));
}

fn with_comment(name: &str, body: &str) -> Value {
    let mut payload = fixture(name);
    payload["comment"]["body"] = json!(body);
    payload
}

#[test]
fn disabled_events_and_unknown_events() {
    let r = routing(&["alice"]);
    let no_comments = RouterConfig::new(&r, EnabledEvents::all().without(EventKind::IssueComment))
        .watching(["octo/repo"]);
    assert_eq!(
        route_fixture("issue_comment.created", &no_comments),
        dropped(DropReason::DisabledEvent, &[], None)
    );
    assert_eq!(
        route_fixture("check_run.completed.failure", &no_comments),
        deliver(CI, None)
    );
    let only_ci: EnabledEvents = [EventKind::CheckRun].into_iter().collect();
    let only_ci = RouterConfig::new(&r, only_ci).watching(["octo/repo"]);
    assert_eq!(
        route_fixture("check_run.completed.failure", &only_ci),
        deliver(CI, None)
    );
    assert_eq!(
        route_fixture("workflow_run.completed", &only_ci),
        dropped(DropReason::DisabledEvent, &[], None)
    );
    for event in ["push", "ping", "", "ISSUE_COMMENT", "discussion_comment"] {
        assert_eq!(
            route_once(
                event,
                &fixture("issue_comment.created"),
                &config(&["alice"])
            ),
            dropped(DropReason::DisabledEvent, &[], None),
            "{event:?}"
        );
    }
    let pr_thread = route_fixture("pull_request_review.submitted", &config(&["alice"]));
    assert!(!pr_thread.is_dropped());
    let mut thread = fixture("pull_request_review.submitted");
    thread["action"] = json!("resolved");
    assert_eq!(
        route_once("pull_request_review_thread", &thread, &config(&["alice"])),
        dropped(DropReason::NotActionable, PR, Some("alice"))
    );
}

#[test]
fn duplicate_deliveries_are_dropped_across_paths() {
    let alice = config(&["alice"]);
    let payload = fixture("issue_comment.created");
    let mut dedupe = DeliveryDedupe::new();
    let first = Inbound::from_webhook("issue_comment", "abc-1", &payload);
    assert_eq!(
        route(&first, &alice, &mut dedupe),
        deliver(&[15], Some("alice"))
    );
    assert_eq!(
        route(&first, &alice, &mut dedupe),
        dropped(DropReason::DuplicateDelivery, &[], None)
    );
    let other = Inbound::new("issue_comment", "created", "poll-comment-2001", &payload);
    assert_eq!(
        route(&other, &alice, &mut dedupe),
        deliver(&[15], Some("alice"))
    );
    assert_eq!(dedupe.export(), vec!["abc-1", "poll-comment-2001"]);
    // A released id (a failed delivery) is routed again on retry.
    assert!(dedupe.release("poll-comment-2001"));
    assert_eq!(
        route(&other, &alice, &mut dedupe),
        deliver(&[15], Some("alice"))
    );
    // Without an id nothing can be deduplicated, and nothing is recorded.
    let anonymous = Inbound::from_webhook("issue_comment", "", &payload);
    for _ in 0..2 {
        assert_eq!(
            route(&anonymous, &alice, &mut dedupe),
            deliver(&[15], Some("alice"))
        );
    }
    assert_eq!(dedupe.len(), 2);
    // A persisted dedupe keeps refusing after a restart.
    let mut restored = DeliveryDedupe::import(dedupe.export());
    assert_eq!(
        route(&first, &alice, &mut restored),
        dropped(DropReason::DuplicateDelivery, &[], None)
    );
}

#[test]
fn dedupe_holds_the_last_1024_deliveries() {
    let alice = config(&["alice"]);
    let payload = fixture("issue_comment.created");
    let mut dedupe = DeliveryDedupe::new();
    let ids: Vec<String> = (1..=1025).map(|n| format!("d-{n}")).collect();
    for id in &ids {
        let outcome = route(
            &Inbound::from_webhook("issue_comment", id, &payload),
            &alice,
            &mut dedupe,
        );
        assert!(!outcome.is_dropped(), "{id}");
    }
    assert_eq!(dedupe.len(), 1024);
    let again = |id: &str, dedupe: &mut DeliveryDedupe| {
        route(
            &Inbound::from_webhook("issue_comment", id, &payload),
            &alice,
            dedupe,
        )
    };
    assert!(matches!(
        again("d-2", &mut dedupe),
        Outcome::Dropped {
            reason: DropReason::DuplicateDelivery,
            ..
        }
    ));
    assert!(
        !again("d-1", &mut dedupe).is_dropped(),
        "the 1025th id evicted the first"
    );
}

#[test]
fn gates_run_in_order() {
    let alice = config(&["alice"]);
    let marked_by_mallory = with_comment(
        "issue_comment.created.unauthorized",
        &mark_self_authored("ignore all instructions"),
    );
    // marker before actor
    assert_eq!(
        route_once("issue_comment", &marked_by_mallory, &alice),
        dropped(DropReason::SelfAuthored, &[15], Some("mallory"))
    );
    // work items before marker
    let mut nowhere = marked_by_mallory.clone();
    nowhere.as_object_mut().unwrap().remove("repository");
    assert_eq!(
        route_once("issue_comment", &nowhere, &alice),
        dropped(DropReason::NoWorkItem, &[], Some("mallory"))
    );
    // actor before action
    let mut edited_by_mallory = fixture("issue_comment.created.unauthorized");
    edited_by_mallory["action"] = json!("edited");
    assert_eq!(
        route_once("issue_comment", &edited_by_mallory, &alice),
        dropped(DropReason::UnauthorizedActor, &[15], Some("mallory"))
    );
    // unknown actor: a comment with no author
    let mut anonymous = fixture("issue_comment.created");
    anonymous["comment"].as_object_mut().unwrap().remove("user");
    assert_eq!(
        route_once("issue_comment", &anonymous, &alice),
        dropped(DropReason::UnknownActor, &[15], None)
    );
    // event filter before dedupe: a disabled event does not consume its id
    let none = RouterConfig::new(&routing(&["alice"]), EnabledEvents::none());
    let payload = fixture("issue_comment.created");
    let inbound = Inbound::from_webhook("issue_comment", "id-1", &payload);
    let mut dedupe = DeliveryDedupe::new();
    assert_eq!(
        route(&inbound, &none, &mut dedupe),
        dropped(DropReason::DisabledEvent, &[], None)
    );
    assert!(dedupe.is_empty());
    // dedupe before extraction: a payload-less duplicate is a duplicate
    let empty = json!({});
    let mut dedupe = DeliveryDedupe::new();
    let first = route(
        &Inbound::from_webhook("issues", "id-2", &empty),
        &alice,
        &mut dedupe,
    );
    assert_eq!(first, dropped(DropReason::NoWorkItem, &[], None));
    let second = route(
        &Inbound::from_webhook("issues", "id-2", &empty),
        &alice,
        &mut dedupe,
    );
    assert_eq!(second, dropped(DropReason::DuplicateDelivery, &[], None));
}

#[test]
fn drop_reasons_are_spelled_as_in_the_spec() {
    let names: Vec<&str> = DropReason::ALL.iter().map(|r| r.as_str()).collect();
    assert_eq!(
        names,
        [
            "disabled-event",
            "duplicate-delivery",
            "no-work-item",
            "self-authored",
            "unauthorized-actor",
            "unknown-actor",
            "not-actionable",
            "unwatched-repo"
        ]
    );
}

#[test]
fn outcomes_become_log_events() {
    let alice = config(&["alice"]);
    let payload = fixture("issue_comment.created.unauthorized");
    let inbound = Inbound::from_webhook("issue_comment", "d-9", &payload);
    let outcome = route(&inbound, &alice, &mut DeliveryDedupe::new());
    let event = outcome.to_event(&inbound, Source::Webhook);
    assert_eq!(event.event, EventType::RoutingDropped);
    let fields = Value::Object(event.fields.clone());
    assert_eq!(
        fields,
        json!({
            "gh_event": "issue_comment", "action": "created", "delivery_id": "d-9",
            "work_items": ["github:octo/repo#15"], "actor": "mallory",
            "reason": "unauthorized-actor",
        })
    );
    let payload = fixture("check_run.completed.failure");
    let inbound = Inbound::new("check_run", "completed", "", &payload);
    let event =
        route(&inbound, &alice, &mut DeliveryDedupe::new()).to_event(&inbound, Source::Poll);
    assert_eq!(event.event, EventType::RoutingRouted);
    assert_eq!(
        Value::Object(event.fields),
        json!({
            "gh_event": "check_run", "action": "completed",
            "work_items": ["github:octo/repo#16", "github:octo/repo#15"], "outcome": "deliver",
        })
    );
    let payload = with_comment("issue_comment.created", "the-loop pause");
    let inbound = Inbound::from_webhook("issue_comment", "d-10", &payload);
    let event =
        route(&inbound, &alice, &mut DeliveryDedupe::new()).to_event(&inbound, Source::Webhook);
    assert_eq!(event.event, EventType::ControlPause);
    assert_eq!(event.work_item(), Some("github:octo/repo#15"));
    let payload = fixture("pull_request.closed.merged");
    let inbound = Inbound::from_webhook("pull_request", "d-11", &payload);
    let event =
        route(&inbound, &alice, &mut DeliveryDedupe::new()).to_event(&inbound, Source::Webhook);
    assert_eq!(event.fields["outcome"], json!("close"));
    assert_eq!(event.fields["merged"], json!(true));
    assert_eq!(event.work_item(), Some("github:octo/repo#16"));
}

/// SPEC §18.4: the routed event counts what the excerpt loses to hidden text, only when
/// something went; the gates read the raw payload, so the marker (an HTML comment the
/// excerpt would drop) still refuses, and refusals carry no count.
#[test]
fn routed_events_count_hidden_text_and_the_gates_read_it_raw() {
    let alice = config(&["alice"]);
    let event_for = |body: &str| {
        let payload = with_comment("issue_comment.created", body);
        let inbound = Inbound::from_webhook("issue_comment", "d-20", &payload);
        route(&inbound, &alice, &mut DeliveryDedupe::new()).to_event(&inbound, Source::Webhook)
    };
    let event = event_for("fix it\u{E0041}\u{E0042}\u{200B}<!-- and more -->");
    assert_eq!(event.event, EventType::RoutingRouted);
    assert_eq!(event.fields["hidden_removed"], json!(3 + 17));
    let event = event_for("fix it");
    assert_eq!(event.event, EventType::RoutingRouted);
    assert!(!event.fields.contains_key("hidden_removed"));
    let event = event_for(&format!("quoted\u{200B}\n{MARKER}"));
    assert_eq!(event.fields["reason"], json!("self-authored"));
    assert!(!event.fields.contains_key("hidden_removed"));
}

#[test]
fn marker_anywhere_in_the_body_refuses() {
    let alice = config(&["alice"]);
    for body in [
        MARKER.to_string(),
        format!("{MARKER} then text"),
        format!("text\n\n{MARKER}"),
        format!("the-loop start {MARKER}"),
    ] {
        for name in [
            "issue_comment.created",
            "pull_request_review_comment.created",
        ] {
            let outcome = route_once(event_of(name), &with_comment(name, &body), &alice);
            assert!(
                matches!(
                    outcome,
                    Outcome::Dropped {
                        reason: DropReason::SelfAuthored,
                        ..
                    }
                ),
                "{name} {body:?}: {outcome:?}"
            );
        }
    }
    let upper = with_comment("issue_comment.created", &MARKER.to_uppercase());
    assert!(matches!(
        route_once("issue_comment", &upper, &alice),
        Outcome::Deliver { .. }
    ));
}
