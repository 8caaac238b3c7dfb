//! What Codex's screen shows (SPEC §18.2, issue 31): the one home of the-loop's
//! knowledge of it, pure functions over a `tmux capture-pane` screen, checked against
//! real captures of Codex 0.171.0 (`codex/fixtures/`, see its README).
//!
//! The shapes they rely on:
//! - The bottom pane is the composer or a view that replaces it (an approval request,
//!   the trust screen), never both. Both start at column 0 with `›` and a space; the
//!   transcript shows sent messages the same way, but with the `›` dim. Everything else
//!   Codex draws (the model's words, a command and its output, a continuation line, the
//!   footer) is indented, so text an agent was led to show cannot put `›` at column 0.
//! - The composer is that `›` line, continuation lines (indented by two), a blank line
//!   and a footer (`? for shortcuts`, `tab to queue message`, the model and the
//!   directory). Empty, it shows a dim placeholder (`Ask Codex to do anything`): only the
//!   dim attribute tells it from a draft, so [`look`] needs `capture-pane -e` to read an
//!   empty composer as empty; on a plain capture it reads as holding text (a hold, never
//!   a paste into a draft).
//! - A view lists options below its text, the selected one after `›` drawn inverse
//!   (`› 1. Yes, proceed (y)`), and ends with a hint line: the approval request `Press
//!   enter to confirm or esc to cancel` under `Would you like to run the following
//!   command?`; the trust screen `enter continue · esc back`. A view takes no paste: a
//!   bracketed paste is dropped and the Enter after it chooses the selected option.
//!
//! Everything not positively recognised as an empty composer with no view reads as not
//! ready: these functions fail closed.

use super::cells::{self, Line};
use super::look::{Dialog, InputBox, Look};

/// Codex's prompt at column 0: the composer's, a view's selected option, a sent message.
pub const PROMPT: &str = "› ";
/// The question line of Codex 0.171.0's approval requests (`Would you like to run the
/// following command?`, `… make the following edits?`).
pub const APPROVAL_QUESTION: &str = "Would you like to";
/// An approval request's first option, selected.
pub const APPROVAL_YES: &str = "› 1. Yes, proceed";
/// The hint line under an approval request.
pub const APPROVAL_HINT: &str = "Press enter to confirm or esc to cancel";
/// How a view's hint line reads (the approval request's, the trust screen's, the
/// "Hooks need review" screen's).
const VIEW_HINTS: &[&str] = &[
    "to confirm",
    "esc to cancel",
    "enter continue",
    "esc back",
    "enter confirm",
    "esc skip",
];

/// The Codex releases whose screens were recorded (`codex/fixtures/`) and are read
/// here; any other release's deliveries are held, never pasted on a guess.
pub const RECORDED_RELEASES: &[&str] = &["0.171.0"];

/// Reads `screen`, a `capture-pane -p` capture; with `-e` the placeholder reads as an
/// empty composer.
pub fn look(screen: &str) -> Look {
    let lines = cells::lines(screen);
    let Some(top) = bottom_pane(&lines) else {
        return Look {
            dialog: None,
            input: InputBox::NotDrawn,
        };
    };
    let pane = &lines[top..];
    if let Some(dialog) = view(pane) {
        return Look {
            dialog: Some(dialog),
            input: InputBox::NotDrawn,
        };
    }
    Look {
        dialog: None,
        input: composer(pane),
    }
}

/// Whether `screen` (a `capture-pane -e` capture: the selection is read from its
/// inverse attribute) shows an approval request with "1. Yes, proceed" selected, where
/// Enter approves and Escape denies: the `Would you like to …?` question above the
/// selected option, and the approval hint as the screen's last line. A plain capture,
/// a draft or a transcript quoting a request is not one.
pub fn shows_dialog(screen: &str) -> bool {
    let lines = cells::lines(screen);
    let Some(top) = bottom_pane(&lines) else {
        return false;
    };
    let selected = &lines[top];
    let inverse = selected.cells.first().is_some_and(|c| c.inverse);
    inverse
        && selected.text.starts_with(APPROVAL_YES)
        && last_text(&lines[top..]) == Some(APPROVAL_HINT)
        && question_above(&lines[..top])
}

