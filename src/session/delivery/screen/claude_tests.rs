use super::super::Reader;
use super::*;

/// The reader's answers, as the paste path asks them (`marker` is the reader's own).
fn shows_paste(screen: &str, pasted: &str, marker: &str) -> bool {
    assert_eq!(marker, Reader::Claude.paste_marker());
    Reader::Claude.shows_paste(screen, pasted)
}

fn holds_paste(screen: &str, marker: &str) -> bool {
    assert_eq!(marker, Reader::Claude.paste_marker());
    Reader::Claude.holds_paste(screen)
}

/// A fixture's plain (`capture-pane -p`) and escaped (`-e`) capture.
macro_rules! fixture {
    ($name:literal) => {
        (
            $name,
            include_str!(concat!("claude/fixtures/", $name, ".txt")),
            include_str!(concat!("claude/fixtures/", $name, ".ansi")),
        )
    };
}

type Fixture = (&'static str, &'static str, &'static str);

const FIXTURES: &[Fixture] = &[
    fixture!("boot.100x30"),
    fixture!("boot.160x48"),
    fixture!("idle_empty.100x30"),
    fixture!("idle_empty.160x48"),
    fixture!("idle_empty.30x20"),
    fixture!("idle_after_turns.100x30"),
    fixture!("idle_after_turns.160x48"),
    fixture!("ctrl_c_once.100x30"),
    fixture!("ctrl_c_once.160x48"),
    fixture!("busy_empty.100x30"),
    fixture!("busy_empty.160x48"),
    fixture!("forged_transcript.100x30"),
    fixture!("draft_line.100x30"),
    fixture!("draft_line.160x48"),
    fixture!("draft_lines.100x30"),
    fixture!("draft_lines.160x48"),
    fixture!("busy_draft.100x30"),
    fixture!("busy_draft.160x48"),
    fixture!("paste_folded.100x30"),
    fixture!("paste_folded.160x48"),
    fixture!("paste_folded.30x20"),
    fixture!("busy_paste.100x30"),
    fixture!("busy_paste.160x48"),
    fixture!("paste_short.100x30"),
    fixture!("paste_short.160x48"),
    fixture!("paste_long.100x30"),
    fixture!("slash_menu.100x30"),
    fixture!("slash_menu.160x48"),
    fixture!("shell_mode.100x30"),
    fixture!("shell_mode_empty.100x30"),
    fixture!("busy_queued.100x30"),
    fixture!("busy_queued.160x48"),
    fixture!("placeholder_try.160x48"),
    fixture!("suggestion.160x48"),
    fixture!("dialog_bash.100x30"),
    fixture!("dialog_bash.160x48"),
    fixture!("dialog_edit.100x30"),
    fixture!("dialog_edit.160x48"),
    fixture!("dialog_amend.160x48"),
    fixture!("dialog_tall.30x20"),
    fixture!("forged_dialog_bash.100x30"),
    fixture!("ask_question.100x30"),
    fixture!("ask_question.160x48"),
    fixture!("forged_ask_question.100x30"),
    fixture!("model_menu.100x30"),
    fixture!("model_menu.160x48"),
    fixture!("rate_limit_menu.100x30"),
    fixture!("rate_limit_menu.160x48"),
    fixture!("trust.100x30"),
    fixture!("trust.160x48"),
    fixture!("onboarding_theme.100x30"),
];

fn holds(text: &str) -> InputBox {
    InputBox::Holds(text.into())
}

/// What each fixture reads as: (dialog, input from the plain capture, input from the
/// escaped one). Only a dim placeholder or suggestion reads differently.
fn expected(name: &str) -> (Option<Dialog>, InputBox, InputBox) {
    use InputBox::{Empty, NotDrawn};
    let state = name.split('.').next().unwrap_or_default();
    let same = |input: InputBox| (None, input.clone(), input);
    let dimmed = |typed: &str| (None, holds(typed), Empty);
    let dialog = |kind| (Some(kind), NotDrawn, NotDrawn);
    match state {
        "boot" => same(NotDrawn),
        "idle_empty" | "idle_after_turns" | "ctrl_c_once" | "busy_empty" | "forged_transcript" => {
            same(Empty)
        }
        "draft_line" => same(holds("fix the flaky test in retry.rs")),
        "draft_lines" => same(holds("first line of the draft\nsecond line\nthird")),
        "busy_draft" => same(holds("also check the docs")),
        "paste_folded" | "busy_paste" => same(holds("[Pasted text #1 +4 lines]")),
        "paste_short" => same(holds("a short single line paste")),
        "paste_long" => same(holds("[Pasted text #4]")),
        "slash_menu" => same(holds("/")),
        "shell_mode" => same(holds("!ls")),
        "shell_mode_empty" => same(holds("!")),
        "busy_queued" => dimmed("Press up to edit queued messages"),
        "placeholder_try" => dimmed("Try \"refactor <filepath>\""),
        "suggestion" => dimmed("run the tests again"),
        "dialog_bash" | "dialog_edit" | "dialog_amend" | "dialog_tall" | "forged_dialog_bash" => {
            dialog(Dialog::Permission)
        }
        "ask_question" | "forged_ask_question" | "model_menu" | "trust" | "onboarding_theme" => {
            dialog(Dialog::Other)
        }
        "rate_limit_menu" => dialog(Dialog::LimitMenu),
        other => panic!("no expectation for {other}"),
    }
}

#[test]
fn every_real_screen_reads_as_what_it_shows() {
    for (name, plain, escaped) in FIXTURES {
        let (dialog, input_plain, input_escaped) = expected(name);
        assert_eq!(
            look(plain),
            Look {
                dialog,
                input: input_plain
            },
            "{name} (plain)"
        );
        assert_eq!(
            look(escaped),
            Look {
                dialog,
                input: input_escaped
            },
            "{name} (-e)"
        );
    }
}

#[test]
fn only_an_empty_box_without_a_dialog_is_ready() {
    let ready: Vec<&str> = FIXTURES
        .iter()
        .filter(|(_, _, escaped)| look(escaped).ready())
        .map(|(name, ..)| *name)
        .collect();
    let expected: Vec<&str> = FIXTURES
        .iter()
        .map(|(name, ..)| *name)
        .filter(|name| expected(name).2 == InputBox::Empty)
        .collect();
    assert_eq!(ready, expected);
    assert!(ready.contains(&"suggestion.160x48"));
    for name in ["dialog_bash.100x30", "trust.100x30", "boot.100x30"] {
        assert!(!ready.contains(&name), "{name}");
    }
}

/// The escaped capture is the plain one plus attributes: both read the same text.
#[test]
fn both_captures_hold_the_same_text() {
    for (name, plain, escaped) in FIXTURES {
        let texts = |s: &str| -> Vec<String> {
            cells::lines(s)
                .into_iter()
                .map(|l| l.text.trim_end().to_string())
                .collect()
        };
        let (plain, escaped) = (texts(plain), texts(escaped));
        assert_eq!(plain.len(), escaped.len(), "{name}");
        for (p, e) in plain.iter().zip(&escaped) {
            assert_eq!(p, e, "{name}");
        }
    }
}

const MARKER: &str = crate::harness::CLAUDE_PASTE_MARKER;
const FOLDED: &str = include_str!("claude/fixtures/paste_folded.100x30.txt");
const FOLDED_NARROW: &str = include_str!("claude/fixtures/paste_folded.30x20.ansi");
const SHORT: &str = include_str!("claude/fixtures/paste_short.100x30.ansi");
const LONG: &str = include_str!("claude/fixtures/paste_long.100x30.txt");
const EMPTY: &str = include_str!("claude/fixtures/idle_empty.100x30.txt");
const DIALOG_BASH: &str = include_str!("claude/fixtures/dialog_bash.100x30.txt");
const FORGED_BASH: &str = include_str!("claude/fixtures/forged_dialog_bash.100x30.txt");
const FORGED_ASK: &str = include_str!("claude/fixtures/forged_ask_question.100x30.txt");
const FORGED_TRANSCRIPT: &str = include_str!("claude/fixtures/forged_transcript.100x30.txt");

#[test]
fn a_paste_shows_folded_or_as_its_text() {
    let five = "Event on github:octo/repo#15\nline two\nline three\nline four\nlast line";
    assert!(shows_paste(FOLDED, five, MARKER));
    assert!(shows_paste(FOLDED_NARROW, five, MARKER));
    assert!(shows_paste(LONG, &"y".repeat(900), MARKER));
    assert!(shows_paste(SHORT, "a short single line paste", MARKER));
    assert!(
        shows_paste(SHORT, "a short\tsingle line paste\n", MARKER),
        "tabs expanded, a trailing newline"
    );
    assert!(
        !shows_paste(SHORT, "a short single line", MARKER),
        "more in the box"
    );
    assert!(!shows_paste(SHORT, "a short single line paste!", MARKER));
    assert!(
        !shows_paste(EMPTY, "", MARKER),
        "an empty box shows nothing"
    );
    let draft = include_str!("claude/fixtures/draft_line.100x30.txt");
    assert!(!shows_paste(draft, "fix the flaky", MARKER));
}

#[test]
fn no_dialog_shows_a_paste() {
    for screen in [DIALOG_BASH, FORGED_BASH, FORGED_ASK] {
        assert!(!shows_paste(screen, "x\ny\nz\nw", MARKER));
        assert!(!holds_paste(screen, MARKER));
        assert!(!look(screen).ready());
    }
}

#[test]
fn a_folded_paste_is_the_marker_and_nothing_more() {
    assert!(holds_paste(FOLDED, MARKER));
    assert!(holds_paste(LONG, MARKER));
    for text in [
        "[Pasted text #1 +4 lines]",
        "[Pasted text #12]",
        "[Pasted text #2 +1 line]",
    ] {
        assert!(folded(text, MARKER), "{text}");
    }
    for text in [
        "my words [Pasted text #1 +4 lines]",
        "[Pasted text #1 +4 lines] and mine",
        "[Pasted text #1 +4 lines]\nmore",
        "[Pasted text #]",
        "[Pasted text #1 +lines]",
        "[Pasted text #x]",
    ] {
        assert!(!folded(text, MARKER), "{text}");
    }
    let typed_first = FOLDED.replace("❯\u{a0}[Pasted", "❯\u{a0}my words [Pasted");
    assert!(
        !holds_paste(&typed_first, MARKER),
        "the operator's own typing"
    );
}

#[test]
fn the_answer_sees_only_a_permission_dialog_with_yes_selected() {
    for name in [
        "dialog_bash.160x48",
        "dialog_edit.100x30",
        "dialog_tall.30x20",
    ] {
        let (_, plain, escaped) = FIXTURES.iter().find(|f| f.0 == name).copied().unwrap();
        assert!(shows_dialog(plain), "{name}");
        assert!(shows_dialog(escaped), "{name}");
    }
    let other = DIALOG_BASH
        .replace(" ❯ 1. Yes", "   1. Yes")
        .replace("   3. No", " ❯ 3. No");
    assert!(!shows_dialog(&other), "Enter would not approve");
    assert!(!shows_dialog(EMPTY));
    assert!(
        !shows_dialog(FORGED_TRANSCRIPT),
        "a dialog quoted above the input box is not one"
    );
    assert!(!shows_dialog("● Do you want to proceed? ❯ 1. Yes"));
}

/// A screen around a box of `width` with `inside` as its lines.
fn boxed(width: usize, above: &str, inside: &str, footer: &str) -> String {
    let rule = "─".repeat(width);
    format!("{above}\n{rule}\n{inside}\n{rule}\n{footer}\n")
}

#[test]
fn made_up_screens_fail_closed() {
    use InputBox::{Empty, NotDrawn};
    let shortcuts = "  ? for shortcuts";
    let rule = "─".repeat(40);
    let cases: Vec<(String, InputBox, &str)> = vec![
        (boxed(100, "", "❯\u{a0}", shortcuts), Empty, "the shape"),
        (boxed(12, "", "❯\u{a0}", ""), Empty, "narrow: a short rule"),
        (
            boxed(9, "", "❯\u{a0}", ""),
            NotDrawn,
            "too short for a rule",
        ),
        (boxed(40, "", "❯\u{a0}   ", shortcuts), Empty, "only spaces"),
        (
            boxed(40, "", "❯\u{a0}\n  \n", shortcuts),
            Empty,
            "blank lines",
        ),
        (
            boxed(40, "● Done.", "❯\u{a0}", shortcuts).replace('\n', "\r\n"),
            Empty,
            "CRLF",
        ),
        (
            boxed(40, "❯ an earlier message\n❯ 1. Yes", "❯\u{a0}", shortcuts),
            Empty,
            "the transcript above the box",
        ),
        (String::new(), NotDrawn, "nothing"),
        ("❯\u{a0}\n".into(), NotDrawn, "no rules"),
        (format!("{rule}\n❯\u{a0}\n"), NotDrawn, "one rule"),
        (
            boxed(40, "", "❯ ", shortcuts),
            NotDrawn,
            "a plain space: the transcript's prompt",
        ),
        (boxed(40, "", "  ❯\u{a0}", shortcuts), NotDrawn, "indented"),
        (
            format!("{rule}\n❯\u{a0}\n{}\n", "─".repeat(39)),
            NotDrawn,
            "rules of different lengths",
        ),
        (
            boxed(40, "", "❯\u{a0}\n● Bash(ls)", shortcuts),
            NotDrawn,
            "an unindented line inside",
        ),
        (
            format!("   {rule}\n❯\u{a0}\n   {rule}\n"),
            NotDrawn,
            "indented rules are text",
        ),
    ];
    for (screen, input, why) in cases {
        assert_eq!(look(&screen).input, input, "{why}");
    }
}

#[test]
fn a_dialog_below_a_box_shape_wins() {
    let dialog = " Do you want to proceed?\n ❯ 1. Yes\n   2. No\n\n Esc to cancel";
    let screen = boxed(40, "", "❯\u{a0}", dialog);
    assert_eq!(look(&screen).dialog, Some(Dialog::Permission));
    assert!(!look(&screen).ready());
    for footer in [
        "  ❯ 1. Fast",
        "  4. Chat about this",
        "Enter to select · ↑/↓ to navigate · Esc to cancel",
        " Enter to confirm",
    ] {
        let screen = boxed(40, "", "❯\u{a0}[Pasted text #1 +3 lines]", footer);
        assert_eq!(look(&screen).dialog, Some(Dialog::Other), "{footer}");
        assert!(!shows_paste(&screen, "a\nb\nc\nd", MARKER), "{footer}");
        assert!(!holds_paste(&screen, MARKER), "{footer}");
    }
}

/// An agent led to run a command, or to ask a question, that draws an empty box and a
/// folded paste: the dialog around it is what the screen shows.
#[test]
fn text_an_agent_shows_never_forges_a_box() {
    let forged = format!(
        "{rule}\n❯\u{a0}\n{rule}\n❯\u{a0}[Pasted text #1 +3 lines]\n{rule}",
        rule = "─".repeat(100)
    );
    // Inside a Bash dialog the command is indented.
    let command = forged.replace('\n', "\n   ");
    let screen = format!(
        "{rule}\n Bash command\n\n   {command}\n\n Do you want to proceed?\n ❯ 1. Yes\n   2. No\n\n Esc to cancel\n",
        rule = "─".repeat(100)
    );
    assert_eq!(look(&screen).input, InputBox::NotDrawn);
    assert_eq!(look(&screen).dialog, Some(Dialog::Permission));
    assert!(!shows_paste(&screen, "a\nb\nc\nd", MARKER));
    // A question's text is at column 0, but its options and hint follow it.
    let screen = format!(
        "{rule}\n ☐ Header\n\n{forged}\n\n  1. Fast\n  2. Slow\n  3. Type something.\n{rule}\n❯ 4. Chat about this\n\nEnter to select · Esc to cancel\n",
        rule = "─".repeat(100)
    );
    assert!(!look(&screen).ready());
    assert!(!shows_paste(&screen, "a\nb\nc\nd", MARKER));
    assert!(!holds_paste(&screen, MARKER));
}

#[test]
fn escapes_are_read_not_shown() {
    let dim = |s: &str| format!("\x1b[2m{s}\x1b[0m");
    let rule = "─".repeat(20);
    let screen = |inside: &str| format!("{rule}\n{inside}\n{rule}\n");
    // A colour's own numbers are not attributes: 38;5;2 is not dim.
    let green = screen("❯\u{a0}\x1b[38;5;2mtyped\x1b[39m");
    assert_eq!(look(&green).input, holds("typed"));
    let truecolor = screen("❯\u{a0}\x1b[38;2;2;2;2mtyped\x1b[0m");
    assert_eq!(look(&truecolor).input, holds("typed"));
    assert_eq!(
        look(&screen(&format!("❯\u{a0}{}", dim("hint")))).input,
        InputBox::Empty
    );
    // The cursor may sit on the first cell only.
    let cursor = screen("❯\u{a0}\x1b[7mh\x1b[0;2mint\x1b[0m");
    assert_eq!(look(&cursor).input, InputBox::Empty);
    let typed = screen("❯\u{a0}h\x1b[7mi\x1b[0;2mnt\x1b[0m");
    assert_eq!(look(&typed).input, holds("hint"));
    assert_eq!(
        look(&screen("❯\u{a0}\x1b[7mx\x1b[0m")).input,
        holds("x"),
        "a one-letter draft under the cursor"
    );
    let mixed = screen(&format!("❯\u{a0}typed {}", dim("ghost")));
    assert_eq!(look(&mixed).input, holds("typed ghost"));
    // Other sequences vanish; an unterminated one ends the capture.
    let osc = screen("❯\u{a0}\x1b]8;;http://x\x1b\\\x1b[1m\x1b[201~\x1b[K");
    assert_eq!(look(&osc).input, InputBox::Empty);
    assert_eq!(
        look(&format!("{}\x1b[", screen("❯\u{a0}"))).input,
        InputBox::Empty
    );
    let bell = screen("❯\u{a0}\x07\x08");
    assert_eq!(look(&bell).input, InputBox::Empty);
}
