//! The exact argv of every tmux call, and the output parsers.

use super::*;
use crate::tmux::Paste;
use std::path::PathBuf;

fn sock() -> Socket {
    Socket::Name("s1".into())
}

fn pane() -> PaneId {
    PaneId::parse("%7").unwrap()
}

fn buffer() -> BufferName {
    BufferName::new("the-loop-abc").unwrap()
}

fn spec(argv: &[&str]) -> SpawnSpec {
    SpawnSpec {
        name: "loop-octo-repo-15".into(),
        cwd: PathBuf::from("/src/repo"),
        env: vec![
            ("THE_LOOP_WORK_ITEM".into(), "github:octo/repo#15".into()),
            ("THE_LOOP_HOME".into(), "/state".into()),
        ],
        argv: argv.iter().map(|s| s.to_string()).collect(),
        remain_on_exit: true,
        private_files: false,
    }
}

#[test]
fn socket_options() {
    assert!(socket_args(&Socket::Default).is_empty());
    assert_eq!(socket_args(&sock()), ["-L", "s1"]);
    assert_eq!(
        socket_args(&Socket::Path("/tmp/x.sock".into())),
        ["-S", "/tmp/x.sock"]
    );
}

#[test]
fn new_session_argv() {
    let argv = new_session(&sock(), &spec(&["claude", "--session-id", "u1", "fix it"])).unwrap();
    assert_eq!(
        argv,
        [
            "-L",
            "s1",
            "new",
            "-d",
            "-P",
            "-c",
            "/src/repo",
            "-e",
            "THE_LOOP_WORK_ITEM=github:octo/repo#15",
            "-e",
            "THE_LOOP_HOME=/state",
            "-F",
            "#{pane_id}",
            "-s",
            "loop-octo-repo-15",
            "--",
            "claude",
            "--session-id",
            "u1",
            "fix it",
            ";",
            "set",
            "-t",
            "=loop-octo-repo-15:",
            "remain-on-exit",
            "on",
        ]
    );
}

#[test]
fn new_session_without_remain_on_exit_is_one_command() {
    let mut s = spec(&["a", "b"]);
    s.remain_on_exit = false;
    let argv = new_session(&Socket::Default, &s).unwrap();
    assert_eq!(argv.last().map(String::as_str), Some("b"));
    assert!(!argv.iter().any(|w| w == ";"));
}

#[test]
fn one_word_commands_do_not_go_through_a_shell() {
    let argv = new_session(&Socket::Default, &spec(&["cat"])).unwrap();
    let dashdash = argv.iter().position(|w| w == "--").unwrap();
    assert_eq!(&argv[dashdash + 1..dashdash + 4], ["env", "--", "cat"]);
    assert!(new_session(&Socket::Default, &spec(&["A=b"])).is_err());
    assert!(new_session(&Socket::Default, &spec(&[])).is_err());
}

#[test]
fn arguments_ending_in_semicolon_are_escaped() {
    let argv = new_session(&Socket::Default, &spec(&["prog", "fix it;", ";", "a\\;"])).unwrap();
    let dashdash = argv.iter().position(|w| w == "--").unwrap();
    assert_eq!(
        &argv[dashdash + 1..dashdash + 5],
        ["prog", "fix it\\;", "\\;", "a\\\\;"]
    );
    // the only unescaped separator is ours, before set-option
    assert_eq!(argv.iter().filter(|w| *w == ";").count(), 1);
    assert_eq!(escape_separator("a;b"), "a;b");
}

#[test]
fn bad_environment_names_are_refused() {
    let mut s = spec(&["a", "b"]);
    s.env.push(("A=B".into(), "c".into()));
    assert!(matches!(
        new_session(&Socket::Default, &s),
        Err(Error::InvalidSpawn(_))
    ));
}

#[test]
fn liveness_kill_and_list_argv() {
    assert_eq!(
        liveness(&sock(), "loop-a"),
        [
            "-L",
            "s1",
            "lsp",
            "-s",
            "-F",
            "#{pane_dead}",
            "-t",
            "=loop-a:"
        ]
    );
    assert_eq!(
        kill_session(&sock(), "loop-a"),
        ["-L", "s1", "kill-session", "-t", "=loop-a"]
    );
    assert_eq!(
        list_sessions(&Socket::Default),
        [
            "lsp",
            "-a",
            "-F",
            "#{pane_id} #{pane_dead} #{window_activity} #{session_name}"
        ]
    );
}

#[test]
fn delete_buffer_argv() {
    assert_eq!(
        delete_buffer(&sock(), &buffer()),
        ["-L", "s1", "deleteb", "-b", "the-loop-abc"]
    );
}

#[test]
fn paste_loads_from_stdin_and_checks_for_a_dead_pane_in_the_same_command() {
    assert_eq!(
        paste_text(&sock(), &buffer(), &pane(), Paste::Bracketed),
        [
            "-L",
            "s1",
            "loadb",
            "-b",
            "the-loop-abc",
            "-",
            ";",
            "if",
            "-F",
            "-t",
            "%7",
            "#{pane_dead}",
            "display-message -p the-loop:pane-dead",
            "pasteb -d -p -r -b the-loop-abc -t %7",
        ]
    );
    let plain = paste_text(&sock(), &buffer(), &pane(), Paste::Plain);
    assert_eq!(
        plain.last().map(String::as_str),
        Some("pasteb -d -r -b the-loop-abc -t %7")
    );
}

