//! The webhook path end to end: a signed delivery into a pane, and a comment that
//! arrives both by webhook and by poll (in either order) delivered once.

use crate::support::e2e::{REPO, SECRET, Setup, World, item};
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;
use the_loop::ingress::ItemKind;
use the_loop::ingress::shape;

/// The `issue_comment` webhook GitHub would send for comment `id` on #`number`: the
/// simulator's REST answers shaped exactly as the poller shapes them.
pub(crate) async fn payload(w: &World, number: u64, id: u64) -> Value {
    let issue = w.rest(&format!("/repos/{REPO}/issues/{number}")).await;
    let comment = w.rest(&format!("/repos/{REPO}/issues/comments/{id}")).await;
    shape::comment(ItemKind::Comment, REPO, &issue, None, &comment, None).payload
}

pub(crate) async fn send(addr: &str, delivery: &str, payload: &Value) -> u16 {
    let body = serde_json::to_vec(payload).unwrap();
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(&body);
    let signature = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
    reqwest::Client::new()
        .post(format!("http://{addr}/gh-webhook"))
        .header("content-type", "application/json")
        .header("x-github-event", "issue_comment")
        .header("x-github-delivery", delivery)
        .header("x-hub-signature-256", signature)
        .body(body)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comment_arriving_by_webhook_and_by_poll_is_delivered_once() {
    let mut w = World::new(Setup {
        server: true,
        ..Setup::default()
    })
    .await;
    w.watched_issue(15);
    w.start_session(15).await;
    w.start_supervisor();
    let started = w.wait_event("server.started", |_| true).await;
    assert_eq!(started["webhook"], "signed");
    let addr = started["listen"].as_str().unwrap().to_string();
    w.wait_cycles(1).await;

    // Webhook first: it reaches the pane; the poller then sees the same comment.
    let first = w.comment(15, "alice", "HOOK-FIRST-TEXT please rerun");
    let body = payload(&w, 15, first).await;
    assert_eq!(send(&addr, "gh-delivery-1", &body).await, 202);
    w.wait_pasted("HOOK-FIRST-TEXT").await;
    let ok = w
        .wait_event("dispatch.succeeded", |e| {
            e["delivery_id"] == "gh-delivery-1"
        })
        .await;
    assert_eq!(ok["work_item"], item(15));
    let polled = format!("poll-comment-{first}");
    let dup = w
        .wait_event("routing.dropped", |e| e["delivery_id"] == polled.as_str())
        .await;
    assert_eq!(dup["reason"], "duplicate-delivery");
    assert_eq!(dup["source"], "poll");

    // Poll first: the late webhook is the duplicate.
    let second = w.comment(15, "alice", "POLL-FIRST-TEXT and again");
    w.wait_pasted("POLL-FIRST-TEXT").await;
    let polled = format!("poll-comment-{second}");
    w.wait_event("dispatch.succeeded", |e| {
        e["delivery_id"] == polled.as_str()
    })
    .await;
    let body = payload(&w, 15, second).await;
    assert_eq!(send(&addr, "gh-delivery-2", &body).await, 202);
    let dup = w
        .wait_event("routing.dropped", |e| e["delivery_id"] == "gh-delivery-2")
        .await;
    assert_eq!(dup["reason"], "duplicate-delivery");
    assert_eq!(dup["source"], "webhook");

    w.wait_cycles(2).await;
    assert_eq!(w.pasted_count("HOOK-FIRST-TEXT"), 1);
    assert_eq!(w.pasted_count("POLL-FIRST-TEXT"), 1);
}
