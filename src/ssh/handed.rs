//! A command on the host run by a caller's own process: the argv of `ssh` for it.

use super::transport::Transport;
use super::{SshError, command_line};

impl Transport {
    /// The whole `ssh … -T HOST -- LINE` argv (`ssh` first) that runs `argv` on the host
    /// over the master, for a caller that runs the process itself (a critic, with its
    /// own timeout, caps and process group). Connect first.
    pub fn ssh_argv(&self, argv: &[String]) -> Result<Vec<String>, SshError> {
        let line = command_line(argv).map_err(|source| SshError::Quote {
            host: self.dest.name.clone(),
            source,
        })?;
        let mut out = vec![self.program.to_string_lossy().into_owned()];
        out.extend(
            self.base_args(false)
                .into_iter()
                .map(|a| a.to_string_lossy().into_owned()),
        );
        out.extend(["-T".into(), self.dest.ssh.clone(), "--".into(), line]);
        Ok(out)
    }
}
