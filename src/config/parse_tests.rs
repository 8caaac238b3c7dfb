//! One case per error class: each asserts the file, line, column, key path and the
//! gist of the message, through the rendered text an operator reads.

use super::*;
use crate::config::{ConfigError, SpawnPolicy};

const FILE: &str = "/etc/op/config.yaml";

/// Parses `text` and returns the rendered diagnostics (one per line).
fn errors_of(text: &str) -> Vec<String> {
    match parse_str(text, Path::new(FILE)) {
        Ok(config) => panic!("expected an error for {text:?}, got {config:?}"),
        Err(ConfigError::Invalid { path, diagnostics }) => {
            assert_eq!(path, Path::new(FILE));
            diagnostics.iter().map(ToString::to_string).collect()
        }
        Err(other) => panic!("expected Invalid, got {other:?}"),
    }
}

/// `(text, line, column, key path, fragment of the message)`.
type Case = (&'static str, usize, usize, &'static str, &'static str);

fn assert_cases(cases: &[Case]) {
    for &(text, line, column, key_path, fragment) in cases {
        let errors = errors_of(text);
        assert_eq!(errors.len(), 1, "{text:?} gave {errors:#?}");
        let prefix = format!("{FILE}:{line}:{column}: {key_path}: ");
        assert!(
            errors[0].starts_with(&prefix),
            "{text:?}\n  got:      {}\n  expected: {prefix}…",
            errors[0]
        );
        assert!(
            errors[0].contains(fragment),
            "{text:?}: {:?} lacks {fragment:?}",
            errors[0]
        );
        assert!(
            !errors[0].contains(" at line "),
            "position repeated: {}",
            errors[0]
        );
    }
}

#[test]
fn yaml_syntax_errors_are_located() {
    assert_cases(&[
        (
            "routing:\n\tspawn: never\n",
            2,
            1,
            "routing",
            "invalid YAML: found character that cannot start any token",
        ),
        (
            "polling:\n  enabled: true\n enabled: false\n",
            3,
            2,
            // The line is indented like no open mapping: the root mapping expected a key.
            "(top level)",
            "invalid YAML: did not find expected key",
        ),
        (
            "routing:\n  keywords: {start: go\n",
            3,
            1,
            "routing.keywords",
            "invalid YAML: did not find expected ',' or '}', while parsing a flow mapping",
        ),
    ]);
}

#[test]
fn unknown_keys_are_rejected_with_their_full_path() {
    assert_cases(&[
        (
            "routing:\n  keywords:\n    strat: go\n",
            3,
            5,
            "routing.keywords.strat",
            "unknown field `strat`, expected one of `start`, `stop`, `pause`, `resume`",
        ),
        (
            "gihtub:\n  apiUrl: x\n",
            1,
            1,
            "gihtub",
            "unknown field `gihtub`",
        ),
        (
            "repos:\n  - name: a/b\n    lable: x\n",
            3,
            5,
            "repos[0].lable",
            "unknown field `lable`",
        ),
        (
            "sessions:\n  harnesses:\n    mine:\n      command: x\n      argv: []\n",
            5,
            7,
            "sessions.harnesses.mine.argv",
            "unknown field `argv`",
        ),
    ]);
}

#[test]
fn wrong_types_say_what_was_expected() {
    assert_cases(&[
        (
            "polling:\n  intervalSeconds: soon\n",
            2,
            20,
            "polling.intervalSeconds",
            "invalid type: string \"soon\", expected a whole number (0 or more)",
        ),
        (
            "polling: {maxRetries: -1}\n",
            1,
            23,
            "polling.maxRetries",
            "expected a whole number",
        ),
        (
            "sessions:\n  holdNotifySeconds: -5\n",
            2,
            22,
            "sessions.holdNotifySeconds",
            "expected a whole number (0 or more)",
        ),
        (
            "routing:\n  authorizedUsers: alice\n",
            2,
            20,
            "routing.authorizedUsers",
            "expected a list",
        ),
        (
            "server:\n  enabled: yes\n",
            2,
            12,
            "server.enabled",
            "expected true or false",
        ),
        (
            "critics:\n  name: x\n",
            2,
            3,
            "critics",
            "invalid type: map, expected a list",
        ),
        (
            "routing: [a]\n",
            1,
            10,
            "routing",
            "expected a mapping of `key: value` entries",
        ),
        (
            "repos:\n  - label: x\n",
            2,
            5,
            "repos[0]",
            "missing field `name`",
        ),
        ("- a\n", 1, 1, "(top level)", "expected a mapping"),
    ]);
}

#[test]
fn invalid_enum_values_list_the_choices() {
    assert_cases(&[
        (
            "routing:\n  spawn: always\n",
            2,
            10,
            "routing.spawn",
            "unknown variant `always`, expected one of `command`, `labeled`, `never`",
        ),
        (
            "tui:\n  notify: email\n",
            2,
            11,
            "tui.notify",
            "unknown variant `email`, expected one of `bell`, `desktop`, `none`",
        ),
    ]);
}

#[test]
fn semantic_rules_are_located_like_type_errors() {
    assert_cases(&[
        (
            "repos:\n  - name: o/r\n    baseBranch: -main\n",
            3,
            17,
            "repos[0].baseBranch",
            "may not start with `-`",
        ),
        (
            "repos:\n  - name: o/r\n    setup: [[npm, ci], []]\n",
            3,
            24,
            "repos[0].setup[1]",
            "an empty command",
        ),
        (
            "repos:\n  - name: o/r\n    setup: [[\"npm ci\"]]\n",
            3,
            14,
            "repos[0].setup[0][0]",
            "a command is one executable",
        ),
        (
            "repos:\n  - name: o/r\n    setup: [[make, \"-C{worktre}\"]]\n",
            3,
            20,
            "repos[0].setup[0][1]",
            "unknown placeholder `{worktre}`; the known ones are {worktree}, {repoPath}, {branch}",
        ),
        (
            "repos:\n  - name: o/r\n    setupTimeoutSeconds: 0\n",
            3,
            26,
            "repos[0].setupTimeoutSeconds",
            "must be greater than 0",
        ),
        (
            "repos:\n  - name: o/r\n    workspace: worktrees\n",
            3,
            16,
            "repos[0].workspace",
            "auto",
        ),
        (
            "polling:\n  intervalSeconds: 2\n",
            2,
            20,
            "polling.intervalSeconds",
            "must be at least 5 seconds, got 2",
        ),
        (
            "repos:\n  - name: octo\n",
            2,
            11,
            "repos[0].name",
            "expected `owner/name` (e.g. `octo/repo`), got `octo`",
        ),
        (
            "repos:\n  - name: a/b/c\n",
            2,
            11,
            "repos[0].name",
            "expected `owner/name`",
        ),
        (
            "repos:\n  - name: octo/repo\n  - name: x/y\n  - name: Octo/Repo\n",
            4,
            11,
            "repos[2].name",
            "already listed at repos[0]",
        ),
        (
            "server:\n  listen: localhost\n",
            2,
            11,
            "server.listen",
            "expected an IP address and port such as `127.0.0.1:8787`",
        ),
        (
            "server:\n  listen: 0.0.0.0:8787\n",
            2,
            11,
            "server.listen",
            "not a loopback address; set `server.exposed: true`",
        ),
        (
            "server:\n  webhookPath: gh-webhook\n",
            2,
            16,
            "server.webhookPath",
            "must start with `/`",
        ),
        (
            "server:\n  maxBodyBytes: 0\n",
            2,
            17,
            "server.maxBodyBytes",
            "must be greater than 0",
        ),
        (
            "server:\n  maxConnections: 0\n",
            2,
            19,
            "server.maxConnections",
            "must be greater than 0",
        ),
        (
            "sessions:\n  tmux:\n    probeTimeoutSeconds: 0\n",
            3,
            26,
            "sessions.tmux.probeTimeoutSeconds",
            "must be greater than 0",
        ),
        (
            "sessions:\n  commentsPerMinute: 0\n",
            2,
            22,
            "sessions.commentsPerMinute",
            "must be between 1 and 60",
        ),
        (
            "sessions:\n  commentsPerMinute: 61\n",
            2,
            22,
            "sessions.commentsPerMinute",
            "must be between 1 and 60",
        ),
        (
            "sessions:\n  passEnv: [GH_TOKEN, 'GH_TOKEN=ghp_x']\n",
            2,
            23,
            "sessions.passEnv[1]",
            "not an environment variable name (it holds `=`, a space or NUL)",
        ),
        (
            "routing:\n  authorizedUsers: [alice, '@']\n",
            2,
            28,
            "routing.authorizedUsers[1]",
            "an empty login matches nobody",
        ),
        (
            "sessions:\n  harness: aider\n",
            2,
            12,
            "sessions.harness",
            "unknown harness `aider`; expected a built-in (`claude`, `codex`, `cursor`, `opencode`) or a key of sessions.harnesses (none defined)",
        ),
        (
            "repos:\n  - {name: octo/repo, harness: aider}\n",
            2,
            32,
            "repos[0].harness",
            "unknown harness `aider`; expected a built-in (`claude`, `codex`, `cursor`, `opencode`)",
        ),
        (
            "sessions:\n  harnesses:\n    mine:\n      command: 'my-agent --fast'\n",
            4,
            16,
            "sessions.harnesses.mine.command",
            "a command is one executable; put its arguments in args",
        ),
        (
            "sessions:\n  harnesses:\n    mine:\n      args: [x]\n",
            4,
            7,
            // `command` is absent, so the position is that of the entry that lacks it.
            "sessions.harnesses.mine.command",
            "a harness needs `command`",
        ),
    ]);
}

#[test]
fn every_rule_violation_is_reported_in_file_order() {
    let errors = errors_of(
        "server:\n  webhookPath: x\npolling:\n  intervalSeconds: 1\nrouting:\n  authorizedUsers: ['']\n",
    );
    let keys: Vec<&str> = errors
        .iter()
        .map(|e| e.split(": ").next().unwrap_or(""))
        .collect();
    assert_eq!(
        keys,
        [
            format!("{FILE}:2:16"),
            format!("{FILE}:4:20"),
            format!("{FILE}:6:21"),
        ]
    );
}

#[test]
fn valid_variants_of_the_rules_pass() {
    let text = "\
repos:
  - name: octo/repo
  - name: octo/repo.js
  - name: my-org/_private
routing:
  authorizedUsers: ['@Alice', bob]
  spawn: labeled
server:
  listen: '[::1]:9000'
sessions:
  harness: mine
  harnesses:
    mine: {command: /opt/bin/my-agent, args: ['{prompt}']}
polling:
  intervalSeconds: 5
";
    let config = parse_str(text, Path::new(FILE)).unwrap();
    assert_eq!(config.repos.len(), 3);
    assert_eq!(config.routing.spawn, SpawnPolicy::Labeled);
    assert_eq!(config.sessions.harnesses["mine"].args, ["{prompt}"]);

    // A hold notifies after a minute unless told otherwise; 0 never notifies.
    assert_eq!(config.sessions.hold_notify_seconds, 60);
    let off = parse_str("sessions: {holdNotifySeconds: 0}\n", Path::new(FILE)).unwrap();
    assert_eq!(off.sessions.hold_notify_seconds, 0);
    // An agent posts at most 6 comments a minute unless told otherwise.
    assert_eq!(config.sessions.comments_per_minute, 6);
    let more = parse_str("sessions: {commentsPerMinute: 20}\n", Path::new(FILE)).unwrap();
    assert_eq!(more.sessions.comments_per_minute, 20);

    let exposed = "server: {listen: '0.0.0.0:8787', exposed: true}\n";
    assert!(parse_str(exposed, Path::new(FILE)).is_ok());
}

#[test]
fn empty_and_comment_only_files_are_the_defaults() {
    for text in ["", "# nothing yet\n", "routing:\n"] {
        assert_eq!(
            parse_str(text, Path::new(FILE)).unwrap(),
            Config::default(),
            "{text:?}"
        );
    }
}

#[test]
fn critics_stay_raw_values() {
    let config = parse_str(
        "critics:\n  - name: a\n    whatever: [1, 2]\n  - 42\n",
        Path::new(FILE),
    )
    .unwrap();
    assert_eq!(config.critics.len(), 2);
    assert_eq!(config.critics[1], serde_norway::Value::from(42));
}

#[test]
fn a_pass_env_entry_holding_a_value_is_refused_without_repeating_it() {
    let errors = errors_of("sessions:\n  passEnv: ['GH_TOKEN=ghp_secret', 'A B']\n");
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert!(
        errors.iter().all(|e| !e.contains("ghp_secret")),
        "{errors:#?}"
    );
}

/// Every built-in harness is a valid `sessions.harness` and `repos[].harness`, and a
/// repo's own goes over the global one for its items only.
#[test]
fn every_built_in_harness_is_accepted_and_a_repo_names_its_own() {
    for name in crate::config::BUILT_IN_HARNESSES {
        let text = format!(
            "sessions: {{harness: {name}}}\nrepos:\n  - {{name: octo/repo, harness: {name}}}\n"
        );
        assert!(parse_str(&text, Path::new(FILE)).is_ok(), "{name}");
    }
    let config = parse_str(
        "repos:\n  - {name: octo/a, harness: opencode}\n  - {name: octo/b}\n",
        Path::new(FILE),
    )
    .unwrap();
    assert_eq!(config.repos[0].harness.as_deref(), Some("opencode"));
    assert_eq!(config.repos[1].harness, None);
}
