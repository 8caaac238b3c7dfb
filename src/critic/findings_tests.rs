use super::*;
use std::fs;

/// A worktree with `src/lib.rs` (5 lines), `README.md` (2 lines, no final newline) and
/// an empty file; a directory beside it holds a secret file.
fn worktree() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("wt");
    fs::create_dir_all(root.join("src")).unwrap();
    fs::write(root.join("src/lib.rs"), "a\nb\nc\nd\ne\n").unwrap();
    fs::write(root.join("README.md"), "one\ntwo").unwrap();
    fs::write(root.join("empty.txt"), "").unwrap();
    fs::write(dir.path().join("secret.txt"), "s\n".repeat(100)).unwrap();
    (dir, root)
}

fn place(path: &str, line: u64) -> Named {
    Named {
        path: path.into(),
        line,
        end_line: None,
        column: None,
        severity: Severity::Note,
        message: "m".into(),
        in_output: true,
    }
}

#[test]
fn text_lines_of_the_compilers_form() {
    let output = "Review:\n\
        src/lib.rs:3: the loop never ends\n\
        \x20 src/lib.rs:4:7: warning: unused variable\n\
        ./README.md:2:1: error: typo\n\
        https://example.com:443: not a place\n\
        src/lib.rs:x: not a number\n\
        src/lib.rs:2:no space after the colon\n\
        a path with space.rs:1: no\n\
        src/lib.rs:5:   \n\
        src/lib.rs:1: fatal: stop\r\n";
    let found = named(output, None);
    let got: Vec<(&str, u64, Option<u64>, Severity, &str)> = found
        .iter()
        .map(|n| {
            (
                n.path.as_str(),
                n.line,
                n.column,
                n.severity,
                n.message.as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("src/lib.rs", 3, None, Severity::Note, "the loop never ends"),
            (
                "src/lib.rs",
                4,
                Some(7),
                Severity::Warning,
                "unused variable"
            ),
            ("./README.md", 2, Some(1), Severity::Error, "typo"),
            ("src/lib.rs", 1, None, Severity::Error, "stop"),
        ]
    );
    assert!(found.iter().all(|n| n.in_output));
}

#[test]
fn json_findings_with_their_optional_keys() {
    let stdout = r#"{"result":"see below","findings":[
        {"path":"src/lib.rs","line":2,"endLine":4,"severity":"warning","message":"range"},
        {"file":"README.md","line":1,"message":"no severity","severity":"loud"},
        {"path":"src/lib.rs","line":"3","message":"line is a string"},
        {"path":"src/lib.rs","line":3},
        {"path":"src/lib.rs","line":3,"message":"   "},
        "not an object",
        {"path":"src/lib.rs","line":-1,"message":"negative"}
    ]}"#;
    let found = named("see below", Some(stdout));
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(
        (found[0].end_line, found[0].severity),
        (Some(4), Severity::Warning)
    );
    assert_eq!(
        (found[1].path.as_str(), found[1].severity),
        ("README.md", Severity::Note)
    );
    assert!(found.iter().all(|n| !n.in_output));
    // Not a JSON critic: the array is not read.
    assert!(named("see below", None).is_empty());
    // JSON Lines: the last line with findings.
    let lines =
        "{\"type\":\"x\"}\n{\"findings\":[{\"path\":\"a\",\"line\":1,\"message\":\"last\"}]}";
    assert_eq!(named("", Some(lines))[0].message, "last");
}

#[test]
fn paths_out_of_the_worktree_are_refused() {
    let (dir, root) = worktree();
    std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("out.txt")).unwrap();
    std::os::unix::fs::symlink(dir.path(), root.join("up")).unwrap();
    std::os::unix::fs::symlink("src/lib.rs", root.join("in.rs")).unwrap();
    let secret = dir.path().join("secret.txt").display().to_string();
    let names = [
        "../secret.txt",
        "../../etc/passwd",
        "src/../../secret.txt",
        "/etc/passwd",
        secret.as_str(),
        "out.txt",
        "up/secret.txt",
        "src",
        "missing.rs",
        "",
        "src/lib\u{1b}[2J.rs",
    ];
    let checked = check(names.iter().map(|p| place(p, 1)).collect(), &root);
    assert!(checked.findings.is_empty(), "{:?}", checked.findings);
    assert_eq!(checked.refused.len(), names.len());
    // A symlink that stays inside is followed; the path is kept as the critic named it.
    let checked = check(vec![place("in.rs", 5), place("./src//lib.rs", 1)], &root);
    let paths: Vec<&str> = checked.findings.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["in.rs", "src/lib.rs"]);
}

