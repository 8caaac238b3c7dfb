//! The open diff view's state (SPEC §16.4, §21.2, §21.3): the parsed diff, the selected
//! line, the pending review's comments and the latest critic round's findings, and the
//! rows on screen — each diff line, followed by the findings and comments on it.
//!
//! Everything shown comes from outside (the agent's worktree, a critic): the text is
//! cleaned of control characters before it is parsed, and findings' messages before
//! they are kept, so nothing here can reach the terminal as an escape sequence.

use super::text::clean_line;
use crate::critic::findings::{Finding, Severity};
use crate::session::review::{Anchor, ReviewComment};
use crate::workspace::diff_model::DiffModel;

/// What the diff view loads besides the diff text.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewMaterial {
    /// The pending review (`Err`: why it could not be read).
    pub pending: Result<Vec<ReviewComment>, String>,
    /// The latest critic round's findings on this work item.
    pub findings: Vec<Finding>,
}

impl Default for ReviewMaterial {
    fn default() -> Self {
        Self {
            pending: Ok(Vec::new()),
            findings: Vec::new(),
        }
    }
}

/// One row on screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Row {
    Line(usize),
    /// A finding under its line (index into [`DiffView::findings`]).
    Finding(usize),
    /// A pending comment under its line (index into [`DiffView::pending`]).
    Comment(usize),
}

#[derive(Debug, Clone, PartialEq)]
pub struct DiffView {
    pub model: DiffModel,
    /// The selected line (an index into `model.lines`).
    pub cursor: usize,
    pub findings: Vec<Finding>,
    /// Each finding's line; a finding whose place the diff does not show sits under its
    /// file's first line, or the view's first line when the file is not in the diff.
    pub finding_at: Vec<usize>,
    /// Whether a finding sits on its own line (else: listed where it fits, off the diff).
    pub finding_on_line: Vec<bool>,
    pub pending: Vec<ReviewComment>,
    /// Why the pending review could not be read, if it could not.
    pub pending_error: Option<String>,
    pub rows: Vec<Row>,
    /// The row of each line.
    pub line_row: Vec<usize>,
}

impl DiffView {
    pub fn new(text: &str, material: ReviewMaterial) -> Self {
        // Parsed as the send path parses it, so an anchor's text matches there.
        let model = DiffModel::parse(text);
        let findings: Vec<Finding> = material
            .findings
            .into_iter()
            .map(|f| Finding {
                path: clean_line(&f.path).into_owned(),
                message: clean_line(&f.message).into_owned(),
                ..f
            })
            .collect();
        let (pending, pending_error) = match material.pending {
            Ok(p) => (p, None),
            Err(e) => (Vec::new(), Some(clean_line(&e).into_owned())),
        };
        let mut view = Self {
            cursor: 0,
            finding_at: Vec::new(),
            finding_on_line: Vec::new(),
            findings,
            pending,
            pending_error,
            rows: Vec::new(),
            line_row: Vec::new(),
            model,
        };
        view.place_findings();
        view.relayout();
        view.cursor = view.first_code_line().unwrap_or(0);
        view
    }

    fn place_findings(&mut self) {
        let m = &self.model;
        let (at, on): (Vec<usize>, Vec<bool>) = self
            .findings
            .iter()
            .map(|f| match m.find_new(&f.path, f.line) {
                Some(i) => (i, true),
                None => (m.file_start(&f.path).unwrap_or(0), false),
            })
            .unzip();
        self.finding_at = at;
        self.finding_on_line = on;
    }

    /// Rebuilds the rows after the comments or findings changed.
    pub fn relayout(&mut self) {
        let n = self.model.lines.len();
        let mut under: Vec<Vec<Row>> = vec![Vec::new(); n];
        for (i, at) in self.finding_at.iter().enumerate() {
            if let Some(list) = under.get_mut(*at) {
                list.push(Row::Finding(i));
            }
        }
        for (i, c) in self.pending.iter().enumerate() {
            // A comment whose line moved is listed under its file's first line (or the
            // view's), like a finding off the diff: pending is never hidden.
            let at = self
                .comment_line(c)
                .or_else(|| self.model.file_start(&c.anchor.path))
                .unwrap_or(0);
            if let Some(list) = under.get_mut(at) {
                list.push(Row::Comment(i));
            }
        }
        self.rows.clear();
        self.line_row.clear();
        for (i, extra) in under.into_iter().enumerate() {
            self.line_row.push(self.rows.len());
            self.rows.push(Row::Line(i));
            self.rows.extend(extra);
        }
    }