/// The bottom pane's first line: the screen's last line with `›` and a space at column
/// 0, unless its `›` is dim (a sent message in the transcript).
fn bottom_pane(lines: &[Line]) -> Option<usize> {
    let top = lines.iter().rposition(|l| l.text.starts_with(PROMPT))?;
    let dim = lines[top].cells.first().is_some_and(|c| c.dim);
    (!dim).then_some(top)
}

/// A view in place of the composer: its last line a view's hint (the composer's is its
/// footer, below any text in it). An approval request when the hint is the approval's.
fn view(pane: &[Line]) -> Option<Dialog> {
    let last = last_text(pane)?;
    if last == APPROVAL_HINT {
        return Some(Dialog::Permission);
    }
    VIEW_HINTS
        .iter()
        .any(|h| last.contains(h))
        .then_some(Dialog::Other)
}

/// The composer's contents: empty when its first line shows only the dim placeholder
/// and nothing follows but the footer; else the text after the prompt and the
/// continuation lines, down to the blank line above the footer.
fn composer(pane: &[Line]) -> InputBox {
    let first = pane[0]
        .cells
        .get(PROMPT.chars().count()..)
        .unwrap_or_default();
    let indented = pane[1..]
        .iter()
        .all(|l| l.text.is_empty() || l.text.starts_with("  "));
    if !indented {
        return InputBox::NotDrawn;
    }
    // The footer: the lines after the last blank one above it.
    let drawn = pane
        .iter()
        .rposition(|l| !l.text.is_empty())
        .map_or(1, |i| i + 1);
    let pane = &pane[..drawn];
    let end = pane
        .iter()
        .rposition(|l| l.text.is_empty())
        .unwrap_or(pane.len());
    let body = &pane[..end.max(1)];
    let placeholder = first.iter().any(|c| !c.ch.is_whitespace())
        && first.iter().all(|c| c.ch.is_whitespace() || c.dim)
        && body[1..].iter().all(|l| l.text.is_empty());
    if placeholder {
        return InputBox::Empty;
    }
    let text: Vec<String> = std::iter::once(first)
        .chain(
            body[1..]
                .iter()
                .map(|l| l.cells.get(2..).unwrap_or_default()),
        )
        .map(|cells| cells.iter().map(|c| c.ch).collect())
        .collect();
    // Empty but without its placeholder is not a shape Codex draws: not ready.
    let text = text.join("\n").trim().to_string();
    if text.is_empty() {
        InputBox::NotDrawn
    } else {
        InputBox::Holds(text)
    }
}

/// The last non-blank line's text, trimmed.
fn last_text(lines: &[Line]) -> Option<&str> {
    lines
        .iter()
        .rev()
        .map(|l| l.text.trim())
        .find(|t| !t.is_empty())
}

/// Whether an approval question (indented, as Codex draws it) is among the lines just
/// above the selected option, below the transcript's last item.
fn question_above(lines: &[Line]) -> bool {
    lines
        .iter()
        .rev()
        .take_while(|l| l.text.is_empty() || l.text.starts_with(' '))
        .any(|l| {
            let t = l.text.trim();
            t.starts_with(APPROVAL_QUESTION) && t.ends_with('?')
        })
}

/// Codex's folded paste: `marker`, a number, then ` chars]`.
pub(super) fn folded(text: &str, marker: &str) -> bool {
    let Some(rest) = text.strip_prefix(marker) else {
        return false;
    };
    let digits = rest.trim_start_matches(|c: char| c.is_ascii_digit());
    digits.len() < rest.len() && digits == " chars]"
}

#[cfg(test)]
#[path = "codex_tests.rs"]
mod tests;
