//! A terminal the operator uses on the host (attaching to a session's tmux there): the
//! same options as every other invocation, with a terminal (`-t`) instead of none.

use super::{SshError, Transport, command_line};

impl Transport {
    /// `ssh <base options> -t <dest> -- <argv as one quoted line>`, run with the
    /// operator's terminal: the child gets no secret and no `TMUX`/`TMUX_PANE` of ours.
    /// It goes over the master when one runs, and connects on its own otherwise.
    pub fn interactive(&self, argv: &[String]) -> Result<std::process::Command, SshError> {
        let mut command = std::process::Command::new(&self.program);
        command
            .args(self.args_for(argv, "-t")?)
            .env_remove("TMUX")
            .env_remove("TMUX_PANE");
        self.child_env.scrub(&mut command);
        Ok(command)
    }

    /// The whole `ssh … -T HOST -- LINE` argv (`ssh` first) that runs `argv` on the host
    /// over the master, for a caller that runs the process itself (a critic, with its
    /// own timeout, caps, process group and environment scrub). Connect first.
    pub fn ssh_argv(&self, argv: &[String]) -> Result<Vec<String>, SshError> {
        let mut out = vec![self.program.to_string_lossy().into_owned()];
        out.extend(
            self.args_for(argv, "-T")?
                .into_iter()
                .map(|a| a.to_string_lossy().into_owned()),
        );
        Ok(out)
    }

    /// The base options, `tty` (`-t`, `-T`), the destination and `argv` as one line.
    fn args_for(&self, argv: &[String], tty: &str) -> Result<Vec<std::ffi::OsString>, SshError> {
        let line = command_line(argv).map_err(|source| SshError::Quote {
            host: self.name().to_string(),
            source,
        })?;
        let mut args = self.base_args(false);
        args.extend([
            tty.into(),
            self.destination().ssh.clone().into(),
            "--".into(),
            line.into(),
        ]);
        Ok(args)
    }
}

#[cfg(test)]
mod tests {
    use crate::secrets::ChildEnv;
    use crate::ssh::{Destination, QuoteError, SshError, Transport};
    use std::ffi::OsStr;
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    fn transport() -> Transport {
        let dest = Destination {
            name: "build".into(),
            ssh: "dev@build-1".into(),
            config_file: Some(PathBuf::from("/etc/loop/ssh_config")),
            connect_timeout: Duration::from_secs(5),
            server_alive: Duration::from_secs(15),
        };
        Transport::new(dest, Path::new("/state/ssh"))
            .with_child_env(ChildEnv::new("LOOP_WEBHOOK_SECRET", &[]))
    }

    fn words(argv: &[&str]) -> Vec<String> {
        argv.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn a_terminal_on_the_host_has_the_base_options_and_one_quoted_line() {
        let argv = words(&["tmux", "attach-session", "-t", "=loop-octo-repo-1", "-r"]);
        let command = transport().interactive(&argv).unwrap();
        assert_eq!(command.get_program(), "ssh");
        let args: Vec<&OsStr> = command.get_args().collect();
        let expected = [
            "-F",
            "/etc/loop/ssh_config",
            "-o",
            "ControlPath=/state/ssh/build",
            "-o",
            "BatchMode=yes",
            "-o",
            "ControlMaster=no",
            "-o",
            "ForwardAgent=no",
            "-o",
            "ForwardX11=no",
            "-o",
            "ClearAllForwardings=yes",
            "-o",
            "PermitLocalCommand=no",
            "-o",
            "ConnectTimeout=5",
            "-o",
            "ServerAliveInterval=15",
            "-o",
            "ServerAliveCountMax=3",
            "-t",
            "dev@build-1",
            "--",
            "'tmux' 'attach-session' '-t' '=loop-octo-repo-1' '-r'",
        ];
        assert_eq!(args, expected.map(OsStr::new));
    }

    #[test]
    fn the_terminal_gets_no_secret_and_no_tmux_of_ours() {
        let command = transport().interactive(&words(&["true"])).unwrap();
        let removed: Vec<&OsStr> = command
            .get_envs()
            .filter(|(_, value)| value.is_none())
            .map(|(name, _)| name)
            .collect();
        for name in [
            "TMUX",
            "TMUX_PANE",
            "GH_TOKEN",
            "GITHUB_TOKEN",
            "LOOP_WEBHOOK_SECRET",
        ] {
            assert!(removed.contains(&OsStr::new(name)), "{name}: {removed:?}");
        }
        assert!(command.get_envs().all(|(_, value)| value.is_none()));
    }

    #[test]
    fn an_argv_no_line_can_carry_is_refused() {
        let error = transport().interactive(&[]).unwrap_err();
        assert!(
            matches!(&error, SshError::Quote { host, source: QuoteError::Empty } if host == "build"),
            "{error:?}"
        );
    }
}
