//! `the-loop exec-env` (hidden), the real binary: a session's first process when it is
//! handed passed values. It takes the private file once and becomes the program with
//! the values; it refuses a file others could read, and says when the program is missing.
//! With `--private` (a session in a worktree the-loop made) the program runs under umask
//! 077, whatever umask the tmux server handed down.

use assert_cmd::Command;
use std::os::unix::fs::PermissionsExt;
use the_loop::tmux::env_handoff::EnvHandoff;

fn wrapped(dir: &std::path::Path, program: &[&str]) -> (Vec<String>, std::path::PathBuf) {
    let handoff = EnvHandoff::new(env!("CARGO_BIN_EXE_the-loop"), dir.join("spawn-env"));
    let values = [(
        "PASSED_SECRET".to_string(),
        "s3cret value\nline 2".to_string(),
    )];
    let argv: Vec<String> = program.iter().map(|s| s.to_string()).collect();
    let (argv, file) = handoff.wrap(&values, false, &argv).unwrap();
    (argv, file.expect("a file for the values"))
}

fn run(argv: &[String]) -> std::process::Output {
    Command::new(&argv[0])
        .args(&argv[1..])
        .env_remove("PASSED_SECRET")
        .output()
        .unwrap()
}

#[test]
fn the_program_runs_with_the_values_and_the_file_is_taken_once() {
    let dir = tempfile::tempdir().unwrap();
    let (argv, file) = wrapped(dir.path(), &["printenv", "PASSED_SECRET"]);
    let out = run(&argv);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "s3cret value\nline 2\n"
    );
    assert!(!file.exists(), "taken");
    // A second start of the same argv finds nothing to take and runs nothing.
    let again = run(&argv);
    assert_eq!(again.status.code(), Some(1), "{again:?}");
    assert!(again.stdout.is_empty());
    assert!(
        String::from_utf8_lossy(&again.stderr)
            .contains("cannot read the session's environment file")
    );
}

#[test]
fn a_file_others_can_read_is_refused_and_nothing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (argv, file) = wrapped(dir.path(), &["printenv", "PASSED_SECRET"]);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    let out = run(&argv);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(out.stdout.is_empty(), "the program did not run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not a private file"), "{stderr}");
    assert!(!stderr.contains("s3cret"), "{stderr}");
}

#[test]
fn a_missing_program_exits_127_with_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let (argv, file) = wrapped(dir.path(), &["the-loop-no-such-harness", "--x"]);
    let out = run(&argv);
    assert_eq!(out.status.code(), Some(127), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot run the-loop-no-such-harness"),
        "{stderr}"
    );
    assert!(!stderr.contains("s3cret"), "{stderr}");
    assert!(!file.exists(), "taken before the program was looked up");
}

/// `the-loop` under umask `mask` (`sh` sets it and execs, as a tmux server started by
/// an operator with that umask would start a pane).
fn under_umask(mask: &str, argv: &[String]) -> std::process::Output {
    Command::new("sh")
        .args(["-c", r#"umask "$1" && shift && exec "$0" "$@""#])
        .arg(&argv[0])
        .arg(mask)
        .args(&argv[1..])
        .output()
        .unwrap()
}

#[test]
fn a_private_session_runs_under_umask_077_and_writes_private_files() {
    let dir = tempfile::tempdir().unwrap();
    let handoff = EnvHandoff::new(env!("CARGO_BIN_EXE_the-loop"), dir.path().join("spawn-env"));
    let made = dir.path().join("made-by-the-agent");
    let script = format!("umask; mkdir '{0}' && echo x > '{0}/file'", made.display());
    let argv: Vec<String> = ["sh", "-c", &script].map(String::from).to_vec();
    let (wrapped, file) = handoff.wrap(&[], true, &argv).unwrap();
    assert_eq!(file, None, "nothing to hand over");
    let out = under_umask("000", &wrapped);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "0077");
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&made), 0o700);
    assert_eq!(mode(&made.join("file")), 0o600);

    // Without the flag the umask it was started with stays (the operator's panes).
    let (plain, _) = handoff
        .wrap(
            &[("A".into(), "1".into())],
            false,
            &["sh".into(), "-c".into(), "umask".into()],
        )
        .unwrap();
    let out = under_umask("022", &plain);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "0022");
}
