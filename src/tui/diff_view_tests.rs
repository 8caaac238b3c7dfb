use super::*;
use crate::critic::findings::Severity;
use crate::workspace::diff_model::Side;

const DIFF: &str = "/w\nCompared against: main\n\ndiff --git a/src/lib.rs b/src/lib.rs
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,3 +1,4 @@
 one
-two
+TWO
+three
 four
";

fn finding(path: &str, line: u32, severity: Severity, message: &str) -> Finding {
    Finding::new(path, line, severity, message)
}

fn view(findings: Vec<Finding>) -> DiffView {
    DiffView::new(
        DIFF,
        ReviewMaterial {
            pending: Ok(Vec::new()),
            findings,
        },
    )
}

#[test]
fn the_selection_starts_on_the_first_line_of_code_and_moves_within_the_diff() {
    let mut v = view(Vec::new());
    assert_eq!(v.model.lines[v.cursor].text, " one");
    v.move_by(isize::MIN / 2);
    assert_eq!(v.cursor, 0);
    v.move_by(isize::MAX / 2);
    assert_eq!(v.cursor, v.model.lines.len() - 1);
}

#[test]
fn findings_sit_under_their_lines_and_bad_places_never_crash() {
    let mut v = view(vec![
        finding("src/lib.rs", 3, Severity::Warning, "three?"),
        finding("src/lib.rs", 3, Severity::Error, "worse"),
        finding("src/lib.rs", 0, Severity::Note, "line zero"),
        finding("src/lib.rs", u32::MAX, Severity::Note, "past the end"),
        finding("elsewhere.rs", 7, Severity::Note, "not in the diff"),
    ]);
    let three = v.model.find_new("src/lib.rs", 3).unwrap();
    assert_eq!(
        v.severity_at(three),
        Some(Severity::Error),
        "the worst one colours it"
    );
    let row = v.line_row[three];
    assert_eq!(
        &v.rows[row + 1..row + 3],
        [Row::Finding(0), Row::Finding(1)]
    );
    // Off the diff: under the file's first line, or the view's first line.
    let file = v.model.file_start("src/lib.rs").unwrap();
    assert_eq!(v.finding_at[2], file);
    assert_eq!(v.finding_at[3], file);
    assert_eq!(v.finding_at[4], 0);
    assert_eq!(
        v.severity_at(file),
        None,
        "only findings on their line mark the gutter"
    );
    assert_eq!(v.rows.len(), v.model.lines.len() + 5);
    v.cursor = file + 1;
    assert!(v.jump_finding(true));
    assert_eq!(v.cursor, three);
    assert!(!v.jump_finding(true));
    assert!(v.jump_finding(false));
    assert_eq!(v.cursor, file);
}

#[test]
fn a_row_under_a_line_selects_that_line_and_the_scroll_follows() {
    let mut v = view(vec![finding("src/lib.rs", 3, Severity::Note, "n")]);
    let three = v.model.find_new("src/lib.rs", 3).unwrap();
    v.select_row(v.line_row[three] + 1);
    assert_eq!(v.cursor, three);
    v.select_row(10_000);
    assert_eq!(v.cursor, v.model.lines.len() - 1);
    assert_eq!(v.scroll_for(0, 3), v.cursor_row() - 2);
    v.cursor = 0;
    assert_eq!(v.scroll_for(5, 3), 0);
}

#[test]
fn escapes_in_findings_and_the_diff_are_gone_before_anything_is_kept() {
    let text = DIFF.replace("+three", "+three \u{1b}]0;pwned\u{7}\u{1b}[2J");
    let v = DiffView::new(
        &text,
        ReviewMaterial {
            pending: Ok(Vec::new()),
            findings: vec![finding(
                "src/lib.rs",
                3,
                Severity::Note,
                "x \u{1b}[31mred\u{9b}1m",
            )],
        },
    );
    let all: String = v.model.lines.iter().map(|l| l.text.as_str()).collect();
    assert!(!all.chars().any(char::is_control), "{all:?}");
    assert!(!v.findings[0].message.chars().any(char::is_control));
}

#[test]
fn a_pending_comment_whose_line_moved_is_still_listed() {
    let first = view(Vec::new());
    let at = first.model.find_new("src/lib.rs", 3).unwrap();
    let comment = ReviewComment::new(first.anchor_at(at).unwrap(), "keep me");
    let moved = DiffView::new(
        &DIFF.replace("+three", "+THREE"),
        ReviewMaterial {
            pending: Ok(vec![comment]),
            findings: Vec::new(),
        },
    );
    let file = moved.model.file_start("src/lib.rs").unwrap();
    assert_eq!(moved.rows[moved.line_row[file] + 1], Row::Comment(0));
    assert!(!moved.commented(moved.model.find_new("src/lib.rs", 3).unwrap()));
}

#[test]
fn a_comment_on_a_line_with_a_tab_is_sent_as_in_place() {
    let text = "diff --git a/Makefile b/Makefile\n--- a/Makefile\n+++ b/Makefile\n@@ -1,2 +1,2 @@\n all:\n-\tcc -o a a.c\n+\tcc -O2 -o a a.c\n";
    let mut v = DiffView::new(
        text,
        ReviewMaterial {
            pending: Ok(Vec::new()),
            findings: Vec::new(),
        },
    );
    let at = v.model.find("Makefile", Side::New, 2).unwrap();
    v.cursor = at;
    let comment = ReviewComment::new(v.anchor().unwrap(), "keep -g");
    // At send time the diff is parsed again from git's text.
    let now = DiffModel::parse(text);
    let note = crate::session::review::note("b", "abc1234", &[comment], Some(&now));
    assert!(!note.contains("moved"), "{note}");
    assert!(note.contains("Makefile line 2"), "{note}");
}