#[test]
fn capture_and_display_argv() {
    assert_eq!(
        capture_pane(&sock(), &pane(), true),
        ["-L", "s1", "capturep", "-e", "-p", "-t", "%7"]
    );
    assert_eq!(
        capture_pane(&sock(), &pane(), false),
        ["-L", "s1", "capturep", "-p", "-t", "%7"]
    );
    assert_eq!(
        display(&sock(), &pane(), "#{window_activity}"),
        [
            "-L",
            "s1",
            "display",
            "-p",
            "-t",
            "%7",
            "#{window_activity}"
        ]
    );
}

#[test]
fn liveness_truth_table() {
    assert_eq!(parse_liveness("0\n"), Ok(Liveness::Live));
    assert_eq!(parse_liveness("1\n0\n"), Ok(Liveness::Live));
    assert_eq!(parse_liveness("1\n"), Ok(Liveness::Dead));
    assert_eq!(parse_liveness("1\n1\n"), Ok(Liveness::Dead));
    assert!(parse_liveness("").is_err());
    assert!(parse_liveness("yes\n").is_err());
}

#[test]
fn sessions_are_grouped_and_names_keep_spaces() {
    let out = "%1 1 100 loop-a\n%2 0 120 loop-a\n%3 1 90 my session\n";
    let sessions = parse_sessions(out).unwrap();
    assert_eq!(sessions.len(), 2);
    assert_eq!(sessions[0].name, "loop-a");
    assert_eq!(sessions[0].pane.as_str(), "%1");
    assert_eq!(sessions[0].liveness, Liveness::Live);
    assert_eq!(sessions[0].activity, 120, "the latest over the panes");
    assert_eq!(sessions[1].name, "my session");
    assert_eq!(sessions[1].liveness, Liveness::Dead);
    assert_eq!(sessions[1].activity, 90);
    assert!(parse_sessions("garbage").is_err());
    assert!(parse_sessions("%1 0 soon loop-a").is_err());
    assert_eq!(parse_sessions("").unwrap(), vec![]);
}

#[test]
fn missing_is_told_apart_from_other_failures() {
    assert!(is_missing("can't find session: loop-a"));
    assert!(is_missing("can't find pane: %9"));
    assert!(is_missing("no server running on /tmp/tmux-0/x"));
    assert!(is_missing("no current target"));
    assert!(is_missing(
        "error connecting to /tmp/tmux-0/x (No such file or directory)"
    ));
    assert!(!is_missing(
        "error connecting to /tmp/tmux-0/x (Permission denied)"
    ));
    assert!(!is_missing("server exited unexpectedly"));
    assert!(is_missing(
        "error connecting to /tmp/tmux-0/x (Connection refused)"
    ));
}

#[test]
fn pane_id_parse_from_output() {
    assert_eq!(parse_pane_id("%12\n").unwrap().as_str(), "%12");
    assert!(parse_pane_id("").is_err());
}

#[test]
fn long_words_are_shortened_in_messages() {
    let shown = display_command("tmux", &["load-buffer".into(), "x".repeat(100)]);
    assert!(shown.len() < 80, "{shown}");
}

#[test]
fn shown_commands_elide_environment_values() {
    let args: Vec<String> = [
        "new-session",
        "-e",
        "GH_TOKEN=ghp_passed_on_purpose",
        "-s",
        "a=b",
    ]
    .map(String::from)
    .to_vec();
    let shown = display_command("tmux", &args);
    assert_eq!(shown, "tmux new-session -e GH_TOKEN=… -s a=b");
}

#[test]
fn attach_outside_tmux_attaches() {
    let plan = attach(&Socket::Name("s".into()), "loop-a", false, None);
    assert_eq!(plan.args, ["-L", "s", "attach-session", "-t", "=loop-a"]);
    assert!(!plan.unset_tmux);
    let plan = attach(&Socket::Default, "loop-a", true, Some(""));
    assert_eq!(plan.args, ["attach-session", "-t", "=loop-a", "-r"]);
}

#[test]
fn inside_the_same_server_switches_client() {
    let env = "/tmp/tmux-1000/s,4242,0";
    let plan = attach(&Socket::Name("s".into()), "loop-a", false, Some(env));
    assert_eq!(plan.args, ["-L", "s", "switch-client", "-t", "=loop-a"]);
    assert!(!plan.unset_tmux);
    let plan = attach(
        &Socket::Default,
        "loop-a",
        false,
        Some("/tmp/tmux-0/default,1,2"),
    );
    assert_eq!(plan.args, ["switch-client", "-t", "=loop-a"]);
}

#[test]
fn read_only_or_another_server_nests_with_tmux_unset() {
    let env = "/tmp/tmux-1000/s,4242,0";
    let plan = attach(&Socket::Name("s".into()), "loop-a", true, Some(env));
    assert_eq!(
        plan.args,
        ["-L", "s", "attach-session", "-t", "=loop-a", "-r"]
    );
    assert!(plan.unset_tmux);
    let plan = attach(&Socket::Name("other".into()), "loop-a", false, Some(env));
    assert_eq!(
        plan.args,
        ["-L", "other", "attach-session", "-t", "=loop-a"]
    );
    assert!(plan.unset_tmux);
}
