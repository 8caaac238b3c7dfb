//! Text GitHub shows no one but a model reads (SPEC §18.4): invisible and bidirectional
//! characters, Unicode tag characters ("ASCII smuggling"), runs of variation selectors
//! or joiners, and in Markdown bodies HTML comments and character references to such
//! characters. Pure functions; each says how many characters (Unicode scalar values) it
//! removed, so the operator can be told that someone tried. See
//! docs/decisions/2026-12-03-hidden-text.md.
//!
//! Routing and its gates (marker, actor) read the raw payload; only the text an agent is
//! shown goes through here (the excerpt, and `guard::sanitize` before every paste).

use std::borrow::Cow;

/// A text with its hidden parts removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stripped<'a> {
    /// Borrowed when nothing was removed.
    pub text: Cow<'a, str>,
    /// Unicode scalar values removed.
    pub removed: usize,
}

impl<'a> Stripped<'a> {
    fn untouched(text: &'a str) -> Self {
        Self {
            text: Cow::Borrowed(text),
            removed: 0,
        }
    }

    fn changed(text: &'a str, out: String, removed: usize) -> Self {
        if removed == 0 {
            Self::untouched(text)
        } else {
            Self {
                text: Cow::Owned(out),
                removed,
            }
        }
    }

    /// This text run through one more step, the counts added; an owned text is not
    /// copied when the step removes nothing.
    pub fn then(self, step: fn(&str) -> Stripped<'_>) -> Stripped<'a> {
        match self.text {
            Cow::Borrowed(text) => {
                let next = step(text);
                Stripped {
                    text: next.text,
                    removed: self.removed + next.removed,
                }
            }
            Cow::Owned(text) => {
                let next = {
                    let next = step(&text);
                    (next.removed > 0).then(|| (next.text.into_owned(), next.removed))
                };
                let (text, more) = next.unwrap_or((text, 0));
                Stripped {
                    text: Cow::Owned(text),
                    removed: self.removed + more,
                }
            }
        }
    }
}

/// What a character is to a reader who cannot see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Shown (or a control, which `guard::sanitize` and the excerpt's escapes handle).
    Visible,
    /// Never shown and never needed: always removed.
    Hidden,
    /// A variation selector: kept once, directly after a character it can vary.
    Selector,
    /// U+200C ZWNJ, U+200D ZWJ: kept where scripts and emoji use them.
    Joiner,
}

/// The one classification (SPEC §18.4, widened where noted).
pub fn class(c: char) -> Class {
    match c {
        // The fast path: ASCII and Latin-1 before the soft hyphen.
        '\0'..='\u{AC}' => Class::Visible,
        // §18.4: tag characters (U+E0000–E007F). Widened to the whole default-ignorable
        // block: variation selectors 17–256 (U+E0100–E01EF, one byte each in
        // "emoji smuggling") and the reserved rest, which renders as nothing too.
        '\u{E0000}'..='\u{E0FFF}'
        // §18.4: bidirectional controls.
        | '\u{202A}'..='\u{202E}'
        | '\u{200E}'
        | '\u{200F}'
        | '\u{061C}'
        // §18.4: invisible characters. U+2060–2064 widened to the block's other
        // default-ignorables (U+2065 reserved, U+206A–206F deprecated format controls;
        // U+2066–2069, the isolates, are §18.4 bidi controls).
        | '\u{200B}'
        | '\u{2060}'..='\u{206F}'
        | '\u{FEFF}'
        | '\u{180E}'
        | '\u{00AD}'
        // Widened: other invisible format controls with no use in a comment
        // (reserved specials and interlinear annotation, shorthand and musical format
        // controls).
        | '\u{FFF0}'..='\u{FFFB}'
        | '\u{1BCA0}'..='\u{1BCA3}'
        | '\u{1D173}'..='\u{1D17A}' => Class::Hidden,
        '\u{FE00}'..='\u{FE0F}' | '\u{180B}'..='\u{180D}' | '\u{180F}' => Class::Selector,
        '\u{200C}' | '\u{200D}' => Class::Joiner,
        _ => Class::Visible,
    }
}

