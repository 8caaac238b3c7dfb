//! The webhook receiver and the HTTP server end to end (SPEC §4.2, §13): a real server on
//! port 0, requests from reqwest or raw bytes, a recording `Ingest`, and the event log.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::webhook::{
    Harness, SECRET, chunked, fixture, fixture_bytes, raw_head, raw_status, sign, status,
    test_config,
};
use serde_json::json;
use the_loop::events::{EventLog, EventType, Level, Source};
use the_loop::ingress::webhook::{WebhookAuth, WebhookReceiver};
use the_loop::server::{self, ServerError};

#[tokio::test]
async fn healthz_answers_and_unknown_paths_are_404() {
    let h = Harness::signed().await;
    assert_eq!(h.get_status("/healthz").await, 200);
    assert_eq!(h.get_status("/nope").await, 404);
    let started = h.events_of(EventType::ServerStarted);
    assert_eq!(started.len(), 1);
    assert_eq!(
        started[0].str_field("listen"),
        Some(h.addr().to_string().as_str())
    );
    assert_eq!(started[0].str_field("webhook"), Some("signed"));
    assert_eq!(started[0].level, Level::Info);
}

#[tokio::test]
async fn a_signed_delivery_is_accepted_and_reaches_the_ingest() {
    let h = Harness::signed().await;
    let body = fixture_bytes("issue_comment.created");
    assert_eq!(h.deliver("issue_comment", "d-1", &body).await, 202);

    let got = h.recorder.taken();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].source, Source::Webhook);
    assert_eq!(got[0].gh_event, "issue_comment");
    assert_eq!(got[0].action, "created");
    assert_eq!(got[0].delivery_id, "d-1");
    assert_eq!(got[0].payload, fixture("issue_comment.created"));

    let received = h.events_of(EventType::WebhookReceived);
    assert_eq!(received.len(), 1);
    let e = &received[0];
    assert_eq!(e.source, Source::Webhook);
    assert_eq!(e.str_field("delivery_id"), Some("d-1"));
    assert_eq!(e.str_field("gh_event"), Some("issue_comment"));
    assert_eq!(e.str_field("action"), Some("created"));
    assert_eq!(e.fields["bytes"], body.len());
    assert!(h.rejections().is_empty());
}

#[tokio::test]
async fn a_wrong_secret_is_401_and_nothing_is_routed() {
    let h = Harness::signed().await;
    let body = fixture_bytes("issue_comment.created");
    let sig = sign("some-other-secret-value", &body);
    assert_eq!(
        h.post_status("issue_comment", "d-1", &body, Some(sig))
            .await,
        401
    );
    assert!(h.recorder.taken().is_empty());
    assert_eq!(h.rejections(), ["bad-signature"]);
    let rejected = &h.events_of(EventType::WebhookRejected)[0];
    assert_eq!(rejected.fields["status"], 401);
    assert_eq!(rejected.level, Level::Warning);
    assert_eq!(rejected.str_field("delivery_id"), Some("d-1"));
}

/// Constant time is a code property (`Mac::verify_slice`); this pins the behaviour that
/// matters around it: a digest of the right length differing in one nibble, or signing a
/// body that differs in one byte, is refused.
#[tokio::test]
async fn a_right_length_signature_with_wrong_content_is_401() {
    let h = Harness::signed().await;
    let body = fixture_bytes("issue_comment.created");
    let good = sign(SECRET, &body);
    let last = good.chars().last().unwrap();
    let flipped = format!(
        "{}{}",
        &good[..good.len() - 1],
        if last == '0' { '1' } else { '0' }
    );
    assert_eq!(flipped.len(), good.len());
    assert_eq!(
        h.post_status("issue_comment", "d-1", &body, Some(flipped))
            .await,
        401
    );

    let mut tampered = body.clone();
    let at = tampered.iter().position(|b| *b == b'a').unwrap();
    tampered[at] = b'b';
    assert_eq!(
        h.post_status("issue_comment", "d-2", &tampered, Some(good.clone()))
            .await,
        401
    );

    assert_eq!(
        h.post_status(
            "issue_comment",
            "d-3",
            &body,
            Some(good.replace("sha256=", "sha1=")),
        )
        .await,
        401
    );
    assert!(h.recorder.taken().is_empty());
    assert_eq!(h.rejections(), ["bad-signature"; 3]);
}

