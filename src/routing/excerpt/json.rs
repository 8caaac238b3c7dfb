//! The JSON writing under the excerpt: one layout routine drives two sinks, a counter
//! (to size an excerpt without building it) and a `String` (to build it once), so the
//! measured size and the rendered text cannot disagree.

use super::{TEXT_CAP, TRUNCATED};
use std::fmt::Write as _;

/// A leaf value, borrowed from the payload.
pub(super) enum Scalar<'a> {
    Prose(&'a str),
    Text(&'a str),
    Whole(&'a str),
    Int(&'a serde_json::Number),
    Bool(bool),
}

impl Scalar<'_> {
    pub(super) fn write<S: Sink>(&self, prose_cap: usize, out: &mut S) {
        match self {
            Scalar::Prose(s) => capped(s, prose_cap, out),
            Scalar::Text(s) => capped(s, TEXT_CAP, out),
            Scalar::Whole(s) => out.string(s),
            Scalar::Int(n) => out.number(n),
            Scalar::Bool(b) => out.raw(if *b { "true" } else { "false" }),
        }
    }
}

/// A string cut to its first `cap` characters, marked when something was cut.
fn capped<S: Sink>(text: &str, cap: usize, out: &mut S) {
    match prefix(text, cap) {
        Some(head) => out.string_with_suffix(head, TRUNCATED),
        None => out.string(text),
    }
}

/// The first `cap` Unicode scalar values of `text`, or `None` when it has no more than
/// that. Slices at a char boundary: the long tail is never scanned or copied.
pub(super) fn prefix(text: &str, cap: usize) -> Option<&str> {
    if text.len() <= cap {
        return None; // no more bytes than the cap, so no more characters either
    }
    if text.as_bytes()[..cap].is_ascii() {
        // Byte `cap` starts a character because the byte before it is one whole.
        return Some(&text[..cap]);
    }
    text.char_indices().nth(cap).map(|(end, _)| &text[..end])
}

/// Where the layout goes.
pub(super) trait Sink {
    /// Structural ASCII (braces, keys, indentation, literals).
    fn raw(&mut self, s: &str);
    /// A quoted, escaped JSON string.
    fn string(&mut self, s: &str) {
        self.string_with_suffix(s, "");
    }
    /// A quoted, escaped JSON string made of two parts.
    fn string_with_suffix(&mut self, s: &str, suffix: &str);
    fn number(&mut self, n: &serde_json::Number);
}

/// Counts what a [`String`] sink would hold.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Counter {
    /// Unicode scalar values: the unit of the excerpt's limit.
    pub chars: usize,
    /// Bytes: the exact capacity to render into.
    pub bytes: usize,
}

impl Counter {
    fn raw_len(&mut self, len: usize) {
        self.chars += len;
        self.bytes += len;
    }

    fn escaped(&mut self, s: &str) {
        let mut extra = 0usize;
        for &b in s.as_bytes() {
            extra += usize::from(EXTRA[usize::from(b)]);
        }
        // Escapes replace one ASCII byte with several, so both counts grow alike.
        self.chars += s.chars().count() + extra;
        self.bytes += s.len() + extra;
    }
}

impl Sink for Counter {
    fn raw(&mut self, s: &str) {
        self.raw_len(s.len()); // ASCII only: one byte, one character
    }

    fn string_with_suffix(&mut self, s: &str, suffix: &str) {
        self.raw("\"\"");
        self.escaped(s);
        self.escaped(suffix);
    }

    fn number(&mut self, n: &serde_json::Number) {
        let mut digits = DigitCount(0);
        let _ = write!(digits, "{n}");
        self.raw_len(digits.0);
    }
}

/// Counts the length of formatted ASCII without allocating.
struct DigitCount(usize);

impl std::fmt::Write for DigitCount {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0 += s.len();
        Ok(())
    }
}

impl Sink for String {
    fn raw(&mut self, s: &str) {
        self.push_str(s);
    }

    fn string_with_suffix(&mut self, s: &str, suffix: &str) {
        self.push('"');
        push_escaped(self, s);
        push_escaped(self, suffix);
        self.push('"');
    }

    fn number(&mut self, n: &serde_json::Number) {
        let _ = write!(self, "{n}");
    }
}

/// Appends `s` as JSON string content: runs that need no escape are copied whole.
fn push_escaped(out: &mut String, s: &str) {
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape = ESCAPE[usize::from(b)];
        if escape == 0 {
            continue;
        }
        // Every escaped byte is ASCII, so `start..i` lies on char boundaries.
        out.push_str(&s[start..i]);
        start = i + 1;
        if escape == b'u' {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        } else {
            out.push('\\');
            out.push(char::from(escape));
        }
    }
    out.push_str(&s[start..]);
}

/// How each byte is escaped: 0 = as is; `u` = `\u00XX`; anything else = `\` + it.
/// Control characters as serde_json writes them, plus the backtick (SPEC §6.4), so no
/// payload text can close the ```` ```json ```` fence the excerpt is pasted in.
static ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = b'u';
        b += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table[b'`' as usize] = b'u';
    table
};

/// The characters an escape adds over the byte it replaces.
static EXTRA: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = match ESCAPE[b] {
            0 => 0,
            b'u' => 5,
            _ => 1,
        };
        b += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(s: &str) -> String {
        let mut out = String::new();
        out.string(s);
        out
    }

    #[test]
    fn prefix_counts_scalar_values_not_bytes() {
        assert_eq!(prefix("abc", 3), None);
        assert_eq!(prefix("abcd", 3), Some("abc"));
        assert_eq!(prefix("héllo", 2), Some("hé"));
        assert_eq!(prefix("日本語", 3), None, "9 bytes, 3 characters");
        assert_eq!(prefix("日本語x", 3), Some("日本語"));
        assert_eq!(prefix("😀😀", 1), Some("😀"));
        assert_eq!(prefix("abc", 0), Some(""));
        assert_eq!(prefix("", 0), None);
    }

    #[test]
    fn escapes_match_serde_json_except_the_backtick() {
        let all: String = (0u8..0x80).map(char::from).chain(['é', '😀']).collect();
        let ours = rendered(&all);
        let theirs = serde_json::to_string(&all).unwrap().replace('`', "\\u0060");
        assert_eq!(ours, theirs);
        assert!(!ours.contains('`'));
    }

    #[test]
    fn counter_agrees_with_the_string_sink() {
        for s in [
            "",
            "plain",
            "a`b`",
            "tab\there\nnl \"q\" \\",
            "\u{1}\u{1f}é😀",
        ] {
            let mut counter = Counter::default();
            counter.string_with_suffix(s, TRUNCATED);
            let mut out = String::new();
            out.string_with_suffix(s, TRUNCATED);
            assert_eq!(counter.bytes, out.len(), "{s:?}");
            assert_eq!(counter.chars, out.chars().count(), "{s:?}");
        }
    }
}
