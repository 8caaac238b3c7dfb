//! Pull-request reviews the tool writes (SPEC §21.4): which lines of a pull request's
//! diff can carry a comment, and one review with its line comments.
//!
//! The requests, as GitHub documents them:
//! - `GET /repos/{o}/{r}/pulls/{n}/files?per_page=100`, paginated (GitHub lists at most
//!   3000 files): each file's `filename` and, unless the file is binary or its diff too
//!   large, its `patch`. A line can take a comment on the new side (`side: RIGHT`) when
//!   it is inside a hunk: from `c` to `c+d-1` of a `@@ -a,b +c,d @@` header.
//! - `POST /repos/{o}/{r}/pulls/{n}/reviews` with `{"body", "event": "COMMENT",
//!   "comments": [{"path", "line", "side": "RIGHT", "body"}]}`, answered 201 with the
//!   review. A comment on a line outside the diff makes GitHub refuse the whole review
//!   (422), so only lines from [`DiffLines`] are sent. The review body and every comment
//!   body are stamped here with [`crate::guard::mark_self_authored`], as
//!   [`Client::post_comment`] stamps comments: the loop never reads them back as input.
//!   Never retried once sent: a second POST would post a second review.

use super::api::repo_path;
use super::client::Client;
use super::{Error, models};
use reqwest::Method;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The new-side lines of a pull request's diff that can carry a review comment, per
/// file: the line ranges of its hunks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiffLines {
    ranges: BTreeMap<String, Vec<(u32, u32)>>,
}

impl DiffLines {
    /// From the entries of `GET …/pulls/{n}/files`; a file without a `patch` has no
    /// commentable line.
    pub fn from_files(files: &[Value]) -> Self {
        let mut lines = Self::default();
        for file in files {
            let (Some(path), Some(patch)) = (
                file.get("filename").and_then(Value::as_str),
                file.get("patch").and_then(Value::as_str),
            ) else {
                continue;
            };
            lines.add_patch(path, patch);
        }
        lines
    }

    /// Adds the hunks of one file's unified-diff `patch`.
    pub fn add_patch(&mut self, path: &str, patch: &str) {
        let hunks: Vec<(u32, u32)> = patch.lines().filter_map(new_side_range).collect();
        if !hunks.is_empty() {
            self.ranges
                .entry(path.to_string())
                .or_default()
                .extend(hunks);
        }
    }

    /// Whether line `line` of `path` (new side) is in one of the diff's hunks.
    pub fn contains(&self, path: &str, line: u32) -> bool {
        self.contains_range(path, line, line)
    }

    /// Whether lines `start` to `end` of `path` (new side) are all in one hunk: what a
    /// comment on several lines needs.
    pub fn contains_range(&self, path: &str, start: u32, end: u32) -> bool {
        self.ranges.get(path).is_some_and(|r| {
            r.iter()
                .any(|(from, to)| *from <= start && start <= end && end <= *to)
        })
    }
}

/// The new-side lines of a hunk header `@@ -a[,b] +c[,d] @@…`: `c..=c+d-1` (`d` is 1
/// when left out; a hunk with `d == 0` has no new line).
fn new_side_range(line: &str) -> Option<(u32, u32)> {
    let rest = line.strip_prefix("@@ -")?;
    let (_, rest) = rest.split_once(" +")?;
    let (new, _) = rest.split_once(" @@")?;
    let (start, count) = match new.split_once(',') {
        Some((s, c)) => (s.parse::<u32>().ok()?, c.parse::<u32>().ok()?),
        None => (new.parse::<u32>().ok()?, 1),
    };
    (count > 0 && start > 0).then(|| (start, start.saturating_add(count - 1)))
}

/// One line comment of a review, on the new side of the diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineComment {
    pub path: String,
    /// The line commented on; the last line of a comment on several.
    pub line: u32,
    /// The first line of a comment on several lines (before `line`, in its hunk).
    pub start_line: Option<u32>,
    /// As composed; the marker is added by [`Client::create_review`].
    pub body: String,
}

