//! The words of a ship: the note, the pull request's body and base, short forms.

use crate::github::PullSummary;
use crate::session::records::LinkedPull;
use crate::work_item::WorkItemRef;

/// The note as the session reads it.
pub fn framed_note(item: &WorkItemRef, note: &str) -> String {
    format!("Note from the-loop about your work on {item}:\n\n{note}")
}

/// `refs/remotes/origin/main` → `main`: the branch a pull request is based on.
pub(super) fn base_branch(base: &str) -> String {
    let short = crate::workspace::store::short_ref(base);
    short
        .split_once('/')
        .filter(|_| base.starts_with("refs/remotes/"))
        .map_or(short, |(_, branch)| branch)
        .to_string()
}

/// The pull request's body: the request's, then `Closes #N` (the client stamps it).
pub fn pull_body(body: &str, number: u64) -> String {
    let body = body.trim();
    if body.is_empty() {
        format!("Closes #{number}")
    } else {
        format!("{body}\n\nCloses #{number}")
    }
}

pub(super) fn linked(pull: &PullSummary) -> LinkedPull {
    LinkedPull {
        number: pull.number,
        url: pull.html_url.clone(),
        draft: pull.draft,
    }
}

/// Whitespace runs (newlines included) as one space, trimmed.
pub(super) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub(super) fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

pub(super) fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