#[tokio::test]
async fn a_missing_signature_is_401() {
    let h = Harness::signed().await;
    let body = fixture_bytes("issue_comment.created");
    assert_eq!(
        h.post_status("issue_comment", "d-1", &body, None).await,
        401
    );
    assert!(h.recorder.taken().is_empty());
    assert_eq!(h.rejections(), ["missing-signature"]);
}

/// The signature is checked before the body is parsed: garbage that is not signed is 401,
/// the same garbage signed is 400.
#[tokio::test]
async fn the_signature_is_checked_before_parsing() {
    let h = Harness::signed().await;
    let garbage = b"{not json";
    let wrong = Some(sign("wrong-secret-value", garbage));
    assert_eq!(
        h.post_status("issue_comment", "d-1", garbage, wrong).await,
        401
    );
    assert_eq!(h.deliver("issue_comment", "d-2", garbage).await, 400);
    assert_eq!(h.rejections(), ["bad-signature", "invalid-json"]);
}

#[tokio::test]
async fn without_a_secret_the_route_is_off() {
    let h = Harness::start(test_config(), None).await;
    let body = fixture_bytes("issue_comment.created");
    assert_eq!(
        h.post_status("issue_comment", "d-1", &body, Some(sign(SECRET, &body)))
            .await,
        404
    );
    assert!(h.recorder.taken().is_empty());
    assert_eq!(h.rejections(), ["unsigned-disabled"]);
    let started = &h.events_of(EventType::ServerStarted)[0];
    assert_eq!(started.level, Level::Warning);
    assert_eq!(started.str_field("webhook"), Some("off"));
    assert_eq!(started.fields["signed"], false);
    assert!(
        started
            .str_field("warning")
            .unwrap()
            .contains("THE_LOOP_WEBHOOK_SECRET")
    );
    // The server itself is up.
    assert_eq!(h.get_status("/healthz").await, 200);
}

#[tokio::test]
async fn allow_unsigned_accepts_unsigned_deliveries() {
    let cfg = the_loop::config::ServerConfig {
        allow_unsigned: true,
        ..test_config()
    };
    let h = Harness::start(cfg, None).await;
    let body = fixture_bytes("issue_comment.created");
    assert_eq!(
        h.post_status("issue_comment", "d-1", &body, None).await,
        202
    );
    assert_eq!(h.recorder.taken().len(), 1);
    let started = &h.events_of(EventType::ServerStarted)[0];
    assert_eq!(started.str_field("webhook"), Some("unsigned"));
    assert_eq!(started.level, Level::Warning);
}

fn small_limit() -> the_loop::config::ServerConfig {
    the_loop::config::ServerConfig {
        max_body_bytes: 1024,
        ..test_config()
    }
}

/// A signed JSON object of exactly `len` bytes.
fn object_of_len(len: usize) -> Vec<u8> {
    let skeleton = br#"{"action":"created","pad":""}"#.len();
    let body = format!(
        r#"{{"action":"created","pad":"{}"}}"#,
        "x".repeat(len - skeleton)
    );
    assert_eq!(body.len(), len);
    body.into_bytes()
}

#[tokio::test]
async fn the_cap_is_inclusive_and_one_byte_over_is_413() {
    let h = Harness::start(small_limit(), Some(SECRET)).await;
    assert_eq!(h.deliver("issues", "d-1", &object_of_len(1024)).await, 202);
    assert_eq!(h.deliver("issues", "d-2", &object_of_len(1025)).await, 413);
    assert_eq!(h.recorder.taken().len(), 1);
    assert_eq!(h.rejections(), ["too-large"]);
}

#[tokio::test]
async fn a_chunked_body_without_content_length_is_capped_while_reading() {
    let h = Harness::start(small_limit(), Some(SECRET)).await;
    let chunked_framing = "transfer-encoding: chunked\r\n";
    let body = object_of_len(4096);
    let head = raw_head(chunked_framing, "d-1", &sign(SECRET, &body));
    assert_eq!(raw_status(h.addr(), &head, &chunked(&body, 256)).await, 413);

    // The same framing under the cap goes through, so the 413 above was the size.
    let small = object_of_len(600);
    let head = raw_head(chunked_framing, "d-2", &sign(SECRET, &small));
    assert_eq!(
        raw_status(h.addr(), &head, &chunked(&small, 256)).await,
        202
    );
    assert_eq!(h.rejections(), ["too-large"]);
    assert_eq!(h.recorder.taken().len(), 1);
}

