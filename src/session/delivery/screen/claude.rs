//! What Claude Code's screen shows (SPEC §17.4, §18.2): the one home of the-loop's
//! knowledge of it, pure functions over a `tmux capture-pane` screen, checked against
//! real captures of Claude Code 2.1.197 (`claude/fixtures/`, see its README).
//!
//! The shapes they rely on:
//! - The input box is two rules of `─` at column 0, the prompt `❯` + no-break space on
//!   the line right after the top rule, and continuation lines indented by two spaces;
//!   below the bottom rule only a footer (`? for shortcuts`, `esc to interrupt`, …).
//!   Before it is drawn the screen is blank.
//! - An empty box may show dim text: a placeholder (`Try "…"`, `Press up to edit queued
//!   messages`) or a prompt suggestion. Only the dim attribute tells it from a draft, so
//!   [`look`] needs `capture-pane -e` to read such a box as empty; on a plain capture it
//!   reads as holding text (a hold, never a paste into a draft).
//! - A dialog (a permission request, the trust screen, a menu, a model's question)
//!   replaces the box: a rule at column 0, then its text, options (`❯ 1. Yes`) and a hint
//!   line (`Esc to cancel`). Text an agent was led to show (a command, a question, its
//!   own words) is indented, except a question's text, which cannot forge the prompt
//!   line together with the options and hints below it.
//!
//! Everything not positively recognised as a drawn, empty box with no dialog below it
//! reads as not ready: these functions fail closed.

use super::cells::{self, Line};
use super::look::{Dialog, InputBox, Look};
use crate::config::PermissionMode;

/// Claude Code's input prompt: `❯` and a no-break space. (The transcript shows sent
/// messages after `❯` and a plain space, a dialog its selected option as ` ❯ 1.`.)
pub const INPUT_PROMPT: &str = "❯\u{a0}";
/// The prompt in shell mode (the operator typed `!`): Enter runs the box as a command.
const SHELL_PROMPT: &str = "!\u{a0}";
/// The question line Claude Code 2.1.197 opens its permission dialogs with (`Do you want
/// to proceed?` for Bash, `Do you want to make this edit to …?` for an edit).
pub const DIALOG_QUESTION: &str = "Do you want to";
/// A permission dialog's first option, selected.
pub const DIALOG_YES: &str = "❯ 1. Yes";
/// The first option of the menu Claude Code 2.1.197 opens on a session's first usage
/// limit (`/rate-limit-options`, "What do you want to do?"); its second is `2. Upgrade
/// your plan`. Recorded in `claude/fixtures/rate_limit_menu.*`.
const LIMIT_MENU_OPTION: &str = "1. Stop and wait for limit to reset";
/// Hints on the last line of Claude Code's dialogs and menus.
const DIALOG_HINTS: &[&str] = &["Esc to cancel", "Enter to confirm", "Enter to select"];
/// A rule shorter than this is not the box's (Claude Code draws it full width).
const MIN_RULE: usize = 10;

/// The Claude Code releases whose screens were recorded (`claude/fixtures/`) and are
/// read here. A session running any other release has an unknown screen: its
/// deliveries are held until the operator releases one by hand (issue 30), never
/// pasted on a guess.
pub const RECORDED_RELEASES: &[&str] = &["2.1.197", "2.1.332", "2.1.337"];

/// The footer under the box that names a permission mode: 2.1.332 names every mode
/// (`⏸ manual mode on · ? for shortcuts` is `default`); 2.1.197 names every mode but
/// its default, whose footer starts with the shortcuts hint (idle) or the interrupt
/// hint (busy). Recorded in `claude/fixtures/2.1.332/footer_*`.
const MODE_FOOTERS: &[(&str, PermissionMode)] = &[
    ("⏸ manual mode on", PermissionMode::Default),
    ("⏵⏵ accept edits on", PermissionMode::AcceptEdits),
    ("⏸ plan mode on", PermissionMode::Plan),
    ("⏵⏵ auto mode on", PermissionMode::Auto),
    (
        "⏵⏵ bypass permissions on",
        PermissionMode::BypassPermissions,
    ),
    ("⏵⏵ don't ask on", PermissionMode::DontAsk),
    ("? for shortcuts", PermissionMode::Default),
    ("esc to interrupt", PermissionMode::Default),
];

/// The permission mode the screen shows (issue 30): what the footer right under the
/// input box names. `None` when no box is drawn (a dialog, booting) or its footer says
/// something else for now (a folded paste's `paste again to expand`, shell mode, `Press
/// Ctrl-C again`): the caller keeps what it saw last. Text an agent prints sits above
/// the box and is never read here.
pub fn shown_mode(screen: &str) -> Option<PermissionMode> {
    let lines = cells::lines(screen);
    let frame = find_box(&lines)?;
    let footer = lines.get(frame.bottom + 1)?.text.strip_prefix("  ")?;
    MODE_FOOTERS
        .iter()
        .find(|(text, _)| footer.starts_with(text))
        .map(|(_, mode)| *mode)
}

/// Reads `screen`, a `capture-pane -p` capture; with `-e` a dim placeholder reads as
/// an empty box.
pub fn look(screen: &str) -> Look {
    let lines = cells::lines(screen);
    let frame = find_box(&lines);
    Look {
        dialog: dialog_in(below(&lines, frame.as_ref())),
        input: frame.map_or(InputBox::NotDrawn, |f| f.contents(&lines)),
    }
}

