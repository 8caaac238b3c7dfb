use super::*;
use crate::tmux::fake::{Call, Failure, FakeTmux, Op};

const NONE: Duration = Duration::ZERO;

fn live_pane(tmux: &FakeTmux) -> PaneId {
    tmux.add_session("loop-a", false)
}

#[tokio::test]
async fn one_bracketed_paste_then_one_plain_submit() {
    let tmux = FakeTmux::new();
    let pane = live_pane(&tmux);
    let text = "line one\n\tline two \x1b[201~ injected\r\n```";
    let delivery = deliver(&tmux, &pane, text, NONE).await.unwrap();
    let clean = "line one\n\tline two [201~ injected\n```";
    assert_eq!(delivery.bytes, clean.len());
    assert_eq!(delivery.removed, 2);

    let expected = format!("\x1b[200~{clean}\x1b[201~\r");
    assert_eq!(String::from_utf8(tmux.pane_input(&pane)).unwrap(), expected);
    let calls = tmux.calls();
    let [
        Call::PasteText {
            buffer: b1,
            data: d1,
            pane: t1,
            paste: Paste::Bracketed,
        },
        Call::PasteText {
            buffer: b2,
            data: d2,
            pane: t2,
            paste: Paste::Plain,
        },
    ] = calls.as_slice()
    else {
        panic!("unexpected calls {calls:?}");
    };
    assert_eq!(d1.as_slice(), clean.as_bytes());
    assert_eq!(d2.as_slice(), b"\r");
    assert_ne!(b1, b2);
    assert_eq!((t1.as_str(), t2.as_str()), (pane.as_str(), pane.as_str()));
    assert!(
        tmux.buffers().is_empty(),
        "buffers left: {:?}",
        tmux.buffers()
    );
}

#[tokio::test]
async fn every_delivery_uses_fresh_buffer_names() {
    let tmux = FakeTmux::new();
    let pane = live_pane(&tmux);
    for _ in 0..3 {
        deliver(&tmux, &pane, "hi", NONE).await.unwrap();
    }
    let mut names: Vec<String> = tmux
        .calls()
        .into_iter()
        .filter_map(|c| match c {
            Call::PasteText { buffer, .. } => Some(buffer),
            _ => None,
        })
        .collect();
    assert_eq!(names.len(), 6);
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 6);
}

#[tokio::test]
async fn empty_after_sanitizing_is_refused_without_touching_tmux() {
    let tmux = FakeTmux::new();
    let pane = live_pane(&tmux);
    for text in ["", "\x1b\r\x07"] {
        assert!(matches!(
            deliver(&tmux, &pane, text, NONE).await,
            Err(DeliverError::Empty)
        ));
    }
    assert!(tmux.calls().is_empty());
}

#[tokio::test]
async fn dead_pane_is_refused_and_the_buffer_cleaned_up() {
    let tmux = FakeTmux::new();
    let pane = tmux.add_session("loop-a", true);
    let err = deliver(&tmux, &pane, "hello", NONE).await.unwrap_err();
    assert!(
        matches!(err.tmux_error(), Some(tmux::Error::PaneDead { .. })),
        "{err}"
    );
    assert!(!err.pasted());
    assert!(tmux.buffers().is_empty());
    assert!(matches!(tmux.calls().last(), Some(Call::DeleteBuffer(_))));
    assert!(tmux.pane_input(&pane).is_empty());
}

#[tokio::test]
async fn missing_pane_is_a_paste_error() {
    let tmux = FakeTmux::new();
    let pane = PaneId::parse("%99").unwrap();
    let err = deliver(&tmux, &pane, "hello", NONE).await.unwrap_err();
    assert!(
        matches!(
            err,
            DeliverError::Paste {
                error: tmux::Error::SessionMissing { .. },
                ..
            }
        ),
        "{err}"
    );
    assert!(tmux.buffers().is_empty());
}

#[tokio::test]
async fn a_timeout_is_reported_and_cleanup_attempted() {
    let tmux = FakeTmux::new();
    let pane = live_pane(&tmux);
    tmux.fail(Op::Paste, Failure::Timeout);
    let err = deliver(&tmux, &pane, "hello", NONE).await.unwrap_err();
    assert!(
        matches!(
            err,
            DeliverError::Paste {
                error: tmux::Error::Timeout { .. },
                ..
            }
        ),
        "{err}"
    );
    assert!(matches!(tmux.calls().last(), Some(Call::DeleteBuffer(_))));
    let pastes = tmux
        .calls()
        .iter()
        .filter(|c| matches!(c, Call::PasteText { .. }))
        .count();
    assert_eq!(pastes, 1, "no submit after a failed paste");
}

