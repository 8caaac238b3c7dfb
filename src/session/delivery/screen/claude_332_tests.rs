//! Claude Code 2.1.332's screens (`claude/fixtures/2.1.332/`), read by the same
//! functions as 2.1.197's: what each recorded state reads as, which dialogs the
//! operator's approve may answer, and the permission mode its footer names.

use super::super::Reader;
use super::*;
use crate::config::PermissionMode;

macro_rules! fixture {
    ($name:literal) => {
        (
            $name,
            include_str!(concat!("claude/fixtures/2.1.332/", $name, ".txt")),
            include_str!(concat!("claude/fixtures/2.1.332/", $name, ".ansi")),
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
    fixture!("idle_empty_manual.100x30"),
    fixture!("idle_empty_manual.160x48"),
    fixture!("auto_banner.100x30"),
    fixture!("auto_banner.160x48"),
    fixture!("idle_after_turns.100x30"),
    fixture!("idle_after_turns.160x48"),
    fixture!("ctrl_c_once.100x30"),
    fixture!("ctrl_c_once.160x48"),
    fixture!("busy_empty.100x30"),
    fixture!("busy_empty.160x48"),
    fixture!("footer_manual.100x30"),
    fixture!("footer_accept_edits.100x30"),
    fixture!("footer_plan.100x30"),
    fixture!("footer_auto.100x30"),
    fixture!("footer_bypass.100x30"),
    fixture!("footer_dont_ask.100x30"),
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
    fixture!("paste_long.160x48"),
    fixture!("slash_menu.100x30"),
    fixture!("slash_menu.160x48"),
    fixture!("shell_mode.100x30"),
    fixture!("shell_mode.160x48"),
    fixture!("shell_mode_empty.100x30"),
    fixture!("shell_mode_empty.160x48"),
    fixture!("busy_queued.100x30"),
    fixture!("busy_queued.160x48"),
    fixture!("dialog_bash.100x30"),
    fixture!("dialog_bash.160x48"),
    fixture!("dialog_edit.100x30"),
    fixture!("dialog_edit.160x48"),
    fixture!("dialog_amend.160x48"),
    fixture!("dialog_tall.30x20"),
    fixture!("dialog_bash_inbox_held.100x30"),
    fixture!("dialog_auto_fallback.100x30"),
    fixture!("auto_check_unavailable.100x30"),
    fixture!("ask_question.100x30"),
    fixture!("ask_question.160x48"),
    fixture!("model_menu.100x30"),
    fixture!("model_menu.160x48"),
    fixture!("trust.100x30"),
    fixture!("trust.160x48"),
    fixture!("onboarding_theme.100x30"),
    fixture!("onboarding_security.100x30"),
    fixture!("bypass_confirm.100x30"),
    fixture!("inbox_hold_bypass.100x30"),
];

fn holds(text: &str) -> InputBox {
    InputBox::Holds(text.into())
}

/// (dialog, input from the plain capture, input from the escaped one).
fn expected(name: &str) -> (Option<Dialog>, InputBox, InputBox) {
    use InputBox::{Empty, NotDrawn};
    let state = name.split('.').next().unwrap_or_default();
    let same = |input: InputBox| (None, input.clone(), input);
    let dialog = |kind| (Some(kind), NotDrawn, NotDrawn);
    let draft = "fix the flaky test in retry.rs";
    match state {
        "boot" => same(NotDrawn),
        "idle_empty" | "idle_empty_manual" | "auto_banner" | "idle_after_turns" | "ctrl_c_once"
        | "busy_empty" => same(Empty),
        s if s.starts_with("footer_") => same(Empty),
        "draft_line" => same(holds(draft)),
        "draft_lines" => same(holds(&format!(
            "{draft}\nand keep the retry budget at 3\nthen run the tests"
        ))),
        "busy_draft" => same(holds("also check the docs")),
        "paste_folded" => same(holds("[Pasted text #1 +4 lines]")),
        "busy_paste" => same(holds("[Pasted text #3 +4 lines]")),
        "paste_short" => same(holds("please look at issue 12 and fix the retry loop")),
        "paste_long" => same(holds("[Pasted text #2]")),
        "slash_menu" => same(holds("/")),
        "shell_mode" => same(holds("!ls")),
        "shell_mode_empty" => same(holds("!")),
        "busy_queued" => (None, holds("Press up to edit queued messages"), Empty),
        "dialog_bash"
        | "dialog_edit"
        | "dialog_amend"
        | "dialog_tall"
        | "dialog_bash_inbox_held"
        | "dialog_auto_fallback" => dialog(Dialog::Permission),
        "auto_check_unavailable"
        | "ask_question"
        | "model_menu"
        | "trust"
        | "onboarding_theme"
        | "onboarding_security"
        | "bypass_confirm"
        | "inbox_hold_bypass" => dialog(Dialog::Other),
        other => panic!("no expectation for {other}"),
    }
}

#[test]
fn its_screens_are_the_recorded_release() {
    let recorded = |v| Reader::Claude.recorded(v);
    assert!(recorded("2.1.332") && recorded("2.1.197"));
    for unknown in ["2.1.331", "2.1.333", "2.1.400", "2.1.19", "", "2.1.332 "] {
        assert!(!recorded(unknown), "{unknown:?}");
    }
}

#[test]
fn every_real_screen_reads_as_what_it_shows() {
    for (name, plain, escaped) in FIXTURES {
        let (dialog, input_plain, input_escaped) = expected(name);
        let want = |input| Look { dialog, input };
        assert_eq!(look(plain), want(input_plain), "{name} (plain)");
        assert_eq!(look(escaped), want(input_escaped), "{name} (-e)");
    }
}

#[test]
fn only_an_empty_box_without_a_dialog_is_ready() {
    for (name, _, escaped) in FIXTURES {
        let ready = expected(name).2 == InputBox::Empty && expected(name).0.is_none();
        assert_eq!(look(escaped).ready(), ready, "{name}");
    }
}

/// `sessions approve` presses Enter only on `❯ 1. Yes`: never on the auto-mode fallback
/// (`❯ No` selected: Enter would deny), the trust screen (`❯ No, exit`), the bypass
/// warning, a held peer message, or any option that widens permissions.
#[test]
fn only_a_dialog_with_yes_selected_can_be_approved() {
    let approvable: Vec<&str> = FIXTURES
        .iter()
        .filter(|(_, plain, _)| shows_dialog(plain))
        .map(|(name, ..)| *name)
        .collect();
    assert_eq!(
        approvable,
        [
            "dialog_bash.100x30",
            "dialog_bash.160x48",
            "dialog_edit.100x30",
            "dialog_edit.160x48",
            "dialog_amend.160x48",
            "dialog_tall.30x20",
            "dialog_bash_inbox_held.100x30",
        ]
    );
}

#[test]
fn a_folded_paste_is_seen_as_the_paste() {
    let five = "a\nb\nc\nd\ne";
    for (name, plain, escaped) in FIXTURES {
        let folded = ["paste_folded", "paste_long", "busy_paste"]
            .iter()
            .any(|p| name.starts_with(p));
        assert_eq!(Reader::Claude.holds_paste(escaped), folded, "{name}");
        if name.starts_with("paste_folded") {
            assert!(Reader::Claude.shows_paste(plain, five), "{name}");
        }
    }
}

#[test]
fn the_footer_names_the_permission_mode() {
    use PermissionMode::*;
    let mode = |name: &str| {
        let (_, plain, escaped) = FIXTURES
            .iter()
            .find(|(n, ..)| *n == name)
            .copied()
            .unwrap_or_else(|| panic!("{name}"));
        assert_eq!(shown_mode(plain), shown_mode(escaped), "{name}");
        shown_mode(plain)
    };
    assert_eq!(mode("footer_manual.100x30"), Some(Default));
    assert_eq!(mode("idle_empty_manual.160x48"), Some(Default));
    assert_eq!(mode("footer_accept_edits.100x30"), Some(AcceptEdits));
    assert_eq!(mode("footer_plan.100x30"), Some(Plan));
    assert_eq!(mode("footer_auto.100x30"), Some(Auto));
    assert_eq!(
        mode("idle_empty.100x30"),
        Some(Auto),
        "started with no mode"
    );
    assert_eq!(mode("busy_empty.100x30"), Some(Auto), "busy keeps it");
    assert_eq!(mode("footer_bypass.100x30"), Some(BypassPermissions));
    assert_eq!(mode("footer_dont_ask.100x30"), Some(DontAsk));
    // A footer that says something else, or no box: not known from this screen.
    for name in [
        "paste_folded.100x30",
        "shell_mode.100x30",
        "ctrl_c_once.100x30",
        "dialog_bash.100x30",
        "trust.100x30",
        "boot.100x30",
    ] {
        assert_eq!(mode(name), None, "{name}");
    }
    // 2.1.197 names no mode for its default.
    let old = include_str!("claude/fixtures/idle_empty.100x30.txt");
    assert_eq!(shown_mode(old), Some(Default));
    let old_busy = include_str!("claude/fixtures/busy_empty.100x30.txt");
    assert_eq!(shown_mode(old_busy), Some(Default));
}

/// An agent that prints a mode footer in its answer (above the box) does not change
/// what the screen is read to show; only the line right under the box counts.
#[test]
fn a_mode_printed_by_the_agent_is_not_the_mode() {
    let manual = include_str!("claude/fixtures/2.1.332/footer_manual.100x30.txt");
    let lines: Vec<&str> = manual.lines().collect();
    let top = lines
        .iter()
        .rposition(|l| l.starts_with('❯'))
        .expect("the prompt")
        - 1;
    let mut forged: Vec<String> = lines.iter().map(|l| (*l).to_string()).collect();
    forged.insert(
        top,
        "  ⏵⏵ bypass permissions on (shift+tab to cycle)".into(),
    );
    forged.insert(top, "─".repeat(100));
    let forged = forged.join("\n");
    assert_eq!(shown_mode(&forged), Some(PermissionMode::Default));
}