/// The review GitHub made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedReview {
    pub id: u64,
    pub html_url: String,
}

impl Client {
    /// The lines of pull request `number`'s diff that can take a comment (every page of
    /// its files, up to the client's page limit).
    pub async fn pull_diff_lines(&self, repo: &str, number: u64) -> Result<DiffLines, Error> {
        let url = self.url(
            &format!("{}/pulls/{number}/files", repo_path(repo)?),
            &[("per_page", "100".into())],
        )?;
        let files = self.get_list(url, false).await?.value.unwrap_or_default();
        Ok(DiffLines::from_files(&files))
    }

    /// Creates one review (`event: COMMENT`) on pull request `number` with `comments`
    /// on its lines. The body and each comment are **always** stamped here with
    /// [`crate::guard::mark_self_authored`], once, last.
    pub async fn create_review(
        &self,
        repo: &str,
        number: u64,
        body: &str,
        comments: &[LineComment],
    ) -> Result<CreatedReview, Error> {
        let url = self.url(&format!("{}/pulls/{number}/reviews", repo_path(repo)?), &[])?;
        let comments: Vec<Value> = comments
            .iter()
            .map(|c| {
                let mut comment = json!({
                    "path": c.path,
                    "line": c.line,
                    "side": "RIGHT",
                    "body": crate::guard::mark_self_authored(&c.body),
                });
                if let Some(start) = c.start_line.filter(|s| *s < c.line) {
                    comment["start_line"] = json!(start);
                    comment["start_side"] = json!("RIGHT");
                }
                comment
            })
            .collect();
        let payload = json!({
            "body": crate::guard::mark_self_authored(body),
            "event": "COMMENT",
            "comments": comments,
        });
        let review = self.write_value(Method::POST, &url, &payload).await?;
        let what = || format!("POST {}", url.path());
        let missing = |field: &str| Error::Decode {
            what: what(),
            message: format!("the created review has no `{field}`"),
        };
        Ok(CreatedReview {
            id: models::id(&review).ok_or_else(|| missing("id"))?,
            html_url: models::html_url(&review)
                .ok_or_else(|| missing("html_url"))?
                .to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunk_headers() {
        let cases: &[(&str, Option<(u32, u32)>)] = &[
            ("@@ -1,3 +1,4 @@", Some((1, 4))),
            ("@@ -10,2 +12,5 @@ fn main() {", Some((12, 16))),
            ("@@ -3 +3 @@", Some((3, 3))),
            ("@@ -5,3 +4,0 @@", None),
            ("@@ -0,0 +1,2 @@", Some((1, 2))),
            ("+@@ -1,3 +1,4 @@", None),
            ("@@ -1,3 +x,4 @@", None),
            (" context", None),
        ];
        for (line, expected) in cases {
            assert_eq!(new_side_range(line), *expected, "{line}");
        }
    }

    #[test]
    fn lines_inside_hunks_only() {
        let files = vec![
            json!({"filename": "src/lib.rs", "patch":
                "@@ -1,3 +1,4 @@\n a\n+b\n c\n d\n@@ -20,3 +21,3 @@\n x\n-y\n+z\n w"}),
            json!({"filename": "logo.png"}),
            json!({"filename": "gone.rs", "patch": "@@ -1,2 +0,0 @@\n-a\n-b"}),
        ];
        let lines = DiffLines::from_files(&files);
        let on = |p: &str, l: u32| lines.contains(p, l);
        assert!(on("src/lib.rs", 1) && on("src/lib.rs", 4));
        assert!(!on("src/lib.rs", 5) && !on("src/lib.rs", 20));
        assert!(on("src/lib.rs", 21) && on("src/lib.rs", 23));
        assert!(!on("src/lib.rs", 24));
        assert!(!on("logo.png", 1) && !on("gone.rs", 1) && !on("other.rs", 1));
    }
}
