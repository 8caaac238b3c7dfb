use super::*;

fn submit(text: &str, bracketed: bool, pastes: u32) -> Action {
    Action::Submit(Submission {
        text: text.into(),
        bracketed,
        pastes,
    })
}

#[test]
fn a_paste_then_enter_is_one_bracketed_submission() {
    let mut t = InputTracker::default();
    let actions = t.feed(b"\x1b[200~line 1\nline\t2\r\x1b[201~\r");
    assert_eq!(actions, [submit("line 1\nline\t2\r", true, 1)]);
}

#[test]
fn typed_text_is_not_bracketed() {
    let mut t = InputTracker::default();
    assert_eq!(t.feed(b"hello\r"), [submit("hello", false, 0)]);
    assert_eq!(t.feed(b"\r"), [submit("", false, 0)]);
}

#[test]
fn markers_split_across_reads_are_reassembled() {
    let stream = "\x1b[200~abc ✓ déf\x1b[201~\r".as_bytes();
    for chunk in 1..stream.len() {
        let mut t = InputTracker::default();
        let actions: Vec<Action> = stream.chunks(chunk).flat_map(|c| t.feed(c)).collect();
        assert_eq!(actions, [submit("abc ✓ déf", true, 1)], "chunk {chunk}");
    }
}

#[test]
fn an_injected_terminator_ends_the_paste_early() {
    // What the sanitizer prevents: the rest after ESC[201~ is typed, and its \r submits.
    let mut t = InputTracker::default();
    let actions = t.feed(b"\x1b[200~safe\x1b[201~evil\rmore\x1b[201~\r");
    assert_eq!(
        actions,
        [submit("safeevil", false, 1), submit("more", false, 0)]
    );
}

#[test]
fn two_pastes_before_enter_are_counted() {
    let mut t = InputTracker::default();
    let actions = t.feed(b"\x1b[200~a\x1b[201~\x1b[200~b\x1b[201~\r");
    assert_eq!(actions, [submit("ab", true, 2)]);
}

#[test]
fn control_keys() {
    let mut t = InputTracker::default();
    assert_eq!(t.feed(b"ab\x7fc\x1b[A\r"), [submit("ac", false, 0)]);
    assert_eq!(t.feed(b"x\x03"), [Action::Exit]);
    let mut t = InputTracker::default();
    assert_eq!(t.feed(b"\x04"), [Action::Exit]);
    // Ctrl-C inside a paste is text, not an exit.
    let mut t = InputTracker::default();
    assert_eq!(
        t.feed(b"\x1b[200~a\x03b\x1b[201~\r"),
        [submit("a\x03b", true, 1)]
    );
}

#[test]
fn current_input_is_visible_before_submit() {
    let mut t = InputTracker::default();
    assert!(t.feed(b"\x1b[200~part").is_empty());
    assert_eq!(t.current(), "part");
}

#[test]
fn previews_are_one_short_line() {
    assert_eq!(preview("a\x07b\nsecond"), "a·b");
    assert_eq!(preview(&"x".repeat(100)).chars().count(), 61);
}

#[test]
fn the_question_is_about_the_line_with_the_trigger() {
    let text = "Event:\n  \"body\": \"Please ASK-OPERATOR about the `retry` cap\",\nend";
    assert_eq!(
        derive_question(text, "ASK-OPERATOR"),
        "How should I proceed with: body: Please ASK-OPERATOR about the retry cap,?"
    );
    let long = format!("ASK {}", "x".repeat(500));
    assert!(derive_question(&long, "ASK").chars().count() < 200);
}

#[test]
fn a_question_after_the_trigger_is_asked_as_written() {
    let text =
        "Event:\n  \"body\": \"Fine. Please ASK-OPERATOR: should the `cap` be global?\",\nend";
    assert_eq!(
        derive_question(text, "ASK-OPERATOR"),
        "Should the cap be global?"
    );
    // A sentence that is not a question keeps the generic phrasing.
    assert_eq!(
        derive_question("ASK-OPERATOR: the cap.", "ASK-OPERATOR"),
        "How should I proceed with: ASK-OPERATOR: the cap.?"
    );
}
