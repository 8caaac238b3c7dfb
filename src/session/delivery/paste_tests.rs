//! The two policies of the one paste into a session, over the fake tmux: what an event
//! gets that a reply does not (a respawn, a paste without the lock, a paste while tmux
//! does not answer) and what each records.

use super::*;
use crate::session::test_support::*;
use crate::tmux::fake::{Call, Failure, Op};

fn event(n: u64) -> PromptInputs {
    PromptInputs {
        delivery_id: format!("d-{n}"),
        ..PromptInputs::manual(&item(n), "test")
    }
}

fn reply() -> PastePolicy<'static> {
    PastePolicy::reply(Duration::from_secs(5), "")
}

async fn reply_to(
    f: &Fixture,
    n: u64,
    policy: &PastePolicy<'_>,
) -> Result<Pasted, Box<PasteError>> {
    f.sessions
        .paste_into(&item(n), |item| format!("a reply for {item}"), policy)
        .await
}

fn creates(f: &Fixture) -> usize {
    let calls = f.tmux.fake.calls();
    calls
        .iter()
        .filter(|c| matches!(c, Call::CreateSession(_)))
        .count()
}

#[tokio::test]
async fn a_dead_pane_is_respawned_for_an_event_and_refused_for_a_reply() {
    let f = Fixture::new();
    let pane = f.live_session(1);
    f.tmux.fake.set_dead(&item(1).tmux_session_name(), true);

    let refused = reply_to(&f, 1, &reply()).await.unwrap_err();
    assert!(
        matches!(refused.as_ref(), PasteError::NoLivePane(i) if *i == item(1)),
        "{refused:?}"
    );
    assert_eq!(creates(&f), 0, "a reply never respawns");
    assert!(f.pasted(&pane).is_empty());

    let delivered = f.sessions.deliver_event(&item(1), &event(1)).await.unwrap();
    assert!(delivered.respawned.is_some(), "{delivered:?}");
    assert_eq!(creates(&f), 1);
    assert_eq!(f.events_named("session.respawned").len(), 1);
    assert_eq!(
        f.record(1).unwrap().pane_id,
        Some(delivered.pane.to_string())
    );
}

#[tokio::test]
async fn a_busy_lock_refuses_a_reply_and_lets_an_event_through() {
    let f = Fixture::new();
    let pane = f.live_session(1);
    let held = paste_lock::acquire(f.sessions.registry().dir(), &item(1), Duration::ZERO)
        .await
        .unwrap();
    let short = Duration::from_millis(20);

    let policy = PastePolicy::reply(short, "");
    let refused = reply_to(&f, 1, &policy).await.unwrap_err();
    assert!(
        matches!(refused.as_ref(), PasteError::Lock(i, PasteLockError::Busy { .. }) if *i == item(1)),
        "{refused:?}"
    );
    assert!(
        f.pasted(&pane).is_empty(),
        "nothing is pasted without the lock"
    );

    let inputs = event(1);
    let policy = PastePolicy {
        lock_wait: short,
        ..PastePolicy::event(&inputs)
    };
    let pasted = f
        .sessions
        .paste_into(&item(1), |item| format!("an event for {item}"), &policy)
        .await
        .unwrap();
    assert_eq!(pasted.delivered.pane, pane);
    assert_eq!(f.pasted(&pane), ["an event for github:octo/repo#1"]);
    drop(held);
}

#[tokio::test]
async fn with_tmux_not_answering_an_event_goes_to_the_recorded_pane_and_a_reply_is_refused() {
    let f = Fixture::new();
    let pane = f.live_session(1);
    f.tmux.fake.fail(Op::List, Failure::Timeout);

    let refused = reply_to(&f, 1, &reply()).await.unwrap_err();
    assert!(
        matches!(refused.as_ref(), PasteError::Unavailable(i, _) if *i == item(1)),
        "{refused:?}"
    );
    assert!(f.pasted(&pane).is_empty());

    let delivered = f.sessions.deliver_event(&item(1), &event(1)).await.unwrap();
    assert_eq!(delivered.pane, pane);
    assert_eq!(delivered.respawned, None, "never respawned blind");
    assert_eq!(f.pasted(&pane).len(), 1);
    assert_eq!(creates(&f), 0);
}

