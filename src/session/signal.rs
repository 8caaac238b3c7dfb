//! Ending a harness process: SIGTERM, then SIGKILL (`ending` decides when).

/// Sends a signal to a harness process (behind a trait: unit tests must not signal
/// real processes).
pub trait Signaller: Send + Sync {
    fn signal(&self, pid: u32, kill: bool) -> std::io::Result<()>;
}

/// Signals the harness's process group (the pane's program leads it, so helpers it
/// started end with it), falling back to the process alone.
#[derive(Debug, Default, Clone, Copy)]
pub struct ProcessSignaller;

impl Signaller for ProcessSignaller {
    fn signal(&self, pid: u32, kill: bool) -> std::io::Result<()> {
        use nix::errno::Errno;
        use nix::sys::signal::{self, Signal};
        use nix::unistd::Pid;
        let raw = i32::try_from(pid)
            .ok()
            .filter(|p| *p > 1)
            .ok_or_else(|| std::io::Error::other(format!("refusing to signal pid {pid}")))?;
        let sig = if kill {
            Signal::SIGKILL
        } else {
            Signal::SIGTERM
        };
        let result = match signal::killpg(Pid::from_raw(raw), sig) {
            Err(Errno::ESRCH) => signal::kill(Pid::from_raw(raw), sig),
            other => other,
        };
        match result {
            Ok(()) | Err(Errno::ESRCH) => Ok(()), // already gone
            Err(errno) => Err(std::io::Error::from(errno)),
        }
    }
}
