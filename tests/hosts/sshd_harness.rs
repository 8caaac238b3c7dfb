//! The sshd harness does what the hosts tests rely on: a key login as its user, a tmux
//! server of that user's apart from the local one, a count of logins, and nothing left
//! behind (user, processes, port) once it drops.

use crate::support::sshd::Sshd;
use std::net::{Ipv4Addr, TcpStream};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `ssh -F <config> -o BatchMode=yes remote-test -- <argv>`, as the product runs it.
/// ssh joins `argv` with spaces and the user's shell splits it again: a word with
/// spaces or `#` must come shell-quoted.
fn ssh(sshd: &Sshd, argv: &[&str]) -> Output {
    Command::new("ssh")
        .arg("-F")
        .arg(sshd.ssh_config())
        .args(["-o", "BatchMode=yes", Sshd::alias(), "--"])
        .args(argv)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .stdin(Stdio::null())
        .output()
        .expect("run ssh")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn assert_ok(what: &str, out: &Output, sshd: &Sshd) {
    assert!(
        out.status.success(),
        "{what} failed ({}): {}\nsshd log:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        sshd.log()
    );
}

#[test]
fn ssh_logs_in_as_the_harness_user() {
    if !Sshd::available() {
        return;
    }
    let sshd = Sshd::start();
    let out = ssh(&sshd, &["whoami"]);
    assert_ok("ssh whoami", &out, &sshd);
    assert_eq!(stdout(&out).trim(), sshd.user());
    let out = ssh(&sshd, &["pwd"]);
    assert_ok("ssh pwd", &out, &sshd);
    assert_eq!(stdout(&out).trim(), sshd.home().display().to_string());
}

#[test]
fn remote_tmux_is_a_server_of_its_own_and_dies_with_the_harness() {
    if !Sshd::available() {
        return;
    }
    let sshd = Sshd::start();
    let user = sshd.user().to_string();
    // One string for the remote shell; unquoted, it would read `#{…}` as a comment.
    let new = "tmux -L x new-session -d -s s 'sleep 100'";
    assert_ok("ssh tmux new-session", &ssh(&sshd, &[new]), &sshd);
    let out = ssh(&sshd, &["tmux -L x list-sessions -F '#{session_name}'"]);
    assert_ok("ssh tmux list-sessions", &out, &sshd);
    assert_eq!(stdout(&out).trim(), "s");
    let out = sshd.run_as_user(&["tmux", "-L", "x", "list-sessions", "-F", "#{session_name}"]);
    assert_eq!(
        stdout(&out).trim(),
        "s",
        "the same server, seen locally as the user"
    );

    let local = Command::new("tmux")
        .args(["-L", "x", "list-sessions", "-F", "#{session_name}"])
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .env_remove("TMUX_TMPDIR")
        .output()
        .expect("run tmux");
    assert!(
        !stdout(&local).lines().any(|l| l == "s"),
        "root's tmux -L x must not see the remote session: {}",
        stdout(&local)
    );
    let uid = stdout(&Command::new("id").args(["-u", &user]).output().unwrap());
    let uid = uid.trim().to_string();

    drop(sshd);
    let left = Command::new("pgrep").args(["-u", &uid]).output().unwrap();
    assert!(
        left.stdout.is_empty(),
        "processes of {user} (uid {uid}) survived the harness: {}",
        stdout(&left)
    );
}

#[test]
fn dropping_the_harness_removes_the_user_and_closes_the_port() {
    if !Sshd::available() {
        return;
    }
    let sshd = Sshd::start();
    let (user, home, port) = (sshd.user().to_string(), sshd.home(), sshd.port());
    assert!(
        Command::new("id")
            .arg(&user)
            .output()
            .unwrap()
            .status
            .success()
    );
    assert!(TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_ok());

    drop(sshd);
    let id = Command::new("id").arg(&user).output().unwrap();
    assert!(!id.status.success(), "{user} still exists: {}", stdout(&id));
    assert!(!home.exists(), "{} is left behind", home.display());
    let connect = TcpStream::connect((Ipv4Addr::LOCALHOST, port));
    assert!(
        connect.is_err(),
        "127.0.0.1:{port} still accepts connections"
    );
}

#[test]
fn connections_counts_each_login() {
    if !Sshd::available() {
        return;
    }
    let sshd = Sshd::start();
    assert_eq!(sshd.connections(), 0);
    for n in 1..=3 {
        let out = ssh(&sshd, &["true"]);
        assert_ok("ssh true", &out, &sshd);
        assert_eq!(
            sshd.connections(),
            n,
            "after {n} logins; log:\n{}",
            sshd.log()
        );
    }
}

#[test]
fn dropping_the_harness_ends_an_open_connection() {
    if !Sshd::available() {
        return;
    }
    let sshd = Sshd::start();
    let user = sshd.user().to_string();
    let mut held = Command::new("ssh")
        .arg("-F")
        .arg(sshd.ssh_config())
        .args(["-o", "BatchMode=yes", Sshd::alias(), "--", "sleep 100"])
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn ssh");
    let start = Instant::now();
    while sshd.connections() == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "ssh did not log in; sshd log:\n{}",
            sshd.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    drop(sshd);
    let start = Instant::now();
    while held.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(10) {
            let _ = held.kill();
            panic!("ssh still connected after the harness dropped");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // sshd's per-connection monitor runs as root, titled `sshd: USER [priv]`.
    let monitors = Command::new("pgrep")
        .args(["-a", "-f", &format!("^sshd: {user}[ @]")])
        .output()
        .unwrap();
    assert!(
        monitors.stdout.is_empty(),
        "sshd processes of {user}'s connection survived: {}",
        stdout(&monitors)
    );
}
