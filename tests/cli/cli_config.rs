//! `the-loop config check | init | path` through the real binary, in a private
//! environment: HOME, XDG_CONFIG_HOME and THE_LOOP_HOME point into a temp dir and the
//! override variables are cleared.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;
use std::fs;
use std::path::{Path, PathBuf};
use tempfile::TempDir;

struct Sandbox {
    dir: TempDir,
}

impl Sandbox {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Where `directories` puts the config on Linux given our XDG_CONFIG_HOME.
    fn xdg_file(&self) -> PathBuf {
        self.path("xdg/the-loop/config.yaml")
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.path(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, text).unwrap();
        path
    }

    fn cmd(&self) -> Command {
        let mut cmd = Command::cargo_bin("the-loop").unwrap();
        cmd.current_dir(self.dir.path())
            .env("HOME", self.path("home"))
            .env("XDG_CONFIG_HOME", self.path("xdg"))
            .env("THE_LOOP_HOME", self.path("state"))
            .env_remove("THE_LOOP_CONFIG")
            .env_remove("THE_LOOP_GITHUB_API_URL")
            .env_remove("THE_LOOP_TMUX_SOCKET")
            .env_remove("XDG_STATE_HOME");
        cmd
    }
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(cmd: &mut Command, args: &[&str]) -> Run {
    let out = cmd.args(args).output().unwrap();
    Run {
        code: out.status.code().unwrap(),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// The effective config printed by `config check`, as YAML.
fn checked(sb: &Sandbox, args: &[&str]) -> serde_norway::Value {
    let r = run(&mut sb.cmd(), args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    serde_norway::from_str(&r.stdout).unwrap()
}

/// `config check` of `yaml` (written to a file), which must pass.
fn check_yaml(sb: &Sandbox, yaml: &str) -> Run {
    let file = sb.write("c.yaml", yaml);
    let r = run(
        &mut sb.cmd(),
        &["--config", file.to_str().unwrap(), "config", "check"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    r
}

fn interval(v: &serde_norway::Value) -> u64 {
    v["polling"]["intervalSeconds"].as_u64().unwrap()
}

#[test]
fn bad_config_files_exit_2_with_file_line_column_and_key() {
    let cases: &[(&str, &str)] = &[
        ("routing:\n\tspawn: never\n", ":2:1: routing: invalid YAML"),
        (
            "routing:\n  keywords:\n    strat: go\n",
            ":3:5: routing.keywords.strat: unknown field `strat`",
        ),
        (
            "polling:\n  intervalSeconds: soon\n",
            ":2:20: polling.intervalSeconds: invalid type",
        ),
        (
            "tui:\n  notify: email\n",
            ":2:11: tui.notify: unknown variant `email`",
        ),
        (
            "repos:\n  - name: octo/repo\n  - name: octo/repo\n",
            ":3:11: repos[1].name: `octo/repo` is already listed at repos[0]",
        ),
        (
            "sessions:\n  harnesses:\n    mine: {command: 'my agent'}\n",
            ":3:21: sessions.harnesses.mine.command: `my agent`: a command is one executable; put its arguments in args",
        ),
        (
            "hosts:\n  - name: build\n    ssh: dev@build-1\nrepos:\n  - name: octo/repo\n    host: biuld\n",
            ":6:11: repos[0].host: unknown host `biuld`; the known hosts are `build`",
        ),
        (
            "hosts:\n  - name: build\n    ssh: -oProxyCommand=sh\n",
            ":3:10: hosts[0].ssh: may not start with `-`",
        ),
    ];
    let sb = Sandbox::new();
    for (i, (text, expected)) in cases.iter().enumerate() {
        let file = sb.write(&format!("bad{i}.yaml"), text);
        let r = run(
            &mut sb.cmd(),
            &["--config", file.to_str().unwrap(), "config", "check"],
        );
        assert_eq!(r.code, 2, "{text:?}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "nothing on stdout: {}", r.stdout);
        let located = format!("{}{expected}", file.display());
        assert!(
            r.stderr.contains(&located),
            "{text:?}\nstderr: {}\nexpected: {located}",
            r.stderr
        );
    }
}

#[test]
fn every_rule_violation_is_listed() {
    let sb = Sandbox::new();
    let file = sb.write(
        "c.yaml",
        "polling: {intervalSeconds: 1}\nserver: {listen: '0.0.0.0:80', webhookPath: hook}\n",
    );
    let r = run(sb.cmd().env("THE_LOOP_CONFIG", &file), &["config", "check"]);
    assert_eq!(r.code, 2);
    for key in [
        "polling.intervalSeconds",
        "server.listen",
        "server.webhookPath",
    ] {
        assert!(r.stderr.contains(&format!(": {key}: ")), "{}", r.stderr);
    }
}

#[test]
fn precedence_is_flag_then_env_then_xdg() {
    let sb = Sandbox::new();
    let xdg = sb.xdg_file();
    sb.write(
        "xdg/the-loop/config.yaml",
        "polling: {intervalSeconds: 11}\n",
    );
    let env = sb.write("env.yaml", "polling: {intervalSeconds: 22}\n");
    let flag = sb.write("flag.yaml", "polling: {intervalSeconds: 33}\n");

    assert_eq!(interval(&checked(&sb, &["config", "check"])), 11);
    let r = run(&mut sb.cmd(), &["config", "path"]);
    assert_eq!(r.stdout.trim(), xdg.to_str().unwrap());
    assert!(r.stderr.contains("default location"), "{}", r.stderr);
    assert!(r.stderr.contains("exists"), "{}", r.stderr);

    let with_env = |sb: &Sandbox, args: &[&str]| run(sb.cmd().env("THE_LOOP_CONFIG", &env), args);
    let r = with_env(&sb, &["config", "check"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(interval(&serde_norway::from_str(&r.stdout).unwrap()), 22);
    assert!(r.stderr.contains(env.to_str().unwrap()), "{}", r.stderr);
    let r = with_env(&sb, &["config", "path"]);
    assert_eq!(r.stdout.trim(), env.to_str().unwrap());
    assert!(r.stderr.contains("$THE_LOOP_CONFIG"), "{}", r.stderr);

    // The flag wins over the env, before or after the subcommand.
    let flag_s = flag.to_str().unwrap();
    for args in [
        ["--config", flag_s, "config", "check"],
        ["config", "check", "--config", flag_s],
    ] {
        let r = with_env(&sb, &args);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert_eq!(interval(&serde_norway::from_str(&r.stdout).unwrap()), 33);
    }
    let r = with_env(&sb, &["config", "path", "--config", flag_s]);
    assert_eq!(r.stdout.trim(), flag_s);
    assert!(r.stderr.contains("--config"), "{}", r.stderr);
}

#[test]
fn no_file_anywhere_means_defaults_and_the_allowlist_warning() {
    let sb = Sandbox::new();
    let r = run(&mut sb.cmd(), &["config", "check"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_norway::Value = serde_norway::from_str(&r.stdout).unwrap();
    assert_eq!(interval(&v), 30);
    assert_eq!(v["server"]["listen"].as_str(), Some("127.0.0.1:8787"));
    assert!(r.stderr.contains("no file found"), "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "warning: routing.authorizedUsers: empty: nothing human-authored will be acted on"
        ),
        "{}",
        r.stderr
    );

    let r = run(&mut sb.cmd(), &["config", "path"]);
    assert_eq!(r.code, 0);
    assert_eq!(r.stdout.trim(), sb.xdg_file().to_str().unwrap());
    assert!(r.stderr.contains("does not exist"), "{}", r.stderr);
}

#[test]
fn a_named_file_that_does_not_exist_is_exit_2_suggesting_init() {
    let sb = Sandbox::new();
    let missing = sb.path("missing.yaml");
    let m = missing.to_str().unwrap();

    let r = run(&mut sb.cmd(), &["--config", m, "config", "check"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains(m), "{}", r.stderr);
    assert!(
        r.stderr
            .contains(&format!("the-loop config init --path {m}")),
        "{}",
        r.stderr
    );

    let r = run(
        sb.cmd().env("THE_LOOP_CONFIG", &missing),
        &["config", "check"],
    );
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("$THE_LOOP_CONFIG"), "{}", r.stderr);
}

/// The starter with its placeholders replaced, as an operator would.
fn filled(starter: &str) -> String {
    starter
        .replace("your-github-user/your-repo", "octo/repo")
        .replace("~/src/your-repo", "~/src/repo")
        .replace("your-github-login", "alice")
}

#[test]
fn init_then_check_names_each_placeholder_until_they_are_replaced() {
    let sb = Sandbox::new();
    let target = sb.path("deep/new/dir/the-loop.yaml");
    let t = target.to_str().unwrap();
    let r = run(&mut sb.cmd(), &["config", "init", "--path", t]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout.trim(), t);
    let starter = fs::read_to_string(&target).unwrap();
    assert!(starter.contains("# "));
    // init already says what to edit, where.
    for key in [
        "repos[0].name",
        "repos[0].path",
        "routing.authorizedUsers[0]",
    ] {
        assert!(r.stderr.contains(key), "{key}: {}", r.stderr);
    }

    // The untouched starter is refused: exit 2, each placeholder at its line.
    let r = run(&mut sb.cmd(), &["--config", t, "config", "check"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    let line_of = |needle: &str| starter.lines().position(|l| l.contains(needle)).unwrap() + 1;
    for (needle, key, instead) in [
        (
            "name: your-github-user/your-repo",
            "repos[0].name",
            "owner/name",
        ),
        ("path: ~/src/your-repo", "repos[0].path", "your clone"),
        (
            "- your-github-login",
            "routing.authorizedUsers[0]",
            "your own GitHub login",
        ),
    ] {
        let at = format!("{t}:{}:", line_of(needle));
        let line = r
            .stderr
            .lines()
            .find(|l| l.contains(&at) && l.contains(key))
            .unwrap_or_else(|| panic!("{at} {key} not named: {}", r.stderr));
        assert!(line.contains(instead), "{line}");
    }
    assert!(r.stderr.contains("3 placeholder(s)"), "{}", r.stderr);

    fs::write(&target, filled(&starter)).unwrap();
    let r = run(&mut sb.cmd(), &["--config", t, "config", "check"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("warning"), "{}", r.stderr);
    let v: serde_norway::Value = serde_norway::from_str(&r.stdout).unwrap();
    assert_eq!(v["repos"][0]["label"].as_str(), Some("the-loop"));
}

#[test]
fn init_without_path_writes_the_resolved_file() {
    let sb = Sandbox::new();
    let r = run(&mut sb.cmd(), &["config", "init"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(sb.xdg_file().is_file());
    let r = run(&mut sb.cmd(), &["config", "check"]);
    assert_eq!(r.code, 2, "the starter's placeholders: {}", r.stderr);
    assert!(r.stderr.contains(sb.xdg_file().to_str().unwrap()));

    let env = sb.path("via-env.yaml");
    let r = run(sb.cmd().env("THE_LOOP_CONFIG", &env), &["config", "init"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(env.is_file());
}

#[test]
fn init_refuses_to_overwrite_without_force() {
    let sb = Sandbox::new();
    let mine = "polling: {intervalSeconds: 99}\n";
    let file = sb.write("mine.yaml", mine);
    let f = file.to_str().unwrap();

    let r = run(&mut sb.cmd(), &["config", "init", "--path", f]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains(f), "{}", r.stderr);
    assert!(r.stderr.contains("--force"), "{}", r.stderr);
    assert_eq!(fs::read_to_string(&file).unwrap(), mine);

    let r = run(&mut sb.cmd(), &["config", "init", "--path", f, "--force"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let starter = fs::read_to_string(&file).unwrap();
    assert_ne!(starter, mine);
    fs::write(&file, filled(&starter)).unwrap();
    assert_eq!(
        interval(&checked(&sb, &["--config", f, "config", "check"])),
        30
    );
}

#[test]
fn env_overrides_show_in_the_effective_config() {
    let sb = Sandbox::new();
    let file = sb.write(
        "c.yaml",
        "github: {apiUrl: 'https://ghe.example/api/v3'}\nrouting: {authorizedUsers: [alice]}\n",
    );
    let r = run(
        sb.cmd()
            .env("THE_LOOP_CONFIG", &file)
            .env("THE_LOOP_GITHUB_API_URL", "http://127.0.0.1:1234")
            .env("THE_LOOP_TMUX_SOCKET", "loop-test"),
        &["config", "check"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_norway::Value = serde_norway::from_str(&r.stdout).unwrap();
    assert_eq!(
        v["github"]["apiUrl"].as_str(),
        Some("http://127.0.0.1:1234")
    );
    assert_eq!(v["sessions"]["tmux"]["socket"].as_str(), Some("loop-test"));
}

/// A stand-in Claude Code that answers `--version` as the real one does.
fn fake_claude(sb: &Sandbox, rel: &str, version: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = sb.write(rel, &format!("#!/bin/sh\necho '{version} (Claude Code)'\n"));
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// The `harness …` lines of a `config check`.
fn harness_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("harness "))
        .collect()
}

/// SPEC §18.2, issue 30: `config check` says for each configured harness which release
/// runs, the permission mode its sessions get and whether the-loop knows its screen.
#[test]
fn each_configured_harness_says_its_release_mode_and_screen() {
    let sb = Sandbox::new();
    let pinned = fake_claude(&sb, "bin/claude", "2.1.197");
    let newer = fake_claude(&sb, "opt/claude", "2.1.400");
    let path = pinned.parent().unwrap();
    let file = sb.write(
        "c.yaml",
        "routing: {authorizedUsers: [alice]}\nrepos:\n  - {name: octo/web, permissionMode: plan}\nsessions:\n  harness: claude\n  harnesses:\n    mine: {command: my-agent, args: ['{prompt}']}\n    codex: {command: /nonexistent/codex}\n",
    );
    let r = run(
        sb.cmd().env("PATH", path),
        &["--config", file.to_str().unwrap(), "config", "check"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let lines = harness_lines(&r.stderr);
    assert_eq!(lines.len(), 3, "{}", r.stderr);
    assert!(
        lines[0].starts_with(
            "harness claude (sessions.harness): Claude Code 2.1.197; permission mode default (octo/web: plan); screen: known (recorded from Claude Code 2.1.197)"
        ),
        "{}",
        r.stderr
    );
    assert!(lines[1].starts_with("harness codex: "), "{}", r.stderr);
    assert!(lines[1].contains("not on PATH"), "{}", r.stderr);
    // Codex's screen is read too (issue 31): with no release read, on agreement.
    assert!(
        lines[1].ends_with(
            "screen: release unread — a delivery goes out when its hooks and its screen agree"
        ),
        "{}",
        r.stderr
    );
    assert!(lines[2].starts_with("harness mine: "), "{}", r.stderr);
    assert!(!lines[2].contains("permission mode"), "{}", r.stderr);
    assert!(lines[2].contains("screen: unknown ("), "{}", r.stderr);

    // Codex 0.171.0, whose screen was recorded (issue 31).
    let codex = sb.write("opt/codex", "#!/bin/sh\necho 'codex-cli 0.171.0'\n");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&codex, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let yaml = format!(
        "sessions:\n  harness: codex\n  harnesses:\n    codex: {{command: {}}}\n",
        codex.display()
    );
    let file = sb.write("codex.yaml", &yaml);
    let r = run(
        sb.cmd().env("PATH", path),
        &["--config", file.to_str().unwrap(), "config", "check"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        harness_lines(&r.stderr)[0],
        "harness codex (sessions.harness): Codex 0.171.0; approval policy and sandbox on-request, workspace-write; channel: app server (comments by turn/start, approvals answered through it); screen: known (recorded from Codex 0.171.0)",
        "{}",
        r.stderr
    );

    // A release the-loop did not record: read on the agreement of its two witnesses
    // (issue 40), nothing seen of it live yet.
    let yaml = format!(
        "sessions:\n  harnesses:\n    claude: {{command: {}}}\n",
        newer.display()
    );
    let file = sb.write("newer.yaml", &yaml);
    let r = run(
        sb.cmd().env("PATH", path),
        &["--config", file.to_str().unwrap(), "config", "check"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let lines = harness_lines(&r.stderr);
    assert!(
        lines[0].starts_with(
            "harness claude (sessions.harness): Claude Code 2.1.400; permission mode default; screen: Claude Code 2.1.400 · read with "
        ),
        "{}",
        r.stderr
    );
    assert!(
        lines[0].contains("'s rules · seen live: not seen yet — not recorded (recorded: 2.1.197"),
        "{}",
        r.stderr
    );
    assert!(lines[0].contains("held `screen-unread`"), "{}", r.stderr);

    // Not installed: said, and its screen cannot be known.
    let r = run(
        sb.cmd().env("PATH", sb.path("nowhere")),
        &["config", "check"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let lines = harness_lines(&r.stderr);
    assert!(lines[0].contains("which is not on PATH"), "{}", r.stderr);
    assert!(
        lines[0].ends_with(
            "screen: release unread — a delivery goes out when its hooks and its screen agree"
        ),
        "{}",
        r.stderr
    );
}

/// Issue 30: `bypassPermissions` takes a second key, and is warned about even then;
/// `auto` is warned about.
#[test]
fn bypass_needs_a_second_key_and_risky_modes_are_warned_about() {
    let sb = Sandbox::new();
    let file = sb.write(
        "c.yaml",
        "routing: {authorizedUsers: [alice]}\nrepos:\n  - {name: octo/web, permissionMode: bypassPermissions}\n",
    );
    let r = run(
        &mut sb.cmd(),
        &["--config", file.to_str().unwrap(), "config", "check"],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(":3:")
            && r.stderr.contains(
                "repos[0].permissionMode: bypassPermissions runs every tool call unasked"
            ),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("sessions.allowBypass: true"),
        "{}",
        r.stderr
    );
    let r = check_yaml(
        &sb,
        "routing: {authorizedUsers: [alice]}\nrepos:\n  - {name: octo/web, permissionMode: bypassPermissions}\nsessions: {allowBypass: true, permissionMode: auto}\n",
    );
    assert!(
        r.stderr.contains("warning: ")
            && r.stderr.contains(
                "repos[0].permissionMode: bypassPermissions (allowed by sessions.allowBypass)"
            ),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("sessions.permissionMode: auto: Claude Code runs"),
        "{}",
        r.stderr
    );
    let v: serde_norway::Value = serde_norway::from_str(&r.stdout).unwrap();
    assert_eq!(v["sessions"]["permissionMode"].as_str(), Some("auto"));
    // A mode Claude Code does not name is an error with the choices.
    let file = sb.write("bad.yaml", "sessions: {permissionMode: yolo}\n");
    let r = run(
        &mut sb.cmd(),
        &["--config", file.to_str().unwrap(), "config", "check"],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("sessions.permissionMode"), "{}", r.stderr);
    assert!(r.stderr.contains("acceptEdits"), "{}", r.stderr);
}

/// Issue 41: codex's policy is explicit; one that never asks takes the same second key
/// as `bypassPermissions`, and is warned about even then; a repo's keys replace the
/// global ones, and `config check` prints what each codex session runs under.
#[test]
fn a_codex_policy_that_never_asks_needs_a_second_key() {
    let sb = Sandbox::new();
    let yaml = "routing: {authorizedUsers: [alice]}\nrepos:\n  - {name: octo/web, codex: {sandbox: danger-full-access}}\nsessions: {harness: codex}\n";
    let file = sb.write("c.yaml", yaml);
    let r = run(
        &mut sb.cmd(),
        &["--config", file.to_str().unwrap(), "config", "check"],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(":3:")
            && r.stderr.contains(
                "repos[0].codex: codex `on-request, danger-full-access` runs commands without asking you"
            )
            && r.stderr.contains("sessions.allowBypass: true"),
        "{}",
        r.stderr
    );
    let r = check_yaml(
        &sb,
        &yaml.replace("{harness: codex}", "{harness: codex, allowBypass: true}"),
    );
    assert!(
        r.stderr.contains("warning: ")
            && r.stderr.contains(
                "repos[0].codex: codex `on-request, danger-full-access` (allowed by sessions.allowBypass)"
            ),
        "{}",
        r.stderr
    );
    let v: serde_norway::Value = serde_norway::from_str(&r.stdout).unwrap();
    assert_eq!(
        v["sessions"]["codex"]["approvalPolicy"].as_str(),
        Some("on-request")
    );
    assert_eq!(
        v["sessions"]["codex"]["sandbox"].as_str(),
        Some("workspace-write")
    );
    // A policy codex does not name is an error.
    let file = sb.write(
        "bad.yaml",
        "sessions: {codex: {approvalPolicy: sometimes}}\n",
    );
    let r = run(
        &mut sb.cmd(),
        &["--config", file.to_str().unwrap(), "config", "check"],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("sessions.codex"), "{}", r.stderr);
}

#[test]
fn the_printed_effective_config_is_itself_a_valid_config() {
    let sb = Sandbox::new();
    let r = check_yaml(
        &sb,
        "routing: {authorizedUsers: ['@Alice'], spawn: labeled}\ncritics:\n  - name: rev\n    harness: codex\n",
    );
    let printed = sb.write("printed.yaml", &r.stdout);
    let again = run(
        &mut sb.cmd(),
        &["--config", printed.to_str().unwrap(), "config", "check"],
    );
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(again.stdout, r.stdout);
    assert!(Path::new(&printed).is_file());
}

/// A stand-in for GitHub on loopback: answers every request 404 and counts them.
struct CountingGithub {
    addr: std::net::SocketAddr,
    requests: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl CountingGithub {
    fn start() -> Self {
        use std::io::{Read, Write};
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (count, stopped) = (requests.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((mut stream, _)) => {
                        count.fetch_add(1, Ordering::Relaxed);
                        stream.set_nonblocking(false).unwrap();
                        let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(1)));
                        let _ = stream.read(&mut [0u8; 4096]);
                        let _ = stream.write_all(
                            b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                        );
                    }
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
                }
            }
        });
        Self {
            addr,
            requests,
            stop,
            thread: Some(thread),
        }
    }

    fn requests(&self) -> usize {
        self.requests.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Drop for CountingGithub {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[test]
fn run_refuses_the_untouched_starter_before_any_request() {
    let sb = Sandbox::new();
    let github = CountingGithub::start();
    let file = sb.path("the-loop.yaml");
    let f = file.to_str().unwrap();
    assert_eq!(run(&mut sb.cmd(), &["config", "init", "--path", f]).code, 0);
    let supervise = |args: &[&str]| {
        let mut cmd = sb.cmd();
        cmd.env("THE_LOOP_GITHUB_API_URL", format!("http://{}", github.addr))
            .env("GH_TOKEN", "test-token")
            .env(
                "THE_LOOP_TMUX_SOCKET",
                format!("the-loop-first-run-{}", std::process::id()),
            )
            // Only keeps a regression from hanging the suite.
            .timeout(std::time::Duration::from_secs(60));
        run(&mut cmd, args)
    };

    let r = supervise(&["--config", f, "run"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    for key in [
        "repos[0].name",
        "repos[0].path",
        "routing.authorizedUsers[0]",
    ] {
        assert!(r.stderr.contains(key), "{key}: {}", r.stderr);
    }
    assert!(r.stderr.contains(&format!("{f}:")), "{}", r.stderr);
    assert_eq!(github.requests(), 0, "GitHub was asked nothing");

    // The same file with the placeholders replaced does reach (the stand-in for) GitHub,
    // so the zero above is the refusal's doing.
    let starter = fs::read_to_string(&file).unwrap();
    let repo = sb.path("repo");
    fs::create_dir_all(&repo).unwrap();
    fs::write(
        &file,
        filled(&starter).replace("~/src/repo", repo.to_str().unwrap()),
    )
    .unwrap();
    let r = supervise(&["--config", f, "run", "--once"]);
    assert_ne!(r.code, 2, "{}", r.stderr);
    assert!(github.requests() > 0, "{}", r.stderr);
}

/// `the-loop tui` starts the same supervisor; a test has no terminal for the binary, so
/// the refusal is checked where both commands start it.
#[tokio::test]
async fn the_tui_supervisor_refuses_the_untouched_starter_too() {
    use the_loop::config::ConfigError;
    use the_loop::supervisor::{Mode, StartError, Supervisor, SupervisorOptions};
    let sb = Sandbox::new();
    let file = sb.write("the-loop.yaml", the_loop::config::starter::STARTER_YAML);
    let options = SupervisorOptions::new(Mode::Tui)
        .config_flag(Some(file.clone()))
        .paths(the_loop::paths::StatePaths::new(sb.path("state")));
    let Err(err) = Supervisor::start(options).await else {
        panic!("the supervisor started on the starter");
    };
    assert_eq!(err.exit_code(), 2);
    let StartError::Config(ConfigError::Placeholders { path, diagnostics }) = &err else {
        panic!("{err}");
    };
    assert_eq!(path, &file);
    assert_eq!(diagnostics.len(), 3, "{err}");
    assert!(
        !sb.path("state/supervisor.lock").exists(),
        "refused before the lock"
    );
}

/// A repo on another host is described as the config states it, paths there, and
/// nothing connects: the host's ssh config would run a command on any connection.
#[test]
fn a_repo_on_a_host_is_described_there_without_connecting() {
    let sb = Sandbox::new();
    let touched = sb.path("connected");
    let ssh_config = sb.write(
        "ssh_config",
        &format!("Host build-1\n  ProxyCommand touch {}\n", touched.display()),
    );
    let r = check_yaml(
        &sb,
        &format!(
            "hosts:\n  - {{name: build, ssh: build-1, sshConfig: \"{}\", stateDir: /srv/tl}}\nrepos:\n  - {{name: octo/repo, path: \"~/src/repo\", host: build}}\n  - {{name: octo/docs, path: /srv/docs, host: build, workspace: shared}}\nrouting: {{authorizedUsers: [alice]}}\n",
            ssh_config.display()
        ),
    );
    assert!(
        r.stderr.contains(
            "note: repos octo/repo: on host `build` (build-1), paths there: workspace: auto — one git worktree per work item under /srv/tl/worktrees if ~/src/repo is a git repository, else every session runs in ~/src/repo; not checked from here — `the-loop hosts check build` connects and checks"
        ),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("note: repos octo/docs: on host `build` (build-1), paths there: workspace: shared — every session runs in /srv/docs;"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("no path"), "{}", r.stderr);
    assert!(!touched.exists(), "config check connected to the host");
}

/// An emptied file (or one without repos or authorized users) is reported by `config
/// check`, as a supervisor refuses to reload to it (issue 42).
#[test]
fn check_reports_a_file_that_watches_nothing_and_trusts_no_one() {
    let sb = Sandbox::new();
    let emptied = check_yaml(&sb, "").stderr;
    let whole = check_yaml(
        &sb,
        "repos:\n  - name: octo/repo\nrouting:\n  authorizedUsers: [alice]\n",
    )
    .stderr;
    for said in ["note: no repos", "routing.authorizedUsers: empty"] {
        assert!(emptied.contains(said), "{said}: {emptied}");
        assert!(!whole.contains(said), "{said}: {whole}");
    }
}
