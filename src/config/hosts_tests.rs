//! `hosts:` and `repos[].host`: parsing, defaults, helpers, and each refusal at its line.

use super::*;
use crate::config::{ConfigError, parse_str};
use std::path::Path;

const FILE: &str = "/etc/op/config.yaml";

const TWO_HOSTS: &str = "\
hosts:
  - name: build-1
    ssh: dev@build-1
  - name: gpu_box
    ssh: ssh://me@gpu.example:2222
    sshConfig: ~/.ssh/config-gpu
    tmux: /opt/tmux/bin/tmux
    stateDir: /srv/the-loop
    connectTimeoutSeconds: 30
    serverAliveSeconds: 60
repos:
  - name: octo/local
    path: ~/src/local
  - name: octo/remote
    path: ~/src/remote
    host: gpu_box
";

#[test]
fn two_hosts_and_a_repo_naming_one() {
    let config = parse_str(TWO_HOSTS, Path::new(FILE)).unwrap();
    assert_eq!(config.hosts.len(), 2);
    assert_eq!(config.hosts[0], HostConfig::new("build-1", "dev@build-1"));
    let gpu = config.host("gpu_box").unwrap();
    assert_eq!(
        *gpu,
        HostConfig {
            name: "gpu_box".into(),
            ssh: "ssh://me@gpu.example:2222".into(),
            ssh_config: Some("~/.ssh/config-gpu".into()),
            tmux: "/opt/tmux/bin/tmux".into(),
            state_dir: "/srv/the-loop".into(),
            connect_timeout_seconds: 30,
            server_alive_seconds: 60,
        }
    );
    assert_eq!(config.repos[1].host.as_deref(), Some("gpu_box"));
    assert_eq!(config.repos[0].host, None);
    assert!(config.host("nope").is_none());
}

#[test]
fn defaults() {
    let config = parse_str("hosts:\n  - name: b\n    ssh: build\n", Path::new(FILE)).unwrap();
    let host = &config.hosts[0];
    assert_eq!(host.ssh_config, None);
    assert_eq!(host.ssh_config_file(), None);
    assert_eq!(host.tmux, "tmux");
    // Kept as written: the remote side expands `~`.
    assert_eq!(host.state_dir, "~/.local/state/the-loop");
    assert_eq!(host.connect_timeout_seconds, 10);
    assert_eq!(host.server_alive_seconds, 15);
    assert!(Config::default().hosts.is_empty());
    assert_eq!(crate::config::RepoConfig::named("o/r").host, None);
}

#[test]
fn host_of_finds_a_remote_repos_host_only() {
    let config = parse_str(TWO_HOSTS, Path::new(FILE)).unwrap();
    assert_eq!(
        config.host_of("octo/remote").map(|h| h.name.as_str()),
        Some("gpu_box")
    );
    // Repo names are case-insensitive, as on GitHub.
    assert_eq!(
        config.host_of("Octo/Remote").map(|h| h.name.as_str()),
        Some("gpu_box")
    );
    assert_eq!(config.host_of("octo/local"), None);
    assert_eq!(config.host_of("octo/unlisted"), None);
}

#[test]
fn a_remote_repos_path_is_not_expanded_here() {
    let config = parse_str(TWO_HOSTS, Path::new(FILE)).unwrap();
    assert!(config.repos[0].working_dir().is_some());
    assert_eq!(config.repos[1].working_dir(), None);
    assert_eq!(config.repos[1].path.as_deref(), Some("~/src/remote"));
    let gpu = config.host("gpu_box").unwrap();
    assert!(!gpu.ssh_config_file().unwrap().starts_with("~"));
}

/// The one diagnostic of `text`: (line, key path, message).
fn refusal(text: &str) -> (usize, String, String) {
    match parse_str(text, Path::new(FILE)) {
        Ok(config) => panic!("expected a refusal of {text:?}, got {config:?}"),
        Err(ConfigError::Invalid { diagnostics, .. }) => {
            assert_eq!(diagnostics.len(), 1, "{text:?} gave {diagnostics:#?}");
            let d = &diagnostics[0];
            let rendered = d.to_string();
            assert!(rendered.starts_with(&format!("{FILE}:")), "{rendered}");
            (
                d.position.unwrap().line,
                d.key_path.clone(),
                d.message.clone(),
            )
        }
        Err(other) => panic!("expected Invalid, got {other:?}"),
    }
}

/// A host entry at line 2 whose line 4 is `line`.
fn host_with(line: &str) -> String {
    format!("hosts:\n  - name: b\n    ssh: build\n    {line}\n")
}