/// A small `Content-Length` next to `Transfer-Encoding: chunked` is ignored (the
/// transfer encoding wins); the cap still counts the bytes that arrive.
#[tokio::test]
async fn a_lying_small_content_length_does_not_lift_the_cap() {
    let h = Harness::start(small_limit(), Some(SECRET)).await;
    let body = object_of_len(4096);
    let framing = "content-length: 10\r\ntransfer-encoding: chunked\r\n";
    let head = raw_head(framing, "d-1", &sign(SECRET, &body));
    assert_eq!(raw_status(h.addr(), &head, &chunked(&body, 512)).await, 413);
    assert!(h.recorder.taken().is_empty());
}

/// A declared length over the cap is refused at once: the server does not wait for (or
/// buffer) a body that never comes.
#[tokio::test]
async fn a_declared_length_over_the_cap_is_refused_without_reading_it() {
    let h = Harness::start(small_limit(), Some(SECRET)).await;
    let head = raw_head("content-length: 100000000\r\n", "d-1", "sha256=00");
    assert_eq!(raw_status(h.addr(), &head, b"{\"a\":").await, 413);
    assert_eq!(h.rejections(), ["too-large"]);
}

#[tokio::test]
async fn missing_github_headers_are_400() {
    let h = Harness::signed().await;
    let body = fixture_bytes("issue_comment.created");
    let sig = sign(SECRET, &body);
    let no_delivery = h
        .client
        .post(h.url("/gh-webhook"))
        .header("x-github-event", "issue_comment")
        .header("x-hub-signature-256", &sig)
        .body(body.clone());
    assert_eq!(status(no_delivery).await, 400);
    let no_event = h
        .client
        .post(h.url("/gh-webhook"))
        .header("x-github-delivery", "d-2")
        .header("x-hub-signature-256", &sig)
        .body(body.clone());
    assert_eq!(status(no_event).await, 400);
    assert!(h.recorder.taken().is_empty());
    assert_eq!(h.rejections(), ["missing-delivery-id", "missing-event"]);
}

#[tokio::test]
async fn bodies_that_are_not_a_json_object_are_400() {
    let h = Harness::signed().await;
    for (i, body) in [&b"[1, 2]"[..], b"\"text\"", b"null", b"{\"a\": ", b""]
        .iter()
        .enumerate()
    {
        let status = h.deliver("issue_comment", &format!("d-{i}"), body).await;
        assert_eq!(status, 400, "{}", String::from_utf8_lossy(body));
    }
    assert!(h.recorder.taken().is_empty());
    assert_eq!(
        h.rejections(),
        [
            "not-an-object",
            "not-an-object",
            "not-an-object",
            "invalid-json",
            "invalid-json"
        ]
    );
}

#[tokio::test]
async fn ping_is_answered_and_not_routed() {
    let h = Harness::signed().await;
    let body =
        serde_json::to_vec(&json!({"zen": "Keep it logically awesome.", "hook_id": 1})).unwrap();
    assert_eq!(h.deliver("ping", "d-ping", &body).await, 200);
    assert!(h.recorder.taken().is_empty());
    let received = h.events_of(EventType::WebhookReceived);
    assert_eq!(received[0].str_field("gh_event"), Some("ping"));
}

/// The same comment by webhook and by poll carries two delivery ids; the comment id
/// settles it. Edits keep the id and still go through.
#[tokio::test]
async fn a_comment_already_handled_elsewhere_is_dropped_as_duplicate() {
    use the_loop::ingress::ItemKind;
    let h = Harness::signed().await;
    // The poller got comment 2001 first.
    assert!(h.handled.mark("octo/repo", ItemKind::Comment, 2001));
    let body = fixture_bytes("issue_comment.created");
    assert_eq!(h.deliver("issue_comment", "d-1", &body).await, 202);
    assert!(h.recorder.taken().is_empty());

    let dropped = h.events_of(EventType::RoutingDropped);
    assert_eq!(dropped.len(), 1);
    let e = &dropped[0];
    assert_eq!(e.source, Source::Webhook);
    assert_eq!(e.str_field("reason"), Some("duplicate-delivery"));
    assert_eq!(e.str_field("delivery_id"), Some("d-1"));
    assert_eq!(e.str_field("gh_event"), Some("issue_comment"));
    assert_eq!(e.str_field("actor"), Some("alice"));
    assert_eq!(e.fields["work_items"], json!(["github:octo/repo#15"]));

    // A review arriving first by webhook is recorded for the poller to skip.
    let review = fixture_bytes("pull_request_review.submitted");
    assert_eq!(h.deliver("pull_request_review", "d-2", &review).await, 202);
    assert_eq!(h.recorder.taken().len(), 1);
    assert!(!h.handled.mark("Octo/Repo", ItemKind::Review, 80));
    // Redelivered under a new id: dropped.
    assert_eq!(h.deliver("pull_request_review", "d-3", &review).await, 202);
    assert_eq!(h.recorder.taken().len(), 1);

    // The edit of comment 2001 is not new text: it reaches the router.
    let edit = fixture_bytes("issue_comment.edited");
    assert_eq!(h.deliver("issue_comment", "d-4", &edit).await, 202);
    let got = h.recorder.taken();
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].action, "edited");
}

