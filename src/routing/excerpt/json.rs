//! The JSON writing under the excerpt: one layout routine drives two sinks, a counter
//! (to size an excerpt without building it) and a `String` (to build it once), so the
//! measured size and the rendered text cannot disagree.

use super::{TEXT_CAP, TRUNCATED};
use std::borrow::Cow;
use std::fmt::Write as _;

/// A leaf value, borrowed from the payload (text owned only when hidden text was taken
/// out of it).
pub(super) enum Scalar<'a> {
    Prose(Cow<'a, str>),
    Text(Cow<'a, str>),
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
    let bytes = text.as_bytes();
    if bytes[..cap].is_ascii() {
        // Byte `cap` starts a character because the byte before it is one whole.
        return Some(&text[..cap]);
    }
    // Count character starts a word at a time while a whole word cannot overshoot the
    // cap, then byte by byte to the cut.
    let mut left = cap;
    let mut at = 0;
    for chunk in bytes.chunks_exact(8) {
        if left < 8 {
            break;
        }
        left -= char_starts(word(chunk));
        at += 8;
    }
    for (i, &b) in bytes.iter().enumerate().skip(at) {
        if (b as i8) >= -0x40 {
            if left == 0 {
                return Some(&text[..i]);
            }
            left -= 1;
        }
    }
    None
}

// Word-at-a-time scanning (eight bytes in a `u64`): most text needs no escape at all,
// so whole words are skipped with a few arithmetic operations instead of eight lookups.
const LOW: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

fn word(chunk: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(chunk);
    u64::from_le_bytes(bytes)
}

/// How many of the word's bytes start a character (are not `10xxxxxx`).
fn char_starts(w: u64) -> usize {
    8 - (w & !(w << 1) & HIGH).count_ones() as usize
}

/// Whether any byte of the word may start an escape: a control character, `"`, `\`, a
/// backtick, or the lead byte of a C1 control (`0xC2`) or of U+2028/U+2029 (`0xE2`).
/// (`x - LOW & !x & HIGH` is non-zero iff some byte of `x` is zero.)
fn needs_escape(w: u64) -> bool {
    let zero_if = |v: u8| w ^ (LOW * u64::from(v));
    let has_zero = |x: u64| x.wrapping_sub(LOW) & !x;
    let control = w.wrapping_sub(LOW * 0x20) & !w;
    let hits = control
        | has_zero(zero_if(b'"'))
        | has_zero(zero_if(b'\\'))
        | has_zero(zero_if(b'`'))
        | has_zero(zero_if(0xC2))
        | has_zero(zero_if(0xE2));
    hits & HIGH != 0
}

/// The 8-byte chunks of `bytes` that may hold an escape's first byte, with their offsets.
fn suspect_chunks(bytes: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    bytes
        .chunks(8)
        .enumerate()
        .filter(|(_, chunk)| chunk.len() < 8 || needs_escape(word(chunk)))
        .map(|(k, chunk)| (8 * k, chunk))
}

/// Every escape in `s`, in order: its byte offset, how many bytes it replaces, and what
/// is written instead.
fn escapes(s: &str) -> impl Iterator<Item = (usize, usize, &'static str)> + '_ {
    let bytes = s.as_bytes();
    suspect_chunks(bytes).flat_map(move |(offset, chunk)| {
        (offset..offset + chunk.len())
            .filter_map(move |i| escape_at(bytes, i).map(|(len, escape)| (i, len, escape)))
    })
}

/// The escape starting at byte `i`, if one does: `(bytes replaced, escape)`. A C1
/// control (U+0080–U+009F) and U+2028/U+2029 are written as `\uXXXX` (SPEC §14.6): a
/// terminal may act on the one, and a JavaScript-minded reader breaks lines at the others.
fn escape_at(bytes: &[u8], i: usize) -> Option<(usize, &'static str)> {
    let b = *bytes.get(i)?;
    if let Some(escape) = escape_for(b) {
        return Some((1, escape));
    }
    match (b, bytes.get(i + 1), bytes.get(i + 2)) {
        (0xC2, Some(&next @ 0x80..=0x9F), _) => Some((2, C1[usize::from(next - 0x80)])),
        (0xE2, Some(0x80), Some(0xA8)) => Some((3, "\\u2028")),
        (0xE2, Some(0x80), Some(0xA9)) => Some((3, "\\u2029")),
        _ => None,
    }
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
        self.chars += s.chars().count();
        self.bytes += s.len();
        // An escape replaces one character (of `len` bytes) with its ASCII spelling.
        for (_, len, escape) in escapes(s) {
            self.chars += escape.len() - 1;
            self.bytes += escape.len() - len;
        }
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
    let mut start = 0;
    for (i, len, escape) in escapes(s) {
        // Every escape starts and ends on a char boundary, so `start..i` does too.
        if start < i {
            out.push_str(&s[start..i]);
        }
        // Char by char: cheaper than a `memcpy` call for two to six bytes.
        escape.bytes().for_each(|c| out.push(char::from(c)));
        start = i + len;
    }
    out.push_str(&s[start..]);
}

/// How a byte is written inside a JSON string, when not as itself: control characters
/// as serde_json writes them, plus the backtick (SPEC §6.4), so no payload text can close
/// the ```` ```json ```` fence the excerpt is pasted in.
const fn escape_for(b: u8) -> Option<&'static str> {
    match b {
        0..0x20 => Some(CONTROL[b as usize]),
        b'"' => Some("\\\""),
        b'\\' => Some("\\\\"),
        b'`' => Some("\\u0060"),
        _ => None,
    }
}

#[rustfmt::skip]
const CONTROL: [&str; 32] = [
    "\\u0000", "\\u0001", "\\u0002", "\\u0003", "\\u0004", "\\u0005", "\\u0006", "\\u0007",
    "\\b", "\\t", "\\n", "\\u000b", "\\f", "\\r", "\\u000e", "\\u000f",
    "\\u0010", "\\u0011", "\\u0012", "\\u0013", "\\u0014", "\\u0015", "\\u0016", "\\u0017",
    "\\u0018", "\\u0019", "\\u001a", "\\u001b", "\\u001c", "\\u001d", "\\u001e", "\\u001f",
];

#[rustfmt::skip]
const C1: [&str; 32] = [
    "\\u0080", "\\u0081", "\\u0082", "\\u0083", "\\u0084", "\\u0085", "\\u0086", "\\u0087",
    "\\u0088", "\\u0089", "\\u008a", "\\u008b", "\\u008c", "\\u008d", "\\u008e", "\\u008f",
    "\\u0090", "\\u0091", "\\u0092", "\\u0093", "\\u0094", "\\u0095", "\\u0096", "\\u0097",
    "\\u0098", "\\u0099", "\\u009a", "\\u009b", "\\u009c", "\\u009d", "\\u009e", "\\u009f",
];

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
    fn c1_controls_and_line_separators_are_escaped() {
        let text = "a\u{80}b\u{9f}c\u{2028}d\u{2029}e\u{a0}\u{2027}\u{202a}—’©";
        let ours = rendered(text);
        assert_eq!(
            ours,
            "\"a\\u0080b\\u009fc\\u2028d\\u2029e\u{a0}\u{2027}\u{202a}—’©\""
        );
        assert_eq!(serde_json::from_str::<String>(&ours).unwrap(), text);
        // Straddling the 8-byte words the scan reads.
        for pad in 0..9 {
            let text = format!("{}\u{85}x\u{2028}", "p".repeat(pad));
            let ours = rendered(&text);
            assert!(!ours.contains(['\u{85}', '\u{2028}']), "{pad}: {ours}");
            assert_eq!(serde_json::from_str::<String>(&ours).unwrap(), text);
        }
    }

    #[test]
    fn word_scan_flags_exactly_the_escaped_bytes() {
        for b in 0..=255u8 {
            for at in 0..8 {
                let mut bytes = *b"abcdefgh";
                bytes[at] = b;
                let suspect = escape_for(b).is_some() || b == 0xC2 || b == 0xE2;
                assert_eq!(needs_escape(word(&bytes)), suspect, "byte {b:#x} at {at}");
            }
        }
        let suspects: Vec<usize> = suspect_chunks(b"abcdefgh`bcdefghabcdefghabc")
            .map(|(offset, _)| offset)
            .collect();
        assert_eq!(
            suspects,
            [8, 24],
            "the chunk with the backtick and the short tail"
        );
    }

    #[test]
    fn char_starts_skips_continuation_bytes() {
        assert_eq!(char_starts(word("abcdefgh".as_bytes())), 8);
        assert_eq!(char_starts(word("é日本".as_bytes())), 3);
        assert_eq!(char_starts(word("😀😀".as_bytes())), 2);
    }

    #[test]
    fn prefix_is_exact_across_block_boundaries() {
        let text: String = "aé😀日".repeat(100);
        for cap in [0, 1, 63, 64, 65, 127, 128, 129, 250, 399] {
            let expected: String = text.chars().take(cap).collect();
            assert_eq!(prefix(&text, cap), Some(expected.as_str()), "cap {cap}");
        }
        assert_eq!(prefix(&text, 400), None, "exactly 400 characters");
        assert_eq!(prefix(&text, 10_000), None);
    }

    #[test]
    fn counter_agrees_with_the_string_sink() {
        for s in [
            "",
            "plain",
            "a`b`",
            "tab\there\nnl \"q\" \\",
            "\u{1}\u{1f}é😀",
            "c1 \u{85}\u{9b} sep \u{2028}\u{2029} — ’ ©",
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
