//! Small text helpers every pane uses: display widths, truncation with `…`, relative
//! times, and cleaning text that came from outside (GitHub, agents, critics) so it cannot
//! drive the operator's terminal.

use crate::work_item::{DEFAULT_HOST, WorkItemRef};
use std::borrow::Cow;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

pub const ELLIPSIS: char = '…';

/// Columns `s` takes on screen.
pub fn width(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

/// `s` cut to at most `max` columns, ending in `…` when something was cut.
pub fn truncate(s: &str, max: usize) -> Cow<'_, str> {
    if width(s) <= max {
        return Cow::Borrowed(s);
    }
    if max == 0 {
        return Cow::Borrowed("");
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > max - 1 {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push(ELLIPSIS);
    Cow::Owned(out)
}

/// `s` truncated to `w` columns and padded with spaces to exactly `w`.
pub fn fit(s: &str, w: usize) -> String {
    let t = truncate(s, w);
    let pad = w.saturating_sub(width(&t));
    let mut out = t.into_owned();
    out.extend(std::iter::repeat_n(' ', pad));
    out
}

/// Like [`fit`] but right-aligned.
pub fn fit_right(s: &str, w: usize) -> String {
    let t = truncate(s, w);
    let pad = w.saturating_sub(width(&t));
    let mut out: String = std::iter::repeat_n(' ', pad).collect();
    out.push_str(&t);
    out
}

/// Cuts a ref in the middle so the `#N` that tells items apart always survives:
/// `some-org/a-very-long-repo#1234` → `some-org/a-ve…#1234`.
pub fn truncate_ref(s: &str, max: usize) -> Cow<'_, str> {
    if width(s) <= max {
        return Cow::Borrowed(s);
    }
    match s.rfind('#') {
        Some(i) if width(&s[i..]) + 2 <= max => {
            let suffix = &s[i..];
            let head = truncate(&s[..i], max - width(suffix));
            Cow::Owned(format!("{head}{suffix}"))
        }
        _ => truncate(s, max),
    }
}

/// `1 comment`, `3 comments`: a count with its noun (plural with `s`).
pub fn counted<N: std::fmt::Display + PartialEq + From<u8>>(n: N, noun: &str) -> String {
    let s = if n == N::from(1) { "" } else { "s" };
    format!("{n} {noun}{s}")
}

/// A ref as the operator reads it: `owner/repo#N` (the host only off github.com).
pub fn short_ref(r: &WorkItemRef) -> String {
    if r.host == DEFAULT_HOST {
        format!("{}/{}#{}", r.owner, r.repo, r.number)
    } else {
        format!("{}/{}/{}#{}", r.host, r.owner, r.repo, r.number)
    }
}

/// A ref in dense rows: `#N` when only one repository is supervised, else `repo#N`.
pub fn tiny_ref(r: &WorkItemRef, single_repo: bool) -> String {
    if single_repo {
        format!("#{}", r.number)
    } else {
        format!("{}#{}", r.repo, r.number)
    }
}

/// Seconds as a short age: `12s`, `3m`, `2h`, `5d`. Coarse on purpose: the label only
/// changes when the meaning does, so a clock tick rarely forces a redraw.
pub fn age(secs: i64) -> String {
    let s = secs.max(0);
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86_400 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

/// Elapsed time as a clock: `0:41`, `12:05`, `1:02:03`.
pub fn clock(secs: f64) -> String {
    let s = if secs.is_finite() && secs > 0.0 {
        secs as u64
    } else {
        0
    };
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, (s % 3600) / 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

/// A cost in dollars: `$0.04`, `$0`, `$12.50`.
pub fn cost(usd: f64) -> String {
    if !usd.is_finite() || usd <= 0.0 {
        "$0".into()
    } else if usd < 0.005 {
        "<$0.01".into()
    } else {
        format!("${usd:.2}")
    }
}

/// Text from outside made safe and flat for one screen line: control characters
/// (C0, DEL, C1, which could move the cursor or start an escape sequence) are dropped,
/// tabs and newlines become spaces.
pub fn clean_line(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c.is_control()) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(
        s.chars()
            .filter_map(|c| match c {
                '\t' | '\n' | '\r' => Some(' '),
                c if c.is_control() => None,
                c => Some(c),
            })
            .collect(),
    )
}

/// Like [`clean_line`] but keeps line breaks (critic output, questions shown whole):
/// `\r\n` and `\r` become `\n`, tabs become four spaces.
pub fn clean_block(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                out.push('\n');
            }
            '\n' => out.push('\n'),
            '\t' => out.push_str("    "),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// Greedy word wrap to `w` columns; words longer than a line are cut. Always returns at
/// least one (possibly empty) line.
pub fn wrap(s: &str, w: usize) -> Vec<String> {
    let w = w.max(1);
    let mut lines = Vec::new();
    for para in s.split('\n') {
        let mut line = String::new();
        let mut used = 0;
        for word in para.split(' ').filter(|p| !p.is_empty()) {
            let ww = width(word);
            if used > 0 && used + 1 + ww > w {
                lines.push(std::mem::take(&mut line));
                used = 0;
            }
            if ww > w {
                // A word longer than the line: hard-cut it across lines.
                for c in word.chars() {
                    let cw = c.width().unwrap_or(0);
                    if used + cw > w {
                        lines.push(std::mem::take(&mut line));
                        used = 0;
                    }
                    line.push(c);
                    used += cw;
                }
                continue;
            }
            if used > 0 {
                line.push(' ');
                used += 1;
            }
            line.push_str(word);
            used += ww;
        }
        lines.push(line);
    }
    if lines.is_empty() {
        lines.push(String::new());
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncates_by_columns_with_an_ellipsis() {
        assert_eq!(truncate("hello", 5), "hello");
        assert_eq!(truncate("hello", 4), "hel…");
        assert_eq!(truncate("hello", 1), "…");
        assert_eq!(truncate("hello", 0), "");
        // Wide characters count two columns and are never split.
        assert_eq!(truncate("日本語です", 5), "日本…");
        assert_eq!(width(&truncate("日本語です", 4)), 3);
    }

    #[test]
    fn fit_pads_to_the_exact_width() {
        assert_eq!(fit("ab", 4), "ab  ");
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit_right("ab", 4), "  ab");
        assert_eq!(width(&fit("日本語", 4)), 4);
    }

    #[test]
    fn refs_keep_their_number_when_cut() {
        assert_eq!(truncate_ref("octo/repo#15", 20), "octo/repo#15");
        assert_eq!(
            truncate_ref("some-org/a-very-long-repo#1234", 16),
            "some-org/a…#1234"
        );
        assert_eq!(
            width(&truncate_ref("some-org/a-very-long-repo#1234", 16)),
            16
        );
        // Too narrow to keep the suffix: plain truncation.
        assert_eq!(truncate_ref("o/r#123456", 5), "o/r#…");
    }

    #[test]
    fn short_refs_omit_the_default_host() {
        let r = WorkItemRef::new("octo", "repo", 15);
        assert_eq!(short_ref(&r), "octo/repo#15");
        assert_eq!(tiny_ref(&r, true), "#15");
        assert_eq!(tiny_ref(&r, false), "repo#15");
        let ghe = WorkItemRef::on_host("ghe.example.com", "octo", "repo", 2);
        assert_eq!(short_ref(&ghe), "ghe.example.com/octo/repo#2");
    }

    #[test]
    fn ages_and_clocks() {
        assert_eq!(age(-3), "0s");
        assert_eq!(age(59), "59s");
        assert_eq!(age(60), "1m");
        assert_eq!(age(3599), "59m");
        assert_eq!(age(7200), "2h");
        assert_eq!(age(3 * 86_400), "3d");
        assert_eq!(clock(41.7), "0:41");
        assert_eq!(clock(725.0), "12:05");
        assert_eq!(clock(3723.0), "1:02:03");
        assert_eq!(clock(f64::NAN), "0:00");
        assert_eq!(cost(0.0), "$0");
        assert_eq!(cost(0.041), "$0.04");
        assert_eq!(cost(0.001), "<$0.01");
    }

    #[test]
    fn cleaning_removes_every_control_character() {
        let evil = "a\u{1b}[31mb\u{7}c\u{9b}d\u{7f}e\tf\ng";
        assert_eq!(clean_line(evil), "a[31mbcde f g");
        assert_eq!(clean_block(evil), "a[31mbcde    f\ng");
        assert_eq!(clean_block("x\r\ny\rz"), "x\ny\nz");
        assert!(matches!(clean_line("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn wraps_words_and_cuts_long_ones() {
        assert_eq!(
            wrap("Should the retry cap be per repo or global?", 14),
            ["Should the", "retry cap be", "per repo or", "global?"]
        );
        assert_eq!(wrap("abcdefgh", 3), ["abc", "def", "gh"]);
        assert_eq!(wrap("", 10), [""]);
        assert_eq!(wrap("a\n\nb", 10), ["a", "", "b"]);
        for line in wrap("日本語のテキストをここで折り返す", 7) {
            assert!(width(&line) <= 7, "{line}");
        }
    }
}
