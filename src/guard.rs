//! The guards that run before anything is pasted (SPEC §3): the self-comment marker,
//! the authorized-actor allowlist, and the text sanitizer every pane input passes
//! through (SPEC §14.6, §18.4). Pure functions.

use crate::hidden_text::{self, Stripped};
use serde_json::Value;
use std::borrow::Cow;

/// The hidden marker every comment the tool composes carries. It never changes.
pub const MARKER: &str = "<!-- the-loop:agent-comment -->";

/// The short visible line placed above the marker.
pub const ATTRIBUTION: &str = "🤖 _posted by the-loop_";

/// True iff `body` contains the marker (exact, case-sensitive, anywhere).
pub fn is_self_authored(body: Option<&str>) -> bool {
    body.is_some_and(|b| b.contains(MARKER))
}

/// Stamps a comment the tool composed: attribution line, then the marker last, and
/// exactly once. Any marker already inside the text (an agent's question, an
/// operator's reply or a critic's output quoting it) is removed first, so no body can
/// smuggle in a second or misplaced one; callers pass their text as it is.
/// Idempotent: a body this function stamped already comes back unchanged.
pub fn mark_self_authored(body: &str) -> String {
    let body = body.trim_end();
    let tail = format!("{ATTRIBUTION}\n{MARKER}");
    let body = body.strip_suffix(tail.as_str()).unwrap_or(body);
    format!("{}\n\n{tail}\n", without_markers(body).trim_end())
}

/// `text` with every [`MARKER`] removed, including one that only forms once an inner
/// one is gone (`<!-- the-loop:<!-- the-loop:agent-comment -->agent-comment -->`). One
/// pass: the output never holds the marker, so a new one can only end at the last
/// character pushed.
fn without_markers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        out.push(c);
        if c == '>' && out.ends_with(MARKER) {
            out.truncate(out.len() - MARKER.len());
        }
    }
    out
}

/// The GitHub logins allowed to steer an agent (`routing.authorizedUsers`), the only
/// source of trust. Logins compare ASCII-case-insensitively (GitHub logins are ASCII and
/// case-insensitive), exactly otherwise: no wildcards, no prefixes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowlist {
    /// Normalized entries: trimmed, one leading `@` removed, never empty.
    logins: Vec<String>,
}

impl Allowlist {
    /// Builds the allowlist from config entries. A leading `@` is ignored (people write
    /// `@alice`); blank entries are skipped so they can never match a missing login.
    pub fn new(users: &[String]) -> Self {
        let mut logins: Vec<String> = Vec::with_capacity(users.len());
        for user in users {
            let login = user.trim();
            let login = login.strip_prefix('@').unwrap_or(login).trim();
            if !login.is_empty() && !logins.iter().any(|l| l.eq_ignore_ascii_case(login)) {
                logins.push(login.to_string());
            }
        }
        Self { logins }
    }

    /// An empty allowlist refuses every human-authored event (fail closed); the supervisor
    /// warns about it at startup and in the status bar.
    pub fn is_empty(&self) -> bool {
        self.logins.is_empty()
    }

    /// True iff `login` is on the list. The login from a payload is taken as is: only
    /// config entries get the `@` convenience.
    pub fn allows(&self, login: &str) -> bool {
        !login.is_empty() && self.logins.iter().any(|l| l.eq_ignore_ascii_case(login))
    }

    /// The actor gate (SPEC §3.2): CI events pass, a known human must be on the list,
    /// an unidentifiable human is refused.
    pub fn check<'a>(&self, actor: Actor<'a>) -> ActorCheck<'a> {
        match actor {
            Actor::Ci => ActorCheck::Ci,
            Actor::Unknown => ActorCheck::Unknown,
            Actor::Human(login) if self.allows(login) => ActorCheck::Authorized(login),
            Actor::Human(login) => ActorCheck::Unauthorized(login),
        }
    }
}

/// Who performed the action an event describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Actor<'a> {
    /// A GitHub login.
    Human(&'a str),
    /// A CI event (`workflow_run`, `check_run`, `check_suite`, `status`): no human acted.
    Ci,
    /// A human-authored event whose author could not be identified.
    Unknown,
}

impl<'a> Actor<'a> {
    /// The login, when a human is known.
    pub fn login(self) -> Option<&'a str> {
        match self {
            Actor::Human(login) => Some(login),
            Actor::Ci | Actor::Unknown => None,
        }
    }
}