#[test]
fn each_refusal_is_named_at_its_line() {
    let cases: Vec<(String, usize, &str, &str)> = vec![
        (
            "hosts:\n  - name: ''\n    ssh: x\n".into(),
            2,
            "hosts[0].name",
            "must be 1 to 32 characters",
        ),
        (
            format!("hosts:\n  - name: {}\n    ssh: x\n", "a".repeat(33)),
            2,
            "hosts[0].name",
            "got 33",
        ),
        (
            "hosts:\n  - name: build.1\n    ssh: x\n".into(),
            2,
            "hosts[0].name",
            "only letters, digits, `-` and `_`",
        ),
        (
            "hosts:\n  - name: Local\n    ssh: x\n".into(),
            2,
            "hosts[0].name",
            "reserved for this machine",
        ),
        (
            "hosts:\n  - name: a\n    ssh: x\n  - name: b\n    ssh: y\n  - name: A\n    ssh: z\n"
                .into(),
            6,
            "hosts[2].name",
            "already the name of hosts[0]",
        ),
        (
            "hosts:\n  - name: b\n    ssh: ''\n".into(),
            3,
            "hosts[0].ssh",
            "empty",
        ),
        (
            "hosts:\n  - name: b\n    ssh: -oProxyCommand=touch\n".into(),
            3,
            "hosts[0].ssh",
            "may not start with `-`",
        ),
        (
            "hosts:\n  - name: b\n    ssh: 'dev@build-1 -oProxyCommand=x'\n".into(),
            3,
            "hosts[0].ssh",
            "whitespace or control characters",
        ),
        (
            "hosts:\n  - name: b\n    ssh: \"dev@build\\u0007\"\n".into(),
            3,
            "hosts[0].ssh",
            "whitespace or control characters",
        ),
        (
            host_with("sshConfig: ''"),
            4,
            "hosts[0].sshConfig",
            "ssh_config file",
        ),
        (host_with("tmux: ''"), 4, "hosts[0].tmux", "empty"),
        (
            host_with("tmux: -Lx"),
            4,
            "hosts[0].tmux",
            "may not start with `-`",
        ),
        (
            host_with("tmux: 'tmux -L x'"),
            4,
            "hosts[0].tmux",
            "whitespace",
        ),
        (host_with("stateDir: ''"), 4, "hosts[0].stateDir", "empty"),
        (
            host_with("stateDir: state/the-loop"),
            4,
            "hosts[0].stateDir",
            "must start with `/` or `~/`",
        ),
        (
            host_with("stateDir: ~other/state"),
            4,
            "hosts[0].stateDir",
            "must start with `/` or `~/`",
        ),
        (
            host_with("stateDir: \"/srv/\\nx\""),
            4,
            "hosts[0].stateDir",
            "control characters",
        ),
        (
            host_with("connectTimeoutSeconds: 0"),
            4,
            "hosts[0].connectTimeoutSeconds",
            "between 1 and 120",
        ),
        (
            host_with("connectTimeoutSeconds: 121"),
            4,
            "hosts[0].connectTimeoutSeconds",
            "got 121; the default is 10",
        ),
        (
            host_with("serverAliveSeconds: 0"),
            4,
            "hosts[0].serverAliveSeconds",
            "between 1 and 600",
        ),
        (
            host_with("serverAliveSeconds: 601"),
            4,
            "hosts[0].serverAliveSeconds",
            "the default is 15",
        ),
        (
            "hosts:\n  - name: b\n    ssh: x\n    user: dev\n".into(),
            4,
            "hosts[0].user",
            "unknown field `user`",
        ),
        (
            "hosts:\n  - name: b\n".into(),
            2,
            "hosts[0]",
            "missing field `ssh`",
        ),
        (
            "repos:\n  - name: o/r\n    host: build\n".into(),
            3,
            "repos[0].host",
            "unknown host `build`; none are defined under `hosts:`",
        ),
        (
            "hosts:\n  - name: b1\n    ssh: x\n  - name: b2\n    ssh: y\nrepos:\n  - name: o/r\n  - name: o/s\n    host: b3\n"
                .into(),
            9,
            "repos[1].host",
            "unknown host `b3`; the known hosts are `b1`, `b2`",
        ),
        (
            "hosts:\n  - name: b\n    ssh: x\nrepos:\n  - name: o/r\n    host: b\n".into(),
            5,
            "repos[0]",
            "path missing: a repo on host `b` runs its sessions in a directory there",
        ),
        (
            "hosts:\n  - name: b\n    ssh: x\nrepos:\n  - name: o/r\n    path: src/r\n    host: b\n"
                .into(),
            6,
            "repos[0].path",
            "path must start with `/` or `~/` (the remote user's home): a repo on host `b`",
        ),
    ];
    for (text, line, key_path, fragment) in &cases {
        let (got_line, got_path, message) = refusal(text);
        assert_eq!(
            (got_line, got_path.as_str()),
            (*line, *key_path),
            "{text:?}: {message}"
        );
        assert!(
            message.contains(fragment),
            "{text:?}: {message:?} lacks {fragment:?}"
        );
    }
}

#[test]
fn a_refused_value_with_control_characters_is_not_quoted_back() {
    let (_, _, message) = refusal("hosts:\n  - name: b\n    ssh: \"a\\u001b[2Jb\"\n");
    assert!(!message.contains('\u{1b}'), "{message:?}");
}
