//! Control keywords (SPEC §5.4): a comment such as `the-loop start` is a command for the
//! supervisor, never a prompt for the agent.

use crate::config::Keywords;
use crate::events::EventType;

/// What a control comment asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ControlCommand {
    /// Spawn a session for the item.
    Start,
    /// End the item's session.
    Stop,
    /// Stop delivering events to the session (it keeps running).
    Pause,
    /// Deliver events again.
    Resume,
}

impl ControlCommand {
    pub const ALL: [ControlCommand; 4] = [Self::Start, Self::Stop, Self::Pause, Self::Resume];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Start => "start",
            Self::Stop => "stop",
            Self::Pause => "pause",
            Self::Resume => "resume",
        }
    }

    /// The `control.*` event the caller logs when it acts on the command.
    pub fn event_type(self) -> EventType {
        match self {
            Self::Start => EventType::ControlStart,
            Self::Stop => EventType::ControlStop,
            Self::Pause => EventType::ControlPause,
            Self::Resume => EventType::ControlResume,
        }
    }
}

/// The control keywords found in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControlMatch {
    /// No keyword: an ordinary comment.
    None,
    /// Exactly one keyword (possibly written more than once).
    Command(ControlCommand),
    /// Two or more different keywords: ignored (`control.ambiguous`), never forwarded.
    Ambiguous(Vec<ControlCommand>),
}

/// The configured keywords, lowercased once so matching a comment costs one pass per
/// keyword.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlKeywords {
    /// `(command, lowercased keyword)`; blank keywords are left out (they would match
    /// every comment).
    entries: Vec<(ControlCommand, String)>,
}

impl ControlKeywords {
    pub fn new(keywords: &Keywords) -> Self {
        let entries = ControlCommand::ALL
            .into_iter()
            .zip([
                &keywords.start,
                &keywords.stop,
                &keywords.pause,
                &keywords.resume,
            ])
            .map(|(command, keyword)| (command, keyword.trim().to_lowercase()))
            .filter(|(_, keyword)| !keyword.is_empty())
            .collect();
        Self { entries }
    }

    /// Finds the keywords in `text`, case-insensitively. A keyword counts only as a whole
    /// word (`xthe-loop start` and `the-loop startx` are not commands), and only in the
    /// comment's own prose (SPEC §14.3): not in a quoted line (`> the-loop stop` quotes
    /// someone), inline code or a fenced code block (both show a command, not give it),
    /// and not in text GitHub shows no one (an HTML comment, SPEC §18.4): a command
    /// nobody saw is not given.
    pub fn find(&self, text: &str) -> ControlMatch {
        if self.entries.is_empty() || text.is_empty() {
            return ControlMatch::None;
        }
        // Quotes and code first: `<!--` inside code is literal text, not a comment.
        let prose = prose(text);
        let lowered = crate::hidden_text::strip_markdown(&prose)
            .text
            .to_lowercase();
        let mut found: Vec<ControlCommand> = Vec::new();
        for (command, keyword) in &self.entries {
            if !found.contains(command) && contains_bounded(&lowered, keyword) {
                found.push(*command);
            }
        }
        match found.as_slice() {
            [] => ControlMatch::None,
            [one] => ControlMatch::Command(*one),
            _ => ControlMatch::Ambiguous(found),
        }
    }
}

/// `text` with quoted lines, fenced code blocks and inline code spans blanked out, as
/// Markdown (CommonMark) reads them: a quote is a line whose first non-blank character
/// (after at most three spaces) is `>`; a fence opens with three or more backticks or
/// tildes and closes with at least as many of the same (or at the end of the text); a
/// code span opens with a run of backticks and closes with a run of the same length (an
/// unmatched run is literal). Blanked text becomes spaces and line breaks stay, so
/// nothing on either side of it is joined into a keyword.
pub fn prose(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fence: Option<(char, usize)> = None;
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let indent = line.len() - line.trim_start_matches(' ').len();
        let rest = &line[indent..];
        let marker = (indent <= 3).then(|| fence_marker(rest)).flatten();
        match (fence, marker) {
            (Some((c, n)), Some((mc, mn))) if c == mc && mn >= n && is_closing(rest, mc) => {
                fence = None;
                continue;
            }
            (Some(_), _) => continue,
            (None, Some(open)) => {
                fence = Some(open);
                continue;
            }
            (None, None) => {}
        }
        if indent <= 3 && rest.starts_with('>') {
            continue;
        }
        strip_code_spans(line, &mut out);
    }
    out
}

