use super::*;

const TEXT: &str = "/work/repo
Compared against: origin/main

diff --git a/src/lib.rs b/src/lib.rs
index 1111111..2222222 100644
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -10,3 +10,4 @@ fn retry()
 let a = 1;
-let cap = 3;
+let cap = 10;
+let per_repo = true;
 let b = 2;
--- x
diff --git a/old.txt b/old.txt
deleted file mode 100644
--- a/old.txt
+++ /dev/null
@@ -1,2 +0,0 @@
-gone one
-gone two
\\ No newline at end of file
diff --git a/new.md b/new.md
new file mode 100644
--- /dev/null
+++ b/new.md
@@ -0,0 +1 @@
+hello
";

#[test]
fn lines_know_their_file_hunk_kind_and_numbers() {
    let m = DiffModel::parse(TEXT);
    assert_eq!(m.files, ["src/lib.rs", "old.txt", "new.md"]);
    assert_eq!(m.hunks.len(), 3);
    assert_eq!(m.lines[0].kind, LineKind::Meta);
    assert_eq!(m.lines[3].kind, LineKind::FileHeader);
    let at = |text: &str| m.lines.iter().position(|l| l.text == text).unwrap();
    let cap = &m.lines[at("+let cap = 10;")];
    assert_eq!(
        (cap.kind, cap.old, cap.new),
        (LineKind::Added, None, Some(11))
    );
    assert_eq!(cap.position(), Some((Side::New, 11)));
    let old = &m.lines[at("-let cap = 3;")];
    assert_eq!(old.position(), Some((Side::Old, 11)));
    let b = &m.lines[at(" let b = 2;")];
    assert_eq!((b.old, b.new), (Some(12), Some(13)));
    // After the hunk's counted lines, `--- x` is a header line, not a removal.
    assert_eq!(m.lines[at("--- x")].kind, LineKind::FileHeader);
    let gone = &m.lines[at("-gone two")];
    assert_eq!(m.path_of(gone), Some("old.txt"));
    assert_eq!(gone.position(), Some((Side::Old, 2)));
    assert_eq!(
        m.lines[at("\\ No newline at end of file")].kind,
        LineKind::NoNewline
    );
    let hello = &m.lines[at("+hello")];
    assert_eq!((m.path_of(hello), hello.new), (Some("new.md"), Some(1)));
    assert_eq!(m.hunk_header(at("+hello")), Some("@@ -0,0 +1 @@"));
}

#[test]
fn lines_are_found_by_path_side_and_number() {
    let m = DiffModel::parse(TEXT);
    let i = m.find("src/lib.rs", Side::New, 12).unwrap();
    assert_eq!(m.lines[i].text, "+let per_repo = true;");
    assert_eq!(
        m.find("src/lib.rs", Side::Old, 11)
            .map(|i| &m.lines[i].text[..]),
        Some("-let cap = 3;")
    );
    assert_eq!(m.find("src/lib.rs", Side::New, 400), None);
    assert_eq!(m.find("nope.rs", Side::New, 1), None);
    assert_eq!(m.find_new("src/lib.rs", 0), None);
    assert_eq!(
        m.file_start("new.md").map(|i| m.lines[i].kind),
        Some(LineKind::FileHeader)
    );
}

#[test]
fn context_is_at_most_six_lines_of_the_same_hunk() {
    let m = DiffModel::parse(TEXT);
    let i = m.find("src/lib.rs", Side::New, 12).unwrap();
    let ctx = m.context(i);
    assert!(ctx.len() <= CONTEXT_LINES);
    assert_eq!(
        ctx,
        [
            " let a = 1;",
            "-let cap = 3;",
            "+let cap = 10;",
            "+let per_repo = true;",
            " let b = 2;"
        ]
    );
    let hello = m.find("new.md", Side::New, 1).unwrap();
    assert_eq!(m.context(hello), ["+hello"]);
    assert!(m.context(0).is_empty(), "a header line has no context");
}

#[test]
fn anything_parses_without_numbers_it_cannot_read() {
    for text in [
        "",
        "\n\n",
        "@@ -x +y @@\n+a",
        "diff --git\n@@ garbage @@\n+a\n-b",
        "+only",
    ] {
        let m = DiffModel::parse(text);
        assert_eq!(m.lines.len(), text.split('\n').count());
    }
    let m = DiffModel::parse("diff --git a/x b/x\n@@ garbage @@\n+a");
    assert!(m.lines.iter().all(|l| l.position().is_none()));
}