/// Removes the hidden characters of [`class`]: every [`Class::Hidden`] one; a variation
/// selector unless it directly follows a character it can vary (one selector per
/// character: a run carries bytes, one selector changes only a glyph); a joiner unless it
/// directly follows a non-ASCII letter, mark, symbol or selector (where scripts and emoji
/// use it; at the start, after ASCII, a space or another joiner it only carries bits).
///
/// Whether a selector or joiner stays depends only on the characters kept before it, so
/// hidden characters inserted anywhere change nothing else, and a second pass changes
/// nothing.
pub fn strip_hidden(text: &str) -> Stripped<'_> {
    let Some(first) = next_not_visible(text) else {
        return Stripped::untouched(text);
    };
    let mut out = String::with_capacity(text.len());
    let mut removed = 0;
    let mut at = first;
    let mut rest = text;
    // Visible runs are copied whole; only the characters between them are judged.
    while let Some((run, tail)) = rest.split_at_checked(at) {
        out.push_str(run);
        let Some(c) = tail.chars().next() else {
            break;
        };
        if kept(out.chars().next_back(), c) {
            out.push(c);
        } else {
            removed += 1;
        }
        rest = &tail[c.len_utf8()..];
        at = next_not_visible(rest).unwrap_or(rest.len());
    }
    Stripped::changed(text, out, removed)
}

/// The byte offset of the first character of `text` that is not [`Class::Visible`]. All
/// such characters lie outside ASCII, and most of what people write is ASCII: it is
/// skipped eight bytes at a time, so a long body costs little more than reading it.
fn next_not_visible(text: &str) -> Option<usize> {
    const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
    let mut words = text.as_bytes().chunks_exact(8);
    let mut offset = 0;
    for word in words.by_ref() {
        let word = <[u8; 8]>::try_from(word).unwrap_or([0x80; 8]);
        if u64::from_le_bytes(word) & HIGH_BITS != 0
            && let Some(at) = first_not_visible_starting_in(text, offset, &word)
        {
            return Some(at);
        }
        offset += 8;
    }
    first_not_visible_starting_in(text, offset, words.remainder())
}

/// The first character not [`Class::Visible`] whose first byte is one of `bytes`, which
/// sit at `offset` in `text` (a character may run on past them).
fn first_not_visible_starting_in(text: &str, offset: usize, bytes: &[u8]) -> Option<usize> {
    (offset..offset + bytes.len())
        .filter(|&at| bytes[at - offset] >= 0xC0) // the first byte of a non-ASCII character
        .find(|&at| {
            let c = text.get(at..).and_then(|rest| rest.chars().next());
            c.is_some_and(|c| class(c) != Class::Visible)
        })
}

/// Whether `c` stays after `last`, the character kept before it (`None` at the start).
fn kept(last: Option<char>, c: char) -> bool {
    match class(c) {
        Class::Visible => true,
        Class::Hidden => false,
        Class::Selector => last.is_some_and(|base| takes_selector(base, c)),
        Class::Joiner => {
            last.is_some_and(|base| class(base) == Class::Selector || is_script_base(base))
        }
    }
}

/// A visible, non-ASCII, non-space character: one a selector may vary, or a script or
/// emoji sequence may join on from.
fn is_script_base(c: char) -> bool {
    !c.is_ascii() && !c.is_whitespace() && !c.is_control() && class(c) == Class::Visible
}

/// ASCII has variation sequences only in the keycap and text/emoji forms of digits, `#`
/// and `*` (`1️⃣`); any other ASCII base would only be carrying a selector.
fn takes_selector(base: char, selector: char) -> bool {
    match base {
        '0'..='9' | '#' | '*' => matches!(selector, '\u{FE0E}' | '\u{FE0F}'),
        _ => is_script_base(base),
    }
}