#[tokio::test]
async fn failed_submit_says_the_text_is_already_pasted() {
    let tmux = FakeTmux::new();
    let pane = live_pane(&tmux);
    tmux.fail(Op::PlainPaste, Failure::Failed("boom".into()));
    let err = deliver(&tmux, &pane, "text", NONE).await.unwrap_err();
    assert!(err.pasted(), "{err}");
    assert!(err.to_string().contains("not submitted"), "{err}");
    assert_eq!(tmux.pane_input(&pane), b"\x1b[200~text\x1b[201~");
    assert!(tmux.buffers().is_empty(), "{:?}", tmux.buffers());

    // A failing body paste is not "pasted".
    tmux.fail(Op::Paste, Failure::Failed("boom".into()));
    let err = deliver(&tmux, &pane, "second", NONE).await.unwrap_err();
    assert!(!err.pasted(), "{err}");
}

#[tokio::test]
async fn the_submit_waits_for_the_delay() {
    let tmux = FakeTmux::new();
    let pane = live_pane(&tmux);
    let delay = Duration::from_millis(30);
    let start = std::time::Instant::now();
    deliver(&tmux, &pane, "x", delay).await.unwrap();
    assert!(start.elapsed() >= delay);
}

#[tokio::test]
async fn a_submit_left_in_the_box_is_pressed_again_at_most_twice() {
    let tmux = FakeTmux::new();
    let pane = live_pane(&tmux);
    // The fake's screen is what the pane was sent: this one shows the box with a paste
    // that never goes away (Claude Code's prompt is `❯` and a no-break space).
    let rule = "─".repeat(20);
    let text = format!("\n{rule}\n❯\u{a0}[Pasted text #1 +3 lines]\n{rule}\n");
    deliver(&tmux, &pane, &text, NONE).await.unwrap();
    let pressed = confirm_submitted(
        &tmux,
        &pane,
        Reader::Claude,
        SubmitCheck::once(NONE),
        || false,
    )
    .await;
    assert_eq!(pressed, MAX_RESUBMITS);
    let submits = tmux
        .calls()
        .iter()
        .filter(|c| matches!(c, Call::PasteText { data, paste: Paste::Plain, .. } if data == b"\r"))
        .count();
    assert_eq!(
        submits,
        1 + MAX_RESUBMITS as usize,
        "the submit and two more"
    );
}

#[tokio::test]
async fn a_taken_submit_or_an_unreadable_screen_is_left_alone() {
    let tmux = FakeTmux::new();
    let pane = live_pane(&tmux);
    deliver(&tmux, &pane, "hello\nworld", NONE).await.unwrap();
    assert_eq!(
        confirm_submitted(
            &tmux,
            &pane,
            Reader::Claude,
            SubmitCheck::once(NONE),
            || false
        )
        .await,
        0
    );
    tmux.fail(Op::Capture, Failure::Timeout);
    assert_eq!(
        confirm_submitted(
            &tmux,
            &pane,
            Reader::Claude,
            SubmitCheck::once(NONE),
            || false
        )
        .await,
        0
    );
    let plain = tmux
        .calls()
        .iter()
        .filter(|c| {
            matches!(
                c,
                Call::PasteText {
                    paste: Paste::Plain,
                    ..
                }
            )
        })
        .count();
    assert_eq!(plain, 1, "only the delivery's own submit");
}

/// Claude Code can take an Enter and still show the paste in its box (an Enter that
/// lands while its turn ends): once the harness reports the prompt, nothing more is
/// pressed, or the paste would go out twice.
#[tokio::test]
async fn a_submit_the_harness_reported_is_never_pressed_again() {
    let tmux = FakeTmux::new();
    let pane = live_pane(&tmux);
    let rule = "─".repeat(20);
    let text = format!("\n{rule}\n❯\u{a0}[Pasted text #1 +3 lines]\n{rule}\n");
    deliver(&tmux, &pane, &text, NONE).await.unwrap();
    let check = SubmitCheck {
        wait: NONE,
        grace: Duration::from_secs(60),
        poll: Duration::from_millis(1),
    };
    // The report arrives on the third look.
    let mut looks = 0;
    let pressed = confirm_submitted(&tmux, &pane, Reader::Claude, check, || {
        looks += 1;
        looks >= 3
    })
    .await;
    assert_eq!(pressed, 0);
    assert_eq!(looks, 3);
    let submits = tmux
        .calls()
        .iter()
        .filter(|c| matches!(c, Call::PasteText { data, paste: Paste::Plain, .. } if data == b"\r"))
        .count();
    assert_eq!(submits, 1, "only the delivery's own submit");
}
