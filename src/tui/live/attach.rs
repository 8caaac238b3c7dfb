//! Leaving the screen for a moment: attaching to a session's tmux (SPEC §11.3) and
//! opening a URL in the browser. Both are argv, never a shell.
//!
//! The attach command is the one `the-loop sessions attach` runs
//! ([`tmux::argv::attach`]): `switch-client` when this screen already runs in a
//! client of the sessions' tmux server (the screen keeps running in its own pane),
//! otherwise `attach-session` in the foreground (the screen suspends until the operator
//! detaches) — with `TMUX` unset when nesting inside another server. A session on
//! another host is attached through that host's SSH transport (`ssh -t`), always in the
//! foreground.

use crate::paths::find_program;
use crate::tmux::{self, RemoteHost, Socket};
use crate::tui::backend::{ActionError, ActionResult, AttachPlan};
use std::ffi::OsStr;
use std::process::{Command, Stdio};

/// The plan for attaching to tmux session `name`; `tmux_env` is `$TMUX`.
pub fn plan(socket: &Socket, name: &str, read_only: bool, tmux_env: Option<&str>) -> AttachPlan {
    let cmd = tmux::argv::attach(socket, name, read_only, tmux_env);
    let switch = cmd.args.iter().any(|a| a == "switch-client");
    let mut argv: Vec<String> = Vec::new();
    if cmd.unset_tmux {
        argv.extend(["env", "-u", "TMUX", "-u", "TMUX_PANE"].map(String::from));
    }
    argv.push("tmux".into());
    argv.extend(cmd.args);
    if switch {
        AttachPlan::Background(argv)
    } else {
        AttachPlan::Foreground(argv)
    }
}

/// The plan for session `name` on another host: the host's own terminal over SSH
/// ([`RemoteHost::attach`]), in the foreground.
pub fn remote_plan(
    host: &RemoteHost,
    name: &str,
    read_only: bool,
) -> Result<AttachPlan, ActionError> {
    let command = host
        .attach(name, read_only)
        .map_err(|e| ActionError::Failed(e.to_string()))?;
    argv_of(&command).map(AttachPlan::Foreground)
}

/// `command` as the argv the screen runs: what it does to the environment is said to
/// `env` first (`-u NAME` for a variable it removes), so none of it is lost.
fn argv_of(command: &Command) -> Result<Vec<String>, ActionError> {
    let text = |s: &OsStr| {
        s.to_str().map(str::to_string).ok_or_else(|| {
            ActionError::Failed(format!(
                "cannot attach: {} is not UTF-8",
                s.to_string_lossy()
            ))
        })
    };
    let mut argv = vec!["env".to_string()];
    for (name, value) in command.get_envs() {
        match value {
            None => argv.extend(["-u".to_string(), text(name)?]),
            Some(value) => argv.push(format!("{}={}", text(name)?, text(value)?)),
        }
    }
    argv.push(text(command.get_program())?);
    for arg in command.get_args() {
        argv.push(text(arg)?);
    }
    Ok(argv)
}

/// The program that opens URLs here: `xdg-open` on Linux and the BSDs, `open` on macOS.
fn opener() -> &'static str {
    if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    }
}

/// Opens `url` in the browser, best effort: the opener is started detached, with no
/// terminal, and not waited for. Only web URLs are opened.
pub fn open_url(url: &str) -> ActionResult {
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return Err(ActionError::Refused(format!(
            "not a web address, not opened: {url}"
        )));
    }
    let program = opener();
    let Some(path) = find_program(program, None) else {
        return Err(ActionError::Refused(format!(
            "`{program}` is not installed, so no browser can be opened from here; the address is {url}"
        )));
    };
    let mut command = std::process::Command::new(path);
    crate::secrets::ChildEnv::default().scrub(&mut command);
    let spawned = command
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    match spawned {
        Ok(mut child) => {
            // Reap it in the background so it does not linger as a zombie.
            std::thread::spawn(move || child.wait());
            Ok(format!("Opened {url}"))
        }
        Err(e) => Err(ActionError::Failed(format!(
            "could not run `{program}`: {e}; the address is {url}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_tmux_attaching_takes_the_terminal() {
        let p = plan(&Socket::Name("s".into()), "loop-x", false, None);
        assert_eq!(
            p,
            AttachPlan::Foreground(
                ["tmux", "-L", "s", "attach-session", "-t", "=loop-x"]
                    .map(String::from)
                    .to_vec()
            )
        );
        let p = plan(&Socket::Default, "loop-x", true, None);
        assert_eq!(
            p,
            AttachPlan::Foreground(
                ["tmux", "attach-session", "-t", "=loop-x", "-r"]
                    .map(String::from)
                    .to_vec()
            )
        );
    }

    #[test]
    fn inside_the_same_server_the_client_switches_and_the_screen_stays() {
        let env = "/tmp/tmux-1000/s,99,0";
        let p = plan(&Socket::Name("s".into()), "loop-x", false, Some(env));
        assert_eq!(
            p,
            AttachPlan::Background(
                ["tmux", "-L", "s", "switch-client", "-t", "=loop-x"]
                    .map(String::from)
                    .to_vec()
            )
        );
        // Read-only (or another server) nests, with TMUX unset so tmux allows it.
        let p = plan(&Socket::Name("s".into()), "loop-x", true, Some(env));
        let AttachPlan::Foreground(argv) = p else {
            panic!("{p:?}")
        };
        assert_eq!(&argv[..6], ["env", "-u", "TMUX", "-u", "TMUX_PANE", "tmux"]);
        assert!(argv.ends_with(&["-r".to_string()]));
    }

    #[test]
    fn a_session_on_another_host_is_attached_over_its_ssh_transport() {
        let dest = crate::ssh::Destination {
            name: "build".into(),
            ssh: "dev@build-1".into(),
            config_file: None,
            connect_timeout: std::time::Duration::from_secs(5),
            server_alive: std::time::Duration::from_secs(15),
        };
        let transport = crate::ssh::Transport::new(dest, std::path::Path::new("/state/ssh"));
        let host = RemoteHost::new(
            std::sync::Arc::new(transport),
            "tmux",
            "~/.local/state/the-loop",
            std::time::Duration::from_secs(5),
        );
        for (read_only, line) in [
            (false, "'tmux' 'attach-session' '-t' '=loop-x'"),
            (true, "'tmux' 'attach-session' '-t' '=loop-x' '-r'"),
        ] {
            let AttachPlan::Foreground(argv) = remote_plan(&host, "loop-x", read_only).unwrap()
            else {
                panic!("a remote attach takes the terminal")
            };
            assert_eq!(argv[0], "env");
            let ssh = argv.iter().position(|a| a == "ssh").unwrap();
            for name in ["TMUX", "TMUX_PANE", "GH_TOKEN", "GITHUB_TOKEN"] {
                let unset = ["-u".to_string(), name.to_string()];
                assert!(argv[..ssh].windows(2).any(|w| w == unset), "{argv:?}");
            }
            assert!(argv[ssh..].contains(&"ControlPath=/state/ssh/build".to_string()));
            assert_eq!(argv[argv.len() - 4..], ["-t", "dev@build-1", "--", line]);
        }
    }

    #[test]
    fn only_web_addresses_are_opened() {
        let err = open_url("file:///etc/passwd").unwrap_err();
        assert!(matches!(err, ActionError::Refused(_)), "{err:?}");
        let err = open_url("--help").unwrap_err();
        assert!(matches!(err, ActionError::Refused(_)), "{err:?}");
    }
}