/// Removes HTML comments, and the other markup HTML reads as a comment and never shows
/// (`<!DOCTYPE …>`, `<![CDATA[…]]>`, `<?…?>`: "bogus comments"), as an HTML parser
/// reads them — the way GitHub's renderer hands them to one:
/// - `<!--` runs to the first `-->` after its `<!`, so `<!-->` and `<!--->` are whole,
///   empty comments, and `<!-- a <!-- b --> c -->` leaves ` c -->`;
/// - any other `<!` or `<?` runs to the first `>`;
/// - one that never closes runs to the end of the text.
///
/// Markup inside a code span or block goes too: GitHub would show it there, but telling
/// code from prose takes a Markdown parser, and a parser that disagreed with GitHub's
/// would let hidden text through. Removing too much only hides from the agent what it can
/// still read on GitHub.
pub fn strip_html_comments(text: &str) -> Stripped<'_> {
    let Some(first) = next_comment(text) else {
        return Stripped::untouched(text);
    };
    let mut out = String::with_capacity(text.len());
    let mut removed = 0;
    let mut rest = text;
    let mut open = Some(first);
    while let Some(at) = open {
        out.push_str(&rest[..at]);
        let comment = &rest[at..];
        let close = if comment.starts_with("<!--") {
            "-->"
        } else {
            ">"
        };
        // `<!` and `<?` are two ASCII bytes, so `2..` is a char boundary.
        let end = comment[2..]
            .find(close)
            .map_or(comment.len(), |end| 2 + end + close.len());
        removed += comment[..end].chars().count();
        rest = &comment[end..];
        open = next_comment(rest);
    }
    out.push_str(rest);
    Stripped::changed(text, out, removed)
}

/// Where the next `<!` or `<?` starts.
fn next_comment(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    text.match_indices('<')
        .map(|(at, _)| at)
        .find(|&at| matches!(bytes.get(at + 1), Some(b'!' | b'?')))
}

/// Named references GitHub renders as a hidden character (HTML's list, these only).
const HIDDEN_NAMES: &[&str] = &[
    "shy",
    "lrm",
    "rlm",
    "ZeroWidthSpace",
    "NegativeVeryThinSpace",
    "NegativeThinSpace",
    "NegativeMediumSpace",
    "NegativeThickSpace",
    "NoBreak",
    "ApplyFunction",
    "af",
    "InvisibleTimes",
    "it",
    "InvisibleComma",
    "ic",
];

/// Removes character references (`&#xE0041;`, `&#8203;`, `&ZeroWidthSpace;`) to a
/// character [`strip_hidden`] would remove: GitHub renders them as that character, so
/// the person sees nothing where the agent reads a code. Numeric references are taken
/// with or without `;` and with any number of digits, as browsers take them; the
/// result's joiners stay (`&zwj;` is text the agent reads, as people see a joiner).
pub fn strip_hidden_references(text: &str) -> Stripped<'_> {
    if !text.contains('&') {
        return Stripped::untouched(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut removed = 0;
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let candidate = &rest[at..];
        match hidden_reference_len(candidate) {
            Some(len) => {
                removed += len; // ASCII only: bytes are characters
                rest = &candidate[len..];
            }
            None => {
                out.push('&');
                rest = &candidate[1..];
            }
        }
    }
    out.push_str(rest);
    Stripped::changed(text, out, removed)
}

/// The length of the reference to a hidden character at the start of `text` (which
/// starts with `&`), if there is one.
fn hidden_reference_len(text: &str) -> Option<usize> {
    let body = &text[1..];
    if let Some(number) = body.strip_prefix('#') {
        let (radix, digits_at) = match number.as_bytes().first() {
            Some(b'x' | b'X') => (16, 1),
            _ => (10, 0),
        };
        let digits = &number[digits_at..];
        let count = digits
            .bytes()
            .take_while(|b| char::from(*b).is_digit(radix))
            .count();
        if count == 0 {
            return None;
        }
        let value = digits[..count].chars().fold(0u32, |acc, d| {
            let digit = d.to_digit(radix).unwrap_or(0);
            acc.saturating_mul(radix).saturating_add(digit)
        });
        let hidden = char::from_u32(value)
            .is_some_and(|c| matches!(class(c), Class::Hidden | Class::Selector));
        let semicolon = usize::from(digits[count..].starts_with(';'));
        return hidden.then_some(1 + 1 + digits_at + count + semicolon);
    }
    let name_len = body.bytes().take_while(u8::is_ascii_alphanumeric).count();
    let named = body[name_len..].starts_with(';') && HIDDEN_NAMES.contains(&&body[..name_len]);
    named.then_some(1 + name_len + 1)
}

/// A body GitHub renders as Markdown (a comment, review or issue/PR body; a check run's
/// summary): HTML comments first — so no character or reference removed later can close
/// a comment early and reveal what GitHub hid — then references to hidden characters,
/// then the characters.
pub fn strip_markdown(text: &str) -> Stripped<'_> {
    strip_html_comments(text)
        .then(strip_hidden_references)
        .then(strip_hidden)
}

#[cfg(test)]
#[path = "hidden_text_tests.rs"]
mod tests;
