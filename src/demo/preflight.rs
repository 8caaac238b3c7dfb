//! Before the demo starts anything: tmux must be there (or the newcomer gets the one
//! line that installs it, not an error from deep inside a spawn), and what a killed
//! demo left behind is swept away.

use super::env::PREFIX;
use super::tmux_server::{TmuxTarget, alive, socket_dir, stop_server};
use crate::paths::find_program;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Why the demo cannot use tmux.
#[derive(Debug, thiserror::Error)]
pub enum TmuxProblem {
    #[error("the demo runs its agent in tmux, and no `tmux` was found on PATH.\n{INSTALL_HINT}")]
    Missing,
    #[error("`{}` does not run ({reason}).\n{INSTALL_HINT}", .path.display())]
    Broken { path: PathBuf, reason: String },
}

/// How to install tmux, for the platforms people run the demo on.
pub const INSTALL_HINT: &str = "Install tmux, then run `the-loop demo` again:
  Debian, Ubuntu:  sudo apt install tmux
  Fedora, RHEL:    sudo dnf install tmux
  Arch:            sudo pacman -S tmux
  macOS:           brew install tmux";

/// Finds tmux on `path` (the process's `PATH` when `None`) and checks that it runs.
pub fn require_tmux(path: Option<&OsStr>) -> Result<PathBuf, TmuxProblem> {
    let found = find_program("tmux", path).ok_or(TmuxProblem::Missing)?;
    let output = Command::new(&found)
        .arg("-V")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| TmuxProblem::Broken {
            path: found.clone(),
            reason: e.to_string(),
        })?;
    if output.status.success() {
        Ok(found)
    } else {
        Err(TmuxProblem::Broken {
            path: found,
            reason: format!(
                "`tmux -V` exited with {}: {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        })
    }
}

/// The pid in a demo name (`the-loop-demo-<pid>-<hex>`), if `name` is one.
pub fn demo_pid(name: &str) -> Option<i32> {
    let rest = name.strip_prefix(PREFIX)?;
    let (pid, tag) = rest.split_once('-')?;
    let valid_tag = !tag.is_empty() && tag.bytes().all(|b| b.is_ascii_hexdigit());
    let pid: i32 = pid.parse().ok()?;
    (valid_tag && pid > 0).then_some(pid)
}

/// What a sweep removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Swept {
    pub servers: usize,
    pub dirs: usize,
}

/// Removes the leftovers of demos that were killed before they could clean up (SIGKILL,
/// a power cut): tmux servers on `the-loop-demo-<pid>-…` sockets and state roots named
/// the same, whose demo process no longer runs. `own_dir` is a directory this process
/// created (to learn the uid tmux files its sockets under).
pub fn sweep_stale(temp: &Path, own_dir: &Path) -> Swept {
    let mut swept = Swept::default();
    let me = std::process::id() as i32;
    let stale = |name: &str| demo_pid(name).is_some_and(|pid| pid != me && !alive(pid));
    if let Some(dir) = socket_dir(own_dir) {
        for (name, path) in entries(&dir) {
            if stale(&name) && stop_server(&TmuxTarget::File(&path)).gone {
                let _ = std::fs::remove_file(&path);
                swept.servers += 1;
            }
        }
    }
    let uid = owner(own_dir);
    for (name, path) in entries(temp) {
        let ours = uid.is_some() && owner(&path) == uid;
        if stale(&name) && path.is_dir() && ours && std::fs::remove_dir_all(&path).is_ok() {
            swept.dirs += 1;
        }
    }
    swept
}

fn entries(dir: &Path) -> Vec<(String, PathBuf)> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| Some((e.file_name().into_string().ok()?, e.path())))
                .collect()
        })
        .unwrap_or_default()
}

fn owner(path: &Path) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).ok().map(|m| m.uid())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_tmux_says_how_to_install_it() {
        let empty = tempfile::tempdir().unwrap();
        let err = require_tmux(Some(empty.path().as_os_str())).unwrap_err();
        assert!(matches!(err, TmuxProblem::Missing));
        let text = err.to_string();
        for hint in ["apt install tmux", "dnf install tmux", "brew install tmux"] {
            assert!(text.contains(hint), "{text}");
        }
    }

    #[test]
    fn a_tmux_that_does_not_run_is_named() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("tmux");
        std::fs::write(&fake, "#!/bin/sh\necho broken >&2\nexit 3\n").unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let err = require_tmux(Some(dir.path().as_os_str())).unwrap_err();
        assert!(matches!(err, TmuxProblem::Broken { .. }), "{err}");
        assert!(err.to_string().contains("broken"), "{err}");
    }

    #[test]
    fn demo_names_carry_their_pid() {
        assert_eq!(demo_pid("the-loop-demo-4242-0a1b2c3d"), Some(4242));
        assert_eq!(demo_pid("the-loop-demo-4242-"), None);
        assert_eq!(demo_pid("the-loop-demo-x-0a"), None);
        assert_eq!(demo_pid("the-loop-demo-4242-zz"), None);
        assert_eq!(demo_pid("the-loop-test-4242-0a"), None);
        assert_eq!(demo_pid("the-loop-demo-0-0a"), None);
    }

    #[test]
    fn only_dead_demos_leftovers_are_swept() {
        let temp = tempfile::tempdir().unwrap();
        // A pid that ran and exited.
        let mut child = Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let dead_dir = temp.path().join(format!("{PREFIX}{dead}-00ff"));
        let live_dir = temp
            .path()
            .join(format!("{PREFIX}{}-00ff", std::process::id()));
        let other = temp.path().join("the-loop-demo-notes");
        for d in [&dead_dir, &live_dir, &other] {
            std::fs::create_dir(d).unwrap();
        }
        let swept = sweep_stale(temp.path(), temp.path());
        assert_eq!(swept.dirs, 1);
        assert!(!dead_dir.exists());
        assert!(live_dir.exists() && other.exists());
    }
}