#[test]
fn lines_the_file_does_not_have_are_refused() {
    let (_dir, root) = worktree();
    let mut range = place("src/lib.rs", 2);
    range.end_line = Some(9);
    let mut good_range = place("src/lib.rs", 2);
    good_range.end_line = Some(5);
    good_range.message = "other".into();
    let checked = check(
        vec![
            place("src/lib.rs", 0),
            place("src/lib.rs", 6),
            place("src/lib.rs", u64::from(u32::MAX) + 1),
            place("README.md", 3),
            place("empty.txt", 1),
            place("src/lib.rs", 5),
            place("README.md", 2),
            range,
            good_range,
        ],
        &root,
    );
    let kept: Vec<(String, Option<u32>)> = checked
        .findings
        .iter()
        .map(|f| (f.place(), f.end_line))
        .collect();
    assert_eq!(
        kept,
        [
            ("src/lib.rs:5".to_string(), None),
            ("README.md:2".to_string(), None),
            ("src/lib.rs:2".to_string(), None),
            ("src/lib.rs:2-5".to_string(), Some(5)),
        ]
    );
    assert_eq!(checked.refused.len(), 5);
}

#[test]
fn ten_thousand_findings_are_capped_and_the_rest_noted() {
    let (_dir, root) = worktree();
    let output: String = (0..10_000)
        .map(|i| format!("src/lib.rs:{}: finding {i}\n", i % 5 + 1))
        .collect();
    let checked = check(named(&output, None), &root);
    assert_eq!(checked.findings.len(), MAX_FINDINGS);
    assert_eq!(checked.dropped, 10_000 - MAX_FINDINGS);
    let note = output_note(&checked);
    assert!(
        note.contains(&format!(
            "{} more findings were not kept: at most {MAX_FINDINGS} per round",
            10_000 - MAX_FINDINGS
        )),
        "{note}"
    );
    // Refused JSON places are listed, capped too; text ones are in the output already.
    let json: Vec<String> = (0..1_000)
        .map(|i| format!(r#"{{"path":"../x{i}","line":1,"message":"m{i}"}}"#))
        .collect();
    let stdout = format!(r#"{{"result":"r","findings":[{}]}}"#, json.join(","));
    let checked = check(named("../y:1: text\n", Some(&stdout)), &root);
    assert_eq!(checked.refused.len(), 1_001);
    let note = output_note(&checked);
    assert!(note.contains("../x0:1: m0\n"), "{note}");
    assert!(!note.contains("../y:1"), "{note}");
    assert!(note.contains(&format!("{} more not listed", 1_000 - MAX_FINDINGS)));
}

#[test]
fn messages_are_inert_and_bounded() {
    let (_dir, root) = worktree();
    let mut hostile = place("src/lib.rs", 1);
    hostile.message = "clear\u{1b}[2J\u{1b}]0;title\u{7} \u{9b}31m red\u{200b} done".into();
    let mut long = place("src/lib.rs", 2);
    long.message = "x".repeat(MAX_MESSAGE_CHARS + 10);
    let checked = check(vec![hostile, long], &root);
    let message = &checked.findings[0].message;
    assert!(
        !message.chars().any(|c| c.is_control() || c == '\u{200b}'),
        "{message:?}"
    );
    assert!(message.starts_with("clear[2J]0;title"), "{message:?}");
    assert_eq!(
        checked.findings[1].message.chars().count(),
        MAX_MESSAGE_CHARS + 1
    );
}

#[test]
fn relative_paths() {
    let cases: &[(&str, Option<&str>)] = &[
        ("src/a.rs", Some("src/a.rs")),
        ("./src/./a.rs", Some("src/a.rs")),
        ("src//a.rs", Some("src/a.rs")),
        ("..", None),
        ("a/../b", None),
        ("/abs", None),
        (".", None),
        ("", None),
        ("a\nb", None),
    ];
    for (path, expected) in cases {
        assert_eq!(relative(path).as_deref(), *expected, "{path:?}");
    }
}

#[test]
fn a_missing_worktree_keeps_nothing() {
    let checked = check(vec![place("a", 1)], Path::new("/nonexistent/the-loop/wt"));
    assert!(checked.findings.is_empty());
    assert_eq!(checked.refused.len(), 1);
}

#[test]
fn at_most_max_paths_are_looked_up() {
    let (_dir, root) = worktree();
    let mut places: Vec<Named> = (0..MAX_PATHS)
        .map(|i| place(&format!("missing{i}.rs"), 1))
        .collect();
    places.push(place("src/lib.rs", 1));
    let checked = check(places, &root);
    assert!(
        checked.findings.is_empty(),
        "a path past the limit is not looked up"
    );
    assert_eq!(checked.refused.len(), MAX_PATHS + 1);
    // A path looked up before the limit is still known after it.
    let mut places = vec![place("src/lib.rs", 1)];
    places.extend((0..MAX_PATHS).map(|i| place(&format!("missing{i}.rs"), 1)));
    places.push(place("src/lib.rs", 2));
    let checked = check(places, &root);
    assert_eq!(checked.findings.len(), 2);
}