/// The verdict of the actor gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActorCheck<'a> {
    Authorized(&'a str),
    /// CI events carry no human actor and are allowed.
    Ci,
    Unauthorized(&'a str),
    Unknown,
}

/// CI events carry no human actor (SPEC §3.2).
pub fn is_ci_event(gh_event: &str) -> bool {
    matches!(
        gh_event,
        "workflow_run" | "check_run" | "check_suite" | "status"
    )
}

/// Who performed the action (SPEC §3.2): the comment's author for comments, the review's
/// author for reviews, nobody for CI events, and the `sender` for everything else
/// (`issues`/`pull_request` lifecycle events). A missing, empty or non-string login is
/// [`Actor::Unknown`]: for a comment the `sender` is not a stand-in for its author.
pub fn actor_of<'a>(gh_event: &str, payload: &'a Value) -> Actor<'a> {
    let login = match gh_event {
        _ if is_ci_event(gh_event) => return Actor::Ci,
        "issue_comment" | "pull_request_review_comment" => &payload["comment"]["user"]["login"],
        "pull_request_review" => &payload["review"]["user"]["login"],
        _ => &payload["sender"]["login"],
    };
    match login.as_str() {
        Some(login) if !login.trim().is_empty() => Actor::Human(login),
        _ => Actor::Unknown,
    }
}

/// Removes ESC and every other C0 control except `\n` and `\t` (so `\r` too), DEL, and
/// the C1 range U+0080–U+009F. No bracketed-paste terminator (`ESC[201~`) or other
/// terminal escape can then survive inside the text. DEL goes too: outside a paste a
/// terminal reads it as backspace.
///
/// The Unicode line and paragraph separators (U+2028, U+2029) become `\n` (SPEC §14.6):
/// some terminals and TUIs treat them as line breaks, so they are written as the one
/// line break the agent's input box is known to take inside a paste.
///
/// Then the characters no one sees go (SPEC §18.4, [`hidden_text::strip_hidden`]): what
/// the agent reads is what the person who wrote or approved the text saw. Controls go
/// first, so a selector or joiner is judged by the characters that reach the pane.
///
/// Every text that reaches a pane goes through here: pastes (events, replies, notes),
/// and the boot and respawn prompts handed to a harness as argv.
pub fn sanitize(text: &str) -> Cow<'_, str> {
    let controls_gone = Stripped {
        text: without_controls(text),
        removed: 0,
    };
    controls_gone.then(hidden_text::strip_hidden).text
}

fn without_controls(text: &str) -> Cow<'_, str> {
    let touched = |c: char| (c.is_control() && c != '\n' && c != '\t') || is_separator(c);
    if text.chars().any(touched) {
        Cow::Owned(
            text.chars()
                .filter_map(|c| match c {
                    _ if is_separator(c) => Some('\n'),
                    _ if touched(c) => None,
                    _ => Some(c),
                })
                .collect(),
        )
    } else {
        Cow::Borrowed(text)
    }
}