/// Whether `screen` shows a permission dialog with "1. Yes" selected, where Enter
/// approves (SPEC §17.4): a `Do you want to …?` line, and the selected option within
/// the next lines, below the screen's last rule (a transcript that quotes a dialog
/// above the input box is not one).
pub fn shows_dialog(screen: &str) -> bool {
    let lines = cells::lines(screen);
    let frame = find_box(&lines);
    let texts: Vec<&str> = below(&lines, frame.as_ref())
        .iter()
        .map(|l| l.text.trim())
        .collect();
    texts.iter().enumerate().any(|(i, line)| {
        is_question(line)
            && texts[i + 1..]
                .iter()
                .take(3)
                .any(|l| l.starts_with(DIALOG_YES))
    })
}

/// Where the box is: the indexes of its top and bottom rule.
struct Frame {
    top: usize,
    bottom: usize,
    shell: bool,
}

impl Frame {
    fn contents(&self, lines: &[Line]) -> InputBox {
        // The prompt (`❯` or `!`, then a no-break space) and the continuation indent
        // are both two cells wide.
        let rows = || {
            std::iter::once(&lines[self.top + 1])
                .chain(&lines[self.top + 2..self.bottom])
                .map(|l| l.cells.get(2..).unwrap_or_default())
        };
        let text: Vec<String> = rows()
            .map(|cells| cells.iter().map(|c| c.ch).collect())
            .collect();
        let text = text.join("\n").trim().to_string();
        if self.shell {
            return InputBox::Holds(format!("!{text}"));
        }
        if text.is_empty() || placeholder(rows()) {
            InputBox::Empty
        } else {
            InputBox::Holds(text)
        }
    }
}

/// The input box: the screen's last two rules (column 0, the same length), the prompt
/// on the line after the top one, only continuation lines (indented) or empty lines
/// down to the bottom one.
fn find_box(lines: &[Line]) -> Option<Frame> {
    let rules: Vec<usize> = (0..lines.len())
        .filter(|&i| is_rule(&lines[i].text))
        .collect();
    let (&bottom, rest) = rules.split_last()?;
    let &top = rest.last()?;
    if lines[top].text.chars().count() != lines[bottom].text.chars().count() {
        return None;
    }
    let prompt = &lines[top + 1].text;
    let shell = if prompt.starts_with(INPUT_PROMPT) {
        false
    } else if prompt.starts_with(SHELL_PROMPT) {
        true
    } else {
        return None;
    };
    // The prompt line is not the bottom rule, so `top + 2 <= bottom`.
    let continued = lines[top + 2..bottom]
        .iter()
        .all(|l| l.text.is_empty() || l.text.starts_with("  "));
    continued.then_some(Frame { top, bottom, shell })
}

/// A line of `─` at column 0: Claude Code's rules. Text an agent shows is indented.
fn is_rule(text: &str) -> bool {
    text.chars().count() >= MIN_RULE && text.chars().all(|c| c == '─')
}

/// Where a dialog would be: below the box when it is drawn, else below the last rule
/// (a dialog's top edge), else anywhere (a dialog taller than the screen).
fn below<'a>(lines: &'a [Line], frame: Option<&Frame>) -> &'a [Line] {
    let from = match frame {
        Some(frame) => frame.bottom + 1,
        None => lines
            .iter()
            .rposition(|l| is_rule(&l.text))
            .map_or(0, |i| i + 1),
    };
    &lines[from..]
}

fn dialog_in(lines: &[Line]) -> Option<Dialog> {
    let texts = || lines.iter().map(|l| l.text.trim());
    if texts().any(is_question) {
        return Some(Dialog::Permission);
    }
    let option = |t: &str| t.trim_start_matches('❯').trim_start() == LIMIT_MENU_OPTION;
    if texts().any(option) {
        return Some(Dialog::LimitMenu);
    }
    texts()
        .any(|t| t.starts_with('❯') || is_option(t) || DIALOG_HINTS.iter().any(|h| t.contains(h)))
        .then_some(Dialog::Other)
}

fn is_question(line: &str) -> bool {
    line.starts_with(DIALOG_QUESTION) && line.ends_with('?')
}

/// A numbered option (`2. No`, `2.Yes, and …` when narrow).
fn is_option(line: &str) -> bool {
    let rest = line.trim_start_matches(|c: char| c.is_ascii_digit());
    rest.len() < line.len() && rest.starts_with('.')
}

/// Whether the box's text (the cells after the prompt, then after each continuation
/// indent) is all dim, but for Claude Code's cursor (inverse) on its first cell: a
/// placeholder or a suggestion, which nobody typed.
fn placeholder<'a>(mut rows: impl Iterator<Item = &'a [cells::Cell]>) -> bool {
    let first = rows.next().unwrap_or_default();
    let cells = first
        .iter()
        .enumerate()
        .filter(|(i, c)| !(*i == 0 && c.inverse && !c.dim))
        .map(|(_, c)| c)
        .chain(rows.flatten())
        .filter(|c| !c.ch.is_whitespace());
    let mut any = false;
    for cell in cells {
        if !cell.dim {
            return false;
        }
        any = true;
    }
    any
}

/// Claude Code's folded paste: `marker`, a number, then `]` or ` +N lines]`.
pub(super) fn folded(text: &str, marker: &str) -> bool {
    let Some(rest) = text.strip_prefix(marker) else {
        return false;
    };
    let Some(rest) = strip_number(rest) else {
        return false;
    };
    rest == "]"
        || rest
            .strip_prefix(" +")
            .and_then(|r| {
                r.strip_suffix(" lines]")
                    .or_else(|| r.strip_suffix(" line]"))
            })
            .and_then(strip_number)
            .is_some_and(str::is_empty)
}

/// `text` after its leading ASCII digits, when it has any.
fn strip_number(text: &str) -> Option<&str> {
    let rest = text.trim_start_matches(|c: char| c.is_ascii_digit());
    (rest.len() < text.len()).then_some(rest)
}

#[cfg(test)]
#[path = "claude_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "claude_releases_tests.rs"]
mod releases_tests;
