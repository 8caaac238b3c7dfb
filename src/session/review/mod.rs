//! The operator's review of a session's diff (SPEC §21.2): comments on lines of the
//! worktree diff, kept as a pending review until they are sent to the agent as one
//! framed note, or discarded.
//!
//! - [`ReviewComment`] and [`Anchor`]: a comment and the place it sits on — file path,
//!   side and line number (new side; old side for a deleted line), the hunk header, up
//!   to six lines of context, as the diff showed them.
//! - [`store`]: the pending review of a work item, `reviews/<slug>.json` under the state
//!   root (0600), so it survives closing the diff view and a restart.
//! - [`note`]: the framed text the agent reads. A comment whose line is no longer where
//!   it was is sent with its original position and a note that the file moved.
//! - [`send`]: `Replier::send_review`, through the one paste into a session under the
//!   reply's policy: a held session queues it like a held reply (SPEC §18.3).
//!
//! Context lines come from the agent's worktree: they are cleaned of control and
//! hidden characters before they are stored, and again in the note.

mod send;
pub mod store;

pub use send::ReviewSent;

use crate::guard::sanitize;
use crate::workspace::diff_model::{DiffModel, Side};
use serde::{Deserialize, Serialize};

/// Where a comment sits, taken from the diff the operator looked at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Anchor {
    pub path: String,
    pub side: Side,
    pub line: u32,
    /// The `@@ … @@` header of its hunk.
    pub hunk: String,
    /// The commented line as in the diff (prefix included), to tell whether it moved.
    pub line_text: String,
    /// Up to six lines of the hunk around it.
    pub context: Vec<String>,
}

impl Anchor {
    /// The anchor of line `at` of `model`, when it is a line of a file's content.
    pub fn at(model: &DiffModel, at: usize) -> Option<Self> {
        let line = model.lines.get(at)?;
        let (side, number) = line.position()?;
        Some(Self {
            path: clean(model.path_of(line)?),
            side,
            line: number,
            hunk: clean(model.hunk_header(at).unwrap_or_default()),
            line_text: clean(&line.text),
            context: model.context(at).iter().map(|l| clean(l)).collect(),
        })
    }

    /// Whether `model` still has this line at this position.
    pub fn still_in(&self, model: &DiffModel) -> Option<usize> {
        let at = model.find(&self.path, self.side, self.line)?;
        (clean(&model.lines[at].text) == self.line_text).then_some(at)
    }
}

/// One comment of the pending review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewComment {
    /// Names it in the pending review (to remove exactly what was sent).
    pub id: String,
    #[serde(flatten)]
    pub anchor: Anchor,
    /// The operator's words (for a finding taken over with `f`: the finding's text).
    pub text: String,
    /// RFC 3339.
    pub created: String,
}

impl ReviewComment {
    pub fn new(anchor: Anchor, text: &str) -> Self {
        Self {
            id: format!("c-{:016x}", rand::random::<u64>()),
            anchor,
            text: sanitize(text).trim_end().to_string(),
            created: crate::time::now_ts(),
        }
    }

    /// A critic's finding (its severity and message) taken over as the operator's
    /// comment: the words say it came from a critic and how serious the critic
    /// thought it was.
    pub fn from_finding(anchor: Anchor, severity: &str, message: &str) -> Self {
        Self::new(
            anchor,
            &format!(
                "A critic's finding ({}), which I agree with: {}",
                clean(severity),
                clean(message)
            ),
        )
    }
}

/// One line of text from outside (a worktree, a critic): no controls, no hidden
/// characters, no line breaks.
pub fn clean(text: &str) -> String {
    sanitize(text)
        .chars()
        .map(|c| if c == '\t' || c == '\n' { ' ' } else { c })
        .filter(|c| !c.is_control())
        .collect()
}

/// The note the agent reads: the framing line, then every comment with its place, its
/// hunk header, its context and the operator's words. `now` is the diff at send time
/// (`None`: unknown); a comment whose line is not in it keeps its original position,
/// with a note that the file moved.
pub fn note(
    branch: &str,
    sha: &str,
    comments: &[ReviewComment],
    now: Option<&DiffModel>,
) -> String {
    let mut out = format!(
        "Review from the operator on {} at {}: {} comment{} on your diff.\n",
        clean(branch),
        clean(sha),
        comments.len(),
        if comments.len() == 1 { "" } else { "s" }
    );
    for (i, c) in comments.iter().enumerate() {
        let a = &c.anchor;
        let current = now.and_then(|m| a.still_in(m).map(|at| (m, at)));
        let (hunk, context) = match current.and_then(|(m, at)| Anchor::at(m, at)) {
            Some(fresh) => (fresh.hunk, fresh.context),
            None => (a.hunk.clone(), a.context.clone()),
        };
        let side = match a.side {
            Side::New => "new side",
            Side::Old => "old side, a deleted line",
        };
        out.push_str(&format!(
            "\n{}. {} line {} ({side})\n",
            i + 1,
            clean(&a.path),
            a.line
        ));
        if now.is_some() && current.is_none() {
            out.push_str(&format!(
                "(The file moved since this comment was written: line {} no longer reads as \
                 below at {}. Position and context are as they were.)\n",
                a.line,
                clean(sha)
            ));
        }
        let lines: Vec<String> = context.iter().map(|l| clean(l)).collect();
        let hunk = clean(&hunk);
        // The hunk header's function context is the worktree's text too.
        let quoted = lines.iter().map(String::as_str).chain([hunk.as_str()]);
        let fence = crate::guard::fence_for(quoted);
        out.push_str(&format!("{fence}diff\n{hunk}\n"));
        for l in &lines {
            out.push_str(l);
            out.push('\n');
        }
        out.push_str(&format!("{fence}\n"));
        out.push_str(&format!("Comment: {}\n", sanitize(&c.text).trim_end()));
    }
    out
}

#[cfg(test)]
#[path = "review_tests.rs"]
mod tests;