fn is_separator(c: char) -> bool {
    matches!(c, '\u{2028}' | '\u{2029}')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn marker_detection_is_exact_and_case_sensitive() {
        let cases: &[(Option<&str>, bool)] = &[
            (None, false),
            (Some(""), false),
            (Some("plain comment"), false),
            (Some(MARKER), true),
            (Some("text\n<!-- the-loop:agent-comment -->\n"), true),
            (Some("<!-- the-loop:agent-comment -->at the start"), true),
            (Some("in the <!-- the-loop:agent-comment --> middle"), true),
            (Some("<!-- THE-LOOP:AGENT-COMMENT -->"), false),
            (Some("<!-- the-loop:agent-comment-->"), false),
            (Some("<!--the-loop:agent-comment -->"), false),
            (Some("the-loop:agent-comment"), false),
        ];
        for (body, expected) in cases {
            assert_eq!(is_self_authored(*body), *expected, "{body:?}");
        }
    }

    #[test]
    fn stamping_adds_attribution_then_marker_last() {
        let stamped = mark_self_authored("Will do.  \n\n");
        assert_eq!(stamped, format!("Will do.\n\n{ATTRIBUTION}\n{MARKER}\n"));
        assert!(stamped.trim_end().ends_with(MARKER));
        assert!(is_self_authored(Some(&stamped)));
        let lines: Vec<&str> = stamped.lines().collect();
        assert_eq!(lines[lines.len() - 2], ATTRIBUTION);
        assert_eq!(lines[lines.len() - 1], MARKER);
    }

    #[test]
    fn stamping_is_idempotent() {
        for body in [
            "",
            "hello",
            "multi\nline\n\n",
            "already <!-- the-loop:agent-comment -->",
        ] {
            let once = mark_self_authored(body);
            assert_eq!(mark_self_authored(&once), once, "{body:?}");
            assert_eq!(once.matches(MARKER).count(), 1, "{body:?}");
        }
    }

    /// The one, last marker is the stamp's: whatever marker a hostile body carries —
    /// in the middle, at the start, doubled, nested so that removing one forms another,
    /// or posing as a stamp above text of its own — is removed.
    #[test]
    fn a_body_cannot_smuggle_a_marker_past_the_stamp() {
        let stamp = format!("\n\n{ATTRIBUTION}\n{MARKER}\n");
        let nested = "<!-- the-loop:<!-- the-loop:agent-comment -->agent-comment -->";
        let cases: &[(String, String)] = &[
            (format!("text {MARKER} more"), "text  more".into()),
            (format!("{MARKER}at the start"), "at the start".into()),
            (format!("{MARKER}{MARKER}"), String::new()),
            (format!("a{nested}b"), "ab".into()),
            (
                format!("{ATTRIBUTION}\n{MARKER}\nthe agent's own text"),
                format!("{ATTRIBUTION}\n\nthe agent's own text"),
            ),
            (
                format!("real question\n\n{ATTRIBUTION}\n{MARKER}\n\n{ATTRIBUTION}\n{MARKER}\n"),
                format!("real question\n\n{ATTRIBUTION}"),
            ),
        ];
        for (body, kept) in cases {
            let stamped = mark_self_authored(body);
            assert_eq!(stamped, format!("{kept}{stamp}"), "{body:?}");
            assert_eq!(stamped.matches(MARKER).count(), 1, "{body:?}");
        }
    }

    mod stamp {
        use super::super::{ATTRIBUTION, MARKER, mark_self_authored};
        use proptest::prelude::*;

        fn piece() -> impl Strategy<Value = String> {
            prop_oneof![
                ".{0,12}",
                Just(MARKER.to_string()),
                Just("<!-- the-loop:".to_string()),
                Just("agent-comment -->".to_string()),
                Just(format!("{ATTRIBUTION}\n{MARKER}\n")),
                Just("\n \t".to_string()),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]
            /// Whatever the input — text spliced with markers, marker halves and whole
            /// stamps — the output carries the marker exactly once, at the very end,
            /// with the attribution line right above it, and stamping again changes
            /// nothing.
            #[test]
            fn the_stamp_is_the_one_last_marker(parts in prop::collection::vec(piece(), 0..12)) {
                let stamped = mark_self_authored(&parts.concat());
                prop_assert_eq!(stamped.matches(MARKER).count(), 1);
                let tail = format!("\n{ATTRIBUTION}\n{MARKER}\n");
                prop_assert!(stamped.ends_with(&tail), "{:?}", stamped);
                prop_assert_eq!(mark_self_authored(&stamped), stamped.clone());
            }
        }
    }

    fn list(users: &[&str]) -> Allowlist {
        Allowlist::new(&users.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn allowlist_matches_case_insensitively_and_exactly() {
        let allow = list(&["alice", "@Bob", " carol ", "@", "", "ALICE"]);
        let cases = [
            ("alice", true),
            ("ALICE", true),
            ("Alice", true),
            ("bob", true),
            ("BOB", true),
            ("carol", true),
            ("@bob", false),
            ("alice2", false),
            ("alic", false),
            ("mallory", false),
            ("", false),
            (" alice", false),
            ("*", false),
        ];
        for (login, expected) in cases {
            assert_eq!(allow.allows(login), expected, "{login:?}");
        }
        assert!(!allow.is_empty());
    }

    #[test]
    fn empty_allowlist_is_closed() {
        for allow in [list(&[]), list(&["", "  ", "@"])] {
            assert!(allow.is_empty());
            assert!(!allow.allows("alice"));
            assert!(!allow.allows(""));
            assert_eq!(
                allow.check(Actor::Human("alice")),
                ActorCheck::Unauthorized("alice")
            );
            assert_eq!(allow.check(Actor::Ci), ActorCheck::Ci);
        }
    }

    #[test]
    fn wildcards_are_literal() {
        let allow = list(&["*", "ali*"]);
        assert!(!allow.allows("alice"));
        assert!(allow.allows("*"));
    }

    #[test]
    fn actor_per_event_kind() {
        let payload = json!({
            "comment": {"user": {"login": "carol"}},
            "review": {"user": {"login": "dave"}},
            "sender": {"login": "erin"},
        });
        let cases = [
            ("issue_comment", Actor::Human("carol")),
            ("pull_request_review_comment", Actor::Human("carol")),
            ("pull_request_review", Actor::Human("dave")),
            ("issues", Actor::Human("erin")),
            ("pull_request", Actor::Human("erin")),
            ("workflow_run", Actor::Ci),
            ("check_run", Actor::Ci),
            ("check_suite", Actor::Ci),
            ("status", Actor::Ci),
        ];
        for (event, expected) in cases {
            assert_eq!(actor_of(event, &payload), expected, "{event}");
        }
    }

    #[test]
    fn unidentifiable_humans_are_unknown() {
        let cases = [
            // A comment without an author: the sender does not stand in for it.
            (
                "issue_comment",
                json!({"comment": {"body": "x"}, "sender": {"login": "alice"}}),
            ),
            ("issue_comment", json!({"comment": {"user": {"login": ""}}})),
            ("issue_comment", json!({"comment": {"user": {"login": 42}}})),
            ("issue_comment", json!({"comment": {"user": null}})),
            (
                "pull_request_review",
                json!({"review": {"user": {"login": "   "}}}),
            ),
            ("issues", json!({"issue": {"user": {"login": "alice"}}})),
            ("pull_request", json!({"sender": "alice"})),
            ("issues", json!([1, 2, 3])),
            ("issues", json!(null)),
        ];
        for (event, payload) in cases {
            assert_eq!(
                actor_of(event, &payload),
                Actor::Unknown,
                "{event} {payload}"
            );
            assert_eq!(
                list(&["alice"]).check(actor_of(event, &payload)),
                ActorCheck::Unknown
            );
        }
    }

    #[test]
    fn check_verdicts() {
        let allow = list(&["alice"]);
        assert_eq!(
            allow.check(Actor::Human("Alice")),
            ActorCheck::Authorized("Alice")
        );
        assert_eq!(
            allow.check(Actor::Human("mallory")),
            ActorCheck::Unauthorized("mallory")
        );
        assert_eq!(allow.check(Actor::Unknown), ActorCheck::Unknown);
        assert_eq!(allow.check(Actor::Ci), ActorCheck::Ci);
        assert_eq!(Actor::Human("x").login(), Some("x"));
        assert_eq!(Actor::Ci.login(), None);
    }

    mod sanitize {
        use super::super::sanitize;
        use crate::hidden_text::{Class, class, strip_hidden};
        use proptest::prelude::*;
        use std::borrow::Cow;

        #[test]
        fn sanitize_table() {
            let cases: &[(&str, &str)] = &[
                ("plain text", "plain text"),
                ("a\nb\tc", "a\nb\tc"),
                ("a\r\nb", "a\nb"),
                ("x\x1b[201~y", "x[201~y"),
                ("\x1b]0;title\x07z", "]0;titlez"),
                ("nul\0bell\x07bs\x08del\x7f", "nulbellbsdel"),
                ("c1\u{80}\u{9b}31m\u{9f}end", "c131mend"),
                ("unicode é ✓ 日本 🦀 \u{a0}", "unicode é ✓ 日本 🦀 \u{a0}"),
                ("```\ncode\n```", "```\ncode\n```"),
                ("line\u{2028}sep\u{2029}para", "line\nsep\npara"),
                // SPEC §18.4: what no one sees goes from every paste too.
                ("ok\u{E0069}\u{E0067}\u{200B}\u{202E}\u{FEFF}.", "ok."),
                (
                    "❤\u{FE0F}\u{FE01} 👨\u{200D}👩 a\u{200D}b",
                    "❤\u{FE0F} 👨\u{200D}👩 ab",
                ),
                // Controls go first: the selector then follows its base.
                ("❤\u{1b}\u{FE0F}", "❤\u{FE0F}"),
                (
                    "<!-- kept: a reply is not a Markdown body -->",
                    "<!-- kept: a reply is not a Markdown body -->",
                ),
            ];
            for (input, expected) in cases {
                assert_eq!(sanitize(input), *expected, "input {input:?}");
            }
            assert!(matches!(sanitize("clean\ttext\n"), Cow::Borrowed(_)));
            assert!(matches!(sanitize("日本 ❤\u{FE0F}"), Cow::Borrowed(_)));
        }

        proptest! {
            #[test]
            fn sanitized_text_has_no_controls_but_newline_and_tab(s in any::<String>()) {
                let out = sanitize(&s);
                prop_assert!(out.chars().all(|c| !c.is_control() || c == '\n' || c == '\t'));
                let again = sanitize(&out).into_owned();
                prop_assert_eq!(again.as_str(), out.as_ref());
                let separated = out.contains(['\u{2028}', '\u{2029}']);
                prop_assert!(!separated);
                let kept: String = s
                    .chars()
                    .map(|c| if matches!(c, '\u{2028}' | '\u{2029}') { '\n' } else { c })
                    .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
                    .collect();
                let visible = strip_hidden(&kept).text;
                prop_assert_eq!(out.as_ref(), visible.as_ref());
                prop_assert!(out.chars().all(|c| class(c) != Class::Hidden));
            }
        }
    }
}