/// The fence a line opens (`(char, length)`), if it starts with one.
fn fence_marker(line: &str) -> Option<(char, usize)> {
    let c = line.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let n = line.chars().take_while(|&x| x == c).count();
    // An info string after backticks may not contain a backtick (CommonMark).
    let info = &line[n..];
    (n >= 3 && !(c == '`' && info.contains('`'))).then_some((c, n))
}

/// A closing fence carries nothing but blanks after its run.
fn is_closing(line: &str, c: char) -> bool {
    line.trim_start_matches(c).trim().is_empty()
}

/// Appends `line` with each code span's content (and its backticks) turned to spaces.
fn strip_code_spans(line: &str, out: &mut String) {
    let bytes = line.as_bytes();
    let run_at = |at: usize| bytes[at..].iter().take_while(|&&b| b == b'`').count();
    let mut copied = 0;
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] != b'`' {
            at += 1;
            continue;
        }
        let open = run_at(at);
        let body = at + open;
        // The next run of exactly `open` backticks closes the span.
        let mut scan = body;
        let mut close = None;
        while scan < bytes.len() {
            if bytes[scan] == b'`' {
                let run = run_at(scan);
                if run == open {
                    close = Some(scan);
                    break;
                }
                scan += run;
            } else {
                scan += 1;
            }
        }
        match close {
            Some(end) => {
                out.push_str(&line[copied..at]);
                let blanked = line[at..end + open].chars().count();
                out.extend(std::iter::repeat_n(' ', blanked));
                at = end + open;
                copied = at;
            }
            None => at = body, // a literal run of backticks
        }
    }
    out.push_str(&line[copied..]);
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// True iff `needle` occurs in `haystack` with no word character glued to either end.
/// The boundary is only required where the keyword itself starts or ends with a word
/// character (a keyword like `/loop start` may follow anything).
fn contains_bounded(haystack: &str, needle: &str) -> bool {
    let needs_left = needle.chars().next().is_some_and(is_word_char);
    let needs_right = needle.chars().next_back().is_some_and(is_word_char);
    haystack.match_indices(needle).any(|(at, _)| {
        let before = haystack[..at].chars().next_back();
        let after = haystack[at + needle.len()..].chars().next();
        let glued_left = needs_left && before.is_some_and(is_word_char);
        let glued_right = needs_right && after.is_some_and(is_word_char);
        !glued_left && !glued_right
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ControlCommand::*;

    fn defaults() -> ControlKeywords {
        ControlKeywords::new(&Keywords::default())
    }

    #[test]
    fn one_keyword_is_a_command() {
        let cases = [
            ("the-loop start", Start),
            ("the-loop stop", Stop),
            ("the-loop pause", Pause),
            ("the-loop resume", Resume),
            ("The-Loop START", Start),
            ("please, the-loop pause.", Pause),
            ("(the-loop stop)", Stop),
            ("line one\nthe-loop start\nline three", Start),
            ("the-loop start the-loop start", Start),
            ("THE-LOOP START and again the-loop start", Start),
            ("xthe-loop start but then the-loop start", Start),
            ("-the-loop stop", Stop),
        ];
        for (text, expected) in cases {
            assert_eq!(
                defaults().find(text),
                ControlMatch::Command(expected),
                "{text:?}"
            );
        }
    }

    #[test]
    fn keywords_are_bounded() {
        for text in [
            "",
            "just a comment",
            "xthe-loop start",
            "the-loop startx",
            "the-loop started",
            "the-loop start_",
            "_the-loop start",
            "9the-loop stop",
            "the-loop stop2",
            "the-loop  start",
            "the-loop\nstart",
            "the loop start",
            "the-loop",
            "éthe-loop start",
        ] {
            assert_eq!(defaults().find(text), ControlMatch::None, "{text:?}");
        }
    }

    #[test]
    fn quotes_and_code_are_not_commands() {
        for text in [
            "> the-loop stop",
            "  > the-loop stop\nI agree with the above",
            ">> the-loop pause",
            "`the-loop resume`",
            "run ``the-loop stop`` to end it",
            "```\nthe-loop stop\n```",
            "~~~sh\nthe-loop start\n~~~",
            "```\nunclosed fence\nthe-loop stop",
            "````\n```\nthe-loop stop\n```\nstill code\n````",
            "the-loop `` start",
        ] {
            assert_eq!(defaults().find(text), ControlMatch::None, "{text:?}");
        }
        for (text, expected) in [
            ("> the-loop stop\n\nthe-loop pause", Pause),
            ("```\nthe-loop stop\n```\nthe-loop start", Start),
            ("`code` then the-loop resume", Resume),
            ("an unmatched ` backtick, the-loop stop", Stop),
            ("a >the-loop stop in the middle", Stop),
            ("``` inline `x` the-loop stop", Stop),
        ] {
            assert_eq!(
                defaults().find(text),
                ControlMatch::Command(expected),
                "{text:?}"
            );
        }
        assert_eq!(prose("a `b` c\n> q\nd"), "a     c\n\nd");
    }

    #[test]
    fn a_command_nobody_sees_is_not_given() {
        let k = defaults();
        for text in [
            "<!-- the-loop stop -->",
            "looks good <!--\nthe-loop stop\n-->",
            "fine <!-- the-loop stop",
        ] {
            assert_eq!(k.find(text), ControlMatch::None, "{text:?}");
        }
        assert_eq!(
            k.find("<!-- note --> the-loop stop"),
            ControlMatch::Command(ControlCommand::Stop)
        );
    }

    #[test]
    fn different_keywords_are_ambiguous() {
        assert_eq!(
            defaults().find("the-loop start, no wait, the-loop stop"),
            ControlMatch::Ambiguous(vec![Start, Stop])
        );
        assert_eq!(
            defaults().find("the-loop resume the-loop pause the-loop pause"),
            ControlMatch::Ambiguous(vec![Pause, Resume])
        );
        // A bounded keyword next to an unbounded one: only the bounded one counts.
        assert_eq!(
            defaults().find("the-loop start and xthe-loop stop"),
            ControlMatch::Command(Start)
        );
    }

    #[test]
    fn custom_and_blank_keywords() {
        let keywords = ControlKeywords::new(&Keywords {
            start: "/Loop Go".into(),
            stop: "  ".into(),
            pause: "".into(),
            resume: "Weiter".into(),
        });
        assert_eq!(keywords.find("x/loop go"), ControlMatch::Command(Start));
        assert_eq!(keywords.find("/loop gone"), ControlMatch::None);
        assert_eq!(keywords.find("WEITER bitte"), ControlMatch::Command(Resume));
        assert_eq!(keywords.find("weitergehen"), ControlMatch::None);
        assert_eq!(keywords.find("anything at all"), ControlMatch::None);
        let none = ControlKeywords::new(&Keywords {
            start: String::new(),
            stop: String::new(),
            pause: String::new(),
            resume: String::new(),
        });
        assert_eq!(none.find("the-loop start"), ControlMatch::None);
    }

    #[test]
    fn commands_name_their_events() {
        for command in ControlCommand::ALL {
            assert_eq!(
                command.event_type().as_str(),
                format!("control.{}", command.as_str())
            );
        }
    }
}
