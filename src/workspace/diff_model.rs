//! A unified diff read line by line (SPEC §21.2): which file and hunk each line belongs
//! to, what kind it is, and its line numbers on the old and new side. The diff view
//! selects and anchors lines with it; a review note quotes hunks and context from it.
//!
//! Any text parses: lines before the first `diff --git` (the view's header: what the
//! diff is against, the file list) are [`LineKind::Meta`], and a malformed hunk header
//! only means its lines carry no numbers. Parsing never fails and never panics.

/// What one line of the diff is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    /// Outside any file's patch (the view's header, the file list).
    Meta,
    /// `diff --git`, `index`, `---`, `+++`, mode and rename lines.
    FileHeader,
    /// `@@ -a,b +c,d @@ …`
    HunkHeader,
    Context,
    Added,
    Removed,
    /// `\ No newline at end of file`
    NoNewline,
}

impl LineKind {
    /// A line of a file's content, which a comment or a finding can sit on.
    pub fn is_code(self) -> bool {
        matches!(self, Self::Context | Self::Added | Self::Removed)
    }
}

/// Which side of the diff a line number counts on: the new file (added and context
/// lines) or the old one (deleted lines).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    New,
    Old,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLine {
    pub kind: LineKind,
    /// The line as in the diff (prefix included).
    pub text: String,
    /// Index into [`DiffModel::files`].
    pub file: Option<usize>,
    /// Index into [`DiffModel::hunks`].
    pub hunk: Option<usize>,
    pub old: Option<u32>,
    pub new: Option<u32>,
}