#[tokio::test]
async fn a_reply_refuses_a_paused_session_before_waiting_for_its_lock() {
    let f = Fixture::new();
    f.live_session(1);
    f.sessions
        .pause(&item(1), &crate::session::Origin::cli())
        .unwrap();
    let _held = paste_lock::acquire(f.sessions.registry().dir(), &item(1), Duration::ZERO)
        .await
        .unwrap();
    // Were the lock waited for first, this would end in `Lock` after the wait.
    let policy = PastePolicy::reply(Duration::from_secs(600), "");
    let refused = reply_to(&f, 1, &policy).await.unwrap_err();
    assert!(
        matches!(refused.as_ref(), PasteError::Paused(i) if *i == item(1)),
        "{refused:?}"
    );
    let failure = f
        .sessions
        .deliver_event(&item(99), &event(99))
        .await
        .unwrap_err();
    assert!(matches!(failure, DeliveryFailure::NoSession(i) if i == item(99)));
}

#[tokio::test]
async fn an_event_records_its_delivery_id_and_a_reply_only_that_it_was_there() {
    let f = Fixture::new();
    let pane = f.live_session(1);
    assert!(f.record(1).unwrap().last_event_at.is_none());

    let pasted = reply_to(&f, 1, &reply()).await.unwrap();
    assert_eq!(pasted.work_item, item(1));
    let after_reply = f.record(1).unwrap();
    assert!(after_reply.last_event_at.is_some());
    assert!(after_reply.recent_deliveries.is_empty());
    assert_eq!(after_reply.pane_id, Some(pane.to_string()));

    f.sessions.deliver_event(&item(1), &event(1)).await.unwrap();
    assert_eq!(f.record(1).unwrap().recent_deliveries, ["d-1"]);
}

/// `item(1)`'s session given a codex app-server channel on `socket`.
fn with_channel(f: &Fixture, socket: std::path::PathBuf) {
    f.sessions
        .registry()
        .update(&item(1), |r| {
            r.channel = Some(crate::channel::ChannelRecord::CodexAppServer {
                socket,
                server_pane: None,
            });
        })
        .unwrap();
}

/// A session whose channel's server listens but does not speak the protocol (it
/// closes every connection): the event is held `not-ready` (tried again, never lost),
/// and nothing is pasted into its live pane.
#[tokio::test]
async fn a_channel_that_does_not_answer_holds_the_delivery_and_pastes_nothing() {
    let f = Fixture::new();
    let pane = f.live_session(1);
    let socket = f.dir.path().join("mute.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            drop(stream);
        }
    });
    with_channel(&f, socket);

    let held = f.sessions.deliver_event(&item(1), &event(1)).await;
    assert!(
        matches!(&held, Err(DeliveryFailure::Held(h)) if h.reason == HoldReason::NotReady && !h.pasted),
        "{held:?}"
    );
    assert!(f.pasted(&pane).is_empty());
    assert_eq!(creates(&f), 0, "a live pane is not respawned");
    assert!(f.record(1).unwrap().recent_deliveries.is_empty());
}

/// Nothing listens on the channel's socket: its server is gone and the TUI attached to
/// it can do nothing — that session is ended and started again with the event as its
/// prompt. Nothing is pasted into the old pane.
#[tokio::test]
async fn a_channel_whose_server_is_gone_starts_the_session_again() {
    let f = Fixture::new();
    let pane = f.live_session(1);
    with_channel(&f, f.dir.path().join("gone.sock"));

    let delivered = f.sessions.deliver_event(&item(1), &event(1)).await.unwrap();
    assert!(delivered.respawned.is_some(), "{delivered:?}");
    assert!(f.pasted(&pane).is_empty());
    assert_eq!(creates(&f), 1, "the session was not started again");
    assert_eq!(f.record(1).unwrap().recent_deliveries, ["d-1"]);
}

/// Text that is nothing once sanitized is refused before the channel is asked: an
/// empty turn is never started (the socket here would say the server is gone, and the
/// session would be started again).
#[tokio::test]
async fn nothing_to_say_is_not_sent_through_a_channel() {
    let f = Fixture::new();
    f.live_session(1);
    with_channel(&f, f.dir.path().join("gone.sock"));
    let refused = f
        .sessions
        .paste_into(&item(1), |_| "\u{1b}\u{7}".into(), &reply())
        .await;
    let error = refused.err().map(|e| *e);
    assert!(
        matches!(error, Some(PasteError::Paste(_, DeliverError::Empty))),
        "{error:?}"
    );
    assert_eq!(creates(&f), 0, "the session was started again");
}
