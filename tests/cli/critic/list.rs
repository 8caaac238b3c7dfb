//! `critic list` and the misconfiguration exits: every entry is listed, valid or not;
//! running an invalid one exits 2 with nothing on stdout.

use super::{Home, code, script, stderr};
use serde_json::Value;

fn mixed() -> Home {
    Home::new(&format!(
        "  - {{name: ready, command: {0}, args: ['{{prompt}}']}}\n  - {{name: ghost, command: the-loop-no-such-critic, args: ['{{prompt}}']}}\n  - {{name: typo, command: {0}, args: ['{{prompt}}'], timeout: 5}}\n  - {{harness: claude}}\n  - {{name: off, command: {0}, args: ['{{prompt}}'], enabled: false}}\n  - {{name: twice, command: {0}, args: ['{{prompt}}']}}\n  - {{name: twice, command: {0}, args: ['{{prompt}}']}}\n",
        script("fail.sh")
    ))
}

#[test]
fn list_json_shows_every_entry_with_availability_and_errors() {
    let home = mixed();
    let out = home.run(&["critic", "list", "--format", "json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.len(), 7);
    let row = |i: usize| &rows[i];

    assert_eq!(row(0)["name"], "ready");
    assert_eq!(row(0)["available"], true);
    assert_eq!(row(0)["error"], Value::Null);
    assert_eq!(row(0)["path"], script("fail.sh"));

    assert_eq!(row(1)["valid"], true);
    assert_eq!(row(1)["available"], false);
    assert!(
        row(1)["error"]
            .as_str()
            .unwrap()
            .contains("`the-loop-no-such-critic` is not on PATH")
    );

    assert_eq!(row(2)["name"], "typo");
    assert_eq!(row(2)["valid"], false);
    assert!(
        row(2)["error"]
            .as_str()
            .unwrap()
            .contains("unknown key `timeout`")
    );

    assert_eq!(row(3)["name"], Value::Null);
    assert!(
        row(3)["error"]
            .as_str()
            .unwrap()
            .starts_with("critics[3]: `name` is missing")
    );

    assert_eq!(row(4)["enabled"], false);
    assert_eq!(row(4)["available"], false);

    for i in [5, 6] {
        let error = row(i)["error"].as_str().unwrap();
        assert!(
            error.contains("critics[5] and critics[6] are both called `twice`"),
            "{error}"
        );
    }
}

#[test]
fn list_table_names_status_and_error() {
    let home = mixed();
    let out = home.run(&["critic", "list"]);
    assert_eq!(code(&out), 0);
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 8, "{text}");
    assert!(
        lines[0].starts_with("NAME") && lines[0].contains("STATUS"),
        "{text}"
    );
    assert!(
        lines[1].starts_with("ready") && lines[1].ends_with("ready"),
        "{text}"
    );
    assert!(
        lines[2].contains("unavailable: `the-loop-no-such-critic` is not on PATH"),
        "{text}"
    );
    assert!(
        lines[3].contains("invalid: critic `typo` (critics[2]): unknown key `timeout`"),
        "{text}"
    );
    assert!(
        lines[4].starts_with("critics[3]") && lines[4].contains("invalid:"),
        "{text}"
    );
    assert!(
        lines[5].starts_with("off") && lines[5].ends_with("disabled"),
        "{text}"
    );

    let empty = Home::new("  []\n");
    empty.write_config("critics: []\n");
    let out = empty.run(&["critic", "list"]);
    assert!(
        String::from_utf8(out.stdout)
            .unwrap()
            .contains("no critics configured")
    );
}

#[test]
fn misconfiguration_exits_2_with_nothing_on_stdout() {
    let home = mixed();
    let cases: &[(&[&str], &str)] = &[
        (
            &["critic", "run", "typo", "--prompt", "x"],
            "unknown key `timeout`",
        ),
        (
            &["critic", "run", "twice", "--prompt", "x"],
            "both called `twice`",
        ),
        (
            &["critic", "run", "off", "--prompt", "x"],
            "critic `off` is disabled",
        ),
        (
            &["critic", "run", "nobody", "--prompt", "x"],
            "no critic named `nobody`; configured: ready, ghost, typo, off, twice",
        ),
        (
            &["critic", "run", "ready", "--prompt", " "],
            "the prompt is empty",
        ),
        (
            &["critic", "run", "ready", "--prompt-file", "/no/such/prompt"],
            "cannot read the prompt file /no/such/prompt",
        ),
        (
            &[
                "critic",
                "run",
                "ready",
                "--prompt",
                "x",
                "--cwd",
                "/no/such/dir",
            ],
            "/no/such/dir is not a directory",
        ),
        (
            &[
                "critic",
                "run",
                "ready",
                "--prompt",
                "x",
                "--work-item",
                "octo/repo#1",
            ],
            "--work-item: invalid work-item ref",
        ),
        (
            &["critic", "run", "ready", "--prompt", "x", "--timeout", "0"],
            "--timeout must be a positive number",
        ),
        (&["critic", "run", "ready"], "--prompt"),
        (
            &[
                "critic",
                "run",
                "ready",
                "--prompt",
                "x",
                "--prompt-file",
                "f",
            ],
            "cannot be used with",
        ),
    ];
    for (args, needle) in cases {
        let out = home.run(args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{args:?} printed on stdout");
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
    }

    let bad = Home::new("  - {name: x, command: y, args: ['{prompt}']}\n");
    bad.write_config("critics: {name: x}\n");
    let out = bad.run(&["critic", "list"]);
    assert_eq!(
        code(&out),
        2,
        "a config that does not load: {}",
        stderr(&out)
    );
}