impl DiffLine {
    /// Where a comment on this line points: the new side's number, the old side's for a
    /// deleted line.
    pub fn position(&self) -> Option<(Side, u32)> {
        match self.kind {
            LineKind::Added | LineKind::Context => self.new.map(|n| (Side::New, n)),
            LineKind::Removed => self.old.map(|n| (Side::Old, n)),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    pub file: usize,
    /// The `@@ … @@` line.
    pub header: String,
    /// The index of its header line in [`DiffModel::lines`].
    pub start: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiffModel {
    pub lines: Vec<DiffLine>,
    /// Each file's path: the new side's, the old side's for a deleted file.
    pub files: Vec<String>,
    pub hunks: Vec<Hunk>,
}

/// Lines of context a review note quotes around a commented line, at most.
pub const CONTEXT_LINES: usize = 6;

/// A line's text as kept: every control character but the tab dropped (escape
/// sequences, a carriage return), so every reader of the model — the view, the note
/// sent at send time — sees the same text; a tab is expanded where it is drawn.
fn shown(raw: &str) -> String {
    raw.chars()
        .filter(|c| *c == '\t' || !c.is_control())
        .collect()
}

impl DiffModel {
    pub fn parse(text: &str) -> Self {
        let mut model = Self::default();
        let mut file: Option<usize> = None;
        let mut hunk: Option<usize> = None;
        // Lines still due in the current hunk, old and new side, and the next numbers.
        let (mut old_left, mut new_left) = (0u32, 0u32);
        let (mut old_no, mut new_no) = (0u32, 0u32);
        for raw in text.split('\n') {
            let in_hunk = hunk.is_some() && (old_left > 0 || new_left > 0);
            let mut line = DiffLine {
                kind: LineKind::Meta,
                text: shown(raw),
                file,
                hunk: None,
                old: None,
                new: None,
            };
            if in_hunk && (raw.starts_with([' ', '+', '-']) || raw.is_empty()) {
                line.hunk = hunk;
                match raw.as_bytes().first() {
                    Some(b'+') => {
                        line.kind = LineKind::Added;
                        line.new = Some(new_no);
                        new_no = new_no.saturating_add(1);
                        new_left = new_left.saturating_sub(1);
                    }
                    Some(b'-') => {
                        line.kind = LineKind::Removed;
                        line.old = Some(old_no);
                        old_no = old_no.saturating_add(1);
                        old_left = old_left.saturating_sub(1);
                    }
                    _ => {
                        line.kind = LineKind::Context;
                        line.old = Some(old_no);
                        line.new = Some(new_no);
                        old_no = old_no.saturating_add(1);
                        new_no = new_no.saturating_add(1);
                        old_left = old_left.saturating_sub(1);
                        new_left = new_left.saturating_sub(1);
                    }
                }
            } else if raw.starts_with('\\') && hunk.is_some() {
                line.kind = LineKind::NoNewline;
                line.hunk = hunk;
            } else if let Some(rest) = raw.strip_prefix("diff --git ") {
                model.files.push(git_path(rest));
                file = Some(model.files.len() - 1);
                hunk = None;
                line.file = file;
                line.kind = LineKind::FileHeader;
            } else if let (Some(f), true) = (file, raw.starts_with("@@")) {
                let (o, n) = hunk_numbers(raw).unwrap_or(((0, 0), (0, 0)));
                (old_no, old_left, new_no, new_left) = (o.0, o.1, n.0, n.1);
                model.hunks.push(Hunk {
                    file: f,
                    header: shown(raw),
                    start: model.lines.len(),
                });
                hunk = Some(model.hunks.len() - 1);
                line.kind = LineKind::HunkHeader;
                line.hunk = hunk;
            } else if let Some(f) = file {
                hunk = None;
                line.kind = LineKind::FileHeader;
                if let Some(path) = raw.strip_prefix("+++ ").and_then(side_path) {
                    model.files[f] = path;
                } else if let Some(path) = raw.strip_prefix("--- ").and_then(side_path)
                    && model.files[f].is_empty()
                {
                    model.files[f] = path;
                }
            }
            model.lines.push(line);
        }
        model
    }

    pub fn path_of(&self, line: &DiffLine) -> Option<&str> {
        line.file
            .and_then(|f| self.files.get(f))
            .map(String::as_str)
    }

    /// The line at `path`, `side`, number `line`.
    pub fn find(&self, path: &str, side: Side, line: u32) -> Option<usize> {
        let file = self.files.iter().position(|p| p == path)?;
        self.lines.iter().position(|l| {
            l.file == Some(file) && l.kind.is_code() && l.position() == Some((side, line))
        })
    }

    /// The line a finding on `path` line `line` (new side) sits on: that line when the
    /// diff shows it, else `None`.
    pub fn find_new(&self, path: &str, line: u32) -> Option<usize> {
        let file = self.files.iter().position(|p| p == path)?;
        self.lines
            .iter()
            .position(|l| l.file == Some(file) && l.kind.is_code() && l.new == Some(line))
    }

    /// The first line of `path`'s patch.
    pub fn file_start(&self, path: &str) -> Option<usize> {
        let file = self.files.iter().position(|p| p == path)?;
        self.lines.iter().position(|l| l.file == Some(file))
    }

    /// Up to [`CONTEXT_LINES`] lines of the hunk around line `at` (three before it, the
    /// line, two after), as in the diff.
    pub fn context(&self, at: usize) -> Vec<String> {
        let Some(hunk) = self.lines.get(at).and_then(|l| l.hunk) else {
            return Vec::new();
        };
        let same = |i: usize| {
            self.lines
                .get(i)
                .is_some_and(|l| l.hunk == Some(hunk) && l.kind != LineKind::HunkHeader)
        };
        let mut first = at;
        while first > 0 && at - first < 3 && same(first - 1) {
            first -= 1;
        }
        let mut last = at;
        while last - first + 1 < CONTEXT_LINES && same(last + 1) {
            last += 1;
        }
        self.lines[first..=last]
            .iter()
            .map(|l| l.text.clone())
            .collect()
    }

    pub fn hunk_header(&self, at: usize) -> Option<&str> {
        let hunk = self.lines.get(at)?.hunk?;
        self.hunks.get(hunk).map(|h| h.header.as_str())
    }
}

/// `a/x b/x` → `x` (the b side); quoted or odd names fall back to the whole rest.
fn git_path(rest: &str) -> String {
    match rest.rfind(" b/") {
        Some(at) => rest[at + 3..].to_string(),
        None => rest.to_string(),
    }
}

/// `b/src/x.rs` → `src/x.rs`; `/dev/null` names no file.
fn side_path(rest: &str) -> Option<String> {
    let rest = rest.trim_end_matches('\t');
    if rest == "/dev/null" {
        return None;
    }
    let path = rest
        .strip_prefix("a/")
        .or_else(|| rest.strip_prefix("b/"))
        .unwrap_or(rest);
    Some(path.to_string())
}

/// `@@ -a[,b] +c[,d] @@` → ((a, b), (c, d)); a missing count is 1.
fn hunk_numbers(header: &str) -> Option<((u32, u32), (u32, u32))> {
    let mut parts = header.strip_prefix("@@ ")?.split(' ');
    let range = |s: &str, sign: char| -> Option<(u32, u32)> {
        let s = s.strip_prefix(sign)?;
        let mut it = s.split(',');
        let start = it.next()?.parse().ok()?;
        let count = match it.next() {
            Some(c) => c.parse().ok()?,
            None => 1,
        };
        Some((start, count))
    };
    let old = range(parts.next()?, '-')?;
    let new = range(parts.next()?, '+')?;
    Some((old, new))
}

#[cfg(test)]
#[path = "diff_model_tests.rs"]
mod tests;