#[tokio::test]
async fn a_foreign_origin_is_403_before_anything_else() {
    let cfg = the_loop::config::ServerConfig {
        allowed_origins: vec!["http://localhost:3000".into()],
        ..test_config()
    };
    let h = Harness::start(cfg, Some(SECRET)).await;
    let body = fixture_bytes("issue_comment.created");
    // Validly signed, yet from a browser page on another origin.
    let signed = h.post("issue_comment", "d-1", &body, Some(sign(SECRET, &body)));
    assert_eq!(
        status(signed.header("origin", "https://evil.example")).await,
        403
    );
    // Unsigned and foreign: 403, not 401 — the origin is checked first.
    let unsigned = h.post("issue_comment", "d-2", &body, None);
    assert_eq!(
        status(unsigned.header("origin", "https://evil.example")).await,
        403
    );
    let health = h.client.get(h.url("/healthz")).header("origin", "null");
    assert_eq!(status(health).await, 403);
    assert!(h.recorder.taken().is_empty());
    assert_eq!(h.rejections(), ["forbidden-origin"; 3]);
    let e = &h.events_of(EventType::WebhookRejected)[2];
    assert_eq!(e.str_field("path"), Some("/healthz"));
    assert_eq!(e.str_field("origin"), Some("null"));

    // An allowed origin passes through to the normal checks.
    let allowed = h.post("issue_comment", "d-3", &body, Some(sign(SECRET, &body)));
    assert_eq!(
        status(allowed.header("origin", "http://localhost:3000")).await,
        202
    );
}

fn start_receiver(cfg: &the_loop::config::ServerConfig, log: &EventLog) -> WebhookReceiver {
    let recorder = std::sync::Arc::new(crate::support::webhook::Recorder::default());
    WebhookReceiver::new(
        cfg,
        WebhookAuth::resolve(cfg, Some(SECRET)),
        recorder,
        log.clone(),
    )
}

#[tokio::test]
async fn a_non_loopback_listen_is_refused_without_exposed() {
    let dir = tempfile::tempdir().unwrap();
    let log = EventLog::open_path(dir.path().join("events.jsonl"));
    let cfg = the_loop::config::ServerConfig {
        listen: "0.0.0.0:0".into(),
        ..test_config()
    };
    let receiver = start_receiver(&cfg, &log);
    let err = server::start(&cfg, receiver, &log).await.unwrap_err();
    assert!(matches!(err, ServerError::NotLoopback { .. }), "{err}");
    assert!(err.to_string().contains("server.exposed: true"), "{err}");
    let text = std::fs::read_to_string(log.path()).unwrap();
    assert!(text.contains("\"event\":\"server.failed\""), "{text}");
    assert!(!text.contains("server.started"), "{text}");
}

#[tokio::test]
async fn a_port_in_use_is_a_clear_error_and_shutdown_frees_it() {
    let first = Harness::signed().await;
    let dir = tempfile::tempdir().unwrap();
    let log = EventLog::open_path(dir.path().join("events.jsonl"));
    let cfg = the_loop::config::ServerConfig {
        listen: first.addr().to_string(),
        ..test_config()
    };
    let receiver = start_receiver(&cfg, &log);
    let err = server::start(&cfg, receiver, &log).await.unwrap_err();
    assert!(matches!(err, ServerError::Bind { .. }), "{err}");
    assert!(err.to_string().contains("change server.listen"), "{err}");

    let addr = first.addr();
    first.handle.shutdown().await;
    let receiver = start_receiver(&cfg, &log);
    let again = server::start(&cfg, receiver, &log).await.unwrap();
    assert_eq!(again.local_addr, addr);
    again.shutdown().await;
}