    /// The line a pending comment is shown under: where it was written, when the diff
    /// still has that line there.
    pub fn comment_line(&self, c: &ReviewComment) -> Option<usize> {
        c.anchor.still_in(&self.model)
    }

    /// Whether line `i` carries a pending comment.
    pub fn commented(&self, i: usize) -> bool {
        self.pending.iter().any(|c| self.comment_line(c) == Some(i))
    }

    /// The most serious finding on line `i` (only those on their own line).
    pub fn severity_at(&self, i: usize) -> Option<Severity> {
        self.finding_at
            .iter()
            .zip(&self.finding_on_line)
            .enumerate()
            .filter(|(_, (at, on))| **at == i && **on)
            .map(|(f, _)| self.findings[f].severity)
            .max()
    }

    /// The place a comment on the selected line points at.
    pub fn anchor(&self) -> Option<Anchor> {
        self.anchor_at(self.cursor)
    }

    pub fn anchor_at(&self, line: usize) -> Option<Anchor> {
        Anchor::at(&self.model, line)
    }

    fn first_code_line(&self) -> Option<usize> {
        self.model.lines.iter().position(|l| l.kind.is_code())
    }

    pub fn cursor_row(&self) -> usize {
        self.line_row.get(self.cursor).copied().unwrap_or(0)
    }

    /// Moves the selection by `delta` lines, within the diff.
    pub fn move_by(&mut self, delta: isize) {
        let last = self.model.lines.len().saturating_sub(1);
        self.cursor = self.cursor.saturating_add_signed(delta).min(last);
    }

    /// Selects the line shown at `row` (a finding's or comment's row selects its line).
    pub fn select_row(&mut self, row: usize) {
        let row = row.min(self.rows.len().saturating_sub(1));
        if let Some(line) = self.rows[..=row].iter().rev().find_map(|r| match r {
            Row::Line(i) => Some(*i),
            _ => None,
        }) {
            self.cursor = line;
        }
    }

    /// The findings' lines, in order, without repeats.
    fn finding_lines(&self) -> Vec<usize> {
        let mut lines = self.finding_at.clone();
        lines.sort_unstable();
        lines.dedup();
        lines
    }

    /// Selects the next (or previous) line carrying a finding; `false` when there is none.
    pub fn jump_finding(&mut self, forward: bool) -> bool {
        let lines = self.finding_lines();
        let next = if forward {
            lines.iter().find(|l| **l > self.cursor)
        } else {
            lines.iter().rev().find(|l| **l < self.cursor)
        };
        match next {
            Some(l) => {
                self.cursor = *l;
                true
            }
            None => false,
        }
    }

    /// The findings on the selected line.
    pub fn findings_here(&self) -> Vec<&Finding> {
        self.finding_at
            .iter()
            .enumerate()
            .filter(|(_, at)| **at == self.cursor)
            .map(|(i, _)| &self.findings[i])
            .collect()
    }

    /// Selects `path` line `line` (new side), else the file's first line; `false` when the
    /// diff does not have the file.
    pub fn select_place(&mut self, path: &str, line: u32) -> bool {
        match self
            .model
            .find_new(path, line)
            .or_else(|| self.model.file_start(path))
        {
            Some(i) => {
                self.cursor = i;
                true
            }
            None => false,
        }
    }

    /// The scroll that keeps the selected line in a view of `height` rows together with
    /// what is shown under it — its findings, the operator's comments — as far as they
    /// fit: the line itself never goes above the view's top.
    pub fn scroll_for(&self, scroll: usize, height: usize) -> usize {
        let row = self.cursor_row();
        // Just past the line's rows: where the next line's start.
        let end = self
            .line_row
            .get(self.cursor + 1)
            .copied()
            .unwrap_or(self.rows.len())
            .max(row + 1);
        let height = height.max(1);
        if row < scroll {
            row
        } else if end > scroll + height {
            (end - height).min(row)
        } else {
            scroll
        }
    }
}

#[cfg(test)]
#[path = "diff_view_tests.rs"]
mod tests;
