//! Where things live: the config file, the state root and its layout (SPEC §2).

use std::path::{Path, PathBuf};

pub const ENV_CONFIG: &str = "THE_LOOP_CONFIG";
pub const ENV_HOME: &str = "THE_LOOP_HOME";
pub const ENV_API_URL: &str = "THE_LOOP_GITHUB_API_URL";
pub const ENV_TMUX_SOCKET: &str = "THE_LOOP_TMUX_SOCKET";
pub const ENV_WORK_ITEM: &str = "THE_LOOP_WORK_ITEM";
/// The running `the-loop` binary, set in every session (SPEC §16.5).
pub const ENV_BIN: &str = "THE_LOOP_BIN";
/// Set in a session's pane on another host (`hosts[].name`): its agents reach the
/// supervisor only through the forwarded socket, never in-process.
pub const ENV_HOST: &str = "THE_LOOP_HOST";

fn project_dirs() -> Option<directories::ProjectDirs> {
    directories::ProjectDirs::from("", "", "the-loop")
}

/// The default operator config file: `<XDG config dir>/the-loop/config.yaml`.
pub fn default_config_file() -> Option<PathBuf> {
    project_dirs().map(|d| d.config_dir().join("config.yaml"))
}

/// The user's config directory for keymap/theme overrides.
pub fn config_dir() -> Option<PathBuf> {
    project_dirs().map(|d| d.config_dir().to_path_buf())
}

/// The state root: `$THE_LOOP_HOME`, else the XDG state dir `the-loop/`.
pub fn state_root() -> PathBuf {
    if let Some(home) = std::env::var_os(ENV_HOME).filter(|v| !v.is_empty()) {
        return PathBuf::from(home);
    }
    project_dirs()
        .map(|d| {
            d.state_dir()
                .unwrap_or_else(|| d.data_local_dir())
                .to_path_buf()
        })
        .unwrap_or_else(|| PathBuf::from(".the-loop"))
}

/// The layout under a state root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatePaths {
    pub root: PathBuf,
}

impl StatePaths {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The state root from the environment (see [`state_root`]).
    pub fn from_env() -> Self {
        Self::new(state_root())
    }

    pub fn events(&self) -> PathBuf {
        self.root.join("events.jsonl")
    }
    pub fn sessions_dir(&self) -> PathBuf {
        self.root.join("sessions")
    }
    pub fn poll_dir(&self) -> PathBuf {
        self.root.join("poll")
    }
    pub fn critics_dir(&self) -> PathBuf {
        self.root.join("critics")
    }
    pub fn lock(&self) -> PathBuf {
        self.root.join("supervisor.lock")
    }
    pub fn logs_dir(&self) -> PathBuf {
        self.root.join("logs")
    }
    /// The running supervisor's operator socket (SPEC §14.1).
    pub fn operator_socket(&self) -> PathBuf {
        self.root.join("operator.sock")
    }
    /// On another host: each session's usage as the-loop there keeps it (issue 32).
    pub fn usage_dir(&self) -> PathBuf {
        self.root.join("usage")
    }
    /// One record per workspace the-loop made (SPEC §16).
    pub fn workspaces_dir(&self) -> PathBuf {
        self.root.join("workspaces")
    }
    /// Passed values on their way into a new session (`tmux::env_handoff`): each file
    /// lives from the spawn until the session's `exec-env` takes it.
    pub fn spawn_env_dir(&self) -> PathBuf {
        self.root.join("spawn-env")
    }

    /// The SSH control sockets of other hosts, one per host (`ssh`).
    pub fn ssh_dir(&self) -> PathBuf {
        self.root.join("ssh")
    }
    /// What was seen live of client releases nobody recorded, and the screens their
    /// witnesses disagreed on (`session::delivery::ClientReleases`).
    pub fn clients_dir(&self) -> PathBuf {
        self.root.join("clients")
    }
    /// The default `workspaces.root`: where the worktrees go.
    pub fn worktrees_dir(&self) -> PathBuf {
        self.root.join("worktrees")
    }
}

/// Expands a leading `~` or `~/` to the home directory.
pub fn expand_tilde(path: &str) -> PathBuf {
    let home = || directories::BaseDirs::new().map(|b| b.home_dir().to_path_buf());
    if path == "~" {
        if let Some(h) = home() {
            return h;
        }
    } else if let Some(rest) = path.strip_prefix("~/")
        && let Some(h) = home()
    {
        return h.join(rest);
    }
    PathBuf::from(path)
}

/// Displays a path for messages.
pub fn show(path: &Path) -> String {
    path.display().to_string()
}

/// A PATH lookup: `program` itself when it contains a `/`, else the first executable
/// file named `program` in a `PATH` directory.
pub fn find_program(program: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.is_empty() {
        return None;
    }
    if program.contains('/') {
        let p = expand_tilde(program);
        return executable(&p).then_some(p);
    }
    let path = match path {
        Some(p) => p.to_os_string(),
        None => std::env::var_os("PATH")?,
    };
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| executable(p))
}
