//! The screens of every Claude Code release recorded in a directory of its own
//! (`claude/fixtures/X.Y.Z/`, from 2.1.332 on; `scripts/record-screens` writes them),
//! read by the same functions as 2.1.197's: what each recorded state reads as, which
//! dialogs the operator's approve may answer, and the permission mode its footer names.
//! A newly recorded release is tested here as it is: these tests iterate the
//! directories.

use super::super::Reader;
use super::*;
use crate::config::PermissionMode;

/// One recorded screen: `NAME.COLSxROWS`, its plain capture and its `-e` capture.
struct Fixture {
    name: String,
    plain: String,
    escaped: String,
}

/// Where each release recorded since 2.1.197 has its directory (`X.Y.Z/`).
const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/src/session/delivery/screen/claude/fixtures"
);

/// Every release recorded in a directory of its own, oldest first, with its screens.
fn releases() -> Vec<(String, Vec<Fixture>)> {
    let mut releases: Vec<(Vec<u32>, String)> = std::fs::read_dir(FIXTURES)
        .expect("the fixtures")
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .map(|v| (v.split('.').map(|n| n.parse().unwrap_or(0)).collect(), v))
        .collect();
    releases.sort();
    assert!(!releases.is_empty(), "2.1.332 and later");
    releases
        .into_iter()
        .map(|(_, version)| {
            let screens = screens(&format!("{FIXTURES}/{version}"));
            (version, screens)
        })
        .collect()
}

/// The screens in `dir`, by name.
fn screens(dir: &str) -> Vec<Fixture> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("a release's fixtures")
        .flatten()
        .filter_map(|e| {
            let file = e.file_name().to_string_lossy().into_owned();
            file.strip_suffix(".txt").map(str::to_string)
        })
        .collect();
    names.sort();
    let read =
        |file: String| std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
    names
        .into_iter()
        .map(|name| Fixture {
            plain: read(format!("{dir}/{name}.txt")),
            escaped: read(format!("{dir}/{name}.ansi")),
            name,
        })
        .collect()
}

/// Every screen of every release, named `RELEASE/NAME.COLSxROWS`.
fn every_screen() -> Vec<(String, Fixture)> {
    releases()
        .into_iter()
        .flat_map(|(version, screens)| screens.into_iter().map(move |f| (version.clone(), f)))
        .collect()
}

/// The states where `sessions approve` may press Enter.
const APPROVABLE: &[&str] = &[
    "dialog_bash",
    "dialog_edit",
    "dialog_amend",
    "dialog_tall",
    "dialog_bash_inbox_held",
];

fn state(name: &str) -> &str {
    name.split('.').next().unwrap_or_default()
}

fn holds(text: &str) -> InputBox {
    InputBox::Holds(text.into())
}

/// (dialog, input from the plain capture, input from the escaped one).
fn expected(name: &str) -> (Option<Dialog>, InputBox, InputBox) {
    use InputBox::{Empty, NotDrawn};
    let same = |input: InputBox| (None, input.clone(), input);
    let dialog = |kind| (Some(kind), NotDrawn, NotDrawn);
    let draft = "fix the flaky test in retry.rs";
    match state(name) {
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
        // After a turn that failed on an API error (issue 43): the dim placeholder
        // `Resend your message to try again`, the cursor (inverse) on its first cell.
        "failed_turn" => (None, holds("Resend your message to try again"), Empty),
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
    let recorded = |v: &str| Reader::Claude.recorded(v);
    assert!(recorded("2.1.197"));
    for (version, _) in releases() {
        assert!(recorded(&version), "{version} is not in RECORDED_RELEASES");
    }
    for unknown in ["2.1.331", "2.1.333", "2.1.400", "2.1.19", "", "2.1.332 "] {
        assert!(!recorded(unknown), "{unknown:?}");
    }
}

#[test]
fn every_real_screen_reads_as_what_it_shows() {
    for (version, f) in every_screen() {
        let (dialog, input_plain, input_escaped) = expected(&f.name);
        let want = |input| Look { dialog, input };
        let name = format!("{version}/{}", f.name);
        assert_eq!(look(&f.plain), want(input_plain), "{name} (plain)");
        assert_eq!(look(&f.escaped), want(input_escaped), "{name} (-e)");
    }
}

#[test]
fn only_an_empty_box_without_a_dialog_is_ready() {
    for (version, f) in every_screen() {
        let (dialog, _, input) = expected(&f.name);
        let ready = input == InputBox::Empty && dialog.is_none();
        assert_eq!(look(&f.escaped).ready(), ready, "{version}/{}", f.name);
    }
}

/// `sessions approve` presses Enter only on `❯ 1. Yes`: never on the auto-mode fallback
/// (`❯ No` selected: Enter would deny), the trust screen (`❯ No, exit`), the bypass
/// warning, a held peer message, or any option that widens permissions.
#[test]
fn only_a_dialog_with_yes_selected_can_be_approved() {
    for (version, f) in every_screen() {
        let approvable = APPROVABLE.contains(&state(&f.name));
        assert_eq!(shows_dialog(&f.plain), approvable, "{version}/{}", f.name);
    }
}

#[test]
fn a_folded_paste_is_seen_as_the_paste() {
    let five = "a\nb\nc\nd\ne";
    for (version, f) in every_screen() {
        let folded = ["paste_folded", "paste_long", "busy_paste"].contains(&state(&f.name));
        let name = format!("{version}/{}", f.name);
        assert_eq!(Reader::Claude.holds_paste(&f.escaped), folded, "{name}");
        if state(&f.name) == "paste_folded" {
            assert!(Reader::Claude.shows_paste(&f.plain, five), "{name}");
        }
    }
}

#[test]
fn the_footer_names_the_permission_mode() {
    use PermissionMode::*;
    let modes = [
        ("footer_manual.100x30", Some(Default)),
        ("idle_empty_manual.160x48", Some(Default)),
        ("footer_accept_edits.100x30", Some(AcceptEdits)),
        ("footer_plan.100x30", Some(Plan)),
        ("footer_auto.100x30", Some(Auto)),
        // Started with no mode.
        ("idle_empty.100x30", Some(Auto)),
        // Busy keeps it.
        ("busy_empty.100x30", Some(Auto)),
        ("footer_bypass.100x30", Some(BypassPermissions)),
        ("footer_dont_ask.100x30", Some(DontAsk)),
        // A footer that says something else, or no box: not known from this screen.
        ("paste_folded.100x30", None),
        ("shell_mode.100x30", None),
        ("ctrl_c_once.100x30", None),
        ("dialog_bash.100x30", None),
        ("trust.100x30", None),
        ("boot.100x30", None),
    ];
    for (version, screens) in releases() {
        for (name, mode) in modes {
            let f = screens
                .iter()
                .find(|f| f.name == name)
                .unwrap_or_else(|| panic!("{version}/{name} not recorded"));
            assert_eq!(
                shown_mode(&f.plain),
                shown_mode(&f.escaped),
                "{version}/{name}"
            );
            assert_eq!(shown_mode(&f.plain), mode, "{version}/{name}");
        }
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
    for (version, screens) in releases() {
        let manual = screens
            .iter()
            .find(|f| f.name == "footer_manual.100x30")
            .unwrap_or_else(|| panic!("{version}: footer_manual.100x30 not recorded"));
        let lines: Vec<&str> = manual.plain.lines().collect();
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
        assert_eq!(
            shown_mode(&forged),
            Some(PermissionMode::Default),
            "{version}"
        );
    }
}
