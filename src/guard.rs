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

/// How long a harness or model name in an attribution line may be.
const NAME_CHARS: usize = 64;

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
    stamp_self_authored(body, ATTRIBUTION)
}

/// [`mark_self_authored`] with another visible line above the marker: an agent's own
/// words (`the-loop comment`, SPEC §19.2) name who wrote them ([`attribution_for`]).
/// The same guarantees: the marker last and exactly once, any marker in the text (or
/// in `attribution`) removed, idempotent for the same `attribution`. The line is made
/// one line; a blank one falls back to [`ATTRIBUTION`].
pub fn stamp_self_authored(body: &str, attribution: &str) -> String {
    let line = without_markers(attribution).replace(['\n', '\r'], " ");
    let line = match line.trim() {
        "" => ATTRIBUTION,
        line => line,
    };
    let body = body.trim_end();
    let tail = format!("{line}\n{MARKER}");
    let body = body.strip_suffix(tail.as_str()).unwrap_or(body);
    format!("{}\n\n{tail}\n", without_markers(body).trim_end())
}

/// The attribution line of an agent's comment: `🤖 _posted by the-loop for claude_`, or
/// `… for claude (claude-sonnet-4-5)_` when the model is known. Both names may come from
/// what a harness reported about itself, so only name characters are kept (letters,
/// digits, `.` `-` `:` `/` `@` `+`, at most 64): nothing in them can end the italics,
/// add a line or carry markup. A name with nothing left is left out.
pub fn attribution_for(harness: &str, model: Option<&str>) -> String {
    let clean = |name: &str| -> Option<String> {
        let kept: String = name
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '/' | '@' | '+'))
            .take(NAME_CHARS)
            .collect();
        (!kept.is_empty()).then_some(kept)
    };
    match (clean(harness), model.and_then(clean)) {
        (Some(harness), Some(model)) => format!("🤖 _posted by the-loop for {harness} ({model})_"),
        (Some(harness), None) => format!("🤖 _posted by the-loop for {harness}_"),
        (None, Some(model)) => format!("🤖 _posted by the-loop for {model}_"),
        (None, None) => ATTRIBUTION.to_string(),
    }
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

/// A Markdown body the tool posts for an agent (`the-loop comment`, SPEC §19.2): the
/// controls [`sanitize`] removes, then everything GitHub would not show a reader
/// ([`hidden_text::strip_markdown`]: HTML comments, references to hidden characters,
/// the hidden characters) — people see every word the agent posts. Newlines and tabs
/// stay.
pub fn sanitize_markdown(text: &str) -> Cow<'_, str> {
    let controls_gone = Stripped {
        text: without_controls(text),
        removed: 0,
    };
    controls_gone.then(hidden_text::strip_markdown).text
}

/// A backtick fence longer than any run of backticks in `texts`, so nothing quoted
/// inside it can close the fence and step out of the UNTRUSTED framing (at least
/// three).
pub fn fence_for<'a>(texts: impl IntoIterator<Item = &'a str>) -> String {
    let longest = texts
        .into_iter()
        .flat_map(|t| t.split(|c| c != '`'))
        .map(str::len)
        .max()
        .unwrap_or(0);
    "`".repeat((longest + 1).max(3))
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
#[path = "guard_tests.rs"]
mod tests;
